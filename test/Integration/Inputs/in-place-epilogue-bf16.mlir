// The post-scale of the bf16 tensor-core tile kernel (4 tokens) with the
// norm's epilogue, written in place into the activation: not fused
// (in-place-epilogues.mlir has the f32 kernels).
func.func @f(%x: tensor<4x64xbf16>, %w: tensor<64x64xbf16>) -> tensor<4x64xbf16> {
  %n = flashnorm.rms_norm %x eps(1.0e-5) : tensor<4x64xbf16>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x64xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<4x64xf32>) -> tensor<4x64xf32>
  %y = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>] ins(%n, %w : tensor<4x64xbf16>, tensor<64x64xbf16>) outs(%f : tensor<4x64xf32>) -> tensor<4x64xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%y, %x : tensor<4x64xf32>, tensor<4x64xbf16>) outs(%x : tensor<4x64xbf16>) {
  ^bb0(%a: f32, %b: bf16, %o: bf16):
    %bb = arith.extf %b : bf16 to f32
    %s = arith.addf %a, %bb : f32
    %t = arith.truncf %s : f32 to bf16
    linalg.yield %t : bf16
  } -> tensor<4x64xbf16>
  return %r : tensor<4x64xbf16>
}
func.func @main() {
  %s0 = arith.constant 0.37 : f32
  %s1 = arith.constant 0.71 : f32
  %zz = arith.constant 0.0 : f32
  %e_x = tensor.empty() : tensor<4x64xbf16>
  %x = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} outs(%e_x : tensor<4x64xbf16>) {
  ^bb0(%o: bf16):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %ii = arith.index_cast %i : index to i32
    %jj = arith.index_cast %j : index to i32
    %fi = arith.sitofp %ii : i32 to f32
    %fj = arith.sitofp %jj : i32 to f32
    %a = arith.mulf %fi, %s0 : f32
    %c = arith.constant 0.13 : f32
    %b = arith.mulf %fj, %c : f32
    %s = arith.addf %a, %b : f32
    %v = math.sin %s : f32
    %vv = arith.truncf %v : f32 to bf16
    linalg.yield %vv : bf16
  } -> tensor<4x64xbf16>
  %e_w = tensor.empty() : tensor<64x64xbf16>
  %w = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} outs(%e_w : tensor<64x64xbf16>) {
  ^bb0(%o: bf16):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %ii = arith.index_cast %i : index to i32
    %jj = arith.index_cast %j : index to i32
    %fi = arith.sitofp %ii : i32 to f32
    %fj = arith.sitofp %jj : i32 to f32
    %a = arith.mulf %fi, %s1 : f32
    %c = arith.constant 0.13 : f32
    %b = arith.mulf %fj, %c : f32
    %s = arith.addf %a, %b : f32
    %v = math.sin %s : f32
    %vv = arith.truncf %v : f32 to bf16
    linalg.yield %vv : bf16
  } -> tensor<64x64xbf16>
  %y = call @f(%x, %w) : (tensor<4x64xbf16>, tensor<64x64xbf16>) -> tensor<4x64xbf16>
  %e3 = tensor.empty() : tensor<4x64xf32>
  %y32 = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%y : tensor<4x64xbf16>) outs(%e3 : tensor<4x64xf32>) {
  ^bb0(%a: bf16, %o: f32):
    %t = arith.extf %a : bf16 to f32
    linalg.yield %t : f32
  } -> tensor<4x64xf32>
  %u = tensor.cast %y32 : tensor<4x64xf32> to tensor<*xf32>
  call @printMemrefF32(%u) : (tensor<*xf32>) -> ()
  return
}
func.func private @printMemrefF32(tensor<*xf32>)
