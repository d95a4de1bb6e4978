// The stock mlir-opt of LLVM 22 loads flashnorm as a dialect and pass plugin
// and runs the whole pipeline.
// RUN: %upstream-mlir-opt %s --load-dialect-plugin=%plugin \
// RUN:   --load-pass-plugin=%plugin --pass-pipeline="builtin.module(flashnorm)" \
// RUN:   | FileCheck %s

// CHECK-LABEL: func.func @block
// CHECK-SAME: (%[[X:.*]]: tensor<4x2xf32>)
// CHECK: %[[W:.*]] = arith.constant dense<{{\[}}[2.000000e+00, 4.000000e+00, 6.000000e+00], [-1.000000e+00, -1.500000e+00, -2.000000e+00]]>
// CHECK: %[[S:.*]] = flashnorm.rms_inv %[[X]]
// CHECK: %[[P:.*]] = linalg.matmul ins(%[[X]], %[[W]] :
// CHECK: flashnorm.post_scale %[[P]], %[[S]]
func.func @block(%x: tensor<4x2xf32>) -> tensor<4x3xf32> {
  %g = arith.constant dense<[2.0, 0.5]> : tensor<2xf32>
  %w = arith.constant dense<[[1.0, 2.0, 3.0], [-2.0, -3.0, -4.0]]> : tensor<2x3xf32>
  %n = flashnorm.rms_norm %x gain(%g : tensor<2xf32>) eps(1.0e-05) : tensor<4x2xf32>
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x3xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<4x3xf32>) -> tensor<4x3xf32>
  %y = linalg.matmul ins(%n, %w : tensor<4x2xf32>, tensor<2x3xf32>) outs(%z : tensor<4x3xf32>) -> tensor<4x3xf32>
  return %y : tensor<4x3xf32>
}
