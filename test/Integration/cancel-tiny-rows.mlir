// Cancelling a norm before an eps = 0 norm (QK-norm shape) is exact in
// value, but the second norm then reads the raw scale: on rows of
// magnitude 1e-21 its f32 mean square (~1e-42) is a denormal with three
// significant digits, where the original, normalized first, squares rows of
// ~1e-18. The cancelled norm computes its statistic in f64 (every finite
// f32 row's mean square is normal there) and matches at rtol 1e-5; rows of
// ordinary size too.
// RUN: flashnorm-run %s -e qk --pipeline=flashnorm-drop-redundant --compare --rtol 1e-5 --input-range=1e-21 | FileCheck %s
// RUN: flashnorm-run %s -e qk --pipeline=flashnorm-drop-redundant --compare --rtol 1e-5 | FileCheck %s
// RUN: flashnorm-run %s -e qk --pipeline=flashnorm-drop-redundant --compare --rtol 1e-5 --input-range=1e15 | FileCheck %s
// CHECK: MATCH
func.func @qk(%x: tensor<4x8xf32>) -> tensor<4x2x4xf32> {
  %wq = arith.constant dense<[[0.5, -1.0, 0.25, 2.0, -0.5, 1.0, 0.75, -0.25], [1.0, 0.5, -0.25, 0.0, 0.75, -1.0, 0.5, 0.25], [-0.5, 0.25, 1.0, -1.0, 0.5, 0.0, -0.75, 1.0], [0.25, -0.75, 0.5, 1.0, -1.0, 0.5, 0.0, -0.5], [1.0, 1.0, -0.5, 0.25, 0.0, -0.25, 0.5, 0.75], [-1.0, 0.5, 0.75, -0.5, 1.0, 0.25, -0.25, 0.0], [0.0, -0.25, 1.0, 0.5, -0.75, 1.0, 0.25, -1.0], [0.75, 0.0, -1.0, 0.25, 0.5, -0.5, 1.0, 0.5]]> : tensor<8x8xf32>
  %n = flashnorm.rms_norm %x eps(1.0e-06) : tensor<4x8xf32>
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x8xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  %q = linalg.matmul ins(%n, %wq : tensor<4x8xf32>, tensor<8x8xf32>) outs(%z : tensor<4x8xf32>) -> tensor<4x8xf32>
  %qh = tensor.expand_shape %q [[0], [1, 2]] output_shape [4, 2, 4] : tensor<4x8xf32> into tensor<4x2x4xf32>
  %qn = flashnorm.rms_norm %qh eps(0.0) : tensor<4x2x4xf32>
  return %qn : tensor<4x2x4xf32>
}
