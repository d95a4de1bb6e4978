//===- PackPanels.h - Projections over weight panels (CPU) ------*- C++ -*-===//
//
// What flashnorm-pack-weights (constant weights, relaid at compile time)
// and flashnorm-pack-prepared-weights (argument weights, relaid by the
// prepare function) share: which projections read their weight in panels
// [N / P][K][P] and how wide, and the projection rebuilt over the panels.
//
//===----------------------------------------------------------------------===//
#ifndef FLASHNORM_LIB_CONVERSION_PACKPANELS_H
#define FLASHNORM_LIB_CONVERSION_PACKPANELS_H

#include "flashnorm/Dialect/FlashNorm/IR/FlashNormOps.h"

#include "flashnorm/Utils/RegisterTile.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"

#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/DenseSet.h"

#include <string>

namespace mlir::flashnorm {

/// A projection that reads its 2-D weight (either layout) in panels.
struct PanelPlan {
  linalg::LinalgOp op;
  unsigned weightIndex = 0;
  unsigned nDim = 0, kDim = 0;
  /// The weight's contracted axis as the projection reads it.
  int64_t weightAxis = 0;
  /// Outputs per panel.
  int64_t panel = 0;
  Location loc;
  /// The projection's one user, a post-scale, applied to each panel's
  /// product while it is in cache (its epilogue); null if none.
  PostScaleOp post;
  /// Prefill on an activation larger than the cache budget: it is read in
  /// blocks of `rowBlock` of its innermost row dimension `mDim` by `kBlock`
  /// of k, every panel passing over one block while it is in cache (then
  /// the post-scale runs over a chunk's outputs after its last block);
  /// 0: whole (no blocks).
  unsigned mDim = 0;
  int64_t rowBlock = 0, kBlock = 0;
  /// With blocks: the outputs of a group of panels whose accumulator stays
  /// in cache while the blocks pass over it (each chunk's panels are taken
  /// a group at a time, the blocks inside; 0: the whole chunk). Without
  /// groups a wide chunk's accumulator is read and written from memory
  /// once per k block.
  int64_t groupOutputs = 0;
  /// Narrow weights (bf16, f16) read by several row tiles: each panel's
  /// block is widened to the accumulator's type once, before the row tiles
  /// read it (rather than in every row tile, where the widening costs
  /// about half as many instructions as the FMAs it feeds on AVX2).
  bool widenPanels = false;
};

/// How planPanels shapes the panels and the activation's blocks.
struct PanelOptions {
  /// Outputs per panel (0: by shape, from `tile`).
  int64_t panel = 0;
  RegisterTile tile;
  /// An activation of more bytes than this (as the micro-kernel reads it,
  /// widened to the accumulator's type) is read in blocks of at most this
  /// many (0: never blocked).
  int64_t activationBlockBytes = kActivationBlockBytes;
};

/// Decides whether `op` can read its weight in panels of `options.panel`
/// outputs (0: by shape, the tile's decode width for a decode step's few
/// rows, else its prefill width), and the activation's blocks; the plan or
/// why not. Where the weight comes from, and whether its N is a multiple of
/// the panel, are the caller's questions.
FailureOr<PanelPlan> planPanels(linalg::LinalgOp op,
                                const PanelOptions &options, std::string &why);

/// Whether a stored matrix of `shape`, contracted along `axis` and read
/// through the layout ops `chain`, is the projection's k x n itself,
/// element for element: the chain only transposes and reshapes (a
/// broadcast on the way, even of a matrix of full size, is not something
/// the panels can stand for).
bool isWholeWeight(const PanelPlan &plan, ArrayRef<int64_t> shape, int64_t axis,
                   ArrayRef<Operation *> chain);

/// Replaces `plan.op` by an `scf.forall` over chunks of the `panels`
/// ([N / P][K][P], a value that dominates the projection) contracted with
/// the activation, split over `threads` cores when `parallel`, its
/// post-scale in each panel's epilogue when `fusePost`.
void applyPacking(RewriterBase &rewriter, const PanelPlan &plan, Value panels,
                  bool parallel, int64_t threads, bool fusePost);

/// Reports and applies the packing of `plan` over `panels` (bytes: the
/// panels' size) the way both passes do: split over the cores from
/// `parallelMinBytes`, the post-scale fused unless the projection runs
/// beside its statistic; records the groups whose projection was split
/// (they run serially: unmarkGroups).
void packProjection(RewriterBase &rewriter, const PanelPlan &plan, Value panels,
                    int64_t bytes, int64_t numThreads, int64_t parallelMinBytes,
                    class PassReporter &reporter,
                    llvm::DenseSet<int64_t> &splitGroups);

/// A projection split over the cores leaves no core for its statistic:
/// the async groups `groups` run serially.
void unmarkGroups(func::FuncOp fn, const llvm::DenseSet<int64_t> &groups);

/// The threads a split projection runs on: `threads`, or this machine's.
int64_t panelThreads(int64_t threads);

} // namespace mlir::flashnorm

#endif
