// A weightless norm feeding a weighted (1 + g) norm that feeds projections:
// the pipeline merges the two before it folds, so the merged norm's gain
// (1 + g times the merge's correction) is folded and 1/RMS deferred: one
// statistic, no norm left, numbers unchanged.
// RUN: flashnorm-opt %s --flashnorm | FileCheck %s
// RUN: flashnorm-run %s -e block --pipeline=flashnorm --compare --rtol 1e-5 | FileCheck %s --check-prefix=CMP
// Inputs of mean square ~1e-4, where both epsilons matter:
// RUN: flashnorm-run %s -e block --pipeline=flashnorm --compare --rtol 1e-5 --input-range=0.02 | FileCheck %s --check-prefix=CMP
// CHECK-LABEL: func.func @block
// CHECK-NOT: flashnorm.rms_norm
// CHECK: %[[S:.*]] = flashnorm.rms_inv %arg0
// CHECK-NOT: flashnorm.rms_norm
// CHECK: %[[P:.*]] = linalg.matmul ins(%arg0,
// CHECK: flashnorm.post_scale %[[P]], %[[S]]
// CHECK: %[[Q:.*]] = linalg.matmul ins(%arg0,
// CHECK: flashnorm.post_scale %[[Q]], %[[S]]
// CMP: MATCH
func.func @block(%x: tensor<4x8xf32>) -> (tensor<4x6xf32>, tensor<4x6xf32>) {
  %g = arith.constant dense<[0.5, -0.25, 0.0, 1.0, 0.125, -0.5, 0.75, 0.25]> : tensor<8xf32>
  %a = flashnorm.rms_norm %x eps(1.0e-06) : tensor<4x8xf32>
  %b = flashnorm.rms_norm %a gain(%g : tensor<8xf32>) eps(1.0e-05) convention one_plus : tensor<4x8xf32>
  %w1 = arith.constant dense<[[0.5, -1.0, 0.25, 2.0, -0.5, 1.0], [1.0, 0.5, -0.25, 0.0, 0.75, -1.0], [-0.5, 0.25, 1.0, -1.0, 0.5, 0.0], [0.25, -0.75, 0.5, 1.0, -1.0, 0.5], [1.0, 1.0, -0.5, 0.25, 0.0, -0.25], [-1.0, 0.5, 0.75, -0.5, 1.0, 0.25], [0.0, -0.25, 1.0, 0.5, -0.75, 1.0], [0.75, 0.0, -1.0, 0.25, 0.5, -0.5]]> : tensor<8x6xf32>
  %w2 = arith.constant dense<0.125> : tensor<8x6xf32>
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x6xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<4x6xf32>) -> tensor<4x6xf32>
  %p = linalg.matmul ins(%b, %w1 : tensor<4x8xf32>, tensor<8x6xf32>) outs(%z : tensor<4x6xf32>) -> tensor<4x6xf32>
  %q = linalg.matmul ins(%b, %w2 : tensor<4x8xf32>, tensor<8x6xf32>) outs(%z : tensor<4x6xf32>) -> tensor<4x6xf32>
  return %p, %q : tensor<4x6xf32>, tensor<4x6xf32>
}
