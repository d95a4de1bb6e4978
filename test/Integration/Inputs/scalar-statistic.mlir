// A 1-D row: the statistic is 0-d (one thread runs it on the GPU).
func.func @forward(%x: tensor<16xf32>, %w: tensor<16x8xf32>, %bias: tensor<8xf32>) -> tensor<8xf32> {
  %s = flashnorm.rms_inv %x eps(1.0e-5) : tensor<16xf32> -> tensor<f32>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<8xf32>) -> tensor<8xf32>
  %p = linalg.vecmat ins(%x, %w : tensor<16xf32>, tensor<16x8xf32>) outs(%f : tensor<8xf32>) -> tensor<8xf32>
  %y = flashnorm.post_scale %p, %s : tensor<8xf32>, tensor<f32> -> tensor<8xf32>
  %r = arith.addf %y, %bias : tensor<8xf32>
  return %r : tensor<8xf32>
}
func.func @main() {
  %x = arith.constant dense<[0.1, 0.2, -0.3, 0.4, 0.5, -0.6, 0.7, 0.8, 0.9, 1.0, -1.1, 1.2, 1.3, 1.4, 1.5, -1.6]> : tensor<16xf32>
  %w0 = arith.constant dense<0.5> : tensor<16x8xf32>
  %b = arith.constant dense<[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]> : tensor<8xf32>
  %y = func.call @forward(%x, %w0, %b) : (tensor<16xf32>, tensor<16x8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %u = tensor.cast %y : tensor<8xf32> to tensor<*xf32>
  func.call @printMemrefF32(%u) : (tensor<*xf32>) -> ()
  return
}
func.func private @printMemrefF32(tensor<*xf32>)
