// Deferral on rows whose mean square overflows f32 (|x| ~ 1e38): the
// original's statistic is rsqrt(inf) = 0 and its rows are 0; the deferred
// raw product overflows to inf, and inf * 0 would be NaN. post_scale makes
// a row with a zero scale 0, so every finite input matches; rows of
// ordinary size and of 1e30 (raw product finite) too. Both lowerings.
// RUN: flashnorm-run %s -e proj --pipeline=flashnorm-defer-scale --compare --input-range=1e38 | FileCheck %s
// RUN: flashnorm-run %s -e proj --pipeline=flashnorm-defer-scale --compare --input-range=1e38 --concurrent | FileCheck %s
// RUN: flashnorm-run %s -e proj --pipeline=flashnorm-defer-scale --compare --input-range=1e30 | FileCheck %s
// RUN: flashnorm-run %s -e proj --pipeline=flashnorm-defer-scale --compare | FileCheck %s
// The lowered post-scale selects 0 where its scale is 0.
// RUN: flashnorm-opt %s --flashnorm-defer-scale --flashnorm-lower-to-linalg | FileCheck %s --check-prefix=IR
// CHECK: MATCH
// IR: arith.cmpf oeq
// IR-NEXT: arith.select
func.func @proj(%x: tensor<4x8xf32>) -> tensor<4x4xf32> {
  %w = arith.constant dense<[[1.0, -2.0, 0.5, 3.0], [2.0, 1.0, -1.0, 0.25], [-3.0, 0.5, 2.0, 1.0], [1.5, -1.0, 0.75, -2.0], [2.5, 2.0, -0.5, 1.0], [-1.0, 3.0, 1.0, -0.5], [0.5, -2.5, 2.0, 1.5], [3.0, 1.0, -2.0, 2.0]]> : tensor<8x4xf32>
  %n = flashnorm.rms_norm %x eps(1.0e-06) : tensor<4x8xf32>
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x4xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<4x4xf32>) -> tensor<4x4xf32>
  %y = linalg.matmul ins(%n, %w : tensor<4x8xf32>, tensor<8x4xf32>) outs(%z : tensor<4x4xf32>) -> tensor<4x4xf32>
  return %y : tensor<4x4xf32>
}
