//===- CpuHostTarget.cpp - The CPU pipeline's output marked for this CPU --===//
//
// flashnorm-cpu-pipeline sizes its register tiles and panels for this
// machine's vector registers (RegisterTile.h) and converts bf16 in vector
// code where this CPU can. The JIT (mlir-runner, flashnorm-run) compiles
// for the host anyway; code compiled ahead of time (mlir-translate, then
// llc or clang) did not: llc's generic x86-64 target gave 32 AVX-512-sized
// accumulators 16 SSE registers. So the module says which machine it was
// made for: its target triple, and on every function it defines the CPU
// and its features, which llc and clang compile each function for. Values
// already there (a frontend's, or a cross compiler's) are kept.
//
//===----------------------------------------------------------------------===//

#include "flashnorm/Conversion/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMAttrs.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/TargetParser/Host.h"

namespace mlir::flashnorm {
#define GEN_PASS_DEF_CPUHOSTTARGET
#include "flashnorm/Conversion/Passes.h.inc"
} // namespace mlir::flashnorm

using namespace mlir;
using namespace mlir::flashnorm;

namespace {
struct CpuHostTargetPass
    : flashnorm::impl::CpuHostTargetBase<CpuHostTargetPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    StringRef tripleName = LLVM::LLVMDialect::getTargetTripleAttrName();
    if (!module->hasAttr(tripleName))
      module->setAttr(tripleName,
                      StringAttr::get(ctx, llvm::sys::getProcessTriple()));
    // Features in a stable order: the output does not depend on a hash
    // map's.
    SmallVector<std::string> features;
    for (const auto &feature : llvm::sys::getHostCPUFeatures())
      features.push_back((feature.second ? "+" : "-") + feature.first().str());
    llvm::sort(features);
    SmallVector<StringRef> refs(features.begin(), features.end());
    auto featuresAttr = LLVM::TargetFeaturesAttr::get(ctx, refs);
    auto cpu = StringAttr::get(ctx, llvm::sys::getHostCPUName());
    module.walk([&](LLVM::LLVMFuncOp fn) {
      if (fn.isExternal())
        return;
      if (!fn.getTargetCpuAttr())
        fn.setTargetCpuAttr(cpu);
      if (!fn.getTargetFeaturesAttr())
        fn.setTargetFeaturesAttr(featuresAttr);
    });
  }
};
} // namespace
