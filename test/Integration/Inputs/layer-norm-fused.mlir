// A weightless LayerNorm feeding two projections whose weights are
// arguments, one in PyTorch's N x K layout (fused mode: a block per output)
// and one K x N (a thread per output); the prepare function centers them.
// The rows sit off zero (a mean of about 3 against a deviation of about
// 0.7), so that squares not centered on the mean would show; 5 tokens.
#nk = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
func.func @f(%x: tensor<5x64xf32>, %wnk: tensor<48x64xf32>, %wkn: tensor<64x48xf32>) -> tensor<5x48xf32> {
  %n = flashnorm.layer_norm %x eps(1.0e-5) : tensor<5x64xf32>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<5x48xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<5x48xf32>) -> tensor<5x48xf32>
  %a = linalg.matmul indexing_maps = #nk ins(%n, %wnk : tensor<5x64xf32>, tensor<48x64xf32>) outs(%f : tensor<5x48xf32>) -> tensor<5x48xf32>
  %e2 = tensor.empty() : tensor<5x48xf32>
  %f2 = linalg.fill ins(%z : f32) outs(%e2 : tensor<5x48xf32>) -> tensor<5x48xf32>
  %b = linalg.matmul ins(%n, %wkn : tensor<5x64xf32>, tensor<64x48xf32>) outs(%f2 : tensor<5x48xf32>) -> tensor<5x48xf32>
  %r = arith.addf %a, %b : tensor<5x48xf32>
  return %r : tensor<5x48xf32>
}

func.func private @fill(%seed: f32, %offset: f32, %t: tensor<?x?xf32>) -> tensor<?x?xf32> {
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
    %w = arith.addf %v, %offset : f32
    linalg.yield %w : f32
  } -> tensor<?x?xf32>
  return %r : tensor<?x?xf32>
}

func.func @main() {
  %s0 = arith.constant 0.37 : f32
  %s1 = arith.constant 0.71 : f32
  %s2 = arith.constant 0.23 : f32
  %mean = arith.constant 3.0 : f32
  %zero = arith.constant 0.0 : f32
  %ex = tensor.empty() : tensor<5x64xf32>
  %ea = tensor.empty() : tensor<48x64xf32>
  %eb = tensor.empty() : tensor<64x48xf32>
  %dx = tensor.cast %ex : tensor<5x64xf32> to tensor<?x?xf32>
  %da = tensor.cast %ea : tensor<48x64xf32> to tensor<?x?xf32>
  %db = tensor.cast %eb : tensor<64x48xf32> to tensor<?x?xf32>
  %x = call @fill(%s0, %mean, %dx) : (f32, f32, tensor<?x?xf32>) -> tensor<?x?xf32>
  %a = call @fill(%s1, %zero, %da) : (f32, f32, tensor<?x?xf32>) -> tensor<?x?xf32>
  %b = call @fill(%s2, %zero, %db) : (f32, f32, tensor<?x?xf32>) -> tensor<?x?xf32>
  %xs = tensor.cast %x : tensor<?x?xf32> to tensor<5x64xf32>
  %as = tensor.cast %a : tensor<?x?xf32> to tensor<48x64xf32>
  %bs = tensor.cast %b : tensor<?x?xf32> to tensor<64x48xf32>
  %y = call @f(%xs, %as, %bs) : (tensor<5x64xf32>, tensor<48x64xf32>, tensor<64x48xf32>) -> tensor<5x48xf32>
  %u = tensor.cast %y : tensor<5x48xf32> to tensor<*xf32>
  call @printMemrefF32(%u) : (tensor<*xf32>) -> ()
  return
}

func.func private @printMemrefF32(tensor<*xf32>)
