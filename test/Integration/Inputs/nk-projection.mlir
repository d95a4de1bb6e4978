// A weightless RMSNorm feeding a projection whose weight is in PyTorch's
// N x K layout (the GPU pipeline's warp-per-output kernel), and one in K x N
// layout (thread per output), with 130 tokens (not a multiple of a tile).
#nk = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
func.func @f(%x: tensor<130x64xf32>, %wnk: tensor<96x64xf32>, %wkn: tensor<64x96xf32>) -> tensor<130x96xf32> {
  %n = flashnorm.rms_norm %x eps(1.0e-5) : tensor<130x64xf32>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<130x96xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<130x96xf32>) -> tensor<130x96xf32>
  %a = linalg.matmul indexing_maps = #nk ins(%n, %wnk : tensor<130x64xf32>, tensor<96x64xf32>) outs(%f : tensor<130x96xf32>) -> tensor<130x96xf32>
  %b = linalg.matmul ins(%n, %wkn : tensor<130x64xf32>, tensor<64x96xf32>) outs(%f : tensor<130x96xf32>) -> tensor<130x96xf32>
  %r = arith.addf %a, %b : tensor<130x96xf32>
  return %r : tensor<130x96xf32>
}

func.func private @fill(%seed: f32, %t: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %r = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} outs(%t : tensor<?x?xf32>) {
  ^bb0(%o: f32):
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
    linalg.yield %v : f32
  } -> tensor<?x?xf32>
  return %r : tensor<?x?xf32>
}

func.func @main() {
  %s0 = arith.constant 0.37 : f32
  %s1 = arith.constant 0.71 : f32
  %s2 = arith.constant 0.23 : f32
  %ex = tensor.empty() : tensor<130x64xf32>
  %ea = tensor.empty() : tensor<96x64xf32>
  %eb = tensor.empty() : tensor<64x96xf32>
  %dx = tensor.cast %ex : tensor<130x64xf32> to tensor<?x?xf32>
  %da = tensor.cast %ea : tensor<96x64xf32> to tensor<?x?xf32>
  %db = tensor.cast %eb : tensor<64x96xf32> to tensor<?x?xf32>
  %x = call @fill(%s0, %dx) : (f32, tensor<?x?xf32>) -> tensor<?x?xf32>
  %a = call @fill(%s1, %da) : (f32, tensor<?x?xf32>) -> tensor<?x?xf32>
  %b = call @fill(%s2, %db) : (f32, tensor<?x?xf32>) -> tensor<?x?xf32>
  %xs = tensor.cast %x : tensor<?x?xf32> to tensor<130x64xf32>
  %as = tensor.cast %a : tensor<?x?xf32> to tensor<96x64xf32>
  %bs = tensor.cast %b : tensor<?x?xf32> to tensor<64x96xf32>
  %y = call @f(%xs, %as, %bs) : (tensor<130x64xf32>, tensor<96x64xf32>, tensor<64x96xf32>) -> tensor<130x96xf32>
  %u = tensor.cast %y : tensor<130x96xf32> to tensor<*xf32>
  call @printMemrefF32(%u) : (tensor<*xf32>) -> ()
  return
}
func.func private @printMemrefF32(tensor<*xf32>)
