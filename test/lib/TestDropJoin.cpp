//===- TestDropJoin.cpp - A deliberately broken GPU join, for tests -------===//
//
// Removes, in every function, the last dependency of the first join
// (`gpu.wait async` with two or more tokens): with flashnorm-gpu-streams'
// output that is the statistic's stream, so the post-scale waits on the
// projection only, the bug of docs/MATH.md §6. flashnorm-verify-async must
// reject the result; run anyway (verify=false), it must diverge.
//
//===----------------------------------------------------------------------===//

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassRegistry.h"

using namespace mlir;

namespace {
struct TestDropJoinPass
    : PassWrapper<TestDropJoinPass, OperationPass<func::FuncOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(TestDropJoinPass)
  StringRef getArgument() const final { return "flashnorm-test-drop-join"; }
  StringRef getDescription() const final {
    return "Test only: drop the last dependency of the first GPU join in "
           "each function";
  }
  void runOnOperation() override {
    getOperation().walk([](gpu::WaitOp wait) {
      if (!wait.getAsyncToken() || wait.getAsyncDependencies().size() < 2)
        return WalkResult::advance();
      wait.getAsyncDependenciesMutable().erase(
          wait.getAsyncDependencies().size() - 1);
      return WalkResult::interrupt();
    });
  }
};
} // namespace

namespace mlir::flashnorm::test {
void registerTestDropJoinPass() { PassRegistration<TestDropJoinPass>(); }
} // namespace mlir::flashnorm::test
