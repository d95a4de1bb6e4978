//===- TestDropAwait.cpp - A deliberately broken join, for tests ----------===//
//
// Removes, in every function, the first join on a projection task: the
// post-scale then waits on the statistic only, the bug docs/MATH.md §6
// describes (it reads a buffer the projection has not finished writing). The
// recurrent stress test runs the result to show that its check sees it.
// The function's frees go too: without the join they would release buffers
// under the running task, and the race would show as heap corruption (a
// hang inside malloc) instead of wrong numbers.
//
//===----------------------------------------------------------------------===//

#include "mlir/Dialect/Async/IR/Async.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/IR/LinalgInterfaces.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassRegistry.h"

using namespace mlir;

namespace {
struct TestDropAwaitPass
    : PassWrapper<TestDropAwaitPass, OperationPass<func::FuncOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(TestDropAwaitPass)
  StringRef getArgument() const final { return "flashnorm-test-drop-await"; }
  StringRef getDescription() const final {
    return "Test only: remove the first await of a projection task in each "
           "function";
  }
  void runOnOperation() override {
    WalkResult dropped = getOperation().walk([](async::AwaitOp await) {
      auto task = await.getOperand().getDefiningOp<async::ExecuteOp>();
      bool projection =
          task && task.getBodyRegion()
                      .walk([](linalg::LinalgOp op) {
                        return linalg::isaContractionOpInterface(op)
                                   ? WalkResult::interrupt()
                                   : WalkResult::advance();
                      })
                      .wasInterrupted();
      if (!projection)
        return WalkResult::advance();
      await.erase();
      return WalkResult::interrupt();
    });
    if (!dropped.wasInterrupted())
      return;
    SmallVector<memref::DeallocOp> frees;
    getOperation().walk([&](memref::DeallocOp op) { frees.push_back(op); });
    for (memref::DeallocOp op : frees)
      op.erase();
  }
};
} // namespace

namespace mlir::flashnorm::test {
void registerTestBF16VectorsAsBitsPass();
void registerTestDropJoinPass();
void registerTestLaunchToLoopsPass();
void registerTestPasses() {
  PassRegistration<TestDropAwaitPass>();
  registerTestBF16VectorsAsBitsPass();
  registerTestDropJoinPass();
  registerTestLaunchToLoopsPass();
}
} // namespace mlir::flashnorm::test
