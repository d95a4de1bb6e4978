// Prefill projections whose weight is stored K x N (an argument laid out
// so; constant weights are made N x K by flashnorm-gpu-weight-layout) on
// the staged kernel: each k tile of the weight is copied as kBlockK rows
// along n and read as fragments transposed (ldmatrix.trans on a GPU). bf16,
// 100 tokens x 160 -> 128: 64 x 64 block tiles, the second along m with 28
// padded rows, five k tiles in a ring of four (it wraps). f16, 64 tokens x
// 64 -> 64: one block, two k tiles (the prologue copies the last again).
// f32 accumulators.
func.func @f(%x: tensor<100x160xbf16>, %wkn: tensor<160x128xbf16>, %x2: tensor<64x64xf16>, %w2: tensor<64x64xf16>) -> (tensor<100x128xf32>, tensor<64x64xf32>) {
  %n = flashnorm.rms_norm %x eps(1.0e-5) : tensor<100x160xbf16>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<100x128xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<100x128xf32>) -> tensor<100x128xf32>
  %a = linalg.matmul ins(%n, %wkn : tensor<100x160xbf16>, tensor<160x128xbf16>) outs(%f : tensor<100x128xf32>) -> tensor<100x128xf32>
  %n2 = flashnorm.rms_norm %x2 eps(1.0e-5) : tensor<64x64xf16>
  %e2 = tensor.empty() : tensor<64x64xf32>
  %f2 = linalg.fill ins(%z : f32) outs(%e2 : tensor<64x64xf32>) -> tensor<64x64xf32>
  %b = linalg.matmul ins(%n2, %w2 : tensor<64x64xf16>, tensor<64x64xf16>) outs(%f2 : tensor<64x64xf32>) -> tensor<64x64xf32>
  return %a, %b : tensor<100x128xf32>, tensor<64x64xf32>
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
  %ex = tensor.empty() : tensor<100x160xbf16>
  %ew = tensor.empty() : tensor<160x128xbf16>
  %dx = tensor.cast %ex : tensor<100x160xbf16> to tensor<?x?xbf16>
  %dw = tensor.cast %ew : tensor<160x128xbf16> to tensor<?x?xbf16>
  %x = call @fill(%s0, %dx) : (f32, tensor<?x?xbf16>) -> tensor<?x?xbf16>
  %w = call @fill(%s1, %dw) : (f32, tensor<?x?xbf16>) -> tensor<?x?xbf16>
  %xs = tensor.cast %x : tensor<?x?xbf16> to tensor<100x160xbf16>
  %ws = tensor.cast %w : tensor<?x?xbf16> to tensor<160x128xbf16>
  // The f16 operands: the bf16 pattern, widened and rounded to f16.
  %e2 = tensor.empty() : tensor<64x64xbf16>
  %d2 = tensor.cast %e2 : tensor<64x64xbf16> to tensor<?x?xbf16>
  %x2b = call @fill(%s2, %d2) : (f32, tensor<?x?xbf16>) -> tensor<?x?xbf16>
  %w2b = call @fill(%s3, %d2) : (f32, tensor<?x?xbf16>) -> tensor<?x?xbf16>
  %x2c = tensor.cast %x2b : tensor<?x?xbf16> to tensor<64x64xbf16>
  %w2c = tensor.cast %w2b : tensor<?x?xbf16> to tensor<64x64xbf16>
  %x2w = arith.extf %x2c : tensor<64x64xbf16> to tensor<64x64xf32>
  %w2w = arith.extf %w2c : tensor<64x64xbf16> to tensor<64x64xf32>
  %x2 = arith.truncf %x2w : tensor<64x64xf32> to tensor<64x64xf16>
  %w2 = arith.truncf %w2w : tensor<64x64xf32> to tensor<64x64xf16>
  %y:2 = call @f(%xs, %ws, %x2, %w2) : (tensor<100x160xbf16>, tensor<160x128xbf16>, tensor<64x64xf16>, tensor<64x64xf16>) -> (tensor<100x128xf32>, tensor<64x64xf32>)
  %u = tensor.cast %y#0 : tensor<100x128xf32> to tensor<*xf32>
  call @printMemrefF32(%u) : (tensor<*xf32>) -> ()
  %v = tensor.cast %y#1 : tensor<64x64xf32> to tensor<*xf32>
  call @printMemrefF32(%v) : (tensor<*xf32>) -> ()
  return
}
func.func private @printMemrefF32(tensor<*xf32>)
