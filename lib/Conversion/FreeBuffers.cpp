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

void buildDeallocation(OpPassManager &pm) {
  // buffer-deallocation-pipeline without its canonicalize: the rest of the
  // module is not this pass's to rewrite (and canonicalization would fold
  // packed projections' one-trip foralls, marks and all).
  pm.addPass(bufferization::createOwnershipBasedBufferDeallocationPass());
  pm.addPass(bufferization::createBufferDeallocationSimplificationPass());
  pm.addPass(bufferization::createLowerDeallocationsPass());
  pm.addPass(createConvertBufferizationToMemRefPass());
}

struct FreeBuffersPass : flashnorm::impl::FreeBuffersBase<FreeBuffersPass> {
  void getDependentDialects(DialectRegistry &registry) const override {
    OpPassManager pm(ModuleOp::getOperationName());
    buildDeallocation(pm);
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
    OpPassManager pm(ModuleOp::getOperationName());
    buildDeallocation(pm);
    if (failed(runPipeline(pm, module)))
      signalPassFailure();
  }
};
} // namespace
