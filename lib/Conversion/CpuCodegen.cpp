//===- CpuCodegen.cpp - Tile and vectorize linalg on buffers for the CPU --===//
//
// Projections become register-blocked micro-kernels, built from upstream
// transforms only: the contraction is tiled (roles from
// inferContractionDims) so that one tile is a row block of `mt` rows by `nt`
// outputs, one k at a time; each tile is vectorized into a vector.contract
// (lowered later to broadcasts and FMAs); the tiles' subviews are folded
// into the transfers so that the accumulator's read and write leave the k
// loop (upstream's hoisting refuses transfers on views), and the
// accumulator lives in registers across k. Extra output dimensions (whole
// blocks of outputs) are the outer loops, then row blocks, then output
// tiles: a packed projection is one contraction per panel
// (flashnorm-pack-weights), whose weights every row block then reads from
// cache. Decode shapes (a few rows) take wide blocks, prefill shapes 8 x 32
// (16 accumulators of 16 f32 lanes).
//
// Every other linalg op is tiled over its innermost loop by `vector-width`
// and vectorized. Sizes are static here (tiles divide them); ops with
// dynamic sizes are left to convert-linalg-to-loops. Runs after
// flashnorm-async-schedule: it works inside the async tasks as anywhere
// else.
//
//===----------------------------------------------------------------------===//

#include "flashnorm/Conversion/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/IR/LinalgInterfaces.h"
#include "mlir/Dialect/Linalg/Transforms/Hoisting.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Dialect/SCF/Transforms/Transforms.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Dominance.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/CSE.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::flashnorm {
#define GEN_PASS_DEF_CPUCODEGEN
#include "flashnorm/Conversion/Passes.h.inc"
} // namespace mlir::flashnorm

using namespace mlir;
using namespace mlir::flashnorm;

namespace {
/// The largest tile <= `want` that divides `size` (1 at worst).
int64_t fitTile(int64_t size, int64_t want) {
  int64_t t = std::max<int64_t>(1, std::min(size, want));
  while (size % t)
    --t;
  return t;
}

/// How one op is tiled: sizes per loop and the loop order.
struct TilePlan {
  SmallVector<int64_t> sizes;
  SmallVector<int64_t> interchange;
  bool contraction = false;
};

struct CpuCodegenPass : flashnorm::impl::CpuCodegenBase<CpuCodegenPass> {
  using CpuCodegenBase::CpuCodegenBase;

  /// The micro-kernel's tile of a contraction: for (m, n, k) = the
  /// innermost m and n dimensions and k, `tile-sizes` if given, else
  /// (M, 256, 1) for decode (M < 4 rows: wide rows of W stream) and
  /// (8, 32, 1) otherwise; every other dimension one at a time. An n
  /// dimension that indexes whole panels (flashnorm-pack-weights) is taken
  /// one panel at a time with the panel's width as the tile.
  std::optional<TilePlan> planContraction(linalg::LinalgOp op,
                                          ArrayRef<int64_t> ranges) {
    FailureOr<linalg::ContractionDimensions> dims =
        linalg::inferContractionDims(op);
    if (failed(dims) || dims->m.empty() || dims->n.empty() || dims->k.empty())
      return std::nullopt;
    unsigned m = dims->m.back(), n = dims->n.back();
    int64_t rows = ranges[m];
    SmallVector<int64_t> want =
        !tileSizes.empty()
            ? SmallVector<int64_t>(tileSizes.begin(), tileSizes.end())
        : rows < 4 ? SmallVector<int64_t>{rows, 256, 1}
                   : SmallVector<int64_t>{8, 32, 1};
    TilePlan plan;
    plan.contraction = true;
    plan.sizes.assign(ranges.size(), 1);
    plan.sizes[m] = fitTile(rows, want[0]);
    // A panel dimension: the innermost n is a panel's width (<= 64).
    bool panels = dims->n.size() > 1 && ranges[n] <= 64;
    plan.sizes[n] = panels ? ranges[n] : fitTile(ranges[n], want[1]);
    for (unsigned k : dims->k)
      plan.sizes[k] = fitTile(ranges[k], want[2]);
    // Loop order: batch, outer n (whole blocks of outputs), m, inner n, k.
    auto append = [&](ArrayRef<unsigned> ds, bool skipLast) {
      for (unsigned d : skipLast ? ds.drop_back() : ds)
        plan.interchange.push_back(d);
    };
    append(dims->batch, false);
    append(dims->n, /*skipLast=*/true);
    append(dims->m, false);
    plan.interchange.push_back(n);
    append(dims->k, false);
    // Loops in no role (none for a contraction) keep their place at the end.
    for (unsigned d = 0; d < ranges.size(); ++d)
      if (!llvm::is_contained(plan.interchange, d))
        plan.interchange.push_back(d);
    return plan;
  }

  /// Tile sizes for `op`, or nothing if its sizes are dynamic.
  std::optional<TilePlan> planTiles(linalg::LinalgOp op) {
    SmallVector<int64_t> ranges = op.getStaticLoopRanges();
    if (ranges.empty() || llvm::any_of(ranges, ShapedType::isDynamic))
      return std::nullopt;
    if (linalg::isaContractionOpInterface(op) && ranges.size() >= 3)
      if (std::optional<TilePlan> plan = planContraction(op, ranges))
        return plan;
    // Element-wise ops and row reductions: one row, a vector of the last dim.
    TilePlan plan;
    plan.sizes.assign(ranges.size(), 1);
    plan.sizes.back() = fitTile(ranges.back(), vectorWidth);
    return plan;
  }

  void runOnOperation() override {
    if (!tileSizes.empty() && tileSizes.size() != 3) {
      getOperation()->emitError()
          << "flashnorm-cpu-codegen: tile-sizes needs 3 values (m, n, k), got "
          << tileSizes.size();
      return signalPassFailure();
    }
    if (llvm::any_of(tileSizes, [](int64_t t) { return t <= 0; }) ||
        vectorWidth <= 0) {
      getOperation()->emitError() << "flashnorm-cpu-codegen: tile-sizes and "
                                     "vector-width must be positive";
      return signalPassFailure();
    }
    SmallVector<std::pair<linalg::LinalgOp, TilePlan>> work;
    getOperation()->walk([&](linalg::LinalgOp op) {
      if (!op.hasPureBufferSemantics())
        return;
      if (std::optional<TilePlan> plan = planTiles(op))
        work.emplace_back(op, std::move(*plan));
    });
    IRRewriter rewriter(&getContext());
    for (auto &[op, plan] : work) {
      rewriter.setInsertionPoint(op);
      scf::SCFTilingOptions options;
      options.setTileSizes(getAsIndexOpFoldResult(&getContext(), plan.sizes));
      if (!plan.interchange.empty())
        options.setInterchange(plan.interchange);
      FailureOr<scf::SCFTilingResult> tiled = scf::tileUsingSCF(
          rewriter, cast<TilingInterface>(op.getOperation()), options);
      if (failed(tiled))
        continue;
      rewriter.eraseOp(op);
      for (Operation *tile : tiled->tiledOps) {
        rewriter.setInsertionPoint(tile);
        FailureOr<linalg::VectorizationResult> vectorized = linalg::vectorize(
            rewriter, tile, /*inputVectorSizes=*/{},
            /*inputScalableVecDims=*/{},
            /*vectorizeNDExtract=*/false, /*flatten1DDepthwiseConv=*/false,
            /*assumeDynamicDimsMatchVecSizes=*/false,
            /*createNamedContraction=*/plan.contraction);
        if (failed(vectorized))
          continue;
        if (vectorized->replacements.empty())
          rewriter.eraseOp(tile);
        else
          rewriter.replaceOp(tile, vectorized->replacements);
      }
    }
    // Mixed precision (bf16 or f16 weights, f32 accumulator): the operands
    // are widened explicitly, which the contract lowering needs.
    getOperation()->walk([&](vector::ContractionOp contract) {
      Type acc = getElementTypeOrSelf(contract.getAccType());
      if (!isa<FloatType>(acc))
        return;
      rewriter.setInsertionPoint(contract);
      for (OpOperand *operand :
           {&contract.getLhsMutable(), &contract.getRhsMutable()}) {
        auto type = cast<VectorType>(operand->get().getType());
        if (type.getElementType() == acc ||
            !isa<FloatType>(type.getElementType()))
          continue;
        Value wide = arith::ExtFOp::create(rewriter, contract.getLoc(),
                                           type.clone(acc), operand->get());
        rewriter.modifyOpInPlace(contract, [&] { operand->set(wide); });
      }
    });
    // Transfers on the tiles' subviews index the buffers themselves, and
    // the index arithmetic of one tile is one value (CSE): then the
    // accumulator's read and write name the same element and can leave the
    // k loop. (A panel written back onto itself, as bufferization leaves a
    // forall's insert, is a self-copy that folds away.)
    RewritePatternSet patterns(&getContext());
    memref::populateFoldMemRefAliasOpPatterns(patterns);
    affine::AffineApplyOp::getCanonicalizationPatterns(patterns, &getContext());
    memref::SubViewOp::getCanonicalizationPatterns(patterns, &getContext());
    memref::CopyOp::getCanonicalizationPatterns(patterns, &getContext());
    scf::ForOp::getCanonicalizationPatterns(patterns, &getContext());
    (void)applyPatternsGreedily(getOperation(), std::move(patterns));
    DominanceInfo dominance;
    eliminateCommonSubExpressions(rewriter, dominance, getOperation());
    {
      RewritePatternSet copies(&getContext());
      memref::CopyOp::getCanonicalizationPatterns(copies, &getContext());
      scf::ForOp::getCanonicalizationPatterns(copies, &getContext());
      (void)applyPatternsGreedily(getOperation(), std::move(copies));
    }
    // Keep accumulators in registers across the k loop.
    linalg::hoistRedundantVectorTransfers(getOperation());
    // Panels of packed projections: a loop on one core for small weights
    // and within a chunk, else parallel (OpenMP threads, in the pipeline).
    SmallVector<scf::ForallOp> foralls;
    getOperation()->walk([&](scf::ForallOp op) { foralls.push_back(op); });
    for (scf::ForallOp op : foralls) {
      rewriter.setInsertionPoint(op);
      if (failed(op->hasAttr(kSerialPanelsAttr)
                     ? scf::forallToForLoop(rewriter, op)
                     : scf::forallToParallelLoop(rewriter, op)))
        return signalPassFailure();
    }
  }
};
} // namespace
