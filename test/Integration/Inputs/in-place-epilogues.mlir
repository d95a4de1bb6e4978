// Kernels that store their results while other blocks still read the
// rows: an element-wise op writing in place into a projection's activation
// (bufferization puts it in the dead argument's buffer) must not be fused
// into the projection's kernel, whose blocks of one row would race (the
// CPU loops showed garbage; a GPU, a race): a plain projection's epilogue,
// and the post-scale of a fused norm + projection, N x K (block per
// output) and K x N (thread per output).
func.func @epilogue_in_place(%x: tensor<4x64xf32>, %w: tensor<64x64xf32>) -> tensor<4x64xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x64xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<4x64xf32>) -> tensor<4x64xf32>
  %y = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>] ins(%x, %w : tensor<4x64xf32>, tensor<64x64xf32>) outs(%f : tensor<4x64xf32>) -> tensor<4x64xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%y : tensor<4x64xf32>) outs(%x : tensor<4x64xf32>) {
  ^bb0(%a: f32, %o: f32):
    %c2 = arith.constant 2.0 : f32
    %s = arith.mulf %a, %c2 : f32
    linalg.yield %s : f32
  } -> tensor<4x64xf32>
  return %r : tensor<4x64xf32>
}
func.func @fused_in_place(%x: tensor<4x64xf32>, %w: tensor<64x64xf32>) -> tensor<4x64xf32> {
  %n = flashnorm.rms_norm %x eps(1.0e-5) : tensor<4x64xf32>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x64xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<4x64xf32>) -> tensor<4x64xf32>
  %y = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>] ins(%n, %w : tensor<4x64xf32>, tensor<64x64xf32>) outs(%f : tensor<4x64xf32>) -> tensor<4x64xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%y, %x : tensor<4x64xf32>, tensor<4x64xf32>) outs(%x : tensor<4x64xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<4x64xf32>
  return %r : tensor<4x64xf32>
}
func.func @fused_in_place_kn(%x: tensor<4x64xf32>, %w: tensor<64x64xf32>) -> tensor<4x64xf32> {
  %n = flashnorm.rms_norm %x eps(1.0e-5) : tensor<4x64xf32>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x64xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<4x64xf32>) -> tensor<4x64xf32>
  %y = linalg.matmul ins(%n, %w : tensor<4x64xf32>, tensor<64x64xf32>) outs(%f : tensor<4x64xf32>) -> tensor<4x64xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%y, %x : tensor<4x64xf32>, tensor<4x64xf32>) outs(%x : tensor<4x64xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<4x64xf32>
  return %r : tensor<4x64xf32>
}
func.func @main() {
  %s0 = arith.constant 0.37 : f32
  %s1 = arith.constant 0.71 : f32
  %zz = arith.constant 0.0 : f32
  %e_x = tensor.empty() : tensor<4x64xf32>
  %x = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} outs(%e_x : tensor<4x64xf32>) {
  ^bb0(%o: f32):
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
    %vv = arith.addf %v, %zz : f32
    linalg.yield %vv : f32
  } -> tensor<4x64xf32>
  %e_w = tensor.empty() : tensor<64x64xf32>
  %w = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} outs(%e_w : tensor<64x64xf32>) {
  ^bb0(%o: f32):
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
    %vv = arith.addf %v, %zz : f32
    linalg.yield %vv : f32
  } -> tensor<64x64xf32>
  %y0 = call @epilogue_in_place(%x, %w) : (tensor<4x64xf32>, tensor<64x64xf32>) -> tensor<4x64xf32>
  %u0 = tensor.cast %y0 : tensor<4x64xf32> to tensor<*xf32>
  call @printMemrefF32(%u0) : (tensor<*xf32>) -> ()
  %y1 = call @fused_in_place(%x, %w) : (tensor<4x64xf32>, tensor<64x64xf32>) -> tensor<4x64xf32>
  %u1 = tensor.cast %y1 : tensor<4x64xf32> to tensor<*xf32>
  call @printMemrefF32(%u1) : (tensor<*xf32>) -> ()
  %y2 = call @fused_in_place_kn(%x, %w) : (tensor<4x64xf32>, tensor<64x64xf32>) -> tensor<4x64xf32>
  %u2 = tensor.cast %y2 : tensor<4x64xf32> to tensor<*xf32>
  call @printMemrefF32(%u2) : (tensor<*xf32>) -> ()
  return
}
func.func private @printMemrefF32(tensor<*xf32>)
