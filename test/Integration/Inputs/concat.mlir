// A concatenation: copies into strided views (kernels on the GPU, not
// device memcpys), then an element-wise op.
func.func @f(%x: tensor<4x16xf32>, %y: tensor<4x16xf32>) -> tensor<4x32xf32> {
  %c = tensor.concat dim(1) %x, %y : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x32xf32>
  %e = tensor.empty() : tensor<4x32xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%c : tensor<4x32xf32>) outs(%e : tensor<4x32xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.mulf %a, %a : f32
    linalg.yield %m : f32
  } -> tensor<4x32xf32>
  return %r : tensor<4x32xf32>
}
func.func @main() {
  %x = arith.constant dense<[[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0], [1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0], [2.5, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0], [3.5, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0]]> : tensor<4x16xf32>
  %y = arith.constant dense<-0.5> : tensor<4x16xf32>
  %r = func.call @f(%x, %y) : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x32xf32>
  %u = tensor.cast %r : tensor<4x32xf32> to tensor<*xf32>
  func.call @printMemrefF32(%u) : (tensor<*xf32>) -> ()
  return
}
func.func private @printMemrefF32(tensor<*xf32>)
