// A GPT-2 attention input and MLP input as torch-mlir's linalg lowering
// writes them (batch 1): LayerNorms decomposed into sums, a divide by K, a
// broadcast of each row statistic to full shape (one by a gather generic
// reading `tensor.extract %stat[%c0, %row, %c0]`, one by a yield-only
// generic), indexing maps with literal 0 results for the unit batch, epsilon
// as an f64 constant truncated in the body, the second variance in f64;
// nn.Linear weights [out, in] transposed by a yield-only generic, a bias
// added after the matmul.
#map = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#map1 = affine_map<(d0, d1, d2) -> (0, d1, d2)>
#map2 = affine_map<(d0, d1, d2) -> (d0, d1, 0)>
#map3 = affine_map<(d0, d1, d2) -> (0, d1, 0)>
#map4 = affine_map<(d0, d1, d2) -> (d2)>
#map5 = affine_map<(d0, d1) -> (d0, d1)>
#map6 = affine_map<(d0, d1) -> (d1, d0)>
#map7 = affine_map<(d0, d1) -> (d1)>
func.func @block(%arg0: tensor<1x5x8xf32>) -> (tensor<5x6xf32>, tensor<5x4xf32>) {
  %c0 = arith.constant 0 : index
  %cst = arith.constant 0.000000e+00 : f32
  %cst_k = arith.constant 8.000000e+00 : f32
  %cst_k64 = arith.constant 8.000000e+00 : f64
  %cst_0 = arith.constant 0.000000e+00 : f64
  %cst_eps = arith.constant 1.0000000000000001E-5 : f64
  %g1 = arith.constant dense<[1.0423, 0.7545, 0.7350, 1.0050, 1.2696, 1.2395, 0.9477, 0.7130]> : tensor<8xf32>
  %b1 = arith.constant dense<[-0.2270, -0.2777, -0.0249, 0.2551, 0.2564, -0.0225, -0.2768, -0.2286]> : tensor<8xf32>
  %g2 = arith.constant dense<[0.7123, 0.9454, 1.2381, 1.2707, 1.0074, 0.7361, 0.7532, 1.0400]> : tensor<8xf32>
  %b2 = arith.constant dense<[-0.0838, 0.2187, 0.2822, 0.0373, -0.2483, -0.2626, 0.0101, 0.2718]> : tensor<8xf32>
  %w1 = arith.constant dense<[[0.4207, 0.4732, 0.1675, -0.2649, -0.4968, -0.3528, 0.0583, 0.4252], [0.2137, -0.3439, -0.4629, 0.0084, 0.4690, 0.3315, -0.2288, -0.4973], [-0.4758, -0.1869, 0.4494, 0.2505, -0.4139, -0.3091, 0.3702, 0.3614], [-0.0911, 0.4995, -0.1359, -0.4377, 0.3348, 0.2856, -0.4646, -0.0745], [0.4993, -0.2288, -0.2683, 0.4997, -0.2362, -0.2612, 0.4999, -0.2436], [-0.0376, -0.3091, 0.4934, -0.4186, 0.1239, 0.2358, -0.4717, 0.4598]]> : tensor<6x8xf32>
  %pb1 = arith.constant dense<[0.1971, 0.2910, 0.0669, -0.2303, -0.2758, -0.0199]> : tensor<6xf32>
  %w2 = arith.constant dense<[[0.4546, 0.1196, -0.3059, -0.5000, -0.3156, 0.1076, 0.4494, 0.4511], [-0.2649, -0.4912, -0.0911, 0.4252, 0.3992, -0.1359, -0.4977, -0.2248], [-0.3864, 0.2892, 0.4273, -0.2288, -0.4597, 0.1637, 0.4828, -0.0954], [0.3645, 0.2505, -0.4783, -0.0332, 0.4934, -0.1910, -0.4066, 0.3758]]> : tensor<4x8xf32>
  %pb2 = arith.constant dense<[0.2968, 0.0957, -0.2100, -0.2862]> : tensor<4xf32>

  // LayerNorm 1: the row statistics gathered back to full shape.
  %e = tensor.empty() : tensor<1x5x8xf32>
  %er = tensor.empty() : tensor<1x5x1xf32>
  %zr = linalg.fill ins(%cst : f32) outs(%er : tensor<1x5x1xf32>) -> tensor<1x5x1xf32>
  %0 = linalg.generic {indexing_maps = [#map, #map2], iterator_types = ["parallel", "parallel", "reduction"]} ins(%arg0 : tensor<1x5x8xf32>) outs(%zr : tensor<1x5x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %in, %out : f32
    linalg.yield %s : f32
  } -> tensor<1x5x1xf32>
  %1 = linalg.generic {indexing_maps = [#map3, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%0 : tensor<1x5x1xf32>) outs(%er : tensor<1x5x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %d = arith.divf %in, %cst_k : f32
    linalg.yield %d : f32
  } -> tensor<1x5x1xf32>
  %2 = linalg.generic {indexing_maps = [#map], iterator_types = ["parallel", "parallel", "parallel"]} outs(%e : tensor<1x5x8xf32>) {
  ^bb0(%out: f32):
    %r = linalg.index 1 : index
    %v = tensor.extract %1[%c0, %r, %c0] : tensor<1x5x1xf32>
    linalg.yield %v : f32
  } -> tensor<1x5x8xf32>
  %3 = linalg.generic {indexing_maps = [#map1, #map1, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%arg0, %2 : tensor<1x5x8xf32>, tensor<1x5x8xf32>) outs(%e : tensor<1x5x8xf32>) {
  ^bb0(%in: f32, %in_1: f32, %out: f32):
    %d = arith.subf %in, %in_1 : f32
    linalg.yield %d : f32
  } -> tensor<1x5x8xf32>
  %4 = linalg.generic {indexing_maps = [#map1, #map1, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%3, %3 : tensor<1x5x8xf32>, tensor<1x5x8xf32>) outs(%e : tensor<1x5x8xf32>) {
  ^bb0(%in: f32, %in_1: f32, %out: f32):
    %m = arith.mulf %in, %in_1 : f32
    linalg.yield %m : f32
  } -> tensor<1x5x8xf32>
  %5 = linalg.generic {indexing_maps = [#map, #map2], iterator_types = ["parallel", "parallel", "reduction"]} ins(%4 : tensor<1x5x8xf32>) outs(%zr : tensor<1x5x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %in, %out : f32
    linalg.yield %s : f32
  } -> tensor<1x5x1xf32>
  %6 = linalg.generic {indexing_maps = [#map3, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%5 : tensor<1x5x1xf32>) outs(%er : tensor<1x5x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %d = arith.divf %in, %cst_k : f32
    linalg.yield %d : f32
  } -> tensor<1x5x1xf32>
  %7 = linalg.generic {indexing_maps = [#map3, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%6 : tensor<1x5x1xf32>) outs(%er : tensor<1x5x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %t = arith.truncf %cst_eps : f64 to f32
    %a = arith.addf %in, %t : f32
    linalg.yield %a : f32
  } -> tensor<1x5x1xf32>
  %8 = linalg.generic {indexing_maps = [#map3, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%7 : tensor<1x5x1xf32>) outs(%er : tensor<1x5x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = math.rsqrt %in : f32
    linalg.yield %r : f32
  } -> tensor<1x5x1xf32>
  %9 = linalg.generic {indexing_maps = [#map], iterator_types = ["parallel", "parallel", "parallel"]} outs(%e : tensor<1x5x8xf32>) {
  ^bb0(%out: f32):
    %r = linalg.index 1 : index
    %v = tensor.extract %8[%c0, %r, %c0] : tensor<1x5x1xf32>
    linalg.yield %v : f32
  } -> tensor<1x5x8xf32>
  %10 = linalg.generic {indexing_maps = [#map1, #map1, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%3, %9 : tensor<1x5x8xf32>, tensor<1x5x8xf32>) outs(%e : tensor<1x5x8xf32>) {
  ^bb0(%in: f32, %in_1: f32, %out: f32):
    %m = arith.mulf %in, %in_1 : f32
    linalg.yield %m : f32
  } -> tensor<1x5x8xf32>
  %11 = linalg.generic {indexing_maps = [#map1, #map4, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%10, %g1 : tensor<1x5x8xf32>, tensor<8xf32>) outs(%e : tensor<1x5x8xf32>) {
  ^bb0(%in: f32, %in_1: f32, %out: f32):
    %m = arith.mulf %in, %in_1 : f32
    linalg.yield %m : f32
  } -> tensor<1x5x8xf32>
  %12 = linalg.generic {indexing_maps = [#map1, #map4, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%11, %b1 : tensor<1x5x8xf32>, tensor<8xf32>) outs(%e : tensor<1x5x8xf32>) {
  ^bb0(%in: f32, %in_1: f32, %out: f32):
    %a = arith.addf %in, %in_1 : f32
    linalg.yield %a : f32
  } -> tensor<1x5x8xf32>
  %13 = linalg.generic {indexing_maps = [#map1, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%12 : tensor<1x5x8xf32>) outs(%e : tensor<1x5x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<1x5x8xf32>
  %collapsed = tensor.collapse_shape %13 [[0, 1], [2]] : tensor<1x5x8xf32> into tensor<5x8xf32>
  %et1 = tensor.empty() : tensor<8x6xf32>
  %t1 = linalg.generic {indexing_maps = [#map5, #map6], iterator_types = ["parallel", "parallel"]} ins(%w1 : tensor<6x8xf32>) outs(%et1 : tensor<8x6xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<8x6xf32>
  %ep1 = tensor.empty() : tensor<5x6xf32>
  %zp1 = linalg.fill ins(%cst : f32) outs(%ep1 : tensor<5x6xf32>) -> tensor<5x6xf32>
  %p1 = linalg.matmul ins(%collapsed, %t1 : tensor<5x8xf32>, tensor<8x6xf32>) outs(%zp1 : tensor<5x6xf32>) -> tensor<5x6xf32>
  %q1 = linalg.generic {indexing_maps = [#map7, #map5, #map5], iterator_types = ["parallel", "parallel"]} ins(%pb1, %p1 : tensor<6xf32>, tensor<5x6xf32>) outs(%ep1 : tensor<5x6xf32>) {
  ^bb0(%in: f32, %in_1: f32, %out: f32):
    %a = arith.addf %in, %in_1 : f32
    linalg.yield %a : f32
  } -> tensor<5x6xf32>

  // LayerNorm 2: yield-only broadcasts, the variance in f64.
  %20 = linalg.generic {indexing_maps = [#map, #map2], iterator_types = ["parallel", "parallel", "reduction"]} ins(%arg0 : tensor<1x5x8xf32>) outs(%zr : tensor<1x5x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %in, %out : f32
    linalg.yield %s : f32
  } -> tensor<1x5x1xf32>
  %21 = linalg.generic {indexing_maps = [#map3, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%20 : tensor<1x5x1xf32>) outs(%er : tensor<1x5x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %d = arith.divf %in, %cst_k : f32
    linalg.yield %d : f32
  } -> tensor<1x5x1xf32>
  %22 = linalg.generic {indexing_maps = [#map3, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%21 : tensor<1x5x1xf32>) outs(%e : tensor<1x5x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<1x5x8xf32>
  %23 = linalg.generic {indexing_maps = [#map1, #map1, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%arg0, %22 : tensor<1x5x8xf32>, tensor<1x5x8xf32>) outs(%e : tensor<1x5x8xf32>) {
  ^bb0(%in: f32, %in_1: f32, %out: f32):
    %d = arith.subf %in, %in_1 : f32
    linalg.yield %d : f32
  } -> tensor<1x5x8xf32>
  %e64 = tensor.empty() : tensor<1x5x8xf64>
  %24 = linalg.generic {indexing_maps = [#map1, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%23 : tensor<1x5x8xf32>) outs(%e64 : tensor<1x5x8xf64>) {
  ^bb0(%in: f32, %out: f64):
    %w = arith.extf %in : f32 to f64
    %m = arith.mulf %w, %w : f64
    linalg.yield %m : f64
  } -> tensor<1x5x8xf64>
  %er64 = tensor.empty() : tensor<1x5x1xf64>
  %zr64 = linalg.fill ins(%cst_0 : f64) outs(%er64 : tensor<1x5x1xf64>) -> tensor<1x5x1xf64>
  %25 = linalg.generic {indexing_maps = [#map, #map2], iterator_types = ["parallel", "parallel", "reduction"]} ins(%24 : tensor<1x5x8xf64>) outs(%zr64 : tensor<1x5x1xf64>) {
  ^bb0(%in: f64, %out: f64):
    %s = arith.addf %in, %out : f64
    linalg.yield %s : f64
  } -> tensor<1x5x1xf64>
  %26 = linalg.generic {indexing_maps = [#map3, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%25 : tensor<1x5x1xf64>) outs(%er : tensor<1x5x1xf32>) {
  ^bb0(%in: f64, %out: f32):
    %d = arith.divf %in, %cst_k64 : f64
    %t = arith.truncf %d : f64 to f32
    %eps = arith.truncf %cst_eps : f64 to f32
    %a = arith.addf %t, %eps : f32
    %r = math.rsqrt %a : f32
    linalg.yield %r : f32
  } -> tensor<1x5x1xf32>
  %27 = linalg.generic {indexing_maps = [#map3, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%26 : tensor<1x5x1xf32>) outs(%e : tensor<1x5x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<1x5x8xf32>
  %28 = linalg.generic {indexing_maps = [#map1, #map1, #map4, #map4, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%23, %27, %g2, %b2 : tensor<1x5x8xf32>, tensor<1x5x8xf32>, tensor<8xf32>, tensor<8xf32>) outs(%e : tensor<1x5x8xf32>) {
  ^bb0(%in: f32, %in_1: f32, %in_2: f32, %in_3: f32, %out: f32):
    %m = arith.mulf %in, %in_1 : f32
    %g = arith.mulf %m, %in_2 : f32
    %a = arith.addf %g, %in_3 : f32
    linalg.yield %a : f32
  } -> tensor<1x5x8xf32>
  %collapsed_2 = tensor.collapse_shape %28 [[0, 1], [2]] : tensor<1x5x8xf32> into tensor<5x8xf32>
  %et2 = tensor.empty() : tensor<8x4xf32>
  %t2 = linalg.generic {indexing_maps = [#map5, #map6], iterator_types = ["parallel", "parallel"]} ins(%w2 : tensor<4x8xf32>) outs(%et2 : tensor<8x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<8x4xf32>
  %ep2 = tensor.empty() : tensor<5x4xf32>
  %zp2 = linalg.fill ins(%cst : f32) outs(%ep2 : tensor<5x4xf32>) -> tensor<5x4xf32>
  %p2 = linalg.matmul ins(%collapsed_2, %t2 : tensor<5x8xf32>, tensor<8x4xf32>) outs(%zp2 : tensor<5x4xf32>) -> tensor<5x4xf32>
  %q2 = linalg.generic {indexing_maps = [#map7, #map5, #map5], iterator_types = ["parallel", "parallel"]} ins(%pb2, %p2 : tensor<4xf32>, tensor<5x4xf32>) outs(%ep2 : tensor<5x4xf32>) {
  ^bb0(%in: f32, %in_1: f32, %out: f32):
    %a = arith.addf %in, %in_1 : f32
    linalg.yield %a : f32
  } -> tensor<5x4xf32>
  return %q1, %q2 : tensor<5x6xf32>, tensor<5x4xf32>
}

func.func private @printMemrefF32(tensor<*xf32>)
func.func @main() {
  %e = tensor.empty() : tensor<1x5x8xf32>
  // x[0, i, j] = 3 sin(1.3 i + 0.7 j + 0.1) + 1.
  %x = linalg.generic {indexing_maps = [affine_map<(a, i, j) -> (a, i, j)>], iterator_types = ["parallel", "parallel", "parallel"]} outs(%e : tensor<1x5x8xf32>) {
  ^bb0(%o: f32):
    %i = linalg.index 1 : index
    %j = linalg.index 2 : index
    %ii = arith.index_cast %i : index to i32
    %jj = arith.index_cast %j : index to i32
    %fi = arith.sitofp %ii : i32 to f32
    %fj = arith.sitofp %jj : i32 to f32
    %a = arith.constant 1.3 : f32
    %b = arith.constant 0.7 : f32
    %c = arith.constant 0.1 : f32
    %ai = arith.mulf %a, %fi : f32
    %bj = arith.mulf %b, %fj : f32
    %s0 = arith.addf %ai, %bj : f32
    %s1 = arith.addf %s0, %c : f32
    %sn = math.sin %s1 : f32
    %three = arith.constant 3.0 : f32
    %one = arith.constant 1.0 : f32
    %m = arith.mulf %sn, %three : f32
    %v = arith.addf %m, %one : f32
    linalg.yield %v : f32
  } -> tensor<1x5x8xf32>
  %r1, %r2 = call @block(%x) : (tensor<1x5x8xf32>) -> (tensor<5x6xf32>, tensor<5x4xf32>)
  %u1 = tensor.cast %r1 : tensor<5x6xf32> to tensor<*xf32>
  call @printMemrefF32(%u1) : (tensor<*xf32>) -> ()
  %u2 = tensor.cast %r2 : tensor<5x4xf32> to tensor<*xf32>
  call @printMemrefF32(%u2) : (tensor<*xf32>) -> ()
  return
}
