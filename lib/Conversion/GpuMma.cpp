//===- GpuMma.cpp - Tensor-core MMA for the kernels' fragments ------------===//
//
// flashnorm-gpu-kernels writes each tensor-core projection as one warp's
// vector.contract of 16 x 16 by 8 x 16 fragments; upstream's
// vector-to-nvgpu conversion turns that into nvgpu.mma.sync with per-lane
// loads. Its pass form walks whole functions and fails on the other
// kernels' scalar code, so this runs the conversion one kernel at a time.
//
//===----------------------------------------------------------------------===//

#include "flashnorm/Conversion/Passes.h"

#include "mlir/Conversion/VectorToGPU/VectorToGPU.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::flashnorm {
#define GEN_PASS_DEF_GPUMMA
#include "flashnorm/Conversion/Passes.h.inc"
} // namespace mlir::flashnorm

using namespace mlir;
using namespace mlir::flashnorm;

namespace {
struct GpuMmaPass : flashnorm::impl::GpuMmaBase<GpuMmaPass> {
  void runOnOperation() override {
    SmallVector<gpu::LaunchOp> launches;
    getOperation()->walk([&](gpu::LaunchOp launch) {
      if (launch
              ->walk(
                  [](vector::ContractionOp) { return WalkResult::interrupt(); })
              .wasInterrupted())
        launches.push_back(launch);
    });
    // One kernel at a time: the conversion follows use-def chains and must
    // not wander into other kernels.
    for (gpu::LaunchOp launch : launches) {
      RewritePatternSet patterns(launch.getContext());
      populatePrepareVectorToMMAPatterns(patterns, /*useNvGpu=*/true);
      if (failed(applyPatternsGreedily(launch, std::move(patterns))))
        return signalPassFailure();
      IRRewriter rewriter(launch.getContext());
      if (failed(convertVectorToNVVMCompatibleMMASync(rewriter, launch)))
        return signalPassFailure();
    }
  }
};
} // namespace
