//===- CpuDotProduct.h - Contractions read along k on the CPU ---*- C++ -*-===//
//
// The micro-kernel of flashnorm-cpu-codegen broadcasts the activation and
// loads a vector of outputs' weights per k: right for a weight contiguous
// along n (K x N, or packed panels), a gather of one element per cache line
// for a weight contiguous along k (PyTorch's N x K, left in the stored
// layout where nothing packs it: checkpoint globals, argument weights no
// norm feeds, q k^T). Such a contraction is split along k instead
// (upstream's split reduction, on buffers, with the lanes innermost):
//
//   partial[..., l] += a[..., ko, l] * w[..., ko, l]   (k = ko * lanes + l)
//   out[...]        += sum_l partial[..., l]
//
// The first is an element-wise multiply-add of contiguous vectors whose
// accumulators (a few rows by a few outputs, `lanes` wide) stay in registers
// across ko; the second is a horizontal sum once per output. The sum over k
// is reassociated (as any vectorized dot product is), the scalar body is the
// contraction's own.
//
//===----------------------------------------------------------------------===//
#ifndef FLASHNORM_LIB_CONVERSION_CPUDOTPRODUCT_H
#define FLASHNORM_LIB_CONVERSION_CPUDOTPRODUCT_H

#include "flashnorm/Analysis/Projection.h"
#include "flashnorm/Utils/RegisterTile.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/PatternMatch.h"

#include <string>

namespace mlir::flashnorm {

/// The largest tile <= `want` that divides `size` (1 at worst).
int64_t fitTile(int64_t size, int64_t want);

/// The shape half of the split-k kernel's decision, shared with
/// flashnorm-cpu-fold-transposes (which folds only what the kernel then
/// takes): `op` has static sizes, is a contraction, each of its inputs read
/// through `inputMaps` is indexed by k last, and k is a multiple of two or
/// more `lanes`. The contraction's roles, or why not.
FailureOr<ContractionRoles> matchSplitK(linalg::LinalgOp op,
                                        ArrayRef<AffineMap> inputMaps,
                                        int64_t lanes, std::string &why);

/// Whether a contraction `op` on a weight of type `weight` in its stored
/// layout runs on the cores: more than one of `threads`, a weight of at
/// least `minBytes`, and `op` not in an async task (which runs beside a
/// statistic).
bool mayUseCores(Operation *op, MemRefType weight, int64_t threads,
                 int64_t minBytes);

/// A contraction both of whose inputs are contiguous along k.
struct DotPlan {
  linalg::LinalgOp op;
  /// The contracted loop and the lanes each k step is split into.
  unsigned k = 0;
  int64_t lanes = 0;
  /// Tile sizes and loop order of the partial sums' loops (the op's loops,
  /// k standing for ko, then the lanes): the register tile.
  SmallVector<int64_t> tileSizes;
  SmallVector<int64_t> interchange;
  /// The blocks of the op's loops (0: whole) the split runs on, in order.
  SmallVector<int64_t> blockSizes;
  SmallVector<int64_t> blockInterchange;
  /// The blocks run on the cores (an scf.forall, a buffer of partial sums
  /// each) rather than one after another.
  bool parallel = false;
};

/// What planDotProduct may choose from.
struct DotOptions {
  /// The lanes each k step is split into (one vector of the accumulator).
  int64_t lanes = 16;
  /// The register tile (m, n); empty: by shape, from `registers`.
  SmallVector<int64_t> tiles;
  RegisterTile registers;
  /// Cores the blocks may run on, and the weight size from which they do.
  int64_t threads = 1;
  int64_t parallelMinBytes = 1 << 20;
};

/// Decides whether `op` (on buffers, static sizes) is read along k by both
/// inputs, with k a multiple of `options.lanes`, and how it is split: the
/// register tile, the blocks, and whether the blocks run on the cores (a
/// weight, the second input, of at least `parallelMinBytes`, more than one
/// thread and one block, and `op` not in an async task, which runs beside
/// a statistic). The plan, or why not.
FailureOr<DotPlan> planDotProduct(linalg::LinalgOp op,
                                  const DotOptions &options, std::string &why);

/// The split of an accepted plan: the partial sums, to be tiled with the
/// plan's register tile and vectorized, and the ops around them (zeroing the
/// partial sums, summing their lanes into the output), tiled as any
/// element-wise op.
struct DotOps {
  linalg::GenericOp partial;
  SmallVector<linalg::LinalgOp> others;
};

/// Replaces `plan.op` by loops over its blocks, each the split along k into
/// a buffer of partial sums (one allocated before the loops and freed after
/// them, or one per block where the blocks run on the cores); failure (and
/// `plan.op` unchanged) where the blocks cannot be tiled.
FailureOr<DotOps> buildDotProduct(RewriterBase &rewriter, const DotPlan &plan);

/// In the vectorized partial sums under `root`: a product reduced over unit
/// dimensions into an accumulator becomes one `vector.fma` (a multiply-add
/// the contraction lowering would also fuse).
void fuseDotMultiplyAdds(RewriterBase &rewriter, Operation *root);

} // namespace mlir::flashnorm

#endif // FLASHNORM_LIB_CONVERSION_CPUDOTPRODUCT_H
