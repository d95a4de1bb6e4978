// bf16 decode steps of a few tokens on tensor cores, their rows padded to
// one 16-row tile: 5 tokens with K = 2560 (k split into slices whose
// partial tiles meet in shared memory, only the 5 real rows summed and
// written), K x N and N x K weights; 7 tokens with K = 512 (one warp per
// tile, the output tile written with its padded rows masked).
#nk = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
func.func @f(%x: tensor<5x2560xbf16>, %wkn: tensor<2560x16xbf16>, %wnk: tensor<16x2560xbf16>, %x2: tensor<7x512xbf16>, %w2: tensor<512x64xbf16>) -> (tensor<5x16xf32>, tensor<5x16xf32>, tensor<7x64xf32>) {
  %n = flashnorm.rms_norm %x eps(1.0e-5) : tensor<5x2560xbf16>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<5x16xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<5x16xf32>) -> tensor<5x16xf32>
  %a = linalg.matmul ins(%n, %wkn : tensor<5x2560xbf16>, tensor<2560x16xbf16>) outs(%f : tensor<5x16xf32>) -> tensor<5x16xf32>
  %b = linalg.matmul indexing_maps = #nk ins(%n, %wnk : tensor<5x2560xbf16>, tensor<16x2560xbf16>) outs(%f : tensor<5x16xf32>) -> tensor<5x16xf32>
  %n2 = flashnorm.rms_norm %x2 eps(1.0e-5) : tensor<7x512xbf16>
  %e2 = tensor.empty() : tensor<7x64xf32>
  %f2 = linalg.fill ins(%z : f32) outs(%e2 : tensor<7x64xf32>) -> tensor<7x64xf32>
  %c = linalg.matmul ins(%n2, %w2 : tensor<7x512xbf16>, tensor<512x64xbf16>) outs(%f2 : tensor<7x64xf32>) -> tensor<7x64xf32>
  return %a, %b, %c : tensor<5x16xf32>, tensor<5x16xf32>, tensor<7x64xf32>
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
  %s3 = arith.constant 0.53 : f32
  %s4 = arith.constant 0.19 : f32
  %ex = tensor.empty() : tensor<5x2560xbf16>
  %ea = tensor.empty() : tensor<2560x16xbf16>
  %eb = tensor.empty() : tensor<16x2560xbf16>
  %ex2 = tensor.empty() : tensor<7x512xbf16>
  %ec = tensor.empty() : tensor<512x64xbf16>
  %dx = tensor.cast %ex : tensor<5x2560xbf16> to tensor<?x?xbf16>
  %da = tensor.cast %ea : tensor<2560x16xbf16> to tensor<?x?xbf16>
  %db = tensor.cast %eb : tensor<16x2560xbf16> to tensor<?x?xbf16>
  %dx2 = tensor.cast %ex2 : tensor<7x512xbf16> to tensor<?x?xbf16>
  %dc = tensor.cast %ec : tensor<512x64xbf16> to tensor<?x?xbf16>
  %x = call @fill(%s0, %dx) : (f32, tensor<?x?xbf16>) -> tensor<?x?xbf16>
  %a = call @fill(%s1, %da) : (f32, tensor<?x?xbf16>) -> tensor<?x?xbf16>
  %b = call @fill(%s2, %db) : (f32, tensor<?x?xbf16>) -> tensor<?x?xbf16>
  %x2 = call @fill(%s3, %dx2) : (f32, tensor<?x?xbf16>) -> tensor<?x?xbf16>
  %c = call @fill(%s4, %dc) : (f32, tensor<?x?xbf16>) -> tensor<?x?xbf16>
  %xs = tensor.cast %x : tensor<?x?xbf16> to tensor<5x2560xbf16>
  %as = tensor.cast %a : tensor<?x?xbf16> to tensor<2560x16xbf16>
  %bs = tensor.cast %b : tensor<?x?xbf16> to tensor<16x2560xbf16>
  %x2s = tensor.cast %x2 : tensor<?x?xbf16> to tensor<7x512xbf16>
  %cs = tensor.cast %c : tensor<?x?xbf16> to tensor<512x64xbf16>
  %y:3 = call @f(%xs, %as, %bs, %x2s, %cs) : (tensor<5x2560xbf16>, tensor<2560x16xbf16>, tensor<16x2560xbf16>, tensor<7x512xbf16>, tensor<512x64xbf16>) -> (tensor<5x16xf32>, tensor<5x16xf32>, tensor<7x64xf32>)
  %u = tensor.cast %y#0 : tensor<5x16xf32> to tensor<*xf32>
  call @printMemrefF32(%u) : (tensor<*xf32>) -> ()
  %v = tensor.cast %y#1 : tensor<5x16xf32> to tensor<*xf32>
  call @printMemrefF32(%v) : (tensor<*xf32>) -> ()
  %w = tensor.cast %y#2 : tensor<7x64xf32> to tensor<*xf32>
  call @printMemrefF32(%w) : (tensor<*xf32>) -> ()
  return
}
func.func private @printMemrefF32(tensor<*xf32>)
