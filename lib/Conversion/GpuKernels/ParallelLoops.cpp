//===- ParallelLoops.cpp - Any linalg op as a parallel loop nest ----------===//
//
// The fallback every op takes: upstream's linalg-to-parallel-loops, tiled
// and mapped (the innermost dimension on threads x so loads along it
// coalesce, the outer ones on blocks), then upstream's
// parallel-loops-to-gpu. Reductions run inside each thread (for a K x N
// projection: threads along n read W[k, n] side by side, one output each,
// k in registers).
//
//===----------------------------------------------------------------------===//

#include "KernelBuilder.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"

using namespace mlir;
using namespace mlir::flashnorm;
using namespace mlir::flashnorm::kernels;

LogicalResult kernels::buildParallelLoops(KernelBuilder &builder,
                                          linalg::LinalgOp op, StringRef role) {
  // Without a parallel loop (a full reduction, a 0-d op) one thread runs
  // the whole nest: lower it inside a 1 x 1 launch.
  if (op.getNumParallelLoops() == 0) {
    OpBuilder b(op);
    Location loc = op.getLoc();
    Value one = arith::ConstantIndexOp::create(b, loc, 1);
    auto launch = gpu::LaunchOp::create(b, loc, one, one, one, one, one, one);
    b.setInsertionPointToStart(&launch.getBody().front());
    op->moveBefore(gpu::TerminatorOp::create(b, loc));
    builder.name(launch, role);
  }
  IRRewriter rewriter(op);
  // A reduction outside a parallel loop (a column sum: iterators
  // [reduction, parallel], as a LayerNorm's prepare function writes) would
  // leave that loop on the host: move every reduction innermost, so each
  // thread owns an output and loops over what it reduces.
  if (auto generic = dyn_cast<linalg::GenericOp>(op.getOperation())) {
    SmallVector<utils::IteratorType> iters = op.getIteratorTypesArray();
    SmallVector<unsigned> order;
    for (auto kind :
         {utils::IteratorType::parallel, utils::IteratorType::reduction})
      for (auto [i, it] : llvm::enumerate(iters))
        if (it == kind)
          order.push_back(i);
    if (!llvm::equal(order, llvm::seq<unsigned>(0, iters.size()))) {
      FailureOr<linalg::GenericOp> moved =
          linalg::interchangeGenericOp(rewriter, generic, order);
      if (failed(moved))
        return op->emitError("flashnorm-gpu-kernels: cannot move this op's "
                             "reductions innermost");
      op = *moved;
    }
  }
  FailureOr<linalg::LinalgLoops> loops =
      linalg::linalgOpToParallelLoops(rewriter, op);
  if (failed(loops))
    return op->emitError("flashnorm-gpu-kernels: cannot lower this op to "
                         "loops");
  rewriter.eraseOp(op);
  if (auto parallel = dyn_cast_or_null<scf::ParallelOp>(
          loops->empty() ? nullptr : loops->front()))
    if (!parallel->getParentOfType<gpu::LaunchOp>())
      return builder.launchParallel(parallel, role);
  return success();
}
