// The final norm, the last token's row (a slice whose offset is known at
// run time), the LM head: the statistic is taken of the sliced raw row, a
// strided view of the hidden states.
func.func @forward(%x: tensor<?x16xf32>) -> tensor<1x8xf32> {
  %w = arith.constant dense<[[0.5, -0.25, 0.75, 1.0, -0.5, 0.25, 0.125, -1.0], [1.0, 0.5, -0.5, 0.25, 0.75, -1.0, 0.5, 0.25],
                             [-0.5, 0.25, 0.5, -0.75, 1.0, 0.5, -0.25, 0.125], [0.25, 1.0, -0.125, 0.5, -0.25, 0.75, 1.0, -0.5],
                             [0.5, -0.25, 0.75, 1.0, -0.5, 0.25, 0.125, -1.0], [1.0, 0.5, -0.5, 0.25, 0.75, -1.0, 0.5, 0.25],
                             [-0.5, 0.25, 0.5, -0.75, 1.0, 0.5, -0.25, 0.125], [0.25, 1.0, -0.125, 0.5, -0.25, 0.75, 1.0, -0.5],
                             [0.5, -0.25, 0.75, 1.0, -0.5, 0.25, 0.125, -1.0], [1.0, 0.5, -0.5, 0.25, 0.75, -1.0, 0.5, 0.25],
                             [-0.5, 0.25, 0.5, -0.75, 1.0, 0.5, -0.25, 0.125], [0.25, 1.0, -0.125, 0.5, -0.25, 0.75, 1.0, -0.5],
                             [0.5, -0.25, 0.75, 1.0, -0.5, 0.25, 0.125, -1.0], [1.0, 0.5, -0.5, 0.25, 0.75, -1.0, 0.5, 0.25],
                             [-0.5, 0.25, 0.5, -0.75, 1.0, 0.5, -0.25, 0.125], [0.25, 1.0, -0.125, 0.5, -0.25, 0.75, 1.0, -0.5]]> : tensor<16x8xf32>
  %g = arith.constant dense<[1.0, 0.5, 2.0, -1.0, 0.25, 3.0, 1.0, 0.75, 1.0, 0.5, 2.0, -1.0, 0.25, 3.0, 1.0, 0.75]> : tensor<16xf32>
  %n = flashnorm.rms_norm %x gain(%g : tensor<16xf32>) eps(1.0e-5) : tensor<?x16xf32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %rows = tensor.dim %n, %c0 : tensor<?x16xf32>
  %at = arith.subi %rows, %c1 : index
  %last = tensor.extract_slice %n[%at, 0] [1, 16] [1, 1] : tensor<?x16xf32> to tensor<1x16xf32>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x8xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<1x8xf32>) -> tensor<1x8xf32>
  %y = linalg.matmul ins(%last, %w : tensor<1x16xf32>, tensor<16x8xf32>) outs(%f : tensor<1x8xf32>) -> tensor<1x8xf32>
  return %y : tensor<1x8xf32>
}
func.func @main() {
  %x = arith.constant dense<[[0.1, 0.2, -0.3, 0.4, 0.5, -0.6, 0.7, 0.8, 0.9, 1.0, -1.1, 1.2, 1.3, 1.4, 1.5, -1.6],
                             [2.1, -0.2, 0.3, 0.4, -0.5, 0.6, 0.7, 1.8, 0.9, 1.0, 1.1, -1.2, 1.3, 0.4, 1.5, 1.6],
                             [0.3, 0.2, 0.3, -4.4, 0.5, 0.6, -0.7, 0.8, 0.9, 2.0, 1.1, 1.2, -1.3, 1.4, 0.5, 1.6]]> : tensor<3x16xf32>
  %xd = tensor.cast %x : tensor<3x16xf32> to tensor<?x16xf32>
  %y = func.call @forward(%xd) : (tensor<?x16xf32>) -> tensor<1x8xf32>
  %u = tensor.cast %y : tensor<1x8xf32> to tensor<*xf32>
  func.call @printMemrefF32(%u) : (tensor<*xf32>) -> ()
  return
}
func.func private @printMemrefF32(tensor<*xf32>)
