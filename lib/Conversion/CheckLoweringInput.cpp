//===- CheckLoweringInput.cpp - What a lowering pipeline takes ------------===//
//
// The lowering pipelines nest their passes into the functions of the module
// they are given, while the conversions to LLVM run on the whole module. A
// nested module's functions would be missed by the first and half converted
// by the second: tensors and linalg ops around LLVM arithmetic, exit 0. And
// a later stage's output fed to an earlier pipeline (the GPU kernels to a
// CPU lowering, resident weights to the GPU pipeline again) fails deep
// inside a conversion, or not at all. This pass names the operation and
// what would lower it instead, before anything runs. It only reads the
// module.
//
//===----------------------------------------------------------------------===//

#include "flashnorm/Conversion/Passes.h"
#include "flashnorm/Dialect/FlashNorm/IR/FlashNormOps.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/BuiltinOps.h"

namespace mlir::flashnorm {
#define GEN_PASS_DEF_CHECKLOWERINGINPUT
#include "flashnorm/Conversion/Passes.h.inc"
} // namespace mlir::flashnorm

using namespace mlir;
using namespace mlir::flashnorm;

namespace {
/// Why `op` is no input of a lowering to `target`, or "".
std::string whyNotInput(Operation *op, LoweringTarget target) {
  if (auto module = dyn_cast<ModuleOp>(op))
    return "a nested module" +
           (module.getSymName() ? " @" + module.getSymName()->str()
                                : std::string()) +
           ": the lowering pipelines compile the functions of the module they "
           "are given, and would leave this one's half lowered (run the "
           "pipeline on it alone)";
  // Resident weights exist only in flashnorm-gpu-streams' output. (A
  // `gpu.launch` may be the user's own kernel, which the GPU pipeline
  // takes.)
  if (isa<ResidentOp>(op))
    return std::string("'flashnorm.resident' is the output of "
                       "flashnorm-gpu-to-streams, which "
                       "flashnorm-gpu-streams-to-llvm lowers further; ") +
           (target == LoweringTarget::Cpu
                ? "the CPU lowerings lower no GPU code"
                : "the GPU pipeline and its first stages take frontend IR");
  // cuBLASLt calls are flashnorm-gpu-to-kernels' (the CPU lowerings run
  // them as loops: how the tests check them without a GPU).
  if (target == LoweringTarget::Gpu && isa<GemmLtOp>(op))
    return "'flashnorm.gemm_lt' is the output of flashnorm-gpu-to-kernels; "
           "the GPU pipeline and its first stages take frontend IR";
  if (target == LoweringTarget::Cpu && isa<gpu::GPUDialect>(op->getDialect()))
    return "'" + op->getName().getStringRef().str() +
           "' is GPU code (a GPU stage's output, or a kernel), which the CPU "
           "lowerings do not lower: the GPU pipeline does";
  return "";
}

struct CheckLoweringInputPass
    : flashnorm::impl::CheckLoweringInputBase<CheckLoweringInputPass> {
  using CheckLoweringInputBase::CheckLoweringInputBase;
  void runOnOperation() override {
    ModuleOp top = getOperation();
    WalkResult result = top.walk<WalkOrder::PreOrder>([&](Operation *op) {
      if (op == top)
        return WalkResult::advance();
      std::string why = whyNotInput(op, lowering);
      if (why.empty())
        return WalkResult::advance();
      // At the location only: the op would be printed with the error, a
      // whole nested module or kernel.
      emitError(op->getLoc()) << why;
      return WalkResult::interrupt();
    });
    if (result.wasInterrupted())
      signalPassFailure();
    markAllAnalysesPreserved();
  }
};
} // namespace
