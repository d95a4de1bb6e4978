// The program of test/Runtime/empty-copies.test: the same function on 4 rows, then on
// none.
#id = affine_map<(i, j) -> (i, j)>
func.func @f(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %c0 = arith.constant 0 : index
  %m = tensor.dim %x, %c0 : tensor<?x64xf32>
  %e = tensor.empty(%m) : tensor<?x64xf32>
  %y = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<?x64xf32>) outs(%e : tensor<?x64xf32>) {
  ^bb0(%a: f32, %o: f32):
    %n = arith.negf %a : f32
    linalg.yield %n : f32
  } -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}
func.func @main() {
  %one = arith.constant 1.0 : f32
  %e4 = tensor.empty() : tensor<1x64xf32>
  %x4 = linalg.fill ins(%one : f32) outs(%e4 : tensor<1x64xf32>) -> tensor<1x64xf32>
  %d4 = tensor.cast %x4 : tensor<1x64xf32> to tensor<?x64xf32>
  %y4 = call @f(%d4) : (tensor<?x64xf32>) -> tensor<?x64xf32>
  %u4 = tensor.cast %y4 : tensor<?x64xf32> to tensor<*xf32>
  call @printMemrefF32(%u4) : (tensor<*xf32>) -> ()
  %e0 = tensor.empty() : tensor<0x64xf32>
  %d0 = tensor.cast %e0 : tensor<0x64xf32> to tensor<?x64xf32>
  %y0 = call @f(%d0) : (tensor<?x64xf32>) -> tensor<?x64xf32>
  %u0 = tensor.cast %y0 : tensor<?x64xf32> to tensor<*xf32>
  call @printMemrefF32(%u0) : (tensor<*xf32>) -> ()
  return
}
func.func private @printMemrefF32(tensor<*xf32>)
