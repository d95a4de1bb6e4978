//===- TestLaunchToLoops.cpp - Run GPU kernels on the CPU, for tests ------===//
//
// Turns every `gpu.launch` into sequential loops over blocks and threads, so
// the kernels flashnorm-gpu-kernels builds can be executed, and their numbers
// checked, on a machine without a GPU. Block-wide `gpu.all_reduce add`s
// run the threads up to the last reduction, summing what each thread
// contributes to each, then again with the sums in place of the
// reductions; reductions that use an earlier one's result (a LayerNorm's
// deviations from the mean of the row's sum) take a pass of their own, with
// the earlier sums in place. That needs the code before the last reduction
// to have no side effects but reads, which holds for the row-reduction
// kernels (the pass fails otherwise). Top-level
// `gpu.barrier`s split the body into phases, each run by every thread of the
// block before the next starts; a later phase recomputes the side-effect
// free values it takes from earlier ones and may take no other (the
// tensor-core kernels' slices meet in shared memory that way). A top-level
// `scf.for` whose body holds barriers (at its top level: the staged
// prefill kernels' k loop) runs as a loop around its phases, each phase
// run by every thread: what a thread carries (the loop's values, and any
// value a later phase of the body takes that cannot be recomputed) lives
// in a buffer with a slot per thread between phases. Workgroup
// buffers are host buffers, one per launch, reused by each block in turn;
// so is each view of dynamic shared memory.
// `cp.async` copies (nvgpu.device_async_copy) are plain copies; their
// groups and waits go: a phase's copies are done when the phase ends.
// Vector loads lose their alignment: what a GPU's allocations guarantee (256
// bytes) host memory and globals need not.
//
// `flashnorm.gemm_lt` (cuBLASLt) becomes the loops of what cuBLASLt
// computes: each output's products summed in f32, rounded once to the
// output's type.
// Each `vector.contract` (the tensor-core kernels' m16n8k16 fragments)
// becomes loops over its iteration space on stack buffers, with the
// arithmetic the CPU lowering's outer products do (each output's products
// in k order, fused multiply-adds in the accumulator's type). Unrolled,
// one fragment was 256 vector FMAs and twice as many element moves: a
// kernel of 24 fragments made 11 MB of LLVM IR, whose compilation was
// most of the time the tests of those kernels took.
//
//===----------------------------------------------------------------------===//

#include "flashnorm/Dialect/FlashNorm/IR/FlashNormOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Async/IR/Async.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;

namespace {
/// Loops from 0 to each value of `ubs`, innermost last; calls `body` with
/// the induction variables.
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
    registry.insert<scf::SCFDialect, arith::ArithDialect, math::MathDialect,
                    memref::MemRefDialect, vector::VectorDialect>();
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
    SmallVector<vector::ContractionOp> contracts;
    getOperation().walk(
        [&](vector::ContractionOp op) { contracts.push_back(op); });
    StackBuffers buffers;
    for (vector::ContractionOp contract : contracts)
      if (failed(contractAsLoops(contract, buffers)))
        return signalPassFailure();
  }

  /// `contract` as loops on stack buffers: its operands stored, each point
  /// of the iteration space adding its product to the accumulator's
  /// element, the accumulator read back. The buffers are allocated once at
  /// the start of the function or async task that runs the contraction (an
  /// alloca in a loop would take more stack each iteration; an alloca
  /// scope around the loops would hold several blocks once they are
  /// branches), one per operand, shape and type: the contractions of a task
  /// run one after another, each done with its buffers when it ends.
  using StackBuffers = DenseMap<std::tuple<Block *, unsigned, Type>, Value>;
  LogicalResult contractAsLoops(vector::ContractionOp contract,
                                StackBuffers &buffers) {
    auto accType = dyn_cast<VectorType>(contract.getAccType());
    SmallVector<AffineMap> maps = contract.getIndexingMapsArray();
    // Operands of floats no wider than the accumulator's, extended to it.
    auto widens = [&](Type type) {
      auto from = dyn_cast<FloatType>(type);
      auto to = dyn_cast<FloatType>(accType.getElementType());
      return from && to && from.getWidth() <= to.getWidth();
    };
    if (!accType || !widens(contract.getLhsType().getElementType()) ||
        !widens(contract.getRhsType().getElementType()) ||
        contract.getKind() != vector::CombiningKind::ADD ||
        isa<vector::MaskingOpInterface>(contract->getParentOp()) ||
        !llvm::all_of(
            maps, [](AffineMap map) { return map.isProjectedPermutation(); }))
      return contract.emitError("only unmasked float contractions that add, "
                                "their maps projected permutations, run here");
    Operation *task = contract->getParentOp();
    while (!isa<func::FuncOp, async::ExecuteOp>(task))
      task = task->getParentOp();
    Block *entry = &task->getRegion(0).front();
    SmallVector<int64_t> bounds;
    contract.getIterationBounds(bounds);
    OpBuilder b(contract);
    Location loc = contract.getLoc();
    Type accElement = accType.getElementType();
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    auto stored = [&](Value vector, unsigned operand) -> Value {
      auto type = cast<VectorType>(vector.getType());
      auto bufferType = MemRefType::get(type.getShape(), type.getElementType());
      Value &buffer = buffers[{entry, operand, bufferType}];
      if (!buffer) {
        OpBuilder atEntry = OpBuilder::atBlockBegin(entry);
        buffer = memref::AllocaOp::create(atEntry, loc, bufferType);
      }
      SmallVector<Value> origin(type.getRank(), zero);
      SmallVector<bool> inBounds(type.getRank(), true);
      vector::TransferWriteOp::create(b, loc, vector, buffer, origin, inBounds);
      return buffer;
    };
    Value lhs = stored(contract.getLhs(), 0),
          rhs = stored(contract.getRhs(), 1),
          acc = stored(contract.getAcc(), 2);
    SmallVector<Value> ubs;
    for (int64_t bound : bounds)
      ubs.push_back(arith::ConstantIndexOp::create(b, loc, bound));
    buildNest(b, loc, ubs, [&](OpBuilder &nb, ArrayRef<Value> ivs) {
      auto at = [&](AffineMap map) {
        SmallVector<Value> indices;
        for (AffineExpr e : map.getResults())
          indices.push_back(ivs[cast<AffineDimExpr>(e).getPosition()]);
        return indices;
      };
      auto load = [&](Value buffer, AffineMap map) -> Value {
        Value v = memref::LoadOp::create(nb, loc, buffer, at(map));
        return v.getType() == accElement
                   ? v
                   : arith::ExtFOp::create(nb, loc, accElement, v);
      };
      Value sum = math::FmaOp::create(nb, loc, load(lhs, maps[0]),
                                      load(rhs, maps[1]), load(acc, maps[2]));
      memref::StoreOp::create(nb, loc, sum, acc, at(maps[2]));
    });
    SmallVector<Value> origin(accType.getRank(), zero);
    SmallVector<bool> inBounds(accType.getRank(), true);
    Value padding =
        arith::ConstantOp::create(b, loc, b.getZeroAttr(accElement));
    Value result = vector::TransferReadOp::create(b, loc, accType, acc, origin,
                                                  padding, inBounds);
    contract.getResult().replaceAllUsesWith(result);
    contract.erase();
    return success();
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
    // The loops replace a launch in the host's program order: a launch on
    // streams (its token read by waits, frees) is from after that order
    // was turned into tokens.
    if (launch.getAsyncToken() || !launch.getAsyncDependencies().empty())
      return launch.emitError("runs kernels before flashnorm-gpu-streams: "
                              "a launch without async tokens");
    if (failed(lowerAsyncCopies(launch)) || failed(viewsToAttributions(launch)))
      return failure();
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
    // The threads run up to the last reduction once per stage of
    // reductions, so nothing before it may write memory. A stage ends where
    // an op uses the result of one of its reductions (a LayerNorm's mean,
    // from the row's sum, before the deviations from it are summed): the
    // later stages run with the earlier ones' sums in place.
    gpu::AllReduceOp last = reduces.empty() ? nullptr : reduces.back();
    SmallVector<SmallVector<gpu::AllReduceOp>> stages;
    if (last) {
      stages.emplace_back();
      for (Operation *op = &body.front();; op = op->getNextNode()) {
        if (op != last && !isa<gpu::AllReduceOp>(op) && !onlyReads(op))
          return op->emitError("writes memory before the all_reduce");
        WalkResult uses = op->walk([&](Operation *inner) {
          for (Value v : inner->getOperands())
            if (auto r = v.getDefiningOp<gpu::AllReduceOp>();
                r && llvm::is_contained(stages.back(), r))
              return WalkResult::interrupt();
          return WalkResult::advance();
        });
        if (uses.wasInterrupted())
          stages.emplace_back();
        if (auto r = dyn_cast<gpu::AllReduceOp>(op))
          stages.back().push_back(r);
        if (op == last)
          break;
      }
    }
    // The phases between top-level barriers; a loop with barriers in its
    // body is a phase of its own.
    auto hasBarrier = [](Operation *op) {
      return op->walk([](gpu::BarrierOp) { return WalkResult::interrupt(); })
          .wasInterrupted();
    };
    Phases top;
    top.phases.emplace_back();
    DenseMap<Operation *, Phases> loops;
    for (Operation &op : body.without_terminator()) {
      if (isa<gpu::BarrierOp>(op)) {
        top.phases.emplace_back();
        continue;
      }
      if (!hasBarrier(&op)) {
        top.phases.back().push_back(&op);
        continue;
      }
      auto loop = dyn_cast<scf::ForOp>(op);
      if (!loop || llvm::any_of(loop.getBody()->without_terminator(),
                                [&](Operation &inner) {
                                  return !isa<gpu::BarrierOp>(inner) &&
                                         hasBarrier(&inner);
                                }))
        return op.emitError("only barriers at the top level of the kernel "
                            "or of a loop there are supported");
      for (Value bound :
           {loop.getLowerBound(), loop.getUpperBound(), loop.getStep()})
        if (launch->isAncestor(bound.getParentRegion()->getParentOp()) &&
            !bound.getDefiningOp<arith::ConstantOp>())
          return loop.emitError("a loop with barriers must have constant "
                                "bounds");
      Phases &inner = loops[loop];
      inner.phases.emplace_back();
      for (Operation &bodyOp : loop.getBody()->without_terminator()) {
        if (isa<gpu::BarrierOp>(bodyOp))
          inner.phases.emplace_back();
        else
          inner.phases.back().push_back(&bodyOp);
      }
      if (failed(inner.analyze(*loop.getBody())))
        return failure();
      top.phases.push_back({loop});
      top.phases.emplace_back();
    }
    if (top.phases.size() > 1 && last)
      return launch.emitError("all_reduce and barriers in one kernel are not "
                              "supported");
    if (failed(top.analyze(body)))
      return failure();
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
    // What a thread keeps across a barrier in a loop: a slot per thread.
    DenseMap<Value, Value> slots;
    Value threads = arith::MulIOp::create(
        b, loc, arith::MulIOp::create(b, loc, block.x, block.y), block.z);
    auto addSlot = [&](Value v) {
      buffers.push_back(memref::AllocOp::create(
          b, loc, MemRefType::get({ShapedType::kDynamic}, v.getType()),
          ValueRange{threads}));
      slots[v] = buffers.back();
    };
    for (auto &[op, inner] : loops) {
      for (Value result : op->getResults())
        addSlot(result);
      for (Value v : inner.spilled)
        addSlot(v);
    }
    for (Value v : top.spilled)
      if (!slots.contains(v))
        addSlot(v);
    auto bind = [&](IRMapping &map, ArrayRef<Value> bids,
                    ArrayRef<Value> tids) {
      gpu::KernelDim3 b3 = launch.getBlockIds(), t3 = launch.getThreadIds();
      gpu::KernelDim3 gs = launch.getGridSize(), bs = launch.getBlockSize();
      map.map(b3.z, bids[0]), map.map(b3.y, bids[1]), map.map(b3.x, bids[2]);
      map.map(t3.z, tids[0]), map.map(t3.y, tids[1]), map.map(t3.x, tids[2]);
      map.map(gs.x, grid.x), map.map(gs.y, grid.y), map.map(gs.z, grid.z);
      map.map(bs.x, block.x), map.map(bs.y, block.y), map.map(bs.z, block.z);
    };
    buildNest(
        b, loc, {grid.z, grid.y, grid.x},
        [&](OpBuilder &nb, ArrayRef<Value> bids) {
          SmallVector<Value> sums;
          // A pass per stage: every thread's contributions to the stage's
          // reductions, summed, the earlier stages' sums in place.
          for (SmallVector<gpu::AllReduceOp> &stage : stages) {
            SmallVector<Value> zeros;
            for (gpu::AllReduceOp r : stage)
              zeros.push_back(arith::ConstantOp::create(
                  nb, loc, nb.getZeroAttr(r.getType())));
            Value one = arith::ConstantIndexOp::create(nb, loc, 1);
            Value c0 = arith::ConstantIndexOp::create(nb, loc, 0);
            auto loop = scf::ForOp::create(
                nb, loc, c0, threads, one, zeros,
                [&](OpBuilder &lb, Location l, Value t, ValueRange acc) {
                  Value tx = arith::RemUIOp::create(lb, l, t, block.x);
                  Value rest = arith::DivUIOp::create(lb, l, t, block.x);
                  Value ty = arith::RemUIOp::create(lb, l, rest, block.y);
                  Value tz = arith::DivUIOp::create(lb, l, rest, block.y);
                  IRMapping map;
                  bind(map, bids, {tz, ty, tx});
                  for (auto [r, sum] : llvm::zip(reduces, sums))
                    map.map(r.getResult(), sum);
                  for (Operation *op = &body.front(); op != stage.back();
                       op = op->getNextNode())
                    if (!isa<gpu::AllReduceOp>(op))
                      lb.clone(*op, map);
                  SmallVector<Value> next;
                  for (auto [r, a] : llvm::zip(stage, acc))
                    next.push_back(arith::AddFOp::create(
                        lb, l, a, map.lookup(r.getValue())));
                  scf::YieldOp::create(lb, l, next);
                });
            llvm::append_range(sums, loop.getResults());
          }
          // Runs `run` for every thread of the block with the values of the
          // phases before `phase` in its map: the pure ops recomputed, the
          // others loaded from the thread's slots. `run` also gets the
          // thread's slot index.
          auto eachThread =
              [&](OpBuilder &ob, size_t phase,
                  function_ref<void(OpBuilder &, IRMapping &, Value)> run) {
                buildNest(ob, loc, {block.z, block.y, block.x},
                          [&](OpBuilder &tb, ArrayRef<Value> tids) {
                            IRMapping map = shared;
                            bind(map, bids, tids);
                            for (auto [r, sum] : llvm::zip(reduces, sums))
                              map.map(r.getResult(), sum);
                            Value slot = arith::AddIOp::create(
                                tb, loc,
                                arith::MulIOp::create(
                                    tb, loc,
                                    arith::AddIOp::create(
                                        tb, loc,
                                        arith::MulIOp::create(tb, loc, tids[0],
                                                              block.y),
                                        tids[1]),
                                    block.x),
                                tids[2]);
                            top.restore(tb, loc, map, phase, slots, slot);
                            run(tb, map, slot);
                          });
              };
          // Pass 2 (or the only one): each phase of the body per thread.
          for (size_t phase = 0; phase < top.phases.size(); ++phase) {
            auto it = top.phases[phase].empty()
                          ? loops.end()
                          : loops.find(top.phases[phase].front());
            if (it == loops.end()) {
              eachThread(nb, phase,
                         [&](OpBuilder &tb, IRMapping &map, Value slot) {
                           for (Operation *op : top.phases[phase])
                             if (!isa<gpu::AllReduceOp>(op))
                               tb.clone(*op, map);
                           top.keep(tb, loc, map, phase, slots, slot);
                         });
              continue;
            }
            auto loop = cast<scf::ForOp>(it->first);
            const Phases &inner = it->second;
            // Each thread's initial values, then the loop around the phases of
            // its body, each run by every thread.
            eachThread(nb, phase,
                       [&](OpBuilder &tb, IRMapping &map, Value slot) {
                         for (auto [init, result] :
                              llvm::zip(loop.getInitArgs(), loop.getResults()))
                           store(tb, loc, map.lookupOrDefault(init),
                                 slots[result], slot);
                       });
            auto bound = [&](Value v) -> Value {
              if (!launch->isAncestor(v.getParentRegion()->getParentOp()))
                return v;
              return nb.clone(*v.getDefiningOp())->getResult(0);
            };
            auto rebuilt = scf::ForOp::create(
                nb, loc, bound(loop.getLowerBound()),
                bound(loop.getUpperBound()), bound(loop.getStep()));
            OpBuilder lb = OpBuilder::atBlockTerminator(rebuilt.getBody());
            for (size_t q = 0; q < inner.phases.size(); ++q)
              eachThread(
                  lb, phase, [&](OpBuilder &tb, IRMapping &map, Value slot) {
                    map.map(loop.getInductionVar(), rebuilt.getInductionVar());
                    for (auto [arg, result] :
                         llvm::zip(loop.getRegionIterArgs(), loop.getResults()))
                      map.map(arg, load(tb, loc, slots[result], slot));
                    inner.restore(tb, loc, map, q, slots, slot);
                    for (Operation *op : inner.phases[q])
                      tb.clone(*op, map);
                    inner.keep(tb, loc, map, q, slots, slot);
                    if (q + 1 == inner.phases.size())
                      for (auto [next, result] : llvm::zip(
                               loop.getBody()->getTerminator()->getOperands(),
                               loop.getResults()))
                        store(tb, loc, map.lookupOrDefault(next), slots[result],
                              slot);
                  });
          }
        });
    for (Value buffer : buffers)
      memref::DeallocOp::create(b, loc, buffer);
    launch.erase();
    return success();
  }

  /// The ops of a block (a kernel's body, or the body of a loop in it
  /// with barriers) in phases between its barriers; the terminator takes
  /// its operands in the last. A later phase recomputes the values of the
  /// ops free of side effects that take only such values (index math); a
  /// thread keeps the others it takes from an earlier phase in a slot.
  struct Phases {
    SmallVector<SmallVector<Operation *>> phases;
    DenseSet<Operation *> recomputable;
    llvm::SetVector<Value> spilled;

    LogicalResult analyze(Block &block) {
      DenseMap<Operation *, size_t> phaseOf;
      for (auto [q, phase] : llvm::enumerate(phases))
        for (Operation *op : phase)
          phaseOf[op] = q;
      // Marks the values `op` (in phase `q`) takes from earlier phases to
      // be kept unless recomputed; whether it takes only recomputed ones.
      auto take = [&](Operation *op, size_t q) {
        bool pure = true;
        op->walk([&](Operation *inner) {
          for (Value v : inner->getOperands()) {
            Operation *def = v.getDefiningOp();
            Operation *top = def ? block.findAncestorOpInBlock(*def) : nullptr;
            if (!top || op->isAncestor(def) || recomputable.contains(top))
              continue;
            pure = false;
            if (phaseOf.lookup(top) < q)
              spilled.insert(v);
          }
        });
        return pure;
      };
      for (auto [q, phase] : llvm::enumerate(phases))
        for (Operation *op : phase)
          if (take(op, q) && isMemoryEffectFree(op))
            recomputable.insert(op);
      take(block.getTerminator(), phases.size() - 1);
      for (Value v : spilled)
        if (!MemRefType::isValidElementType(v.getType()))
          return v.getDefiningOp()->emitError(
              "a value kept across a barrier must fit in a buffer");
      return success();
    }

    /// Into `map`, the values of the phases before `phase`: recomputed, or
    /// loaded from the thread's slots.
    void restore(OpBuilder &b, Location loc, IRMapping &map, size_t phase,
                 DenseMap<Value, Value> &slots, Value slot) const {
      for (size_t before = 0; before < phase; ++before)
        for (Operation *op : phases[before]) {
          if (recomputable.contains(op))
            b.clone(*op, map);
          for (Value v : op->getResults())
            if (spilled.contains(v))
              map.map(v, load(b, loc, slots[v], slot));
        }
    }

    /// The values of `phase` that later phases take, into the thread's
    /// slots.
    void keep(OpBuilder &b, Location loc, IRMapping &map, size_t phase,
              DenseMap<Value, Value> &slots, Value slot) const {
      for (Operation *op : phases[phase])
        for (Value v : op->getResults())
          if (spilled.contains(v))
            store(b, loc, map.lookup(v), slots[v], slot);
    }
  };

  static Value load(OpBuilder &b, Location loc, Value slots, Value slot) {
    return memref::LoadOp::create(b, loc, slots, ValueRange{slot});
  }
  static void store(OpBuilder &b, Location loc, Value v, Value slots,
                    Value slot) {
    memref::StoreOp::create(b, loc, v, slots, ValueRange{slot});
  }

  /// Each typed view of dynamic shared memory as a workgroup buffer of its
  /// own (then a host buffer like any other): the views must not overlap,
  /// since the buffers will not alias.
  static LogicalResult viewsToAttributions(gpu::LaunchOp launch) {
    SmallVector<gpu::DynamicSharedMemoryOp> raws;
    launch.walk([&](gpu::DynamicSharedMemoryOp op) { raws.push_back(op); });
    std::vector<std::pair<int64_t, int64_t>> ranges; // [begin, end) bytes
    for (gpu::DynamicSharedMemoryOp raw : raws) {
      for (Operation *user : llvm::make_early_inc_range(raw->getUsers())) {
        auto view = dyn_cast<memref::ViewOp>(user);
        std::optional<int64_t> shift =
            view ? getConstantIntValue(view.getByteShift()) : std::nullopt;
        if (!shift || !view.getType().hasStaticShape())
          return user->emitError("dynamic shared memory is read through "
                                 "static views at constant offsets only");
        MemRefType type = view.getType();
        int64_t end =
            *shift + type.getNumElements() * type.getElementTypeBitWidth() / 8;
        for (auto [begin, last] : ranges)
          if (*shift < last && begin < end)
            return view.emitError("views of dynamic shared memory overlap");
        ranges.emplace_back(*shift, end);
        view.replaceAllUsesWith(
            launch.addWorkgroupAttribution(type, view.getLoc()));
        view.erase();
      }
      raw.erase();
    }
    return success();
  }

  /// cp.async copies as plain vector copies; their groups and waits go.
  static LogicalResult lowerAsyncCopies(gpu::LaunchOp launch) {
    SmallVector<Operation *> waits, groups;
    SmallVector<nvgpu::DeviceAsyncCopyOp> copies;
    launch.walk([&](Operation *op) {
      if (isa<nvgpu::DeviceAsyncWaitOp>(op))
        waits.push_back(op);
      else if (isa<nvgpu::DeviceAsyncCreateGroupOp>(op))
        groups.push_back(op);
      else if (auto copy = dyn_cast<nvgpu::DeviceAsyncCopyOp>(op))
        copies.push_back(copy);
    });
    for (nvgpu::DeviceAsyncCopyOp copy : copies)
      if (copy.getSrcElements())
        return copy.emitError("only whole cp.async copies run here");
    for (Operation *op : llvm::concat<Operation *>(waits, groups))
      op->erase();
    for (nvgpu::DeviceAsyncCopyOp copy : copies) {
      OpBuilder b(copy);
      auto type = VectorType::get(
          {copy.getDstElements().getSExtValue()},
          cast<MemRefType>(copy.getDst().getType()).getElementType());
      Value v = vector::LoadOp::create(b, copy.getLoc(), type, copy.getSrc(),
                                       copy.getSrcIndices());
      vector::StoreOp::create(b, copy.getLoc(), v, copy.getDst(),
                              copy.getDstIndices());
      copy.erase();
    }
    return success();
  }
};
} // namespace

namespace mlir::flashnorm::test {
void registerTestLaunchToLoopsPass() {
  PassRegistration<TestLaunchToLoopsPass>();
}
} // namespace mlir::flashnorm::test
