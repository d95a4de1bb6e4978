// An f64 norm's deferred statistic is f64: rounded to f32, its 1/RMS
// would lose f64's precision (relative 6e-8 where the original is exact to
// 1e-16) and leave f32's range, where rows of 1e-50 have 1/RMS 1e50 (inf
// in f32, and the deferred rows inf) and rows of 1e100 have 1e-100 (0 in
// f32, and the deferred rows 0). RMSNorm and LayerNorm, serial and
// concurrent, against the unrewritten program at f64's tolerance.
// RUN: flashnorm-run %s -e rms --pipeline=flashnorm --compare --rtol=1e-12 --atol=1e-12 | FileCheck %s
// RUN: flashnorm-run %s -e rms --pipeline=flashnorm --compare --rtol=1e-12 --atol=1e-12 --concurrent | FileCheck %s
// RUN: flashnorm-run %s -e rms --pipeline=flashnorm --compare --rtol=1e-12 --atol=1e-12 --input-range=1e-50 | FileCheck %s
// RUN: flashnorm-run %s -e rms --pipeline=flashnorm --compare --rtol=1e-12 --atol=1e-12 --input-range=1e100 | FileCheck %s
// RUN: flashnorm-run %s -e layer --pipeline=flashnorm --compare --rtol=1e-12 --atol=1e-12 | FileCheck %s
// RUN: flashnorm-run %s -e layer --pipeline=flashnorm --compare --rtol=1e-12 --atol=1e-12 --input-range=1e-50 | FileCheck %s
// RUN: flashnorm-run %s -e layer --pipeline=flashnorm --compare --rtol=1e-12 --atol=1e-12 --input-range=1e100 --concurrent | FileCheck %s
// CHECK: MATCH
// RUN: flashnorm-opt %s --flashnorm | FileCheck %s --check-prefix=IR
// IR-LABEL: func.func @rms
// IR: %[[S:.*]] = flashnorm.rms_inv %{{.*}} : tensor<4x8xf64> -> tensor<4xf64>
// IR: flashnorm.post_scale %{{.*}}, %[[S]] : tensor<4x4xf64>, tensor<4xf64> -> tensor<4x4xf64>
// IR-LABEL: func.func @layer
// IR: %[[L:.*]] = flashnorm.layer_inv %{{.*}} : tensor<4x8xf64> -> tensor<4xf64>
// IR: flashnorm.post_scale %{{.*}}, %[[L]] : tensor<4x4xf64>, tensor<4xf64> -> tensor<4x4xf64>
// The lowered statistic stays f64 (no truncf to f32 anywhere).
// RUN: flashnorm-opt %s --flashnorm --flashnorm-lower-to-linalg | FileCheck %s --check-prefix=LOWERED
// LOWERED-NOT: f32
func.func @rms(%x: tensor<4x8xf64>) -> tensor<4x4xf64> {
  %w = arith.constant dense<[[1.0, -2.0, 0.5, 3.0], [2.0, 1.0, -1.0, 0.25], [-3.0, 0.5, 2.0, 1.0], [1.5, -1.0, 0.75, -2.0], [2.5, 2.0, -0.5, 1.0], [-1.0, 3.0, 1.0, -0.5], [0.5, -2.5, 2.0, 1.5], [3.0, 1.0, -2.0, 2.0]]> : tensor<8x4xf64>
  %g = arith.constant dense<[1.5, 0.5, 2.0, 1.0, 0.25, 1.0, 3.0, 0.75]> : tensor<8xf64>
  %n = flashnorm.rms_norm %x gain(%g : tensor<8xf64>) eps(1.0e-300) : tensor<4x8xf64>
  %c0 = arith.constant 0.0 : f64
  %e = tensor.empty() : tensor<4x4xf64>
  %z = linalg.fill ins(%c0 : f64) outs(%e : tensor<4x4xf64>) -> tensor<4x4xf64>
  %y = linalg.matmul ins(%n, %w : tensor<4x8xf64>, tensor<8x4xf64>) outs(%z : tensor<4x4xf64>) -> tensor<4x4xf64>
  return %y : tensor<4x4xf64>
}

func.func @layer(%x: tensor<4x8xf64>) -> tensor<4x4xf64> {
  %w = arith.constant dense<[[1.0, -2.0, 0.5, 3.0], [2.0, 1.0, -1.0, 0.25], [-3.0, 0.5, 2.0, 1.0], [1.5, -1.0, 0.75, -2.0], [2.5, 2.0, -0.5, 1.0], [-1.0, 3.0, 1.0, -0.5], [0.5, -2.5, 2.0, 1.5], [3.0, 1.0, -2.0, 2.0]]> : tensor<8x4xf64>
  %g = arith.constant dense<[1.5, 0.5, 2.0, 1.0, 0.25, 1.0, 3.0, 0.75]> : tensor<8xf64>
  %n = flashnorm.layer_norm %x gain(%g : tensor<8xf64>) eps(1.0e-300) : tensor<4x8xf64>
  %c0 = arith.constant 0.0 : f64
  %e = tensor.empty() : tensor<4x4xf64>
  %z = linalg.fill ins(%c0 : f64) outs(%e : tensor<4x4xf64>) -> tensor<4x4xf64>
  %y = linalg.matmul ins(%n, %w : tensor<4x8xf64>, tensor<8x4xf64>) outs(%z : tensor<4x4xf64>) -> tensor<4x4xf64>
  return %y : tensor<4x4xf64>
}
