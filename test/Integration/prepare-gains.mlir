// Argument weights folded by the prepare function, executed against the
// unrewritten functions (flashnorm-run --prepare runs @<fn>_flashnorm_prepare
// on the inputs, then @<fn> on what it returns):
// - tosa_gain, reshape_gain, global_gain: a constant gain the plan reads
//   through a reshape (every raised TOSA norm's [1, 1, K] gain) or from a
//   global; the prepare function re-read the IR, found no constant and
//   folded a gain of ones (the norm had lost its gain: wrong numbers);
// - f64_weights: an f64 weight folds in f64 (it folded in f32: 1e-6).
// RUN: flashnorm-run %s -e tosa_gain --prepare --compare | FileCheck %s
// RUN: flashnorm-run %s -e reshape_gain --prepare --compare | FileCheck %s
// RUN: flashnorm-run %s -e global_gain --prepare --compare | FileCheck %s
// RUN: flashnorm-run %s -e f64_weights --prepare --compare --pipeline='flashnorm-fold-gains{prepare-function=1}' --rtol 1e-12 --atol 1e-12 | FileCheck %s
// CHECK: MATCH

func.func @tosa_gain(%x: tensor<1x4x8xf32>, %w: tensor<8x16xf32>) -> tensor<1x4x16xf32> {
  %shift = "tosa.const"() {values = dense<0> : tensor<1xi8>} : () -> tensor<1xi8>
  %sq = tosa.mul %x, %x, %shift : (tensor<1x4x8xf32>, tensor<1x4x8xf32>, tensor<1xi8>) -> tensor<1x4x8xf32>
  %sum = tosa.reduce_sum %sq {axis = 2 : i32} : (tensor<1x4x8xf32>) -> tensor<1x4x1xf32>
  %inv_k = "tosa.const"() {values = dense<0.125> : tensor<1x1x1xf32>} : () -> tensor<1x1x1xf32>
  %ms = tosa.mul %sum, %inv_k, %shift : (tensor<1x4x1xf32>, tensor<1x1x1xf32>, tensor<1xi8>) -> tensor<1x4x1xf32>
  %eps = "tosa.const"() {values = dense<1.0e-05> : tensor<1x1x1xf32>} : () -> tensor<1x1x1xf32>
  %a = tosa.add %ms, %eps : (tensor<1x4x1xf32>, tensor<1x1x1xf32>) -> tensor<1x4x1xf32>
  %r = tosa.rsqrt %a : (tensor<1x4x1xf32>) -> tensor<1x4x1xf32>
  %nx = tosa.mul %x, %r, %shift : (tensor<1x4x8xf32>, tensor<1x4x1xf32>, tensor<1xi8>) -> tensor<1x4x8xf32>
  %g = "tosa.const"() {values = dense<[[[2.0, 3.0, 4.0, 5.0, 0.5, 0.25, 1.5, 2.5]]]> : tensor<1x1x8xf32>} : () -> tensor<1x1x8xf32>
  %n = tosa.mul %nx, %g, %shift : (tensor<1x4x8xf32>, tensor<1x1x8xf32>, tensor<1xi8>) -> tensor<1x4x8xf32>
  %shape = tosa.const_shape {values = dense<[1, 8, 16]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %w3 = tosa.reshape %w, %shape : (tensor<8x16xf32>, !tosa.shape<3>) -> tensor<1x8x16xf32>
  %zp = "tosa.const"() {values = dense<0.0> : tensor<1xf32>} : () -> tensor<1xf32>
  %q = tosa.matmul %n, %w3, %zp, %zp : (tensor<1x4x8xf32>, tensor<1x8x16xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x4x16xf32>
  return %q : tensor<1x4x16xf32>
}

func.func @reshape_gain(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>) -> tensor<4x16xf32> {
  %g2 = arith.constant dense<[[2.0, 3.0, 4.0, 5.0, 0.5, 0.25, 1.5, 2.5]]> : tensor<1x8xf32>
  %g = tensor.collapse_shape %g2 [[0, 1]] : tensor<1x8xf32> into tensor<8xf32>
  %n = flashnorm.rms_norm %x gain(%g : tensor<8xf32>) eps(1.0e-05) : tensor<4x8xf32>
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x16xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<4x16xf32>) -> tensor<4x16xf32>
  %q = linalg.matmul ins(%n, %w : tensor<4x8xf32>, tensor<8x16xf32>) outs(%z : tensor<4x16xf32>) -> tensor<4x16xf32>
  return %q : tensor<4x16xf32>
}

  ml_program.global private @gain(dense<[2.0, 3.0, 4.0, 5.0, 0.5, 0.25, 1.5, 2.5]> : tensor<8xf32>) : tensor<8xf32>
  func.func @global_gain(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>) -> tensor<4x16xf32> {
    %g = ml_program.global_load_const @gain : tensor<8xf32>
    %n = flashnorm.rms_norm %x gain(%g : tensor<8xf32>) eps(1.0e-05) : tensor<4x8xf32>
    %c0 = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<4x16xf32>
    %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<4x16xf32>) -> tensor<4x16xf32>
    %q = linalg.matmul ins(%n, %w : tensor<4x8xf32>, tensor<8x16xf32>) outs(%z : tensor<4x16xf32>) -> tensor<4x16xf32>
    return %q : tensor<4x16xf32>
  }

func.func @f64_weights(%x: tensor<4x8xf64>, %g: tensor<8xf64>, %w: tensor<8x16xf64>) -> tensor<4x16xf64> {
  %n = flashnorm.rms_norm %x gain(%g : tensor<8xf64>) eps(1.0e-05) : tensor<4x8xf64>
  %c0 = arith.constant 0.0 : f64
  %e = tensor.empty() : tensor<4x16xf64>
  %z = linalg.fill ins(%c0 : f64) outs(%e : tensor<4x16xf64>) -> tensor<4x16xf64>
  %q = linalg.matmul ins(%n, %w : tensor<4x8xf64>, tensor<8x16xf64>) outs(%z : tensor<4x16xf64>) -> tensor<4x16xf64>
  return %q : tensor<4x16xf64>
}
