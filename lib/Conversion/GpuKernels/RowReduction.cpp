//===- RowReduction.cpp - Row reductions as a block per output row --------===//
//
// `out += f(ins)` over the last loop: statistics, softmax sums, means, and
// projections whose weight is contiguous in k (N x K, what
// flashnorm-gpu-weight-layout gives them). One block per output row,
// threads striding over the row and a block `gpu.all_reduce` (warp shuffles
// after the NVVM lowering); the zero fill just before and an element-wise
// epilogue just after (a statistic: fill, sum of squares, rsqrt) join the
// same kernel, thread 0 applying the epilogue to the block's total. A
// statistic asked for its scaled rows (GemmLt.cpp: the activation a cuBLASLt
// projection reads, times 1/RMS) has every thread apply the epilogue and
// write its part of the row scaled, read again from L1.
//
// Every input is loaded 16 bytes per vector where the rows allow it
// (vectorWidthAlongK): a statistic's 2-byte loads, a block of 256 threads
// per row, kept 4 KB in flight per SM and read 4096 tokens of 4096 bf16
// features at 45% of an H200's DRAM bandwidth (16 us); in 16-byte vectors a
// block has its whole row in flight. Projections take a warp to four per
// output (projectionThreads), the blocks of one weight row adjacent in the
// grid.
//
//===----------------------------------------------------------------------===//

#include "KernelBuilder.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

using namespace mlir;
using namespace mlir::flashnorm;
using namespace mlir::flashnorm::kernels;

FailureOr<RowReductionPlan> kernels::planRowReduction(linalg::LinalgOp op,
                                                      int64_t reduceThreads,
                                                      std::string &why) {
  auto fail = [&](const Twine &msg) {
    why = msg.str();
    return failure();
  };
  bool projection = linalg::isaContractionOpInterface(op);
  // With K x N weights a thread per output, threads along n, reads the
  // weight contiguously instead (ParallelLoops.cpp).
  if (projection && !weightContiguousInK(op))
    return fail("the weight is not contiguous in k");
  if (!projection && !isa<linalg::GenericOp>(op.getOperation()))
    return fail("a named op that is not a projection");
  if (!isRowReduction(op))
    return fail("not an f32 row reduction over the last loop");
  RowReductionPlan plan;
  plan.op = op;
  plan.role = roleOf(op);
  if (plan.role.empty())
    plan.role = kindOf(op);
  plan.zeroFill = zeroFillBefore(op);
  plan.epilogue = epilogueAfter(op);
  plan.blockThreads = reduceThreads;
  plan.width = vectorWidthAlongK(op);
  if (projection) {
    int64_t k = op.getStaticLoopRanges().back();
    plan.blockThreads =
        ShapedType::isDynamic(k) ? 32 : projectionThreads(k, plan.width);
    plan.weightRowsOuter = true;
  }
  return plan;
}

gpu::LaunchOp kernels::buildRowReduction(KernelBuilder &builder,
                                         const RowReductionPlan &plan) {
  linalg::LinalgOp op = plan.op;
  linalg::GenericOp epilogue = plan.epilogue;
  // At the epilogue: what it uses is defined there, and only ops without
  // memory effects stand between it and the reduction.
  OpBuilder b(epilogue ? epilogue.getOperation() : op.getOperation());
  Location loc = op.getLoc();
  auto [launch, ivs] =
      builder.launchPerRow(b, loc, op, plan.blockThreads, plan.weightRowsOuter);
  Value tid = launch.getThreadIds().x;
  Type elementType =
      getElementTypeOrSelf(op.getDpsInitOperand(0)->get().getType());
  Value zero = arith::ConstantOp::create(b, loc, b.getZeroAttr(elementType));
  scf::ForOp loop = builder.buildKLoop(
      b, loc, op, ivs, tid, plan.blockThreads, plan.width, ValueRange{zero},
      [&](OpBuilder &nb, Location l, ArrayRef<Value> args, ArrayRef<Value> at,
          ValueRange acc) {
        SmallVector<Value> all(args);
        all.push_back(acc[0]);
        SmallVector<Value> next = inlineBody(nb, op, all, at);
        if (linalg::isaContractionOpInterface(op))
          allowContraction(next[0]);
        return next;
      });
  Value sum = builder.blockSum(b, loc, loop.getResult(0));
  // A statistic that writes its row scaled: every thread computes the
  // scale (the all-reduce gave each the sum) and scales the vectors it
  // loaded, read again from L1 (the block's whole row, 8 KB at 4096 bf16
  // features, was loaded just now), not from memory.
  Value scale;
  if (plan.scaledRows) {
    assert(epilogue && "a scaled row needs the epilogue's scale");
    scale = inlineBody(b, epilogue, {sum, sum}, ivs)[0];
    Value in = op.getDpsInputOperand(0)->get();
    Value steps = loopSizes(b, loc, op).back();
    if (plan.width > 1)
      steps = arith::DivUIOp::create(
          b, loc, steps, arith::ConstantIndexOp::create(b, loc, plan.width));
    scf::ForOp::create(
        b, loc, tid, steps,
        arith::ConstantIndexOp::create(b, loc, plan.blockThreads), ValueRange{},
        [&](OpBuilder &nb, Location l, Value step, ValueRange) {
          SmallVector<Value> at(ivs);
          at.push_back(plan.width == 1 ? step
                                       : arith::MulIOp::create(
                                             nb, l, step,
                                             arith::ConstantIndexOp::create(
                                                 nb, l, plan.width)));
          Value x = loadElements(nb, l, in, at, plan.width);
          storeElements(nb, l, scaleElements(nb, l, x, scale, plan.zeroRows),
                        plan.scaledRows, at, plan.width);
          scf::YieldOp::create(nb, l);
        });
  }
  Value first =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, tid,
                            arith::ConstantIndexOp::create(b, loc, 0));
  auto store = scf::IfOp::create(b, loc, first, /*withElse=*/false);
  b.setInsertionPointToStart(store.thenBlock());
  Value out = op.getDpsInitOperand(0)->get();
  if (!plan.zeroFill)
    sum = arith::AddFOp::create(b, loc,
                                memref::LoadOp::create(b, loc, out, ivs), sum);
  // The sums themselves are stored only if something else reads them.
  bool sumsRead = !epilogue || llvm::any_of(out.getUsers(), [&](Operation *u) {
    return u != op && u != plan.zeroFill && u != epilogue;
  });
  if (sumsRead)
    memref::StoreOp::create(b, loc, sum, out, ivs);
  if (epilogue) {
    Value result = epilogue.getDpsInitOperand(0)->get();
    // The epilogue reads only the sums and not its output (checked).
    Value y = scale ? scale : inlineBody(b, epilogue, {sum, sum}, ivs)[0];
    memref::StoreOp::create(b, loc, y, result, ivs);
    epilogue->erase();
  }
  b.setInsertionPointToEnd(&launch.getBody().front());
  gpu::TerminatorOp::create(b, loc);
  builder.name(launch, plan.role);
  op->erase();
  if (plan.zeroFill)
    plan.zeroFill->erase();
  return launch;
}
