// 0-sized dimensions: a projection with no outputs (N = 0) and a norm over
// no features (K = 0) fold and lower in every defer mode, with no division
// by a 0 chunk or tile size (SIGFPE once in the weight folder and in the
// parallel-loop tiling). An empty weight folds to itself; the kernels keep
// one thread along an empty dimension and their grid is empty, which the
// runtime launches as nothing.
// RUN: flashnorm-opt %s --flashnorm-fold-gains --remarks-filter=flashnorm --remark-format=emitRemark 2>&1 | FileCheck %s --check-prefix=FOLD
// RUN: flashnorm-opt %s --flashnorm | flashnorm-opt --flashnorm-gpu-pipeline="defer-mode=streams format=isa" | FileCheck %s
// RUN: flashnorm-opt %s --flashnorm | flashnorm-opt --flashnorm-gpu-pipeline="defer-mode=fused format=isa" | FileCheck %s
// RUN: flashnorm-opt %s --flashnorm | flashnorm-opt --flashnorm-gpu-pipeline="defer-mode=serial format=isa" | FileCheck %s

// FOLD: Function=no_outputs | Remark="folded the gain into 1 projection weight(s)"
// FOLD: dense<5.000000e-01> : tensor<8x0xf32>
// CHECK-LABEL: llvm.func @no_outputs
// CHECK: gpu.launch_func
// CHECK-LABEL: llvm.func @no_features
// CHECK: gpu.launch_func

func.func @no_outputs(%x: tensor<4x8xf32>) -> tensor<4x0xf32> {
  %g = arith.constant dense<2.0> : tensor<8xf32>
  %w = arith.constant dense<0.5> : tensor<8x0xf32>
  %n = flashnorm.rms_norm %x gain(%g : tensor<8xf32>) eps(1.0e-05) : tensor<4x8xf32>
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x0xf32>
  %f = linalg.fill ins(%c0 : f32) outs(%e : tensor<4x0xf32>) -> tensor<4x0xf32>
  %y = linalg.matmul ins(%n, %w : tensor<4x8xf32>, tensor<8x0xf32>) outs(%f : tensor<4x0xf32>) -> tensor<4x0xf32>
  return %y : tensor<4x0xf32>
}

func.func @no_features(%x: tensor<4x0xf32>) -> tensor<4x8xf32> {
  %w = arith.constant dense<0.5> : tensor<0x8xf32>
  %n = flashnorm.rms_norm %x eps(1.0e-05) : tensor<4x0xf32>
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x8xf32>
  %f = linalg.fill ins(%c0 : f32) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  %y = linalg.matmul ins(%n, %w : tensor<4x0xf32>, tensor<0x8xf32>) outs(%f : tensor<4x8xf32>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}
