//===- VerifyStreams.cpp - Stream and event lifetimes in host code --------===//
//
// Upstream's gpu-to-llvm never destroys a stream that feeds a join, and
// waiting twice on tokens of one stream destroys it twice (docs/MATH.md §5).
// This pass checks the lowered host code: a forward data flow over the CFG
// tracks, per stream, how often each path has destroyed it (0, 1, more) and
// per event whether a path may have destroyed it. Leaked events are not
// reported (the lowering destroys each right after its waits are enqueued);
// handles passed through block arguments are not tracked.
//
//===----------------------------------------------------------------------===//

#include "flashnorm/Conversion/Passes.h"
#include "flashnorm/Utils/Remarks.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/PostOrderIterator.h"

namespace mlir::flashnorm {
#define GEN_PASS_DEF_VERIFYSTREAMS
#include "flashnorm/Conversion/Passes.h.inc"
} // namespace mlir::flashnorm

using namespace mlir;
using namespace mlir::flashnorm;

namespace {
/// Possible states of one handle over all paths, as bits.
enum : unsigned {
  kLive = 1,      // created, not destroyed
  kDestroyed = 2, // destroyed once
  kTwice = 4,     // destroyed more than once
};
using State = llvm::MapVector<Value, unsigned>;

StringRef calleeOf(Operation *op) {
  if (auto call = dyn_cast<LLVM::CallOp>(op))
    if (auto callee = call.getCallee())
      return *callee;
  return {};
}

/// The stream and event operands `op` uses, by the mgpu* ABI.
void getUses(Operation *op, SmallVectorImpl<Value> &streams,
             SmallVectorImpl<Value> &events) {
  if (auto launch = dyn_cast<gpu::LaunchFuncOp>(op)) {
    if (Value stream = launch.getAsyncObject())
      streams.push_back(stream);
    return;
  }
  StringRef callee = calleeOf(op);
  if (callee.empty())
    return;
  ValueRange args = op->getOperands();
  auto streamAt = [&](unsigned i) {
    if (i < args.size())
      streams.push_back(args[i]);
  };
  if (callee == "mgpuStreamSynchronize")
    streamAt(0);
  else if (callee == "mgpuStreamWaitEvent")
    streamAt(0), events.push_back(args[1]);
  else if (callee == "mgpuEventRecord")
    events.push_back(args[0]), streamAt(1);
  else if (callee == "mgpuEventSynchronize")
    events.push_back(args[0]);
  else if (callee == "mgpuMemAlloc" || callee == "mgpuMemFree")
    streamAt(1);
  else if (callee == "mgpuMemcpy" || callee.starts_with("mgpuMemset"))
    streamAt(3);
  else if (callee == "mgpuLaunchKernel")
    streamAt(8);
  else if (callee == "mgpuFlashNormGemmLt" || callee == "mgpuFlashNormResident")
    streamAt(0);
}

class Checker {
public:
  explicit Checker(LLVM::LLVMFuncOp fn) : fn(fn) {}

  bool run() {
    // Fixed point over the CFG, then one reporting sweep.
    llvm::ReversePostOrderTraversal<Region *> rpo(&fn.getBody());
    DenseMap<Block *, State> in;
    for (bool changed = true; changed;) {
      changed = false;
      for (Block *block : rpo) {
        State state = in.lookup(block);
        for (Operation &op : *block)
          transfer(&op, state, /*report=*/false);
        for (Block *succ : block->getSuccessors())
          changed |= merge(in[succ], state);
      }
    }
    for (Block *block : rpo) {
      State state = in.lookup(block);
      for (Operation &op : *block)
        transfer(&op, state, /*report=*/true);
    }
    return failed;
  }

private:
  static bool merge(State &into, const State &from) {
    bool changed = false;
    for (auto [value, bits] : from) {
      unsigned &mine = into[value];
      changed |= (mine | bits) != mine;
      mine |= bits;
    }
    return changed;
  }

  void error(bool report, Operation *op, const Twine &message) {
    if (!report)
      return;
    failed = true;
    op->emitError() << message;
  }

  void transfer(Operation *op, State &state, bool report) {
    StringRef callee = calleeOf(op);
    if (callee == "mgpuStreamCreate" || callee == "mgpuEventCreate") {
      Value handle = op->getResult(0);
      auto it = state.find(handle);
      if (it != state.end() && (it->second & kLive))
        error(report, op,
              "a " + Twine(callee == "mgpuStreamCreate" ? "stream" : "event") +
                  " created here is created again before a path destroyed "
                  "it");
      state[handle] = kLive;
      return;
    }
    if (callee == "mgpuStreamDestroy" || callee == "mgpuEventDestroy") {
      if (op->getNumOperands() != 1)
        return;
      auto it = state.find(op->getOperand(0));
      if (it == state.end())
        return; // Not created here: nothing to check.
      if (it->second & (kDestroyed | kTwice))
        error(report, op, "this may destroy the stream or event a second time");
      unsigned next = 0;
      if (it->second & kLive)
        next |= kDestroyed;
      if (it->second & (kDestroyed | kTwice))
        next |= kTwice;
      it->second = next;
      return;
    }
    // A handle given to a function other than the runtime's may be
    // destroyed there: from here on it is not tracked (a warning says so).
    if (auto call = dyn_cast<LLVM::CallOp>(op);
        call && !callee.starts_with("mgpu"))
      for (Value operand : call.getArgOperands()) {
        auto it = state.find(operand);
        if (it == state.end())
          continue;
        if (report)
          op->emitWarning() << "flashnorm-verify-streams: not verified: the "
                               "stream or event created at "
                            << formatLoc(operand.getLoc())
                            << " is passed to another function";
        state.erase(it);
      }
    SmallVector<Value> streams, events;
    getUses(op, streams, events);
    for (Value handle : llvm::concat<Value>(streams, events)) {
      auto it = state.find(handle);
      if (it != state.end() && (it->second & (kDestroyed | kTwice)))
        error(report, op,
              "this uses a stream or event that a path may have destroyed");
    }
    if (isa<LLVM::ReturnOp>(op))
      for (auto [handle, bits] : state) {
        if (calleeOf(handle.getDefiningOp()) != "mgpuStreamCreate")
          continue;
        if (bits & kLive)
          error(report, handle.getDefiningOp(),
                "this stream is not destroyed on every path to the return "
                "at " +
                    formatLoc(op->getLoc()));
      }
  }

  LLVM::LLVMFuncOp fn;
  bool failed = false;
};

struct VerifyStreamsPass
    : flashnorm::impl::VerifyStreamsBase<VerifyStreamsPass> {
  void runOnOperation() override {
    bool failed = false;
    getOperation()->walk([&](LLVM::LLVMFuncOp fn) {
      if (!fn.isExternal() && !fn->getParentOfType<gpu::GPUModuleOp>())
        failed |= Checker(fn).run();
    });
    if (failed)
      signalPassFailure();
  }
};
} // namespace
