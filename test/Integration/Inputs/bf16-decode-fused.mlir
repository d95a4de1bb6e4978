// bf16 decode steps on tensor cores whose norm fuses into the projection's
// kernel in fused and auto mode: the weights N x K (fragments two steps
// wide), each A fragment times its own halves giving the rows' sums of
// squares on the diagonal. 16 tokens with K = 1024 (two slices of k, four
// tiles side by side per block: the first warp of each slice writes the
// products of A's rows) and 12 tokens with K = 512 (one slice; the last
// four rows of the tile padded, rows 8-11 real in the second half).
#nk = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
func.func @f(%x: tensor<16x1024xbf16>, %w: tensor<64x1024xbf16>, %x2: tensor<12x512xbf16>, %w2: tensor<32x512xbf16>) -> (tensor<16x64xf32>, tensor<12x32xf32>) {
  %z = arith.constant 0.0 : f32
  %n = flashnorm.rms_norm %x eps(1.0e-5) : tensor<16x1024xbf16>
  %e = tensor.empty() : tensor<16x64xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<16x64xf32>) -> tensor<16x64xf32>
  %a = linalg.matmul indexing_maps = #nk ins(%n, %w : tensor<16x1024xbf16>, tensor<64x1024xbf16>) outs(%f : tensor<16x64xf32>) -> tensor<16x64xf32>
  %n2 = flashnorm.rms_norm %x2 eps(1.0e-5) : tensor<12x512xbf16>
  %e2 = tensor.empty() : tensor<12x32xf32>
  %f2 = linalg.fill ins(%z : f32) outs(%e2 : tensor<12x32xf32>) -> tensor<12x32xf32>
  %b = linalg.matmul indexing_maps = #nk ins(%n2, %w2 : tensor<12x512xbf16>, tensor<32x512xbf16>) outs(%f2 : tensor<12x32xf32>) -> tensor<12x32xf32>
  return %a, %b : tensor<16x64xf32>, tensor<12x32xf32>
}

// Rows of different scales (1, 1.5, 2, 2.5 by the row index modulo 4), so
// that a row's 1/RMS taken from another row shows.
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
    %c4 = arith.constant 4 : i32
    %im = arith.remsi %ii, %c4 : i32
    %fm = arith.sitofp %im : i32 to f32
    %one = arith.constant 1.0 : f32
    %half = arith.constant 0.5 : f32
    %amp = arith.mulf %fm, %half : f32
    %scale = arith.addf %one, %amp : f32
    %y = arith.mulf %v, %scale : f32
    %h = arith.truncf %y : f32 to bf16
    linalg.yield %h : bf16
  } -> tensor<?x?xbf16>
  return %r : tensor<?x?xbf16>
}

func.func @main() {
  %s0 = arith.constant 0.37 : f32
  %s1 = arith.constant 0.71 : f32
  %s2 = arith.constant 0.23 : f32
  %s3 = arith.constant 0.53 : f32
  %ex = tensor.empty() : tensor<16x1024xbf16>
  %ew = tensor.empty() : tensor<64x1024xbf16>
  %ex2 = tensor.empty() : tensor<12x512xbf16>
  %ew2 = tensor.empty() : tensor<32x512xbf16>
  %dx = tensor.cast %ex : tensor<16x1024xbf16> to tensor<?x?xbf16>
  %dw = tensor.cast %ew : tensor<64x1024xbf16> to tensor<?x?xbf16>
  %dx2 = tensor.cast %ex2 : tensor<12x512xbf16> to tensor<?x?xbf16>
  %dw2 = tensor.cast %ew2 : tensor<32x512xbf16> to tensor<?x?xbf16>
  %x = call @fill(%s0, %dx) : (f32, tensor<?x?xbf16>) -> tensor<?x?xbf16>
  %w = call @fill(%s1, %dw) : (f32, tensor<?x?xbf16>) -> tensor<?x?xbf16>
  %x2 = call @fill(%s2, %dx2) : (f32, tensor<?x?xbf16>) -> tensor<?x?xbf16>
  %w2 = call @fill(%s3, %dw2) : (f32, tensor<?x?xbf16>) -> tensor<?x?xbf16>
  %xs = tensor.cast %x : tensor<?x?xbf16> to tensor<16x1024xbf16>
  %ws = tensor.cast %w : tensor<?x?xbf16> to tensor<64x1024xbf16>
  %x2s = tensor.cast %x2 : tensor<?x?xbf16> to tensor<12x512xbf16>
  %w2s = tensor.cast %w2 : tensor<?x?xbf16> to tensor<32x512xbf16>
  %y:2 = call @f(%xs, %ws, %x2s, %w2s) : (tensor<16x1024xbf16>, tensor<64x1024xbf16>, tensor<12x512xbf16>, tensor<32x512xbf16>) -> (tensor<16x64xf32>, tensor<12x32xf32>)
  %u = tensor.cast %y#0 : tensor<16x64xf32> to tensor<*xf32>
  call @printMemrefF32(%u) : (tensor<*xf32>) -> ()
  %v = tensor.cast %y#1 : tensor<12x32xf32> to tensor<*xf32>
  call @printMemrefF32(%v) : (tensor<*xf32>) -> ()
  return
}
func.func private @printMemrefF32(tensor<*xf32>)
