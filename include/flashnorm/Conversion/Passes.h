//===- Passes.h - The flashnorm lowering passes -----------------*- C++ -*-===//
//
// The passes of the CPU and GPU lowerings, declared from Passes.td, and the
// few facts they share across files: which host functions the GPU lowering
// leaves on the CPU (whyHostFunction) and which projections cuBLASLt takes
// (takesGemmLt).
//
//===----------------------------------------------------------------------===//
#ifndef FLASHNORM_CONVERSION_PASSES_H
#define FLASHNORM_CONVERSION_PASSES_H

#include "flashnorm/Conversion/GpuOptions.h"
#include "flashnorm/Dialect/FlashNorm/IR/FlashNormDialect.h"
#include "flashnorm/Utils/RegisterTile.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Async/IR/Async.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::flashnorm {

class CallEffects;

#define GEN_PASS_DECL
#include "flashnorm/Conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "flashnorm/Conversion/Passes.h.inc"

/// Why the GPU pipeline leaves `fn` on the host, or "" if `fn` is a device
/// function: a definition whose calls pass and return no buffers or
/// tensors, and use no mutable global it names (its kernels work on a
/// device copy of those). Helpers such as a timer stay host calls in it, in
/// order; a function that hands buffers to another is a driver and stays on
/// the host. What its callees do comes from `calls`, built for the module
/// before any of its functions is rewritten.
std::string whyHostFunction(func::FuncOp fn, const CallEffects &calls);

/// Whether flashnorm-gpu-kernels compiles `fn` for the GPU: a device
/// function that holds no GPU code yet.
bool isGpuDeviceFunction(func::FuncOp fn, const CallEffects &calls);

/// Whether flashnorm-gpu-kernels under `gemm` hands contraction `op` (on
/// tensors or buffers) to cuBLASLt: every contraction for `cublaslt`,
/// prefill ones (more than 16 rows, or a count known at run time) for
/// `auto`, none for `codegen`. (Whether the operands fit is decided on
/// buffers.)
bool takesGemmLt(linalg::LinalgOp op, GemmPath gemm);

/// Lets gpu-to-llvm (and convert-to-llvm) lower flashnorm.gemm_lt.
void registerConvertFlashNormToLLVMInterface(DialectRegistry &registry);

/// Adds the patterns that lower flashnorm ops to linalg on tensors.
/// `lanes` > 1: statistics as that many partial sums per row, then their
/// sum (for vector code generators).
void populateLowerToLinalgPatterns(RewritePatternSet &patterns, bool statsF64,
                                   int64_t lanes = 0);

} // namespace mlir::flashnorm

#endif
