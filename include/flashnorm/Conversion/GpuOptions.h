//===- GpuOptions.h - Enums of the GPU passes' and pipeline's options -----===//
//
// Shared by the pass options (Passes.td) and flashnorm-gpu-pipeline's
// options (Pipelines.h), which parse them with the same clEnumValN names.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHNORM_CONVERSION_GPUOPTIONS_H
#define FLASHNORM_CONVERSION_GPUOPTIONS_H

#include <cstdint>

namespace mlir::flashnorm {

/// Which projections flashnorm-gpu-kernels hands to cuBLASLt
/// (`flashnorm.gemm_lt`): none (generated kernels), all that fit, or by
/// shape (`auto`: prefill, kGemmLtMinRows rows or more, or a dynamic
/// count; decode keeps the generated bandwidth kernel).
enum class GemmPath { Codegen, CuBlasLt, Auto };
/// How flashnorm-gpu-pipeline orders a deferred norm's statistic,
/// projection and post-scale: the statistic on a forked stream joined
/// before the post-scale, the three in one kernel, or one stream; `auto`
/// fuses where the fused kernel takes the projection (a SIMT GEMV: one
/// token) and forks elsewhere.
enum class DeferMode { Auto, Streams, Fused, Serial };
/// What the kernels compile to (gpu-module-to-binary's format).
enum class BinaryFormat { Isa, Bin, Fatbin };

/// What a lowering pipeline's input check (flashnorm-check-lowering-input)
/// lowers to.
enum class LoweringTarget { Cpu, Gpu };

/// The fewest rows (tokens) `gemm=auto` gives to cuBLASLt.
constexpr int64_t kGemmLtMinRows = 17;

} // namespace mlir::flashnorm

#endif
