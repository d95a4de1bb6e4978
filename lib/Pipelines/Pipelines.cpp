#include "flashnorm/Pipelines/Pipelines.h"

#include "flashnorm/Conversion/Passes.h"
#include "flashnorm/Transforms/Passes.h"
#include "flashnorm/Utils/RegisterTile.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/TargetParser/Triple.h"

using namespace mlir;
using namespace mlir::flashnorm;

void flashnorm::buildFlashNormPipeline(
    OpPassManager &pm, const FlashNormPipelineOptions &options) {
  pm.addNestedPass<func::FuncOp>(createRaise());
  // Consecutive norms merge before any gain is folded: the merged norm's
  // gain (the outer gain times the merge's correction) is then folded like
  // any other. Merged after the fold, it would keep a gain nobody folds.
  // Its refusals are the second run's to report (once, after the fold).
  DropRedundantOptions beforeFold;
  beforeFold.allowApproximate = options.allowApproximate;
  beforeFold.reportRefusals = false;
  pm.addNestedPass<func::FuncOp>(createDropRedundant(beforeFold));
  // A module pass: with prepare-function it adds functions and edits calls.
  // By name: the options struct's order is Passes.td's, not this file's.
  FoldGainsOptions foldGains;
  foldGains.cloneSharedWeights = options.cloneSharedWeights;
  foldGains.partial = options.partial;
  foldGains.prepareFunction = options.prepareFunction;
  foldGains.foldPlan = options.foldPlan;
  foldGains.foldAttentionScaleOpt = options.foldAttentionScale;
  foldGains.allowRequantize = options.allowRequantize;
  foldGains.requantizeTolerance = options.requantizeTolerance;
  pm.addPass(createFoldGains(foldGains));
  OpPassManager &fpm = pm.nest<func::FuncOp>();
  // Again once the gains are folded: a norm whose scale a later
  // scale-invariant norm cancels must be weightless first (QK-norm).
  DropRedundantOptions afterFold;
  afterFold.allowApproximate = options.allowApproximate;
  fpm.addPass(createDropRedundant(afterFold));
  fpm.addPass(createDeferScale({options.partial}));
  if (options.moveScales)
    fpm.addPass(createMoveScale());
  // No canonicalize or CSE: each pass erases what it made dead and nothing
  // else (RewriteCleanup); the rest of the module is the user's.
}

/// TOSA to linalg, first: the async marks then see TOSA projections as the
/// linalg ops that carry them on.
static constexpr llvm::StringLiteral kTosaToLinalg =
    "func.func(tosa-to-linalg-named,tosa-to-linalg,tosa-to-arith,"
    "tosa-to-tensor)";
/// After flashnorm-lower-to-linalg: checkpoint globals to memref globals,
/// bufferized across function boundaries (identity layouts). Empty tensors that
/// are inserted into a bigger one become that tensor's slice (an op that fills
/// a panel of a packed projection's output writes it in place).
static constexpr llvm::StringLiteral kToBuffers =
    "flashnorm-ml-program-to-memref,"
    "convert-elementwise-to-linalg,eliminate-empty-tensors,"
    "one-shot-bufferize{bufferize-function-boundaries "
    "function-boundary-type-conversion=identity-layout-map}";
/// Buffers to loops: vector and scalar loops; no linalg op is left, whose
/// region verifiers know only the arith ops they were built with.
/// Transfers are fully unrolled.
static constexpr llvm::StringLiteral kBuffersToLoops =
    "func.func(lower-vector-multi-reduction),"
    "convert-vector-to-scf{full-unroll=true},"
    "convert-linalg-to-loops";
/// Loops to LLVM: async tasks on the MLIR async runtime, LLVM;
/// vector.contract becomes outer products (FMAs on the innermost tile).
/// Math with no LLVM intrinsic (math.erf: torch's exact GELU) calls libm.
static constexpr llvm::StringLiteral kLoopsToLLVM =
    "async-to-async-runtime,async-runtime-ref-counting,"
    "async-runtime-ref-counting-opt,convert-async-to-llvm,"
    "flashnorm-expand-dynamic-reshapes,expand-strided-metadata,lower-affine,"
    "convert-scf-to-cf,convert-math-to-llvm,convert-math-to-libm,"
    "convert-vector-to-llvm{vector-contract-lowering=outerproduct},"
    "convert-openmp-to-llvm,convert-to-llvm,reconcile-unrealized-casts";

/// Options are checked by each half of the pipeline, rather than by each
/// pass in each function.
static LogicalResult checkCpuOptions(const CpuPipelineOptions &options,
                                     raw_ostream &errors) {
  const char *why =
      options.threads < 0 ? "threads must be 0 (all cores) or positive"
      : options.concurrentMinBytes < 0
          ? "concurrent-min-bytes must not be negative"
      : options.vectorWidth < 0 ? "vector-width must not be negative"
      : options.activationBlockBytes < 0
          ? "activation-block-bytes must not be negative"
      : failed(registerTileFor(options.vectorBits)) ? kVectorBitsValues
                                                    : nullptr;
  if (!why)
    return success();
  errors << "flashnorm-cpu-pipeline: " << why << "\n";
  return failure();
}

/// The vector width of the CPU pipeline's passes: `vector-width`, or one
/// register of f32 for `vector-bits` (validated before it is asked).
static int64_t vectorWidthOf(const CpuPipelineOptions &options) {
  return options.vectorWidth ? options.vectorWidth.getValue()
                             : registerTileFor(options.vectorBits)->lanes;
}

/// The tile-and-vectorize step of the CPU pipeline, with its options.
static LogicalResult buildCpuCodegen(OpPassManager &pm,
                                     const CpuPipelineOptions &options,
                                     raw_ostream &errors) {
  if (!options.vectorize)
    return success();
  if (!options.tileSizes.empty() && options.tileSizes.size() != 3) {
    errors << "flashnorm-cpu-pipeline: tile-sizes needs 3 values (m, n, k), "
              "got "
           << options.tileSizes.size() << "\n";
    return failure();
  }
  OpPassManager &fpm = pm.nest<func::FuncOp>();
  // fpowi by a constant becomes multiplies first: LLVM's powi intrinsic takes
  // no vector exponent.
  fpm.addPass(math::createMathExpandOpsPass({{"fpowi"}}));
  CpuCodegenOptions codegen;
  codegen.tileSizes.assign(options.tileSizes.begin(), options.tileSizes.end());
  codegen.vectorWidth = vectorWidthOf(options);
  codegen.vectorBits = options.vectorBits;
  codegen.threads = options.threads;
  fpm.addPass(createCpuCodegen(codegen));
  fpm.addPass(createCanonicalizerPass());
  return success();
}

/// The first half of flashnorm-cpu-pipeline: down to buffers, with the
/// async tasks built when concurrent.
static LogicalResult buildCpuToBuffers(OpPassManager &pm,
                                       const CpuPipelineOptions &options,
                                       raw_ostream &errors) {
  if (failed(checkCpuOptions(options, errors)))
    return failure();
  pm.addPass(createCheckLoweringInput({LoweringTarget::Cpu}));
  if (failed(parsePassPipeline(kTosaToLinalg, pm, errors)))
    return failure();
  if (options.concurrent)
    pm.addNestedPass<func::FuncOp>(
        createAsyncMark({options.concurrentMinBytes.getValue()}));
  // After the marks: the packed projection takes its projection's marks.
  if (options.vectorize && options.packWeights) {
    // Argument weights, in the prepare function's results; then constants.
    PackPreparedWeightsOptions prepared;
    prepared.threads = options.threads;
    prepared.vectorBits = options.vectorBits;
    prepared.activationBlockBytes = options.activationBlockBytes;
    pm.addPass(createPackPreparedWeights(prepared));
    PackWeightsOptions pack;
    pack.threads = options.threads;
    pack.vectorBits = options.vectorBits;
    pack.activationBlockBytes = options.activationBlockBytes;
    pm.addNestedPass<func::FuncOp>(createPackWeights(pack));
  }
  // Vectorized statistics sum a row in one vector of partial sums.
  int64_t width = vectorWidthOf(options);
  pm.addPass(createLowerToLinalg(
      {/*statsF64=*/false, /*sumLanes=*/options.vectorize ? width : 0}));
  // Transposed inputs the split-k kernel reads in their stored layout (after
  // the packing, which relays constants at compile time).
  if (options.vectorize)
    pm.addNestedPass<func::FuncOp>(createCpuFoldTransposes({width}));
  if (failed(parsePassPipeline(kToBuffers, pm, errors)))
    return failure();
  // Intermediate buffers are freed after their last use (before the
  // schedule, which does not model tasks' lifetimes: the statistic's task
  // takes the frees of its own buffers along).
  pm.addPass(createFreeBuffers());
  if (options.concurrent)
    pm.addPass(createAsyncSchedule());
  return success();
}

/// The second half of flashnorm-cpu-pipeline: tiles and vectors, loops,
/// async runtime, LLVM.
static LogicalResult buildCpuBuffersToLLVM(OpPassManager &pm,
                                           const CpuPipelineOptions &options,
                                           raw_ostream &errors) {
  if (failed(checkCpuOptions(options, errors)))
    return failure();
  // (Again after the first half, where it finds nothing: this half is also
  // a pipeline of its own.)
  pm.addPass(createCheckLoweringInput({LoweringTarget::Cpu}));
  if (failed(buildCpuCodegen(pm, options, errors)))
    return failure();
  // The panels of a packed projection (scf.parallel after the codegen) on
  // OpenMP threads, one block of panels each.
  if (failed(parsePassPipeline("convert-scf-to-openmp,func.func(canonicalize)",
                               pm, errors)))
    return failure();
  if (failed(parsePassPipeline(kBuffersToLoops, pm, errors)))
    return failure();
  // After the vectorizer, which reads a bf16 input's widening as such, and
  // on loops (a named op's region takes no integer ops).
  if (options.expandBF16 &&
      failed(parsePassPipeline("func.func(arith-expand{include-bf16=true})", pm,
                               errors)))
    return failure();
  if (failed(parsePassPipeline(kLoopsToLLVM, pm, errors)))
    return failure();
  // What the kernels were sized for, said in the module for ahead-of-time
  // compilers.
  if (options.hostTarget)
    pm.addPass(createCpuHostTarget());
  return success();
}

LogicalResult flashnorm::buildCpuPipeline(OpPassManager &pm,
                                          const CpuPipelineOptions &options,
                                          raw_ostream &errors) {
  if (failed(buildCpuToBuffers(pm, options, errors)))
    return failure();
  return buildCpuBuffersToLLVM(pm, options, errors);
}

LogicalResult flashnorm::buildLowerToLLVMPipeline(OpPassManager &pm,
                                                  raw_ostream &errors) {
  CpuPipelineOptions serial;
  serial.concurrent = false;
  serial.vectorize = false;
  return buildCpuPipeline(pm, serial, errors);
}

static StringRef formatName(BinaryFormat format) {
  switch (format) {
  case BinaryFormat::Isa:
    return "isa";
  case BinaryFormat::Bin:
    return "bin";
  case BinaryFormat::Fatbin:
    return "fatbin";
  }
  llvm_unreachable("a binary format");
}

/// The GPU half after the kernels and streams exist: outlining, the race
/// verifier on the host code, NVVM for the kernels, LLVM for the host.
/// No canonicalization touches host code after flashnorm-gpu-streams: it
/// folds a fork `gpu.wait async [%t]` into %t (docs/MATH.md §5), which would
/// serialize the streams and destroy one twice.
static std::string gpuTail(const GpuPipelineOptions &options) {
  // Constants and index math move into the kernels: static loop bounds.
  // Shared buffers aligned for the vector accesses LLVM may merge.
  std::string text = "gpu-launch-sink-index-computations,gpu-kernel-outlining,"
                     "flashnorm-gpu-align-workgroup,";
  if (options.verify)
    text += "flashnorm-verify-async,";
  text += "lower-affine,nvvm-attach-target{chip=" + options.chip +
          " features=" + options.features +
          " O=3},"
          "gpu.module(convert-vector-to-scf,convert-scf-to-cf,"
          "convert-nvgpu-to-nvvm,convert-gpu-to-nvvm,convert-vector-to-llvm,"
          "canonicalize,cse,reconcile-unrealized-casts),"
          // Host functions that stayed on the CPU (drivers) run loops.
          "convert-linalg-to-loops,flashnorm-expand-dynamic-reshapes,"
          "expand-strided-metadata,lower-affine,"
          "convert-scf-to-cf,convert-math-to-llvm,convert-math-to-libm,"
          "gpu-to-llvm,convert-to-llvm,"
          "reconcile-unrealized-casts,gpu-module-to-binary{format=" +
          formatName(options.format).str() +
          "},flashnorm-gpu-reproducible-binaries";
  if (options.verify)
    text += ",flashnorm-verify-streams";
  return text;
}

/// The NVPTX backend's subtarget tables (of its default processor:
/// creating one for an unknown chip would print a warning), or null.
static const llvm::MCSubtargetInfo *nvptxSubtarget() {
  static const std::unique_ptr<llvm::MCSubtargetInfo> info = [] {
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTargetMC();
    llvm::Triple triple("nvptx64-nvidia-cuda");
    std::string error;
    const llvm::Target *target =
        llvm::TargetRegistry::lookupTarget(triple, error);
    return std::unique_ptr<llvm::MCSubtargetInfo>(
        target ? target->createMCSubtargetInfo(triple, "", "") : nullptr);
  }();
  return info.get();
}

/// Whether LLVM's NVPTX backend accepts `chip` as a processor: an unknown
/// one aborts instruction selection later ("Cannot select").
static bool isNvptxChip(StringRef chip) {
  const llvm::MCSubtargetInfo *info = nvptxSubtarget();
  return info && !chip.empty() && info->isCPUStringValid(chip);
}

/// The comma-separated `features` option, each entry trimmed.
static SmallVector<StringRef> splitFeatures(StringRef features) {
  SmallVector<StringRef> list;
  features.split(list, ',', /*MaxSplit=*/-1, /*KeepEmpty=*/false);
  for (StringRef &feature : list)
    feature = feature.trim();
  return list;
}

/// The first of the `features` (each `+name` or `-name`) that the NVPTX
/// backend does not know, or "" when it knows them all: it would warn,
/// ignore it and emit PTX of another version than asked.
static StringRef unknownNvptxFeature(StringRef features) {
  const llvm::MCSubtargetInfo *info = nvptxSubtarget();
  for (StringRef feature : splitFeatures(features)) {
    StringRef name = feature;
    if (!info || !(name.consume_front("+") || name.consume_front("-")) ||
        llvm::none_of(info->getAllProcessorFeatures(),
                      [&](const llvm::SubtargetFeatureKV &known) {
                        return name == known.Key;
                      }))
      return feature;
  }
  return "";
}

/// The compute capability a chip name says (sm_90a: 90), or 0.
static unsigned smVersion(StringRef chip) {
  unsigned version = 0;
  if (!chip.consume_front("sm_") ||
      chip.take_while(llvm::isDigit).getAsInteger(10, version))
    return 0;
  return version;
}

/// The oldest PTX ISA version (times ten) LLVM 22's NVPTX backend emits for
/// `chip`, which is also what it emits when no `+ptxNN` feature is given;
/// asked for an older one it stops with a fatal error. 0 for older chips
/// and those not listed (the backend's own check then stands).
static unsigned minimumPtxVersion(StringRef chip) {
  return llvm::StringSwitch<unsigned>(chip)
      .Case("sm_70", 60)
      .Case("sm_72", 61)
      .Case("sm_75", 63)
      .Case("sm_80", 70)
      .Case("sm_86", 71)
      .Case("sm_87", 74)
      .Cases({"sm_89", "sm_90"}, 78)
      .Case("sm_90a", 80)
      .Cases({"sm_100", "sm_100a", "sm_101", "sm_101a"}, 86)
      .Cases({"sm_120", "sm_120a"}, 87)
      .Cases({"sm_100f", "sm_101f", "sm_103", "sm_103a", "sm_103f", "sm_120f",
              "sm_121", "sm_121a", "sm_121f"},
             88)
      .Cases({"sm_88", "sm_110", "sm_110a", "sm_110f"}, 90)
      .Default(0);
}

/// The PTX ISA version (times ten) `features` asks for: the newest of its
/// `+ptxNN`, as the backend takes them, or 0 for none (the chip's own).
static unsigned requestedPtxVersion(StringRef features) {
  unsigned newest = 0;
  for (StringRef name : splitFeatures(features)) {
    unsigned version;
    if (name.consume_front("+ptx") && !name.getAsInteger(10, version))
      newest = std::max(newest, version);
  }
  return newest;
}

/// Checks the options every half of the GPU pipeline takes.
static LogicalResult checkGpuOptions(const GpuPipelineOptions &options,
                                     raw_ostream &errors) {
  // CUDA's limit on threads per block.
  for (auto [name, value] :
       {std::pair<StringRef, int64_t>{"threads", options.threads},
        {"reduce-threads", options.reduceThreads}})
    if (value < 1 || value > 1024) {
      errors << "flashnorm-gpu-pipeline: " << name
             << " must be between 1 and 1024, not " << value << "\n";
      return failure();
    }
  if (!isNvptxChip(options.chip)) {
    errors << "flashnorm-gpu-pipeline: chip must be an NVIDIA target the "
              "NVPTX backend knows (sm_80, sm_90, sm_90a, ...), not '"
           << options.chip << "'\n";
    return failure();
  }
  if (StringRef feature = unknownNvptxFeature(options.features);
      !feature.empty()) {
    errors << "flashnorm-gpu-pipeline: features must be NVPTX features, "
              "each +name or -name (+ptx80, +ptx85, ...), not '"
           << feature << "'\n";
    return failure();
  }
  // The backend would stop with a fatal error on either.
  auto ptx = [](unsigned v) {
    return std::to_string(v / 10) + "." + std::to_string(v % 10);
  };
  unsigned requested = requestedPtxVersion(options.features),
           minimum = minimumPtxVersion(options.chip);
  if (requested && requested < minimum) {
    errors << "flashnorm-gpu-pipeline: features=" << options.features
           << " ask for PTX " << ptx(requested) << ", older than "
           << options.chip << " takes (PTX " << ptx(minimum)
           << "): give features=+ptx" << minimum << " or newer\n";
    return failure();
  }
  // The tensor-core kernels' mma.sync m16n8k16 (f16 and bf16) and cp.async.
  if (options.tensorCores && smVersion(options.chip) < 80) {
    errors << "flashnorm-gpu-pipeline: tensor-cores=true needs sm_80 or "
              "newer (mma.sync m16n8k16, cp.async), not "
           << options.chip << ": give tensor-cores=false for it\n";
    return failure();
  }
  return success();
}

/// The GPU pipeline up to its kernels: each linalg op a `gpu.launch`, the
/// tensor-core ones still as vector fragments (what the CPU emulation of
/// the kernels in the tests runs).
static LogicalResult buildGpuToKernels(OpPassManager &pm,
                                       const GpuPipelineOptions &options,
                                       raw_ostream &errors) {
  if (failed(checkGpuOptions(options, errors)))
    return failure();
  pm.addPass(createCheckLoweringInput({LoweringTarget::Gpu}));
  DeferMode mode = options.deferMode;
  // The marks say which statistic, projection and post-scale belong
  // together: streams schedules them, fused merges them, and every mode
  // names kernels after them.
  if (failed(parsePassPipeline(kTosaToLinalg, pm, errors)))
    return failure();
  pm.addNestedPass<func::FuncOp>(createAsyncMark());
  pm.addPass(createLowerToLinalg());
  // Weights in the layout the kernels read, before their bytes become
  // buffers: no transpose of a constant runs on the device.
  pm.addNestedPass<func::FuncOp>(createGpuWeightLayout());
  // A post-scale and its element-wise reader as one kernel, decided on
  // tensors, where its readers are exactly its uses (element-wise arith on
  // tensors, a residual add, as generics first).
  pm.addNestedPass<func::FuncOp>(createConvertElementwiseToLinalgPass());
  pm.addNestedPass<func::FuncOp>(createGpuFusePostScales({options.gemm}));
  if (failed(parsePassPipeline(kToBuffers, pm, errors)))
    return failure();
  // Auto schedules every statistic on a task and then fuses what the fused
  // kernel takes; what is left of such a task runs on the main stream (an
  // eager fork and join cost more host time than a one-token projection's
  // kernel).
  if (mode == DeferMode::Streams || mode == DeferMode::Auto)
    pm.addPass(
        createAsyncSchedule({/*projectionTasks=*/false, /*keepMarks=*/true,
                             /*deviceFunctionsOnly=*/true}));
  pm.addPass(createGpuKernels(
      {mode == DeferMode::Fused || mode == DeferMode::Auto, options.threads,
       options.reduceThreads, options.tensorCores, options.gemm}));
  OpPassManager &fpm = pm.nest<func::FuncOp>();
  fpm.addPass(createCanonicalizerPass());
  fpm.addPass(createCSEPass());
  return success();
}

/// The first half of flashnorm-gpu-pipeline: kernels as gpu.launch and the
/// host code's token graph, in the gpu dialect.
static LogicalResult buildGpuToStreams(OpPassManager &pm,
                                       const GpuPipelineOptions &options,
                                       raw_ostream &errors) {
  if (failed(buildGpuToKernels(pm, options, errors)))
    return failure();
  // Tensor-core kernels: vector.contract fragments to nvgpu.mma.sync.
  if (options.tensorCores) {
    OpPassManager &fpm = pm.nest<func::FuncOp>();
    fpm.addPass(createGpuMma());
    fpm.addPass(createCanonicalizerPass());
  }
  pm.addPass(createGpuStreams({options.hostBuffers}));
  return success();
}

/// The second half: outlining, verification, NVVM, binaries, LLVM.
static LogicalResult buildGpuStreamsToLLVM(OpPassManager &pm,
                                           const GpuPipelineOptions &options,
                                           raw_ostream &errors) {
  if (failed(checkGpuOptions(options, errors)))
    return failure();
  return parsePassPipeline(gpuTail(options), pm, errors);
}

LogicalResult flashnorm::buildGpuPipeline(OpPassManager &pm,
                                          const GpuPipelineOptions &options,
                                          raw_ostream &errors) {
  if (failed(buildGpuToStreams(pm, options, errors)))
    return failure();
  return buildGpuStreamsToLLVM(pm, options, errors);
}

namespace {
/// Fails with `message` at the operation it runs on: how a pipeline whose
/// options are bad says so (a registered pipeline's builder cannot fail).
struct ReportErrorPass : PassWrapper<ReportErrorPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(ReportErrorPass)
  explicit ReportErrorPass(std::string message) : message(std::move(message)) {}
  StringRef getArgument() const final { return "flashnorm-report-error"; }
  void runOnOperation() override {
    // At the location only: the op itself would be printed with the error.
    emitError(getOperation()->getLoc(), StringRef(message).rtrim());
    signalPassFailure();
  }
  std::string message;
};
} // namespace

/// Replaces what `pm` holds by a pass that reports `message`.
static void reportInstead(OpPassManager &pm, StringRef message) {
  pm.clear();
  pm.addPass(std::make_unique<ReportErrorPass>(message.str()));
}

/// Wraps a builder that can fail into a registrable one that reports why.
template <typename Options>
static std::function<void(OpPassManager &, const Options &)>
orReportError(std::function<LogicalResult(OpPassManager &, const Options &,
                                          raw_ostream &)>
                  build) {
  return [build](OpPassManager &pm, const Options &options) {
    std::string message;
    llvm::raw_string_ostream errors(message);
    if (failed(build(pm, options, errors)))
      reportInstead(pm, message);
  };
}

void flashnorm::registerPipelines() {
  PassPipelineRegistration<FlashNormPipelineOptions>(
      "flashnorm",
      "The FlashNorm pipeline: raise norms from frontend IR, merge "
      "redundant norms, fold gains into weights, defer 1/RMS past the "
      "projections and move post-scales past the next projection; nothing "
      "else in the module changes",
      buildFlashNormPipeline);
  PassPipelineRegistration<CpuPipelineOptions>(
      "flashnorm-cpu-pipeline",
      "Lower to LLVM for the CPU with each deferred norm's statistic and "
      "projections as tasks on the MLIR async runtime, joined before the "
      "post-scale (link libmlir_async_runtime)",
      orReportError<CpuPipelineOptions>(buildCpuPipeline));
  // The two halves, so that tests can edit the scheduled buffers in between.
  PassPipelineRegistration<CpuPipelineOptions>(
      "flashnorm-cpu-to-buffers",
      "First half of flashnorm-cpu-pipeline: bufferized linalg with the async "
      "tasks built",
      orReportError<CpuPipelineOptions>(buildCpuToBuffers));
  PassPipelineRegistration<CpuPipelineOptions>(
      "flashnorm-cpu-buffers-to-llvm",
      "Second half of flashnorm-cpu-pipeline: tiles and vectors, loops, "
      "async runtime, LLVM",
      orReportError<CpuPipelineOptions>(buildCpuBuffersToLLVM));
  PassPipelineRegistration<GpuPipelineOptions>(
      "flashnorm-gpu-pipeline",
      "Lower to GPU kernels (NVVM, PTX or cubin) and host code whose async "
      "tokens fork each deferred norm's statistic onto its own stream and "
      "join it before the post-scale (link flashnorm_cuda_runtime)",
      orReportError<GpuPipelineOptions>(buildGpuPipeline));
  // The two halves, so that tests can edit the token graph in between, and
  // the kernels alone, so that tests can run them on the CPU.
  PassPipelineRegistration<GpuPipelineOptions>(
      "flashnorm-gpu-to-kernels",
      "flashnorm-gpu-pipeline up to its kernels: every linalg op of a device "
      "function a gpu.launch (tensor-core kernels still as vector "
      "fragments), host code not yet on streams",
      orReportError<GpuPipelineOptions>(buildGpuToKernels));
  PassPipelineRegistration<GpuPipelineOptions>(
      "flashnorm-gpu-to-streams",
      "First half of flashnorm-gpu-pipeline: kernels as gpu.launch and the "
      "host code's streams, forks and joins, in the gpu dialect",
      orReportError<GpuPipelineOptions>(buildGpuToStreams));
  PassPipelineRegistration<GpuPipelineOptions>(
      "flashnorm-gpu-streams-to-llvm",
      "Second half of flashnorm-gpu-pipeline: outlining, the race verifier, "
      "NVVM and binaries for the kernels, LLVM for the host",
      orReportError<GpuPipelineOptions>(buildGpuStreamsToLLVM));
  PassPipelineRegistration<>(
      "flashnorm-lower-to-llvm",
      "Lower flashnorm, TOSA and linalg on tensors to the LLVM dialect as "
      "plain sequential loops (the reference CPU lowering)",
      [](OpPassManager &pm) {
        std::string message;
        llvm::raw_string_ostream errors(message);
        if (failed(buildLowerToLLVMPipeline(pm, errors)))
          reportInstead(pm, message);
      });
}
