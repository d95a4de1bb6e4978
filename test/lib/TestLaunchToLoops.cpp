//===- TestLaunchToLoops.cpp - Run GPU kernels on the CPU, for tests ------===//
//
// Turns every `gpu.launch` into sequential loops over blocks and threads, so
// the kernels flashnorm-gpu-kernels builds can be executed, and their numbers
// checked, on a machine without a GPU. Block-wide `gpu.all_reduce add`s
// run the threads twice: once up to the last reduction, summing what each
// thread contributes to each, then again with the sums in place of the
// reductions. That needs the code before the last reduction to have no side
// effects but reads and no use of a reduction's result, which holds for the
// row-reduction kernels (the pass fails otherwise). Top-level
// `gpu.barrier`s split the body into phases, each run by every thread of the
// block before the next starts; a later phase recomputes the side-effect
// free values it takes from earlier ones and may take no other (the
// tensor-core kernels' slices meet in shared memory that way). Workgroup
// buffers are host buffers, one per launch, reused by each block in turn.
// Vector loads lose their alignment: what a GPU's allocations guarantee (256
// bytes) host memory and globals need not.
//
// `flashnorm.gemm_lt` (cuBLASLt) becomes the loops of what cuBLASLt
// computes: each output's products summed in f32, rounded once to the
// output's type.
//
//===----------------------------------------------------------------------===//

#include "flashnorm/Dialect/FlashNorm/IR/FlashNormOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassRegistry.h"

using namespace mlir;

namespace {
/// Loops over the three values in `ubs`, innermost last; calls `body` with
/// the three induction variables.
void buildNest(OpBuilder &b, Location loc, ArrayRef<Value> ubs,
               function_ref<void(OpBuilder &, ArrayRef<Value>)> body) {
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  SmallVector<Value> ivs;
  OpBuilder::InsertionGuard guard(b);
  for (Value ub : ubs) {
    auto loop = scf::ForOp::create(b, loc, zero, ub, one);
    ivs.push_back(loop.getInductionVar());
    b.setInsertionPoint(loop.getBody()->getTerminator());
  }
  body(b, ivs);
}

struct TestLaunchToLoopsPass
    : PassWrapper<TestLaunchToLoopsPass, OperationPass<func::FuncOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(TestLaunchToLoopsPass)
  StringRef getArgument() const final {
    return "flashnorm-test-gpu-launch-to-loops";
  }
  StringRef getDescription() const final {
    return "Test only: run gpu.launch bodies as sequential CPU loops";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry
        .insert<scf::SCFDialect, arith::ArithDialect, memref::MemRefDialect>();
  }

  void runOnOperation() override {
    SmallVector<flashnorm::GemmLtOp> gemms;
    getOperation().walk([&](flashnorm::GemmLtOp op) { gemms.push_back(op); });
    for (flashnorm::GemmLtOp gemm : gemms)
      if (failed(lowerGemm(gemm)))
        return signalPassFailure();
    SmallVector<gpu::LaunchOp> launches;
    getOperation().walk([&](gpu::LaunchOp op) { launches.push_back(op); });
    for (gpu::LaunchOp launch : launches)
      if (failed(lower(launch)))
        return signalPassFailure();
  }

  /// A thread's loops, one output each, k innermost (sequential).
  LogicalResult lowerGemm(flashnorm::GemmLtOp gemm) {
    if (!gemm.getAsyncDependencies().empty() ||
        !gemm.getAsyncToken().use_empty())
      return gemm.emitError("only gemm_lt ops outside the token graph (as "
                            "flashnorm-gpu-kernels builds them) run here");
    OpBuilder b(gemm);
    Location loc = gemm.getLoc();
    Value a = gemm.getA(), w = gemm.getB(), c = gemm.getC();
    bool transposed = gemm.getTransposeB();
    Type f32 = b.getF32Type();
    Type out = gemm.getC().getType().getElementType();
    auto dim = [&](Value v, int64_t d) -> Value {
      return memref::DimOp::create(b, loc, v, d);
    };
    auto widen = [&](OpBuilder &nb, Value v) -> Value {
      return v.getType() == f32 ? v : arith::ExtFOp::create(nb, loc, f32, v);
    };
    Value zero = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0.0));
    buildNest(
        b, loc, {dim(a, 0), dim(c, 1)},
        [&](OpBuilder &nb, ArrayRef<Value> ivs) {
          Value i = ivs[0], j = ivs[1];
          Value lb = arith::ConstantIndexOp::create(nb, loc, 0);
          Value step = arith::ConstantIndexOp::create(nb, loc, 1);
          auto sum = scf::ForOp::create(
              nb, loc, lb, dim(a, 1), step, ValueRange{zero},
              [&](OpBuilder &kb, Location l, Value k, ValueRange acc) {
                Value x = memref::LoadOp::create(kb, l, a, ValueRange{i, k});
                Value y = memref::LoadOp::create(
                    kb, l, w, transposed ? ValueRange{j, k} : ValueRange{k, j});
                Value p =
                    arith::MulFOp::create(kb, l, widen(kb, x), widen(kb, y));
                scf::YieldOp::create(
                    kb, l, ValueRange{arith::AddFOp::create(kb, l, acc[0], p)});
              });
          Value v = sum.getResult(0);
          if (out != f32)
            v = arith::TruncFOp::create(nb, loc, out, v);
          memref::StoreOp::create(nb, loc, v, c, ValueRange{i, j});
        });
    gemm.erase();
    return success();
  }

  LogicalResult lower(gpu::LaunchOp launch) {
    launch.walk([](vector::LoadOp load) { load.removeAlignmentAttr(); });
    Block &body = launch.getBody().front();
    SmallVector<gpu::AllReduceOp> reduces;
    for (Operation &op : body)
      if (auto r = dyn_cast<gpu::AllReduceOp>(op)) {
        if (r.getOp() != gpu::AllReduceOperation::ADD)
          return launch.emitError("only top-level all_reduce add is "
                                  "supported");
        reduces.push_back(r);
      }
    auto onlyReads = [](Operation *op) {
      return !op->walk([](Operation *inner) {
                  auto e = dyn_cast<MemoryEffectOpInterface>(inner);
                  bool ok =
                      isMemoryEffectFree(inner) ||
                      (e && e.onlyHasEffect<MemoryEffects::Read>()) ||
                      inner->hasTrait<OpTrait::HasRecursiveMemoryEffects>();
                  return ok ? WalkResult::advance() : WalkResult::interrupt();
                }).wasInterrupted();
    };
    // Pass 1 runs every thread up to the last reduction: nothing before it
    // may write memory or use a reduction's result.
    gpu::AllReduceOp last = reduces.empty() ? nullptr : reduces.back();
    if (last)
      for (Operation *op = &body.front();; op = op->getNextNode()) {
        if (op != last && !isa<gpu::AllReduceOp>(op) && !onlyReads(op))
          return op->emitError("writes memory before the all_reduce");
        WalkResult uses = op->walk([&](Operation *inner) {
          for (Value v : inner->getOperands())
            if (auto r = v.getDefiningOp<gpu::AllReduceOp>();
                r && r->getBlock() == &body)
              return WalkResult::interrupt();
          return WalkResult::advance();
        });
        if (uses.wasInterrupted())
          return op->emitError("uses an all_reduce before the last one");
        if (op == last)
          break;
      }
    // The phases between top-level barriers.
    SmallVector<SmallVector<Operation *>> phases(1);
    for (Operation &op : body.without_terminator()) {
      if (isa<gpu::BarrierOp>(op)) {
        phases.emplace_back();
        continue;
      }
      if (op.walk([](gpu::BarrierOp) {
              return WalkResult::interrupt();
            }).wasInterrupted())
        return op.emitError("only top-level barriers are supported");
      phases.back().push_back(&op);
    }
    if (phases.size() > 1 && last)
      return launch.emitError("all_reduce and barriers in one kernel are not "
                              "supported");
    // A later phase recomputes the values of earlier phases it takes: those
    // of ops free of side effects that take only such values.
    DenseMap<Operation *, size_t> phaseOf;
    for (auto [i, phase] : llvm::enumerate(phases))
      for (Operation *op : phase)
        phaseOf[op] = i;
    // The top-level ops of the body whose values `op` takes (null: a block
    // argument of the body).
    auto takesFrom = [&](Operation *op) {
      SmallVector<Operation *> tops;
      op->walk([&](Operation *inner) {
        for (Value v : inner->getOperands()) {
          Operation *owner = v.getParentRegion()->getParentOp();
          if (launch->isAncestor(owner) && !op->isAncestor(owner))
            tops.push_back(v.getDefiningOp()
                               ? body.findAncestorOpInBlock(*v.getDefiningOp())
                               : nullptr);
        }
      });
      return tops;
    };
    DenseSet<Operation *> recomputable;
    for (auto [i, phase] : llvm::enumerate(phases))
      for (Operation *op : phase) {
        SmallVector<Operation *> tops = takesFrom(op);
        for (Operation *top : tops)
          if (top && phaseOf.lookup(top) != i && !recomputable.contains(top))
            return op->emitError("takes a value from before a barrier that "
                                 "cannot be recomputed");
        if (isMemoryEffectFree(op) && llvm::all_of(tops, [&](Operation *top) {
              return !top || recomputable.contains(top);
            }))
          recomputable.insert(op);
      }
    OpBuilder b(launch);
    Location loc = launch.getLoc();
    // Workgroup memory: a host buffer each block uses in turn.
    IRMapping shared;
    SmallVector<Value> buffers;
    for (BlockArgument arg : launch.getWorkgroupAttributions()) {
      auto type = cast<MemRefType>(arg.getType());
      buffers.push_back(memref::AllocOp::create(
          b, loc,
          MemRefType::get(type.getShape(), type.getElementType(),
                          type.getLayout())));
      shared.map(arg, buffers.back());
    }
    gpu::KernelDim3 grid = launch.getGridSizeOperandValues();
    gpu::KernelDim3 block = launch.getBlockSizeOperandValues();
    auto bind = [&](IRMapping &map, ArrayRef<Value> bids,
                    ArrayRef<Value> tids) {
      gpu::KernelDim3 b3 = launch.getBlockIds(), t3 = launch.getThreadIds();
      gpu::KernelDim3 gs = launch.getGridSize(), bs = launch.getBlockSize();
      map.map(b3.z, bids[0]), map.map(b3.y, bids[1]), map.map(b3.x, bids[2]);
      map.map(t3.z, tids[0]), map.map(t3.y, tids[1]), map.map(t3.x, tids[2]);
      map.map(gs.x, grid.x), map.map(gs.y, grid.y), map.map(gs.z, grid.z);
      map.map(bs.x, block.x), map.map(bs.y, block.y), map.map(bs.z, block.z);
    };
    buildNest(b, loc, {grid.z, grid.y, grid.x},
              [&](OpBuilder &nb, ArrayRef<Value> bids) {
                SmallVector<Value> sums;
                if (last) {
                  // Pass 1: every thread's contributions, summed.
                  SmallVector<Value> zeros;
                  for (gpu::AllReduceOp r : reduces)
                    zeros.push_back(arith::ConstantOp::create(
                        nb, loc, nb.getZeroAttr(r.getType())));
                  Value one = arith::ConstantIndexOp::create(nb, loc, 1);
                  Value c0 = arith::ConstantIndexOp::create(nb, loc, 0);
                  Value threads = arith::MulIOp::create(
                      nb, loc, arith::MulIOp::create(nb, loc, block.x, block.y),
                      block.z);
                  auto loop = scf::ForOp::create(
                      nb, loc, c0, threads, one, zeros,
                      [&](OpBuilder &lb, Location l, Value t, ValueRange acc) {
                        Value tx = arith::RemUIOp::create(lb, l, t, block.x);
                        Value rest = arith::DivUIOp::create(lb, l, t, block.x);
                        Value ty = arith::RemUIOp::create(lb, l, rest, block.y);
                        Value tz = arith::DivUIOp::create(lb, l, rest, block.y);
                        IRMapping map;
                        bind(map, bids, {tz, ty, tx});
                        for (Operation *op = &body.front(); op != last;
                             op = op->getNextNode())
                          if (!isa<gpu::AllReduceOp>(op))
                            lb.clone(*op, map);
                        SmallVector<Value> next;
                        for (auto [r, a] : llvm::zip(reduces, acc))
                          next.push_back(arith::AddFOp::create(
                              lb, l, a, map.lookup(r.getValue())));
                        scf::YieldOp::create(lb, l, next);
                      });
                  sums = loop.getResults();
                }
                // Pass 2 (or the only one): each phase of the body per
                // thread, the pure ops of earlier phases recomputed.
                for (size_t phase = 0; phase < phases.size(); ++phase)
                  buildNest(nb, loc, {block.z, block.y, block.x},
                            [&](OpBuilder &tb, ArrayRef<Value> tids) {
                              IRMapping map = shared;
                              bind(map, bids, tids);
                              for (auto [r, sum] : llvm::zip(reduces, sums))
                                map.map(r.getResult(), sum);
                              for (size_t before = 0; before < phase; ++before)
                                for (Operation *op : phases[before])
                                  if (recomputable.contains(op))
                                    tb.clone(*op, map);
                              for (Operation *op : phases[phase])
                                if (!isa<gpu::AllReduceOp>(op))
                                  tb.clone(*op, map);
                            });
              });
    for (Value buffer : buffers)
      memref::DeallocOp::create(b, loc, buffer);
    launch.erase();
    return success();
  }
};
} // namespace

namespace mlir::flashnorm::test {
void registerTestLaunchToLoopsPass() {
  PassRegistration<TestLaunchToLoopsPass>();
}
} // namespace mlir::flashnorm::test
