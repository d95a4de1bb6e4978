//===- Pipelines.h - The flashnorm pipelines and their options --*- C++ -*-===//
//
// The pipelines users run: `flashnorm` (the rewrites, on tensors), the CPU
// lowering (in two halves, to buffers and from buffers to LLVM), the
// reference CPU lowering everything that runs code compares against, and
// the GPU pipeline (kernels, streams, host code, binaries). Each is built
// from a typed options struct whose options forward to the passes they
// name; options are checked once, when a pipeline is built, and a bad one
// is an error that says which. Other compilers call the build functions
// with their own pass managers.
//
//===----------------------------------------------------------------------===//
#ifndef FLASHNORM_PIPELINES_PIPELINES_H
#define FLASHNORM_PIPELINES_PIPELINES_H

#include "flashnorm/Conversion/GpuOptions.h"
#include "flashnorm/Utils/RegisterTile.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"

namespace mlir::flashnorm {

/// Options of the `flashnorm` pipeline; each forwards to the pass it names.
struct FlashNormPipelineOptions
    : public PassPipelineOptions<FlashNormPipelineOptions> {
  PassOptions::Option<bool> allowApproximate{
      *this, "allow-approximate",
      llvm::cl::desc("flashnorm-drop-redundant: also cancel norms before an "
                     "eps > 0 norm (inexact, reported)"),
      llvm::cl::init(false)};
  PassOptions::Option<bool> cloneSharedWeights{
      *this, "clone-shared-weights",
      llvm::cl::desc("flashnorm-fold-gains: clone weights that have other "
                     "users"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> prepareFunction{
      *this, "prepare-function",
      llvm::cl::desc("flashnorm-fold-gains: fold gains into argument weights "
                     "through a @<fn>_flashnorm_prepare function"),
      llvm::cl::init(false)};
  PassOptions::Option<std::string> foldPlan{
      *this, "fold-plan",
      llvm::cl::desc("flashnorm-fold-gains: record the folds of weights in "
                     "a checkpoint (extern ml_program globals) in this file "
                     "for flashnorm-fold-checkpoint"),
      llvm::cl::init("")};
  PassOptions::Option<bool> foldAttentionScale{
      *this, "fold-attention-scale",
      llvm::cl::desc("flashnorm-fold-gains: fold a query projection's "
                     "constant attention scale into its weight with the gain"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> allowRequantize{
      *this, "allow-requantize",
      llvm::cl::desc("flashnorm-fold-gains: fold gains into int8 weights with "
                     "per-output-channel scales by requantizing (inexact, "
                     "reported)"),
      llvm::cl::init(false)};
  PassOptions::Option<double> requantizeTolerance{
      *this, "requantize-tolerance",
      llvm::cl::desc("flashnorm-fold-gains: the largest RMS error of a "
                     "requantized weight, relative to its RMS"),
      llvm::cl::init(0.01)};
  PassOptions::Option<bool> partial{
      *this, "partial",
      llvm::cl::desc("flashnorm-fold-gains and flashnorm-defer-scale: fold "
                     "and defer the projections of norms that have other "
                     "users too (those keep the norm)"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> moveScales{
      *this, "move-scales",
      llvm::cl::desc("flashnorm-move-scale: move post-scales past the next "
                     "projection where exact (the up path of gated MLPs)"),
      llvm::cl::init(true)};
};

/// raise, drop-redundant (merges), fold-gains, drop-redundant (cancels),
/// defer-scale, move-scale; nothing else touches the module.
void buildFlashNormPipeline(OpPassManager &pm,
                            const FlashNormPipelineOptions &options);

/// Options of flashnorm-cpu-pipeline.
struct CpuPipelineOptions : public PassPipelineOptions<CpuPipelineOptions> {
  PassOptions::Option<bool> concurrent{
      *this, "concurrent",
      llvm::cl::desc("Run each deferred norm's statistic and projections as "
                     "async tasks joined before the post-scale (false: "
                     "serial)"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> vectorize{
      *this, "vectorize",
      llvm::cl::desc("Tile and vectorize linalg ops (flashnorm-cpu-codegen); "
                     "false: scalar loops"),
      llvm::cl::init(true)};
  PassOptions::ListOption<int64_t> tileSizes{
      *this, "tile-sizes",
      llvm::cl::desc("Projection tiles (m, n, k); default by shape: M,256,1 "
                     "below 4 rows, 8,32,1 from 4")};
  PassOptions::Option<int64_t> vectorBits{
      *this, "vector-bits",
      llvm::cl::desc("Width of the vector registers the projection kernels "
                     "and panels are sized for: 512 (AVX-512), 256 (AVX2), "
                     "128 (default 0: this machine's, which the code is "
                     "compiled for)"),
      llvm::cl::init(0)};
  PassOptions::Option<int64_t> vectorWidth{
      *this, "vector-width",
      llvm::cl::desc("Lanes of the split-k kernel and of the statistics' "
                     "partial sums, innermost tile of other linalg ops "
                     "(default 0: one vector register of f32 for "
                     "vector-bits)"),
      llvm::cl::init(0)};
  PassOptions::Option<bool> packWeights{
      *this, "pack-weights",
      llvm::cl::desc("Store constant projection weights as panels the "
                     "micro-kernels stream (flashnorm-pack-weights; with "
                     "vectorize only; default true)"),
      llvm::cl::init(true)};
  PassOptions::Option<int64_t> threads{
      *this, "threads",
      llvm::cl::desc("Cores a projection whose weight has at least 1 MiB "
                     "is split over (packed panels, or split-k blocks of a "
                     "weight in its stored layout; default 0: this "
                     "machine's hardware threads; 1: every projection on "
                     "one core)"),
      llvm::cl::init(0)};
  PassOptions::Option<int64_t> concurrentMinBytes{
      *this, "concurrent-min-bytes",
      llvm::cl::desc("With concurrent: statistics that read fewer bytes run "
                     "serially (flashnorm-async-mark's cost rule; default "
                     "16 MiB, where the overlap stopped losing on 2 cores)"),
      llvm::cl::init(16 << 20)};
  PassOptions::Option<int64_t> activationBlockBytes{
      *this, "activation-block-bytes",
      llvm::cl::desc("Packed projections read an activation of more bytes "
                     "in blocks of at most this many, each held in cache "
                     "while the panels pass over it (default 256 KiB, half "
                     "an L2; 0: never)"),
      llvm::cl::init(kActivationBlockBytes)};
  PassOptions::Option<bool> expandBF16{
      *this, "expand-bf16",
      llvm::cl::desc("Conversions to and from bf16 as integer vector code "
                     "(upstream arith-expand's bf16 patterns: round to "
                     "nearest even, NaN kept) rather than LLVM's call per "
                     "element (default: true where this machine has no bf16 "
                     "conversion instructions)"),
      llvm::cl::init(!hostConvertsBF16())};
  PassOptions::Option<bool> hostTarget{
      *this, "host-target",
      llvm::cl::desc("Mark the LLVM module with this machine's target triple "
                     "and its functions with this CPU and its features "
                     "(flashnorm-cpu-host-target), what the kernels are sized "
                     "for: llc and clang then compile for it (default true)"),
      llvm::cl::init(true)};
};

/// Appends the CPU lowering to LLVM (flashnorm-cpu-pipeline) to a
/// builtin.module pass manager.
LogicalResult buildCpuPipeline(OpPassManager &pm,
                               const CpuPipelineOptions &options,
                               llvm::raw_ostream &errors);

/// Appends the reference CPU lowering (flashnorm-lower-to-llvm) to a
/// builtin.module pass manager.
LogicalResult buildLowerToLLVMPipeline(OpPassManager &pm,
                                       llvm::raw_ostream &errors);

/// Options of flashnorm-gpu-pipeline.
struct GpuPipelineOptions : public PassPipelineOptions<GpuPipelineOptions> {
  PassOptions::Option<std::string> chip{
      *this, "chip",
      llvm::cl::desc("NVIDIA target the NVPTX backend knows (default sm_90; "
                     "tensor cores need sm_80 or newer)"),
      llvm::cl::init("sm_90")};
  PassOptions::Option<std::string> features{
      *this, "features",
      llvm::cl::desc("PTX features (default +ptx80: PTX 8.0, which chips "
                     "up to sm_90a take; newer ones need newer PTX, e.g. "
                     "+ptx86 for sm_100)"),
      llvm::cl::init("+ptx80")};
  PassOptions::Option<BinaryFormat> format{
      *this, "format", llvm::cl::desc("Kernel binaries (default bin)"),
      llvm::cl::values(
          clEnumValN(BinaryFormat::Bin, "bin", "cubin (runs ptxas)"),
          clEnumValN(BinaryFormat::Isa, "isa", "PTX text, needs no ptxas"),
          clEnumValN(BinaryFormat::Fatbin, "fatbin", "fat binary")),
      llvm::cl::init(BinaryFormat::Bin)};
  PassOptions::Option<DeferMode> deferMode{
      *this, "defer-mode",
      llvm::cl::desc("How a deferred norm's statistic runs beside its "
                     "projections (default auto)"),
      llvm::cl::values(
          clEnumValN(DeferMode::Auto, "auto",
                     "fused where the fused kernel takes the projection (a "
                     "SIMT GEMV at one token, the tensor-core tile kernel "
                     "at 2-16 f16/bf16 tokens), streams elsewhere"),
          clEnumValN(DeferMode::Streams, "streams",
                     "statistics on a forked stream, projection on the main "
                     "one, an explicit join before the post-scale"),
          clEnumValN(DeferMode::Fused, "fused",
                     "one kernel per projection with the statistic and "
                     "post-scale in it"),
          clEnumValN(DeferMode::Serial, "serial", "one stream")),
      llvm::cl::init(DeferMode::Auto)};
  PassOptions::Option<bool> verify{
      *this, "verify",
      llvm::cl::desc("Run flashnorm-verify-async on the host code and "
                     "flashnorm-verify-streams on its lowering (default "
                     "true)"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> hostBuffers{
      *this, "host-buffers",
      llvm::cl::desc("Device functions take and return host memory, copied "
                     "in and out (default true; false: device buffers, "
                     "results owned by the caller, for callers that keep "
                     "weights on the GPU; their base addresses 16-byte "
                     "aligned, as the driver allocates them, since kernels "
                     "read rows with 16-byte loads: checked on entry)"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> tensorCores{
      *this, "tensor-cores",
      llvm::cl::desc("f16 and bf16 projections whose sizes are multiples "
                     "of 16 x 8 x 16 run on tensor cores, mma.sync (default "
                     "true; needs sm_80 or newer)"),
      llvm::cl::init(true)};
  PassOptions::Option<GemmPath> gemm{
      *this, "gemm",
      llvm::cl::desc("Which projections call cuBLASLt instead of a generated "
                     "kernel (default auto; programs that call it link "
                     "flashnorm_cublaslt)"),
      llvm::cl::values(
          clEnumValN(GemmPath::Codegen, "codegen",
                     "none: generated kernels only"),
          clEnumValN(GemmPath::CuBlasLt, "cublaslt",
                     "every projection that fits"),
          clEnumValN(GemmPath::Auto, "auto",
                     "prefill (more than 16 rows, or a dynamic count); "
                     "decode keeps the generated kernel")),
      llvm::cl::init(GemmPath::Auto)};
  PassOptions::Option<int64_t> threads{
      *this, "threads",
      llvm::cl::desc("Threads per block of the parallel kernels (default "
                     "128)"),
      llvm::cl::init(128)};
  PassOptions::Option<int64_t> reduceThreads{
      *this, "reduce-threads",
      llvm::cl::desc("Threads per block of the row reductions (default "
                     "256)"),
      llvm::cl::init(256)};
};

/// Appends flashnorm-gpu-pipeline to a builtin.module pass manager; fails
/// with a message in `errors` for a bad option.
LogicalResult buildGpuPipeline(OpPassManager &pm,
                               const GpuPipelineOptions &options,
                               llvm::raw_ostream &errors);

/// Registers every pipeline under the name users type (`flashnorm`).
void registerPipelines();

} // namespace mlir::flashnorm

#endif
