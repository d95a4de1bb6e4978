#include "flashnorm/Pipelines/Pipelines.h"

#include "flashnorm/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;
using namespace mlir::flashnorm;

void flashnorm::buildFlashNormPipeline(
    OpPassManager &pm, const FlashNormPipelineOptions &options) {
  pm.addNestedPass<func::FuncOp>(createRaise());
  // A module pass: with prepare-function it adds functions and edits calls.
  pm.addPass(
      createFoldGains({options.cloneSharedWeights, options.prepareFunction}));
  OpPassManager &fpm = pm.nest<func::FuncOp>();
  fpm.addPass(createDropRedundant({options.allowApproximate}));
  fpm.addPass(createDeferScale({options.partial}));
  fpm.addPass(createCanonicalizerPass());
  fpm.addPass(createCSEPass());
}

void flashnorm::registerPipelines() {
  PassPipelineRegistration<FlashNormPipelineOptions>(
      "flashnorm",
      "The FlashNorm pipeline: raise norms from frontend IR, fold gains into weights, drop redundant norms, "
      "defer 1/RMS past the projections, then canonicalize and CSE",
      buildFlashNormPipeline);
}
