//===- CpuCodegen.cpp - Tile and vectorize linalg on buffers for the CPU
//---===//
//
// Projections are tiled over (m, n, k) and every other linalg op over its
// innermost dimension, with tiles that divide the static sizes, and each
// tile is vectorized (linalg::vectorize), so that LLVM sees vector code it
// can map to AVX2/FMA. Runs after flashnorm-async-schedule: it works inside
// the async tasks as anywhere else. Ops with dynamic sizes stay as they are
// (convert-linalg-to-loops lowers them).
//
//===----------------------------------------------------------------------===//

#include "flashnorm/Conversion/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/IR/LinalgInterfaces.h"
#include "mlir/Dialect/Linalg/Transforms/Hoisting.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/PatternMatch.h"

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

struct CpuCodegenPass : flashnorm::impl::CpuCodegenBase<CpuCodegenPass> {
  using CpuCodegenBase::CpuCodegenBase;

  /// Tile sizes for `op`, one per loop, or nothing if its sizes are dynamic.
  std::optional<SmallVector<int64_t>> tileSizesFor(linalg::LinalgOp op) {
    SmallVector<int64_t> ranges = op.getStaticLoopRanges();
    if (ranges.empty() || llvm::any_of(ranges, ShapedType::isDynamic))
      return std::nullopt;
    SmallVector<int64_t> tiles(ranges.size(), 1);
    if (linalg::isaContractionOpInterface(op) && ranges.size() >= 3) {
      // (.., m, n, k): batch dims one at a time.
      size_t n = ranges.size();
      SmallVector<int64_t> want =
          tileSizes.empty()
              ? SmallVector<int64_t>{4, 16, 1}
              : SmallVector<int64_t>(tileSizes.begin(), tileSizes.end());
      for (int i = 0; i < 3; ++i)
        tiles[n - 3 + i] = fitTile(ranges[n - 3 + i], want[i]);
      return tiles;
    }
    // Element-wise ops and row reductions: one row, a vector of the last dim.
    tiles.back() = fitTile(ranges.back(), vectorWidth);
    return tiles;
  }

  void runOnOperation() override {
    if (!tileSizes.empty() && tileSizes.size() != 3) {
      getOperation()->emitError()
          << "flashnorm-cpu-codegen: tile-sizes needs 3 values (m, n, k), got "
          << tileSizes.size();
      return signalPassFailure();
    }
    SmallVector<linalg::LinalgOp> ops;
    getOperation()->walk([&](linalg::LinalgOp op) {
      if (op.hasPureBufferSemantics())
        ops.push_back(op);
    });
    IRRewriter rewriter(&getContext());
    for (linalg::LinalgOp op : ops) {
      std::optional<SmallVector<int64_t>> tiles = tileSizesFor(op);
      if (!tiles)
        continue;
      rewriter.setInsertionPoint(op);
      scf::SCFTilingOptions options;
      options.setTileSizes(getAsIndexOpFoldResult(&getContext(), *tiles));
      FailureOr<scf::SCFTilingResult> tiled = scf::tileUsingSCF(
          rewriter, cast<TilingInterface>(op.getOperation()), options);
      if (failed(tiled))
        continue;
      rewriter.eraseOp(op);
      for (Operation *tile : tiled->tiledOps) {
        rewriter.setInsertionPoint(tile);
        if (succeeded(linalg::vectorize(rewriter, tile)))
          rewriter.eraseOp(tile);
      }
    }
    // Keep accumulators in registers across the k loop.
    linalg::hoistRedundantVectorTransfers(getOperation());
  }
};
} // namespace
