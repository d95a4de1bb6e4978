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
// A gated MLP whose f64 product is rounded to f32 before the down
// projection: its f64 1/RMS is not moved past the rounding (the raw rows
// of 1e-50 and 1e100 would be 0 and inf in f32; the f32 rule of move-scale
// let it through).
// RUN: flashnorm-run %s -e mlp32 --pipeline=flashnorm --compare --rtol=1e-6 --atol=1e-6 --input-range=1e-50 | FileCheck %s
// RUN: flashnorm-run %s -e mlp32 --pipeline=flashnorm --compare --rtol=1e-6 --atol=1e-6 --input-range=1e100 | FileCheck %s
// RUN: flashnorm-opt %s --flashnorm --remarks-filter=flashnorm --remark-format=emitRemark -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK
// REMARK: Function=mlp32 | Remark="post-scale not moved past it: its result is a type narrower than its f64 statistic, where an unnormalized product could overflow"
// An f64 projection into an f32 accumulator: its operands are narrowed as
// the named op's body casts them (the vectorized contraction "widened" them
// with an invalid arith.extf).
// RUN: flashnorm-run %s -e mixed --compare --pipeline=flashnorm | FileCheck %s
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
// LOWERED-LABEL: func.func @rms
// LOWERED-NOT: f32
// LOWERED-LABEL: func.func @layer
// LOWERED-NOT: f32
// LOWERED-LABEL: func.func @mlp32
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

#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @mlp32(%x: tensor<4x8xf64>) -> tensor<4x4xf32> {
  %g = arith.constant dense<[0.738, 1.044, 0.870, 1.104, 1.126, 0.566, 0.513, 1.337]> : tensor<8xf64>
  %w1 = arith.constant dense<[[-0.481, -0.531, 0.991, -0.059, 0.673, -0.047], [0.278, -0.699, 0.270, 0.736, 0.046, 0.483], [0.343, -0.872, 0.516, 0.182, -0.397, -0.938], [0.731, -0.055, 0.438, 0.758, 0.428, 0.842], [-0.210, 0.602, -0.111, 0.871, 0.758, -0.805], [-0.728, -0.566, 0.931, -0.128, 0.253, -0.398], [0.014, -0.228, -0.298, 0.170, 0.169, 0.808], [0.364, 0.858, 0.713, 0.982, 0.343, -0.674]]> : tensor<8x6xf64>
  %w3 = arith.constant dense<[[0.721, 0.929, 0.809, 0.138, 0.428, -0.578], [0.663, 0.147, -0.430, -0.873, 0.708, 0.980], [-0.823, 0.601, -0.179, -0.698, -0.412, 0.538], [0.746, -0.912, 0.229, -0.910, 0.437, -0.338], [0.762, 0.961, 0.011, 0.997, -0.381, -0.846], [0.200, -0.937, -0.605, -0.184, 0.221, -0.688], [-0.915, 0.736, -0.372, 0.917, 0.793, -0.244], [-0.079, 0.040, 0.288, 0.191, 0.119, 0.240]]> : tensor<8x6xf64>
  %w2 = arith.constant dense<[[0.881, 0.014, -0.138, 0.441], [-0.525, -0.398, 0.956, 0.042], [0.097, -0.977, -0.170, 0.160], [-0.960, 0.232, 0.264, -0.880], [0.255, -0.067, 0.359, -0.295], [0.414, 0.476, -0.956, -0.879]]> : tensor<6x4xf32>
  %n = flashnorm.rms_norm %x gain(%g : tensor<8xf64>) eps(1.0e-300) : tensor<4x8xf64>
  %c0 = arith.constant 0.0 : f64
  %e = tensor.empty() : tensor<4x6xf64>
  %z = linalg.fill ins(%c0 : f64) outs(%e : tensor<4x6xf64>) -> tensor<4x6xf64>
  %a = linalg.matmul ins(%n, %w1 : tensor<4x8xf64>, tensor<8x6xf64>) outs(%z : tensor<4x6xf64>) -> tensor<4x6xf64>
  %b = linalg.matmul ins(%n, %w3 : tensor<4x8xf64>, tensor<8x6xf64>) outs(%z : tensor<4x6xf64>) -> tensor<4x6xf64>
  %e3 = tensor.empty() : tensor<4x6xf32>
  %h = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%a, %b : tensor<4x6xf64>, tensor<4x6xf64>) outs(%e3 : tensor<4x6xf32>) {
  ^bb0(%p: f64, %q: f64, %o: f32):
    %ng = arith.negf %p : f64
    %ex = math.exp %ng : f64
    %one = arith.constant 1.0 : f64
    %den = arith.addf %one, %ex : f64
    %sig = arith.divf %p, %den : f64
    %r = arith.mulf %sig, %q : f64
    %t = arith.truncf %r : f64 to f32
    linalg.yield %t : f32
  } -> tensor<4x6xf32>
  %c032 = arith.constant 0.0 : f32
  %e2 = tensor.empty() : tensor<4x4xf32>
  %z2 = linalg.fill ins(%c032 : f32) outs(%e2 : tensor<4x4xf32>) -> tensor<4x4xf32>
  %y = linalg.matmul ins(%h, %w2 : tensor<4x6xf32>, tensor<6x4xf32>) outs(%z2 : tensor<4x4xf32>) -> tensor<4x4xf32>
  return %y : tensor<4x4xf32>
}

func.func @mixed(%x: tensor<4x8xf64>, %w: tensor<8x4xf64>) -> tensor<4x4xf32> {
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x4xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<4x4xf32>) -> tensor<4x4xf32>
  %y = linalg.matmul ins(%x, %w : tensor<4x8xf64>, tensor<8x4xf64>) outs(%z : tensor<4x4xf32>) -> tensor<4x4xf32>
  return %y : tensor<4x4xf32>
}
