// Rows whose mean square overflows f32 (2e38 times a sine) among ordinary
// ones, 20 tokens: the original's statistic is rsqrt(inf) = 0 and its rows
// are 0; the deferred raw product of such a row overflows to inf, and the
// post-scale's contract makes a row with a zero scale 0 (inf * 0 would be
// NaN). Through cuBLASLt the scale comes before the GEMM, on the finite
// activation: those rows are scaled to zeros and the GEMM sums zeros.
#nk = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
func.func @f(%x: tensor<20x32xf32>, %w: tensor<24x32xf32>) -> tensor<20x24xf32> {
  %n = flashnorm.rms_norm %x eps(1.0e-5) : tensor<20x32xf32>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<20x24xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<20x24xf32>) -> tensor<20x24xf32>
  %y = linalg.matmul indexing_maps = #nk ins(%n, %w : tensor<20x32xf32>, tensor<24x32xf32>) outs(%f : tensor<20x24xf32>) -> tensor<20x24xf32>
  return %y : tensor<20x24xf32>
}

func.func @main() {
  %ex = tensor.empty() : tensor<20x32xf32>
  %x = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} outs(%ex : tensor<20x32xf32>) {
  ^bb0(%o: f32):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %ii = arith.index_cast %i : index to i32
    %jj = arith.index_cast %j : index to i32
    %fi = arith.sitofp %ii : i32 to f32
    %fj = arith.sitofp %jj : i32 to f32
    %c0 = arith.constant 0.37 : f32
    %c1 = arith.constant 0.13 : f32
    %a = arith.mulf %fi, %c0 : f32
    %b = arith.mulf %fj, %c1 : f32
    %s = arith.addf %a, %b : f32
    %v = math.sin %s : f32
    // Rows 3 and 11 huge, the others as they are.
    %r3 = arith.constant 3 : i32
    %r11 = arith.constant 11 : i32
    %is3 = arith.cmpi eq, %ii, %r3 : i32
    %is11 = arith.cmpi eq, %ii, %r11 : i32
    %huge = arith.ori %is3, %is11 : i1
    %big = arith.constant 2.0e38 : f32
    %one = arith.constant 1.0 : f32
    %m = arith.select %huge, %big, %one : f32
    %y = arith.mulf %v, %m : f32
    linalg.yield %y : f32
  } -> tensor<20x32xf32>
  %ew = tensor.empty() : tensor<24x32xf32>
  %w = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} outs(%ew : tensor<24x32xf32>) {
  ^bb0(%o: f32):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %ii = arith.index_cast %i : index to i32
    %jj = arith.index_cast %j : index to i32
    %fi = arith.sitofp %ii : i32 to f32
    %fj = arith.sitofp %jj : i32 to f32
    %c0 = arith.constant 0.71 : f32
    %c1 = arith.constant 0.29 : f32
    %a = arith.mulf %fi, %c0 : f32
    %b = arith.mulf %fj, %c1 : f32
    %s = arith.addf %a, %b : f32
    %v = math.cos %s : f32
    %two = arith.constant 2.0 : f32
    %y = arith.mulf %v, %two : f32
    linalg.yield %y : f32
  } -> tensor<24x32xf32>
  %y = call @f(%x, %w) : (tensor<20x32xf32>, tensor<24x32xf32>) -> tensor<20x24xf32>
  %u = tensor.cast %y : tensor<20x24xf32> to tensor<*xf32>
  call @printMemrefF32(%u) : (tensor<*xf32>) -> ()
  return
}
func.func private @printMemrefF32(tensor<*xf32>)
