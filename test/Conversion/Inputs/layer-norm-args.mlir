// A LayerNorm whose gain and projection weight are arguments: its prepare
// function folds the gain and the centering (a column reduction).
func.func @f(%x: tensor<4x16xf32>, %g: tensor<16xf32>, %w: tensor<16x8xf32>) -> tensor<4x8xf32> {
  %n = flashnorm.layer_norm %x gain(%g : tensor<16xf32>) eps(1.0e-05) : tensor<4x16xf32>
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x8xf32>
  %f = linalg.fill ins(%c0 : f32) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  %y = linalg.matmul ins(%n, %w : tensor<4x16xf32>, tensor<16x8xf32>) outs(%f : tensor<4x8xf32>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}
