//===- GpuStreams.cpp - Device memory and the async token graph -----------===//
//
// Turns a device function (kernels as `gpu.launch`, the CPU schedule's
// `async.execute` tasks and `async.await` joins) into host code on streams:
// - buffers: arguments and mutable globals are copied to `gpu.alloc`ed
//   memory once per call (and back where the function writes them; one
//   copy of each global, however many ops name it), constant globals (the
//   weights) once per process
//   (`flashnorm.resident`: repeated calls move no weight bytes), allocations
//   become `gpu.alloc`, copies `gpu.memcpy`, results are copied back to host
//   allocations;
// - tokens: one main stream; each task forks a stream from the main one
//   (`gpu.wait async [%main]`, the main stream's token at the task, issued
//   after the work beside the task so that the host launches that work
//   first); an await joins explicitly
//   (`gpu.wait async [%main, %task]`, docs/MATH.md §6), so every launch has
//   exactly one dependency (gpu-to-llvm accepts no more, §5). A task with
//   no device work beside it before its await (a statistic whose cuBLASLt
//   GEMM waits for it) is issued on the main stream: no fork, no join;
// - one host `gpu.wait` at the end lists exactly one token of every stream
//   ever created: each stream is synchronized and destroyed exactly once,
//   including the ones that fed a join (which upstream never destroys).
//
//===----------------------------------------------------------------------===//

#include "flashnorm/Analysis/HappensBefore.h"
#include "flashnorm/Conversion/Passes.h"
#include "flashnorm/Dialect/FlashNorm/IR/FlashNormOps.h"
#include "flashnorm/Utils/Remarks.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::flashnorm {
#define GEN_PASS_DEF_GPUSTREAMS
#include "flashnorm/Conversion/Passes.h.inc"
} // namespace mlir::flashnorm

using namespace mlir;
using namespace mlir::flashnorm;

namespace {
constexpr StringLiteral kPass = "flashnorm-gpu-streams";

class StreamBuilder {
public:
  StreamBuilder(func::FuncOp fn, bool hostBuffers, PassReporter &reporter)
      : fn(fn), hostBuffers(hostBuffers), reporter(reporter),
        tokenType(gpu::AsyncTokenType::get(fn.getContext())) {}

  LogicalResult run() {
    Block &entry = fn.getBody().front();
    SmallVector<Operation *> ops;
    for (Operation &op : entry)
      ops.push_back(&op);
    OpBuilder b(&entry, entry.begin());
    if (!hostBuffers)
      checkAlignment(b);
    mainStream = fork(b, fn.getLoc(), {});
    if (hostBuffers)
      for (BlockArgument arg : fn.getArguments())
        if (isa<BaseMemRefType>(arg.getType()) && !arg.use_empty()) {
          FailureOr<Value> device = upload(b, fn.getLoc(), arg);
          if (failed(device))
            return failure();
          uploaded.push_back({arg, *device});
        }
    for (Operation *op : ops)
      if (failed(visit(op, mainStream)))
        return failure();
    for (Operation *op : executes)
      op->erase();
    reporter.applied(
        fn, Twine(tails.size()) + " stream(s), " + Twine(numJoins) +
                " join(s), " + Twine(numLaunches) + " launch(es), " +
                Twine(numResident) + " constant(s) kept on the device, " +
                Twine(numUnforked) +
                " task(s) on the main stream (nothing to run beside them)");
    return success();
  }

private:
  /// A new stream that waits for `deps`; returns its id.
  unsigned fork(OpBuilder &b, Location loc, ValueRange deps) {
    tails.push_back(
        gpu::WaitOp::create(b, loc, tokenType, deps).getAsyncToken());
    return tails.size() - 1;
  }

  /// With device buffers, a kernel may read an argument in vectors as wide
  /// as the driver's alignment of an allocation (256 bytes) allows, up to
  /// 16 bytes: a caller's view at an element offset would fault as a
  /// misaligned address in whichever kernel reads it first, an error the
  /// driver makes sticky for the whole context. Each argument is checked on
  /// entry instead, before any device work (flashnorm.check_alignment):
  /// a misaligned one ends the process with a message that names it.
  void checkAlignment(OpBuilder &b) {
    for (BlockArgument arg : fn.getArguments()) {
      auto type = dyn_cast<MemRefType>(arg.getType());
      if (!type || arg.use_empty())
        continue;
      int64_t alignment = assumedAlignment(type);
      if (alignment == 1)
        continue;
      std::string what;
      llvm::raw_string_ostream(what)
          << "argument #" << arg.getArgNumber() << " of @" << fn.getSymName()
          << " (" << type << ")";
      CheckAlignmentOp::create(b, fn.getLoc(), arg, alignment, what);
    }
  }

  /// The alignment in bytes the kernels may assume of a device buffer of
  /// `type`, beyond its element's: the widest vector (16 bytes) that the
  /// static extent of a row-major buffer divides into, as the kernels'
  /// choice of a load's width does (KernelQueries.cpp, GpuMma/); 16
  /// for a strided view, whose static offset and strides the kernels take
  /// as counted from a driver-aligned base. 1 where nothing is assumed.
  static int64_t assumedAlignment(MemRefType type) {
    if (!type.getElementType().isIntOrFloat())
      return 1;
    unsigned elementBits = type.getElementTypeBitWidth();
    if (elementBits % 8 || elementBits / 8 >= 16)
      return 1;
    if (!type.getLayout().isIdentity())
      return 16;
    // The power of two in the buffer's static bytes, capped at 16 (2^4).
    unsigned twos = llvm::countr_zero(elementBits / 8);
    for (int64_t size : type.getShape()) {
      if (size == 0)
        return 1;
      if (!ShapedType::isDynamic(size))
        twos += llvm::countr_zero(static_cast<uint64_t>(size));
    }
    int64_t alignment = int64_t(1) << std::min(twos, 4u);
    return alignment > elementBits / 8 ? alignment : 1;
  }

  /// A device copy of the host buffer `host`, used in its place from now
  /// on.
  FailureOr<Value> upload(OpBuilder &b, Location loc, Value host) {
    // (Its size is what the copy needs: a kernel would read a cast of an
    // unranked host buffer in host memory.)
    auto type = dyn_cast<MemRefType>(host.getType());
    if (!type)
      return emitError(loc)
             << "flashnorm-gpu-streams: cannot copy a buffer "
                "of type "
             << host.getType() << " (unranked) to the device; pass it ranked";
    if (!type.getLayout().isIdentity())
      return emitError(loc) << "flashnorm-gpu-streams: cannot copy a buffer "
                               "of type "
                            << type << " (non-identity layout) to the device";
    SmallVector<Value> sizes = dynamicSizes(b, loc, host);
    Value device = alloc(b, loc, type, sizes);
    // Everything after the copy reads the device buffer; the sizes of the
    // allocation still come from the host one.
    host.replaceUsesWithIf(device, [&](OpOperand &use) {
      Operation *user = use.getOwner();
      // (The size queries themselves keep the host buffer.)
      return user != device.getDefiningOp() &&
             !llvm::any_of(user->getResults(), [&](Value result) {
               return llvm::is_contained(sizes, result);
             });
    });
    auto copy = gpu::MemcpyOp::create(
        b, loc, tokenType, ValueRange{tails[mainStream]}, device, host);
    tails[mainStream] = copy.getAsyncToken();
    uploads.insert(copy);
    return device;
  }

  /// Whether `global` reads a constant that can stay on the device: a
  /// plain buffer of elements the runtime counts in whole bytes (8 to 64
  /// bits). Other globals are copied per call.
  static bool isConstant(memref::GetGlobalOp global) {
    auto symbol = SymbolTable::lookupNearestSymbolFrom<memref::GlobalOp>(
        global, global.getNameAttr());
    MemRefType type = global.getType();
    return symbol && symbol.getConstant() && type.hasStaticShape() &&
           type.getLayout().isIdentity() &&
           ResidentOp::isResidentElementType(type.getElementType());
  }

  /// The process-lifetime device copy of a constant, used in its place from
  /// now on. It is neither allocated nor freed here: the runtime owns it.
  void makeResident(OpBuilder &b, Location loc, memref::GetGlobalOp global) {
    MemRefType type = global.getType();
    auto resident =
        ResidentOp::create(b, loc, type, tokenType,
                           ValueRange{tails[mainStream]}, global.getResult());
    global.getResult().replaceAllUsesExcept(resident.getDevice(), resident);
    tails[mainStream] = resident.getAsyncToken();
    ++numResident;
  }

  Value alloc(OpBuilder &b, Location loc, MemRefType type, ValueRange dynamic) {
    auto op = gpu::AllocOp::create(b, loc, type, tokenType,
                                   ValueRange{tails[mainStream]}, dynamic,
                                   ValueRange{}, /*hostShared=*/false);
    tails[mainStream] = op.getAsyncToken();
    deviceBuffers.push_back(op.getMemref());
    return op.getMemref();
  }

  static SmallVector<Value> dynamicSizes(OpBuilder &b, Location loc,
                                         Value buffer) {
    SmallVector<Value> sizes;
    auto type = cast<MemRefType>(buffer.getType());
    for (int64_t d = 0; d < type.getRank(); ++d)
      if (type.isDynamicDim(d))
        sizes.push_back(memref::DimOp::create(b, loc, buffer, d));
    return sizes;
  }

  LogicalResult visit(Operation *op, unsigned stream) {
    OpBuilder b(op);
    Location loc = op->getLoc();
    if (isa<async::ExecuteOp>(op) ||
        (!isa<async::AwaitOp>(op) && !isMemoryEffectFree(op))) {
      // A join replaces the main stream; work meant for it follows.
      bool onMain = stream == mainStream;
      flushJoins(b, loc);
      if (onMain)
        stream = mainStream;
    }
    if (auto allocOp = dyn_cast<memref::AllocOp>(op)) {
      op->getResult(0).replaceAllUsesWith(
          alloc(b, loc, allocOp.getType(), allocOp.getDynamicSizes()));
      op->erase();
      return success();
    }
    if (auto global = dyn_cast<memref::GetGlobalOp>(op)) {
      b.setInsertionPointAfter(op);
      if (isConstant(global)) {
        makeResident(b, loc, global);
        return success();
      }
      // One device copy of a mutable global per call, whichever op names
      // it: what a kernel writes through one name, the others read.
      Operation *symbol =
          SymbolTable::lookupNearestSymbolFrom(global, global.getNameAttr());
      if (Value device = globalCopies.lookup(symbol)) {
        global.getResult().replaceAllUsesWith(device);
        op->erase();
        return success();
      }
      FailureOr<Value> device = upload(b, loc, global.getResult());
      if (failed(device))
        return failure();
      globalCopies[symbol] = *device;
      uploaded.push_back({global.getResult(), *device});
      return success();
    }
    if (isa<memref::DeallocOp>(op)) {
      op->erase(); // Device buffers are freed at the end.
      return success();
    }
    if (auto copy = dyn_cast<memref::CopyOp>(op)) {
      for (Value side : {copy.getSource(), copy.getTarget()})
        if (!cast<MemRefType>(side.getType()).getLayout().isIdentity())
          return op->emitError("flashnorm-gpu-streams: a copy of a strided "
                               "buffer is not a plain device copy (run "
                               "flashnorm-gpu-kernels first)");
      tails[stream] =
          gpu::MemcpyOp::create(b, loc, tokenType, ValueRange{tails[stream]},
                                copy.getTarget(), copy.getSource())
              .getAsyncToken();
      op->erase();
      return success();
    }
    if (auto launch = dyn_cast<gpu::LaunchOp>(op)) {
      auto async = gpu::LaunchOp::create(
          b, loc, launch.getGridSizeX(), launch.getGridSizeY(),
          launch.getGridSizeZ(), launch.getBlockSizeX(), launch.getBlockSizeY(),
          launch.getBlockSizeZ(), launch.getDynamicSharedMemorySize(),
          tokenType, ValueRange{tails[stream]},
          ValueRange(launch.getWorkgroupAttributions()).getTypes(),
          ValueRange(launch.getPrivateAttributions()).getTypes(), nullptr,
          nullptr, nullptr, launch.getModuleAttr(), launch.getFunctionAttr());
      async.getBody().takeBody(launch.getBody());
      tails[stream] = async.getAsyncToken();
      ++numLaunches;
      op->erase();
      return success();
    }
    // Other async ops (flashnorm.gemm_lt) join the stream as they are.
    if (auto async = dyn_cast<gpu::AsyncOpInterface>(op);
        async && async.getAsyncToken() &&
        async.getAsyncDependencies().empty()) {
      async.addAsyncDependency(tails[stream]);
      tails[stream] = async.getAsyncToken();
      return success();
    }
    if (auto exec = dyn_cast<async::ExecuteOp>(op)) {
      // The schedule's tasks take nothing and yield nothing; their order
      // comes from the awaits.
      if (!exec.getDependencies().empty() || !exec.getBodyOperands().empty() ||
          !exec.getBodyResults().empty())
        return op->emitError("flashnorm-gpu-streams: only async.execute "
                             "without dependencies, operands or results is "
                             "supported");
      // A task: its own stream, forked from the main one as it stands here,
      // where the main stream has work to run beside it (issued after that
      // work: flushForks); otherwise its work is issued on the main stream
      // as it stands, with neither fork nor join.
      // Erased once its awaits are gone.
      executes.push_back(op);
      std::optional<SmallVector<Operation *>> allocations;
      if (hasWorkBeside(exec) && (allocations = allocationsOf(exec))) {
        for (Operation *o : *allocations) {
          o->moveBefore(exec);
          if (failed(visit(o, mainStream)))
            return failure();
        }
        pendingForks.push_back({exec, tails[mainStream]});
        return success();
      }
      unforked.insert(exec.getToken());
      ++numUnforked;
      return issueTask(exec, op, mainStream);
    }
    if (auto await = dyn_cast<async::AwaitOp>(op)) {
      // (Its task must have its stream.)
      if (failed(flushForks(op)))
        return failure();
      if (unforked.contains(await.getOperand())) {
        op->erase(); // Ordered by the main stream already.
        return success();
      }
      auto it = taskStreams.find(await.getOperand());
      if (it == taskStreams.end())
        return op->emitError("flashnorm-gpu-streams: await of an unknown "
                             "task");
      // Joined before the next work on the main stream, with any awaits
      // next to it (one join for the statistic and the projection); later
      // awaits of a joined task are already ordered through the main stream.
      if (!joined.contains(it->second))
        pendingJoins.insert(it->second);
      op->erase();
      return success();
    }
    if (auto ret = dyn_cast<func::ReturnOp>(op))
      return failure(failed(flushForks(op)) || failed(finish(ret)));
    // A helper (a timer): no buffer crosses the call (whyHostFunction), so
    // it runs on the host where the program calls it, as issued.
    if (isa<CallOpInterface>(op))
      return success();
    // So does what can reach no buffer (a print of a host value).
    if (isa<ViewLikeOpInterface, memref::CastOp, memref::DimOp>(op) ||
        isMemoryEffectFree(op) || reachesNoBuffer(op))
      return success();
    return op->emitError("flashnorm-gpu-streams: '")
           << op->getName()
           << "' would touch device memory on the host; a device function "
              "holds kernels, copies and views only";
  }

  /// The buffers task `exec` allocates and the constants it reads: the
  /// main stream issues them, so a fork of the task must come after them
  /// for its stream to be ordered after them. None where one's sizes are
  /// computed in the task (it then runs on the main stream).
  static std::optional<SmallVector<Operation *>>
  allocationsOf(async::ExecuteOp exec) {
    SmallVector<Operation *> allocations;
    for (Operation &o : exec.getBodyRegion().front()) {
      if (!isa<memref::AllocOp, memref::GetGlobalOp>(o))
        continue;
      if (llvm::any_of(o.getOperands(), [&](Value v) {
            return exec->isProperAncestor(v.getParentBlock()->getParentOp());
          }))
        return std::nullopt;
      allocations.push_back(&o);
    }
    return allocations;
  }

  /// Whether the main stream has device work to issue between task `exec`
  /// and its first await (or the end): what a fork lets run beside the
  /// task. A fork and its join are host work on every call (a stream, two
  /// event records, waits; on an H200 an eager fork and join cost about 15
  /// us at decode), worth it only for that overlap. Where a deferred
  /// projection's GEMM was moved after the join (cuBLASLt with a pre-scaled
  /// activation) nothing is left beside the statistic.
  static bool hasWorkBeside(async::ExecuteOp exec) {
    for (Operation *op = exec->getNextNode(); op; op = op->getNextNode()) {
      if (auto await = dyn_cast<async::AwaitOp>(op))
        if (await.getOperand() == exec.getToken())
          return false;
      if (auto global = dyn_cast<memref::GetGlobalOp>(op)) {
        if (!isConstant(global)) // Copied to the device per call.
          return true;
        continue;
      }
      if (isa<async::AwaitOp, memref::AllocOp, memref::DeallocOp,
              func::ReturnOp>(op) ||
          isMemoryEffectFree(op) || reachesNoBuffer(op))
        continue;
      return true;
    }
    return false;
  }

  /// Moves the work of task `exec` before `at` and issues it on `stream`.
  LogicalResult issueTask(async::ExecuteOp exec, Operation *at,
                          unsigned stream) {
    SmallVector<Operation *> inner;
    for (Operation &o : exec.getBodyRegion().front().without_terminator())
      inner.push_back(&o);
    for (Operation *o : inner) {
      o->moveBefore(at);
      if (failed(visit(o, stream)))
        return failure();
    }
    return success();
  }

  /// Issues the pending forks before `at` (an await, a task that
  /// allocates, the end): each a stream that waits for the main stream as
  /// it stood at its task, then the task's work. gpu-to-llvm records a
  /// fork's event right after the op that made its token, so the host
  /// launches the main stream's kernels beside the task (the projection)
  /// before it takes a stream, waits and launches the statistic: the
  /// projection no longer waits for that host work (a few us eager per
  /// fork); the statistic, a fraction of the projection's time, still ends
  /// before it.
  LogicalResult flushForks(Operation *at) {
    if (pendingForks.empty())
      return success();
    OpBuilder b(at);
    for (auto [exec, dep] : pendingForks) {
      unsigned task = fork(b, exec.getLoc(), dep);
      taskStreams[exec.getToken()] = task;
      if (failed(issueTask(exec, at, task)))
        return failure();
    }
    pendingForks.clear();
    return success();
  }

  /// The explicit join of the main stream with the awaited tasks.
  void flushJoins(OpBuilder &b, Location loc) {
    if (pendingJoins.empty())
      return;
    SmallVector<Value> deps{tails[mainStream]};
    for (unsigned task : pendingJoins) {
      deps.push_back(tails[task]);
      joined.insert(task);
    }
    pendingJoins.clear();
    mainStream = fork(b, loc, deps);
    ++numJoins;
  }

  /// Results back to the host, every stream joined, buffers freed, one
  /// host wait that destroys each stream once.
  LogicalResult finish(func::ReturnOp ret) {
    OpBuilder b(ret);
    Location loc = ret.getLoc();
    SmallVector<Value> unjoined{tails[mainStream]};
    for (unsigned s = 0; s < tails.size(); ++s)
      if (s != mainStream && !joined.contains(s) && isTask(s))
        unjoined.push_back(tails[s]);
    if (unjoined.size() > 1)
      mainStream = fork(b, loc, unjoined);
    // With device buffers, results stay on the device, owned by the caller.
    llvm::SmallPtrSet<Value, 4> returned;
    for (OpOperand &result : ret->getOpOperands()) {
      auto type = dyn_cast<MemRefType>(result.get().getType());
      if (!type)
        continue;
      if (!hostBuffers) {
        // The caller owns (and frees) what it gets: a constant's device
        // copy belongs to the runtime, so it returns a copy of it.
        if (HappensBefore::getRoot(result.get()).getDefiningOp<ResidentOp>()) {
          if (!type.getLayout().isIdentity())
            return ret.emitError("flashnorm-gpu-streams: cannot return a "
                                 "strided view of a constant as a device "
                                 "buffer");
          Value copy = alloc(b, loc, type, dynamicSizes(b, loc, result.get()));
          tails[mainStream] =
              gpu::MemcpyOp::create(b, loc, tokenType,
                                    ValueRange{tails[mainStream]}, copy,
                                    result.get())
                  .getAsyncToken();
          result.set(copy);
        }
        returned.insert(HappensBefore::getRoot(result.get()));
        continue;
      }
      Value host = memref::AllocOp::create(b, loc, type,
                                           dynamicSizes(b, loc, result.get()));
      tails[mainStream] = gpu::MemcpyOp::create(b, loc, tokenType,
                                                ValueRange{tails[mainStream]},
                                                host, result.get())
                              .getAsyncToken();
      result.set(host);
    }
    // The caller's buffers hold what the function wrote into them, as on
    // the CPU (an importer's in-place KV-cache update writes into an
    // argument), and so do the mutable globals (a model's state: the next
    // call, and the host, read what the kernels stored).
    for (auto [host, device] : uploaded)
      if (isWritten(device))
        tails[mainStream] =
            gpu::MemcpyOp::create(b, loc, tokenType,
                                  ValueRange{tails[mainStream]}, host, device)
                .getAsyncToken();
    for (Value buffer : deviceBuffers)
      if (!returned.contains(buffer))
        tails[mainStream] =
            gpu::DeallocOp::create(b, loc, tokenType,
                                   ValueRange{tails[mainStream]}, buffer)
                .getAsyncToken();
    gpu::WaitOp::create(b, loc, Type(), tails);
    return success();
  }

  /// Whether any op of the function may write into `buffer` (the device
  /// copy of an argument or a global) besides the upload that fills it.
  bool isWritten(Value buffer) {
    bool written = false;
    for (Operation &op : fn.getBody().front()) {
      if (uploads.contains(&op))
        continue;
      forEachMemoryEffect(&op, [&](Value v, BufferAccess::Kind kind) {
        written |= kind == BufferAccess::Kind::Write &&
                   mayAliasRoots(HappensBefore::getRoot(v), buffer);
      });
    }
    return written;
  }

  bool isTask(unsigned s) const {
    return llvm::is_contained(llvm::make_second_range(taskStreams), s);
  }

  func::FuncOp fn;
  bool hostBuffers;
  PassReporter &reporter;
  Type tokenType;
  /// The last token of every stream created, by stream id.
  SmallVector<Value> tails;
  unsigned mainStream = 0, numJoins = 0, numLaunches = 0, numResident = 0,
           numUnforked = 0;
  DenseMap<Value, unsigned> taskStreams;
  /// Tasks issued on the main stream (nothing to run beside them).
  llvm::DenseSet<Value> unforked;
  llvm::DenseSet<unsigned> joined;
  llvm::SetVector<unsigned> pendingJoins;
  /// Tasks to fork once the work beside them is issued, each with the main
  /// stream's token at the task.
  SmallVector<std::pair<async::ExecuteOp, Value>> pendingForks;
  SmallVector<Value> deviceBuffers;
  /// Each host buffer copied to the device (an argument with host buffers,
  /// a mutable global) and its device copy, and the uploads.
  SmallVector<std::pair<Value, Value>> uploaded;
  /// The device copy of each mutable global the function names.
  DenseMap<Operation *, Value> globalCopies;
  llvm::SmallPtrSet<Operation *, 8> uploads;
  SmallVector<Operation *> executes;
};

struct GpuStreamsPass : flashnorm::impl::GpuStreamsBase<GpuStreamsPass> {
  using GpuStreamsBase::GpuStreamsBase;

  void runOnOperation() override {
    // Which functions are device functions, judged on the module as it
    // comes in (a caller's verdict reads its callees, rewritten here).
    CallEffects calls(getOperation());
    bool failedAny = false;
    for (auto fn : llvm::to_vector(getOperation().getOps<func::FuncOp>()))
      failedAny |= failed(runOnFunction(fn, calls));
    if (failedAny)
      signalPassFailure();
  }

  LogicalResult runOnFunction(func::FuncOp fn, const CallEffects &calls) {
    if (fn.isExternal())
      return success();
    // Device work: kernels, or a cuBLASLt GEMM alone (a projection whose
    // only reader rounds its product).
    bool hasDeviceWork = false;
    fn.walk([&](Operation *op) {
      if (isa<gpu::LaunchOp, GemmLtOp>(op))
        hasDeviceWork = true;
    });
    if (!hasDeviceWork || !whyHostFunction(fn, calls).empty())
      return success();
    // On streams already (this pass ran, or the code was written so: host
    // waits, asynchronous launches): its tokens order the work as they are.
    WalkResult streamed = fn.walk([](Operation *op) {
      auto launch = dyn_cast<gpu::LaunchOp>(op);
      return isa<gpu::WaitOp>(op) || (launch && launch.getAsyncToken())
                 ? WalkResult::interrupt()
                 : WalkResult::advance();
    });
    if (streamed.wasInterrupted())
      return success();
    if (!fn.getBody().hasOneBlock()) {
      fn.emitError("flashnorm-gpu-streams: device functions must be one "
                   "block");
      return failure();
    }
    PassReporter reporter(fn, kPass);
    return StreamBuilder(fn, hostBuffers, reporter).run();
  }
};
} // namespace
