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
/// shape (`auto`: prefill, more than kGemmLtMinRows rows or a dynamic
/// count; decode keeps the generated bandwidth kernel).
enum class GemmPath { Codegen, CuBlasLt, Auto };
/// The fewest rows (tokens) `gemm=auto` gives to cuBLASLt.
constexpr int64_t kGemmLtMinRows = 17;

} // namespace mlir::flashnorm

#endif
