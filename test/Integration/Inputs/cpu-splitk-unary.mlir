// An N x K argument weight on the split-k kernel, the body negating its
// accumulator: split-k summed the lanes with a plain add.
func.func @f(%x: tensor<9x64xf32>, %warg: tensor<64x64xf32>) -> tensor<9x64xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<9x64xf32>
  %o = linalg.fill ins(%z : f32) outs(%e : tensor<9x64xf32>) -> tensor<9x64xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %warg : tensor<9x64xf32>, tensor<64x64xf32>) outs(%o : tensor<9x64xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %p = arith.mulf %a, %b : f32
    %cn = arith.negf %c : f32
    %s = arith.addf %cn, %p : f32
    linalg.yield %s : f32
  } -> tensor<9x64xf32>
  return %r : tensor<9x64xf32>
}
func.func @main() {
  %ex = tensor.empty() : tensor<9x64xf32>
  %x = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} outs(%ex : tensor<9x64xf32>) {
  ^bb0(%o: f32):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %ii = arith.index_cast %i : index to i32
    %jj = arith.index_cast %j : index to i32
    %fi = arith.sitofp %ii : i32 to f32
    %fj = arith.sitofp %jj : i32 to f32
    %a = arith.constant 0.37 : f32
    %b = arith.constant 0.61 : f32
    %t0 = arith.mulf %fi, %a : f32
    %t1 = arith.mulf %fj, %b : f32
    %t = arith.addf %t0, %t1 : f32
    %v = math.sin %t : f32
    linalg.yield %v : f32
  } -> tensor<9x64xf32>
  %ewarg = tensor.empty() : tensor<64x64xf32>
  %warg = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} outs(%ewarg : tensor<64x64xf32>) {
  ^bb0(%o: f32):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %ii = arith.index_cast %i : index to i32
    %jj = arith.index_cast %j : index to i32
    %fi = arith.sitofp %ii : i32 to f32
    %fj = arith.sitofp %jj : i32 to f32
    %a = arith.constant 0.23 : f32
    %b = arith.constant 0.61 : f32
    %t0 = arith.mulf %fi, %a : f32
    %t1 = arith.mulf %fj, %b : f32
    %t = arith.addf %t0, %t1 : f32
    %v = math.sin %t : f32
    linalg.yield %v : f32
  } -> tensor<64x64xf32>
  %r = call @f(%x, %warg) : (tensor<9x64xf32>, tensor<64x64xf32>) -> tensor<9x64xf32>
  %u = tensor.cast %r : tensor<9x64xf32> to tensor<*xf32>
  call @printMemrefF32(%u) : (tensor<*xf32>) -> ()
  return
}
func.func private @printMemrefF32(tensor<*xf32>)
