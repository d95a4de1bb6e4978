#include "flashnorm/Pipelines/Pipelines.h"

#include "flashnorm/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/raw_ostream.h"

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

/// flashnorm ops and TOSA to linalg, bufferized across function boundaries
/// (identity layouts), loops, LLVM: plain sequential CPU code, the reference
/// that differential checks (flashnorm-run, the lit tests) execute.
static constexpr llvm::StringLiteral kLowerToLLVM =
    "flashnorm-lower-to-linalg,"
    "func.func(tosa-to-linalg-named,tosa-to-linalg,tosa-to-arith,"
    "tosa-to-tensor),"
    "convert-elementwise-to-linalg,"
    "one-shot-bufferize{bufferize-function-boundaries "
    "function-boundary-type-conversion=identity-layout-map},"
    "convert-linalg-to-loops,expand-strided-metadata,lower-affine,"
    "convert-scf-to-cf,convert-math-to-llvm,convert-to-llvm,"
    "reconcile-unrealized-casts";

LogicalResult flashnorm::buildLowerToLLVMPipeline(OpPassManager &pm,
                                                  raw_ostream &errors) {
  return parsePassPipeline(kLowerToLLVM, pm, errors);
}

void flashnorm::registerPipelines() {
  PassPipelineRegistration<FlashNormPipelineOptions>(
      "flashnorm",
      "The FlashNorm pipeline: raise norms from frontend IR, fold gains into "
      "weights, drop redundant norms, "
      "defer 1/RMS past the projections, then canonicalize and CSE",
      buildFlashNormPipeline);
  PassPipelineRegistration<>(
      "flashnorm-lower-to-llvm",
      "Lower flashnorm, TOSA and linalg on tensors to the LLVM dialect as "
      "plain sequential loops (the reference CPU lowering)",
      [](OpPassManager &pm) {
        if (failed(buildLowerToLLVMPipeline(pm, llvm::errs())))
          llvm::report_fatal_error("flashnorm-lower-to-llvm: bad pipeline");
      });
}
