//===- GpuKernels.cpp - Linalg on buffers to GPU kernels ------------------===//
//
// Every linalg op of a device function becomes one `gpu.launch`, named after
// its role so that PTX and traces read like the model. The strategies live
// in GpuKernels/, one file each, each a pure `plan*` and a `build*`; this
// pass tries them in order:
// 1. fused mode: each deferred projection with its statistic and
//    post-scale (FusedNormProjection.cpp): a SIMT GEMV, or where strategy
//    4 would take the projection at decode, that kernel with the norm's
//    epilogue; unfused where strategy 2 or 3 would take it, or 4 at
//    prefill;
// 2. projections through cuBLASLt where `gemm` says so, the product's
//    rounding reader written by the GEMM and a post-scale moved before it
//    as a scale of the activation (GemmLt.cpp);
// 3. f16 and bf16 prefill projections on tensor cores, tiles staged
//    through shared memory (TensorCoreBlock.cpp);
// 4. the other f16 and bf16 projections on tensor cores, warp by warp
//    (TensorCoreTile.cpp);
// 5. row reductions, projections whose weight is contiguous in k among
//    them (RowReduction.cpp);
// 6. everything else as parallel loops (ParallelLoops.cpp);
// 7. host code left around the kernels that touches buffers (an
//    importer's KV-cache loop) as kernels too (HostLoops.cpp).
// A post-scale and its element-wise reader are one op already
// (flashnorm-gpu-fuse-post-scales, on tensors): one kernel.
// Earlier strategies see the ops as the frontends' passes left them (the
// zero fill of an accumulator, the marks); later ones see what is left.
//
//===----------------------------------------------------------------------===//

#include "GpuKernels/KernelBuilder.h"

#include "flashnorm/Analysis/HappensBefore.h"
#include "flashnorm/Conversion/Passes.h"
#include "flashnorm/Dialect/FlashNorm/IR/FlashNormOps.h"
#include "flashnorm/Utils/Remarks.h"

#include "mlir/Dialect/Async/IR/Async.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

namespace mlir::flashnorm {
#define GEN_PASS_DEF_GPUKERNELS
#include "flashnorm/Conversion/Passes.h.inc"
} // namespace mlir::flashnorm

using namespace mlir;
using namespace mlir::flashnorm;
using namespace mlir::flashnorm::kernels;

std::string flashnorm::whyHostFunction(func::FuncOp fn,
                                       const CallEffects &calls) {
  if (fn.isExternal())
    return "it is a declaration";
  // The mutable globals it names: a device function works on a copy of
  // each, taken when first named and stored back at its end
  // (flashnorm-gpu-streams).
  SmallVector<Value> mutableGlobals;
  fn.walk([&](memref::GetGlobalOp get) {
    if (isWritableGlobal(get.getResult()))
      mutableGlobals.push_back(get.getResult());
  });
  std::string why;
  fn.walk([&](CallOpInterface call) {
    auto callee = call.getCallableForCallee().dyn_cast<SymbolRefAttr>();
    std::string name =
        callee ? printToString(callee) : std::string("a function");
    auto isData = [](Type t) { return isa<ShapedType>(t); };
    if (llvm::any_of(call->getOperandTypes(), isData) ||
        llvm::any_of(call->getResultTypes(), isData)) {
      why = "it calls " + name + " with buffers or tensors (a driver)";
      return WalkResult::interrupt();
    }
    // A helper that uses one of those globals would see, or write, the
    // host's copy while the function's kernels use theirs; one without a
    // body may use any of them.
    Value shared;
    FailureOr<ArrayRef<GlobalAccess>> known = calls.lookup(call);
    if (succeeded(known))
      for (const GlobalAccess &access : *known)
        for (Value global : mutableGlobals)
          if (!shared && mayAliasGlobal(global, access))
            shared = global;
    if (!shared && (succeeded(known) || mutableGlobals.empty()))
      return WalkResult::advance();
    if (!shared)
      shared = mutableGlobals.front();
    why = "it calls " + name +
          (succeeded(known) ? ", which uses "
                            : " (no body to read), which may use ") +
          "the mutable global @" +
          shared.getDefiningOp<memref::GetGlobalOp>().getName().str() +
          " its kernels would work on a device copy of";
    return WalkResult::interrupt();
  });
  return why;
}

bool flashnorm::isGpuDeviceFunction(func::FuncOp fn, const CallEffects &calls) {
  if (!whyHostFunction(fn, calls).empty())
    return false;
  WalkResult gpu = fn.walk([](Operation *op) {
    return isa<gpu::LaunchOp, gpu::LaunchFuncOp>(op) ? WalkResult::interrupt()
                                                     : WalkResult::advance();
  });
  return !gpu.wasInterrupted();
}

namespace {
constexpr StringLiteral kPass = "flashnorm-gpu-kernels";

/// The blocks the host runs in a device function: its body and the
/// bodies of the async schedule's tasks.
SmallVector<Block *> hostBlocks(func::FuncOp fn) {
  SmallVector<Block *> blocks{&fn.getBody().front()};
  for (auto task : fn.getBody().front().getOps<async::ExecuteOp>())
    blocks.push_back(&task.getBodyRegion().front());
  return blocks;
}

template <typename OpT> SmallVector<OpT> collect(func::FuncOp fn) {
  SmallVector<OpT> ops;
  fn.walk([&](OpT op) { ops.push_back(op); });
  return ops;
}

struct GpuKernelsPass : flashnorm::impl::GpuKernelsBase<GpuKernelsPass> {
  using GpuKernelsBase::GpuKernelsBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    for (auto [name, value] :
         {std::pair<StringRef, int64_t>{"threads", threads},
          {"reduce-threads", reduceThreads}})
      if (value < 1 || value > 1024) {
        module.emitError() << kPass << ": " << name
                           << " must be between 1 and 1024, not " << value;
        return signalPassFailure();
      }
    // Which functions are device functions, judged on the module as it
    // comes in: a caller's verdict reads its callees, which this pass
    // rewrites.
    CallEffects calls(module);
    bool failedAny = false;
    for (auto fn : llvm::to_vector(module.getOps<func::FuncOp>()))
      failedAny |= failed(runOnFunction(fn, calls));
    if (failedAny)
      signalPassFailure();
  }

  LogicalResult runOnFunction(func::FuncOp fn, const CallEffects &calls) {
    if (std::string host = whyHostFunction(fn, calls); !host.empty()) {
      // Never silently: a function with work in it says why it stays.
      if (!fn.isExternal() && !collect<linalg::LinalgOp>(fn).empty())
        PassReporter(fn, kPass).refused(fn, "@" + fn.getSymName() +
                                                " stays on the host: " + host);
      return success();
    }
    if (!isGpuDeviceFunction(fn, calls)) // GPU code already
      return success();
    // Every strategy plans on buffers (flashnorm-gpu-pipeline bufferizes
    // first); linalg on tensors is an input from before that.
    for (linalg::LinalgOp op : collect<linalg::LinalgOp>(fn))
      if (!op.hasPureBufferSemantics()) {
        op->emitError() << kPass
                        << ": linalg on tensors; kernels are built from "
                           "linalg on buffers (bufferize first, as "
                           "flashnorm-gpu-pipeline does)";
        return failure();
      }
    PassReporter reporter(fn, kPass);
    KernelBuilder builder(fn, threads, reporter);
    // Copies between contiguous buffers are plain device copies
    // (flashnorm-gpu-streams); others (views into a concatenation) need a
    // kernel.
    for (memref::CopyOp copy : collect<memref::CopyOp>(fn)) {
      if (isContiguous(copy.getSource()) && isContiguous(copy.getTarget()))
        continue;
      OpBuilder b(copy);
      linalg::CopyOp::create(b, copy.getLoc(), copy.getSource(),
                             copy.getTarget());
      copy->erase();
    }
    // Fused mode first: the kernel each projection would get says whether
    // its norm fuses into a SIMT kernel, into the tensor-core tile kernel
    // (planned with the fused epilogue's unroll), or not at all. Which
    // projections cuBLASLt takes: takesGemmLt (gemm=cublaslt: all it can;
    // auto: prefill).
    auto kernelOf = [&](linalg::LinalgOp op) {
      std::string ignored;
      ProjectionKernel kernel;
      if (takesGemmLt(op, gemm) &&
          succeeded(planGemmLt(op, reduceThreads, ignored))) {
        kernel.fasterPath = "cuBLASLt";
        return kernel;
      }
      if (!tensorCores)
        return kernel;
      if (succeeded(planTensorCoreBlock(op, ignored)))
        kernel.fasterPath = "tensor cores (staged)";
      else if (FailureOr<TensorCorePlan> tile =
                   planTensorCoreTile(op, ignored, kFusedMaxUnroll);
               succeeded(tile)) {
        // The fused kernel's sums of squares triple its mma.sync: free
        // beside a decode step's weight stream, not at prefill, where the
        // product keeps the tensor cores busy.
        if (isPrefill(op))
          kernel.fasterPath = "tensor cores (a prefill: the sums of squares "
                              "would take their time)";
        else
          kernel.tensorCoreTile = *tile;
      }
      return kernel;
    };
    if (fused && failed(fuseNormProjections(builder, kernelOf)))
      return failure();
    std::string why;
    // Before any kernel exists: the zero fill of each accumulator is still
    // visible. Selected before any is built: a GEMM erases the post-scale
    // it moves before it.
    SmallVector<linalg::LinalgOp> gemms;
    if (gemm != GemmPath::Codegen)
      for (linalg::LinalgOp op : collect<linalg::LinalgOp>(fn))
        if (takesGemmLt(op, gemm))
          gemms.push_back(op);
    SmallVector<PreScaled> preScaled;
    for (linalg::LinalgOp op : gemms) {
      Location loc = op.getLoc();
      FailureOr<GemmLtPlan> plan = planGemmLt(op, reduceThreads, why);
      if (failed(plan)) {
        reporter.refused(op, "projection kept as a generated kernel: " + why);
        continue;
      }
      // What became of the product's reader (its type read before the
      // GEMM erases it).
      std::string type = plan->postScale
                             ? printToString(getElementTypeOrSelf(
                                   plan->postScale.getDpsInitOperand(0)->get()))
                             : "";
      FailureOr<PreScale> how = buildGemmLt(builder, *plan, preScaled);
      if (failed(how))
        return failure();
      std::string reader;
      if (*how != PreScale::None)
        reader = ", its post-scale before it as a scale of the activation (" +
                 std::string(*how == PreScale::Statistic
                                 ? "written by the statistic's kernel"
                             : *how == PreScale::Shared
                                 ? "shared with an earlier GEMM"
                                 : "a kernel of its own") +
                 "; the GEMM rounding once to " + type + ")";
      else if (!type.empty())
        reader = ", writing its reader's " + type;
      reporter.applied(fn, "projection at " + formatLoc(loc) +
                               " through cuBLASLt" + reader);
    }
    if (tensorCores)
      for (linalg::LinalgOp op : collect<linalg::LinalgOp>(fn)) {
        if (!linalg::isaContractionOpInterface(op))
          continue;
        // Prefill tiles through shared memory where the shapes allow;
        // the rest warp by warp from global memory.
        if (FailureOr<TensorCoreBlockPlan> block = planTensorCoreBlock(op, why);
            succeeded(block)) {
          buildTensorCoreBlock(builder, *block, "proj_mma_block");
          continue;
        }
        FailureOr<TensorCorePlan> plan = planTensorCoreTile(op, why);
        if (succeeded(plan)) {
          buildTensorCoreTile(builder, *plan, "proj_mma");
          continue;
        }
        if (Type t =
                getElementTypeOrSelf(op.getDpsInputOperand(0)->get().getType());
            t.isF16() || t.isBF16())
          reporter.refused(op, "projection not on tensor cores: " + why);
      }
    // Row reductions. Each is planned again where the ones before it left
    // the IR: they take their zero fill and epilogue along (never another
    // row reduction, so every op selected here is still there).
    SmallVector<linalg::LinalgOp> reductions;
    for (linalg::LinalgOp op : collect<linalg::LinalgOp>(fn))
      if (succeeded(planRowReduction(op, reduceThreads, why)))
        reductions.push_back(op);
    for (linalg::LinalgOp op : reductions)
      buildRowReduction(builder, *planRowReduction(op, reduceThreads, why));
    for (linalg::LinalgOp op : collect<linalg::LinalgOp>(fn)) {
      StringRef role = roleOf(op);
      if (failed(buildParallelLoops(builder, op,
                                    role.empty() ? kindOf(op) : role)))
        return failure();
    }
    // Host code left around the kernels (loops of loads and stores) runs on
    // the device too: every buffer of a device function is there.
    SmallVector<Operation *> hostOps;
    for (Block *block : hostBlocks(fn))
      for (Operation &op : *block)
        if (!isHostOp(&op))
          hostOps.push_back(&op);
    for (Operation *op : hostOps) {
      FailureOr<HostLoopPlan> plan = planHostLoop(op, why);
      if (failed(plan)) {
        reporter.refused(op, "host code that touches device buffers stays "
                             "on the host: " +
                                 why);
        continue;
      }
      if (plan->nest.empty())
        reporter.refused(op, "host code runs as a kernel of one thread: " +
                                 plan->serialWhy);
      if (failed(buildHostLoop(builder, *plan)))
        return failure();
    }
    fn.walk([](Operation *op) {
      op->removeAttr(kAsyncGroupAttr);
      op->removeAttr(kAsyncRoleAttr);
      op->removeAttr(kAsyncPairAttr);
    });
    return success();
  }
};
} // namespace
