// f64 norms keep f64 statistics on the GPU kernels too: rows of 1e-50
// (1/RMS 1e50, inf in f32) and of 1e100 (1/RMS 1e-100, 0 in f32) beside
// ordinary ones, RMSNorm and LayerNorm (Integration/defer-f64.mlir).
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
func.func private @printMemrefF64(tensor<*xf64>)
func.func @main() {
  %x = arith.constant dense<[[1.0e-50, -2.0e-50, 3.0e-50, 0.5e-50, 1.0e-50, 2.0e-50, -1.0e-50, 0.25e-50], [1.0e100, 2.0e100, -3.0e100, 1.0e100, 0.5e100, 1.0e100, 2.0e100, 1.0e100], [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0], [0.1, -0.2, 0.3, -0.4, 0.5, -0.6, 0.7, 0.123456789012345]]> : tensor<4x8xf64>
  %a = call @rms(%x) : (tensor<4x8xf64>) -> tensor<4x4xf64>
  %b = call @layer(%x) : (tensor<4x8xf64>) -> tensor<4x4xf64>
  %ua = tensor.cast %a : tensor<4x4xf64> to tensor<*xf64>
  %ub = tensor.cast %b : tensor<4x4xf64> to tensor<*xf64>
  call @printMemrefF64(%ua) : (tensor<*xf64>) -> ()
  call @printMemrefF64(%ub) : (tensor<*xf64>) -> ()
  return
}
