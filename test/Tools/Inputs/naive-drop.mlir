// ../flashnorm-run.mlir's @block with the inner norm dropped naively.
func.func @block(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %g = arith.constant dense<[1.0, 2.0, 0.5, 1.5, 1.0, 0.25, 3.0, 1.0]> : tensor<8xf32>
  %b = flashnorm.rms_norm %x gain(%g : tensor<8xf32>) eps(1.0e-06) : tensor<4x8xf32>
  %w = arith.constant dense<0.5> : tensor<8x8xf32>
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x8xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  %n = flashnorm.rms_norm %x gain(%g : tensor<8xf32>) eps(1.0e-05) : tensor<4x8xf32>
  %y = linalg.matmul ins(%n, %w : tensor<4x8xf32>, tensor<8x8xf32>) outs(%z : tensor<4x8xf32>) -> tensor<4x8xf32>
  return %b, %y : tensor<4x8xf32>, tensor<4x8xf32>
}
