// A contraction whose body is out + extf(exp(a)) * extf(b): a contraction to
// linalg's interfaces, but not a plain product (no tensor cores, no cuBLASLt).

func.func @f(%x: tensor<32x64xf16>, %w: tensor<64x48xf16>) -> tensor<32x48xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<32x48xf32>
  %c0 = linalg.fill ins(%z : f32) outs(%e : tensor<32x48xf32>) -> tensor<32x48xf32>
  %c1 = linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x, %w : tensor<32x64xf16>, tensor<64x48xf16>) outs(%c0 : tensor<32x48xf32>) {
  ^bb0(%a: f16, %b: f16, %o: f32):
    %na = math.exp %a : f16
    %ea = arith.extf %na : f16 to f32
    %eb = arith.extf %b : f16 to f32
    %p = arith.mulf %ea, %eb : f32
    %s = arith.addf %o, %p : f32
    linalg.yield %s : f32
  } -> tensor<32x48xf32>
  return %c1 : tensor<32x48xf32>
}
func.func @main() {
  %s0 = arith.constant 0.31 : f32
  %e0 = tensor.empty() : tensor<32x64xf16>
  %d0 = tensor.cast %e0 : tensor<32x64xf16> to tensor<?x?xf16>
  %x0 = call @fill(%s0, %d0) : (f32, tensor<?x?xf16>) -> tensor<?x?xf16>
  %a0 = tensor.cast %x0 : tensor<?x?xf16> to tensor<32x64xf16>
  %s1 = arith.constant 0.48 : f32
  %e1 = tensor.empty() : tensor<64x48xf16>
  %d1 = tensor.cast %e1 : tensor<64x48xf16> to tensor<?x?xf16>
  %x1 = call @fill(%s1, %d1) : (f32, tensor<?x?xf16>) -> tensor<?x?xf16>
  %a1 = tensor.cast %x1 : tensor<?x?xf16> to tensor<64x48xf16>
  %y = call @f(%a0, %a1) : (tensor<32x64xf16>, tensor<64x48xf16>) -> tensor<32x48xf32>
  %u = tensor.cast %y : tensor<32x48xf32> to tensor<*xf32>
  call @printMemrefF32(%u) : (tensor<*xf32>) -> ()
  return
}
func.func private @fill(%seed: f32, %t: tensor<?x?xf16>) -> tensor<?x?xf16> {
  %r = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} outs(%t : tensor<?x?xf16>) {
  ^bb0(%o: f16):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %ii = arith.index_cast %i : index to i32
    %jj = arith.index_cast %j : index to i32
    %fi = arith.sitofp %ii : i32 to f32
    %fj = arith.sitofp %jj : i32 to f32
    %a = arith.mulf %fi, %seed : f32
    %c = arith.constant 0.13 : f32
    %b = arith.mulf %fj, %c : f32
    %s = arith.addf %a, %b : f32
    %v = math.sin %s : f32
    %h = arith.truncf %v : f32 to f16
    linalg.yield %h : f16
  } -> tensor<?x?xf16>
  return %r : tensor<?x?xf16>
}
func.func private @printMemrefF32(tensor<*xf32>)
