//===- FreeBuffers.cpp - Free the buffers bufferization allocated ---------===//
//
// One-shot bufferization allocates and never frees; upstream's
// ownership-based deallocation adds the frees, but it refuses any program
// that frees memory itself. The CPU pipeline takes both kinds of input (a
// tensor model, or memref code with its own deallocs), so the decision is
// made here, per module, before anything changes: a module with a free of
// its own is the author's to manage and stays as it is; any other gets the
// upstream passes, run as one dynamic pipeline.
//
//===----------------------------------------------------------------------===//

#include "flashnorm/Conversion/Passes.h"

#include "mlir/Conversion/BufferizationToMemRef/BufferizationToMemRef.h"
#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "flashnorm-free-buffers"

namespace mlir::flashnorm {
#define GEN_PASS_DEF_FREEBUFFERS
#include "flashnorm/Conversion/Passes.h.inc"
} // namespace mlir::flashnorm

using namespace mlir;

namespace {
/// The first op of `module` that frees a memref, or null.
Operation *findFree(ModuleOp module) {
  Operation *found = nullptr;
  module.walk([&](MemoryEffectOpInterface op) {
    SmallVector<MemoryEffects::EffectInstance> effects;
    op.getEffects<MemoryEffects::Free>(effects);
    for (const MemoryEffects::EffectInstance &effect : effects) {
      Value value = effect.getValue();
      if (value && isa<BaseMemRefType>(value.getType())) {
        found = op;
        return WalkResult::interrupt();
      }
    }
    return WalkResult::advance();
  });
  return found;
}

// buffer-deallocation-pipeline without its canonicalize: the rest of the
// module is not this pass's to rewrite (and canonicalization would fold
// packed projections' one-trip foralls, marks and all). In two halves: the
// frees, then their simplification.
void buildOwnership(OpPassManager &pm) {
  pm.addPass(bufferization::createOwnershipBasedBufferDeallocationPass());
}
void buildSimplification(OpPassManager &pm) {
  pm.addPass(bufferization::createBufferDeallocationSimplificationPass());
  pm.addPass(bufferization::createLowerDeallocationsPass());
  pm.addPass(createConvertBufferizationToMemRefPass());
}

/// What the simplification's own greedy driver folds and erases first
/// (folds, dead ops, duplicate constants: the same driver and settings, no
/// patterns), done before it builds its alias analysis: MLIR 22's
/// simplification keeps that analysis across the ops its driver erases and
/// reads them after they are freed (llvm-project#205228, a crash on a
/// `main` that calls functions returning buffers). Nothing changes that the
/// simplification would not change.
LogicalResult foldLikeSimplification(ModuleOp module) {
  GreedyRewriteConfig config;
  config.setRegionSimplificationLevel(GreedySimplifyRegionLevel::Normal);
  return applyPatternsGreedily(module, FrozenRewritePatternSet(), config);
}

struct FreeBuffersPass : flashnorm::impl::FreeBuffersBase<FreeBuffersPass> {
  void getDependentDialects(DialectRegistry &registry) const override {
    OpPassManager pm(ModuleOp::getOperationName());
    buildOwnership(pm);
    buildSimplification(pm);
    pm.getDependentDialects(registry);
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (Operation *free = findFree(module)) {
      LLVM_DEBUG(llvm::dbgs() << "module frees its own buffers (" << *free
                              << "); left as it is\n");
      (void)free;
      return;
    }
    OpPassManager ownership(ModuleOp::getOperationName());
    buildOwnership(ownership);
    OpPassManager simplification(ModuleOp::getOperationName());
    buildSimplification(simplification);
    if (failed(runPipeline(ownership, module)) ||
        failed(foldLikeSimplification(module)) ||
        failed(runPipeline(simplification, module)))
      signalPassFailure();
  }
};
} // namespace
