// A linalg.generic contraction whose body negates the weight before the
// multiply (isaContractionOpInterface skips pure unary ops). Constant weight.
#mx = affine_map<(m, n, k) -> (m, k)>
#mw = affine_map<(m, n, k) -> (k, n)>
#mo = affine_map<(m, n, k) -> (m, n)>
func.func @f(%x: tensor<8x64xf32>) -> tensor<8x32xf32> {
  %w = arith.constant dense<1.0> : tensor<64x32xf32>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x32xf32>
  %o = linalg.fill ins(%z : f32) outs(%e : tensor<8x32xf32>) -> tensor<8x32xf32>
  %r = linalg.generic {indexing_maps = [#mx, #mw, #mo],
                       iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : tensor<8x64xf32>, tensor<64x32xf32>) outs(%o : tensor<8x32xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %nb = arith.negf %b : f32
    %p = arith.mulf %a, %nb : f32
    %s = arith.addf %c, %p : f32
    linalg.yield %s : f32
  } -> tensor<8x32xf32>
  return %r : tensor<8x32xf32>
}
func.func @main() {
  %x = arith.constant dense<1.0> : tensor<8x64xf32>
  %r = call @f(%x) : (tensor<8x64xf32>) -> tensor<8x32xf32>
  %u = tensor.cast %r : tensor<8x32xf32> to tensor<*xf32>
  call @printMemrefF32(%u) : (tensor<*xf32>) -> ()
  return
}
func.func private @printMemrefF32(tensor<*xf32>)
