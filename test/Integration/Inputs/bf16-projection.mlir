// bf16 RMSNorm feeding projections with K x N and N x K weights, sizes that
// are multiples of the 16 x 8 x 16 MMA tile (tensor cores on the GPU). K = 384
// is 24 k steps: three groups of 8, each read one iteration of the k loop
// before it is multiplied (two iterations run). The products accumulate
// in f32, as TOSA's bf16 matmul does (a bf16 accumulator would make the
// unrewritten reference itself lose the sums).
#nk = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
func.func @f(%x: tensor<32x384xbf16>, %wkn: tensor<384x48xbf16>, %wnk: tensor<48x384xbf16>) -> tensor<32x48xf32> {
  %n = flashnorm.rms_norm %x eps(1.0e-5) : tensor<32x384xbf16>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<32x48xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<32x48xf32>) -> tensor<32x48xf32>
  %a = linalg.matmul ins(%n, %wkn : tensor<32x384xbf16>, tensor<384x48xbf16>) outs(%f : tensor<32x48xf32>) -> tensor<32x48xf32>
  %b = linalg.matmul indexing_maps = #nk ins(%n, %wnk : tensor<32x384xbf16>, tensor<48x384xbf16>) outs(%f : tensor<32x48xf32>) -> tensor<32x48xf32>
  %r = arith.addf %a, %b : tensor<32x48xf32>
  return %r : tensor<32x48xf32>
}

func.func private @fill(%seed: f32, %t: tensor<?x?xbf16>) -> tensor<?x?xbf16> {
  %r = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} outs(%t : tensor<?x?xbf16>) {
  ^bb0(%o: bf16):
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
    %h = arith.truncf %v : f32 to bf16
    linalg.yield %h : bf16
  } -> tensor<?x?xbf16>
  return %r : tensor<?x?xbf16>
}

func.func @main() {
  %s0 = arith.constant 0.37 : f32
  %s1 = arith.constant 0.71 : f32
  %s2 = arith.constant 0.23 : f32
  %ex = tensor.empty() : tensor<32x384xbf16>
  %ea = tensor.empty() : tensor<384x48xbf16>
  %eb = tensor.empty() : tensor<48x384xbf16>
  %dx = tensor.cast %ex : tensor<32x384xbf16> to tensor<?x?xbf16>
  %da = tensor.cast %ea : tensor<384x48xbf16> to tensor<?x?xbf16>
  %db = tensor.cast %eb : tensor<48x384xbf16> to tensor<?x?xbf16>
  %x = call @fill(%s0, %dx) : (f32, tensor<?x?xbf16>) -> tensor<?x?xbf16>
  %a = call @fill(%s1, %da) : (f32, tensor<?x?xbf16>) -> tensor<?x?xbf16>
  %b = call @fill(%s2, %db) : (f32, tensor<?x?xbf16>) -> tensor<?x?xbf16>
  %xs = tensor.cast %x : tensor<?x?xbf16> to tensor<32x384xbf16>
  %as = tensor.cast %a : tensor<?x?xbf16> to tensor<384x48xbf16>
  %bs = tensor.cast %b : tensor<?x?xbf16> to tensor<48x384xbf16>
  %y = call @f(%xs, %as, %bs) : (tensor<32x384xbf16>, tensor<384x48xbf16>, tensor<48x384xbf16>) -> tensor<32x48xf32>
  %u = tensor.cast %y : tensor<32x48xf32> to tensor<*xf32>
  call @printMemrefF32(%u) : (tensor<*xf32>) -> ()
  return
}
func.func private @printMemrefF32(tensor<*xf32>)
