// A gain folded into f16 weights whose products fall below f16's normal
// range (6.1e-5) is refused where the subnormal rounding would cost more
// than the fold's one rounding: a gain of 1e-4 times weights of 2e-4 gave
// every folded element 0 (the projection 0, and NaN after an eps = 0 norm
// of it, which the original rescales to unit RMS). A weight with a few
// products down there among normal ones still folds.
// RUN: flashnorm-opt %s --flashnorm --remarks-filter=flashnorm --remark-format=emitRemark -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK
// RUN: flashnorm-run %s -e flush --pipeline=flashnorm --compare --rtol 1e-3 --atol 0 | FileCheck %s
// RUN: flashnorm-run %s -e flush_norm --pipeline=flashnorm --compare --rtol 1e-3 --atol 0 | FileCheck %s
// RUN: flashnorm-run %s -e flush_nk --pipeline=flashnorm --compare --rtol 1e-3 --atol 0 | FileCheck %s
// RUN: flashnorm-run %s -e few --pipeline=flashnorm --compare --rtol 2e-3 --atol 2e-3 | FileCheck %s
// CHECK: MATCH
// REMARK-DAG: Function=flush | Remark="not folded: weight of 'linalg.matmul': 2 output(s) of the folded weight fall mostly below f16's normal range (8 product(s) underflow)
// REMARK-DAG: Function=flush_norm | Remark="not folded: weight of 'linalg.matmul': 2 output(s) of the folded weight fall mostly below f16's normal range (8 product(s) underflow)
// REMARK-DAG: Function=flush_nk | Remark="not folded: weight of 'linalg.matmul': 2 output(s) of the folded weight fall mostly below f16's normal range (8 product(s) underflow)
// REMARK-DAG: Function=few | Remark="folded the gain into 1 projection weight(s)

// K x N: each output is a column, its products a k apart.
func.func @flush(%x: tensor<4x4xf16>) -> tensor<4x2xf32> {
  %g = arith.constant dense<1.0e-4> : tensor<4xf16>
  %w = arith.constant dense<[[2.0e-4, -2.0e-4], [1.5e-4, 2.0e-4], [-2.0e-4, 1.0e-4], [2.0e-4, 2.0e-4]]> : tensor<4x2xf16>
  %n = flashnorm.rms_norm %x gain(%g : tensor<4xf16>) eps(1.0e-05) : tensor<4x4xf16>
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x2xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<4x2xf32>) -> tensor<4x2xf32>
  %a = linalg.matmul ins(%n, %w : tensor<4x4xf16>, tensor<4x2xf16>) outs(%z : tensor<4x2xf32>) -> tensor<4x2xf32>
  return %a : tensor<4x2xf32>
}

func.func @flush_norm(%x: tensor<4x4xf16>) -> tensor<4x2xf32> {
  %g = arith.constant dense<1.0e-4> : tensor<4xf16>
  %w = arith.constant dense<[[2.0e-4, -2.0e-4], [1.5e-4, 2.0e-4], [-2.0e-4, 1.0e-4], [2.0e-4, 2.0e-4]]> : tensor<4x2xf16>
  %n = flashnorm.rms_norm %x gain(%g : tensor<4xf16>) eps(1.0e-05) : tensor<4x4xf16>
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x2xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<4x2xf32>) -> tensor<4x2xf32>
  %a = linalg.matmul ins(%n, %w : tensor<4x4xf16>, tensor<4x2xf16>) outs(%z : tensor<4x2xf32>) -> tensor<4x2xf32>
  %o = flashnorm.rms_norm %a eps(0.0) : tensor<4x2xf32>
  return %o : tensor<4x2xf32>
}

// N x K (nn.Linear's layout, transposed for the matmul): an output's
// products are contiguous.
func.func @flush_nk(%x: tensor<4x4xf16>) -> tensor<4x2xf32> {
  %g = arith.constant dense<1.0e-4> : tensor<4xf16>
  %w = arith.constant dense<[[2.0e-4, 1.5e-4, -2.0e-4, 2.0e-4], [-2.0e-4, 2.0e-4, 1.0e-4, 2.0e-4]]> : tensor<2x4xf16>
  %et = tensor.empty() : tensor<4x2xf16>
  %wt = linalg.transpose ins(%w : tensor<2x4xf16>) outs(%et : tensor<4x2xf16>) permutation = [1, 0]
  %n = flashnorm.rms_norm %x gain(%g : tensor<4xf16>) eps(1.0e-05) : tensor<4x4xf16>
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x2xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<4x2xf32>) -> tensor<4x2xf32>
  %a = linalg.matmul ins(%n, %wt : tensor<4x4xf16>, tensor<4x2xf16>) outs(%z : tensor<4x2xf32>) -> tensor<4x2xf32>
  return %a : tensor<4x2xf32>
}

// One product per output below the normal range (1e-2 * 1e-3 = 1e-5),
// beside normal ones: the subnormal's rounding (2^-25 at most) is small
// against the column's (f16 rounding of the fold and of the original
// normalized activation alike: --atol 2e-3 at outputs of about 1).
func.func @few(%x: tensor<4x4xf16>) -> tensor<4x2xf32> {
  %g = arith.constant dense<[1.0e-2, 1.0, 2.0, 0.5]> : tensor<4xf16>
  %w = arith.constant dense<[[1.0e-3, -1.5e-3], [0.25, -0.5], [0.125, 0.375], [-0.75, 0.0625]]> : tensor<4x2xf16>
  %n = flashnorm.rms_norm %x gain(%g : tensor<4xf16>) eps(1.0e-05) : tensor<4x4xf16>
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x2xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<4x2xf32>) -> tensor<4x2xf32>
  %a = linalg.matmul ins(%n, %w : tensor<4x4xf16>, tensor<4x2xf16>) outs(%z : tensor<4x2xf32>) -> tensor<4x2xf32>
  return %a : tensor<4x2xf32>
}
