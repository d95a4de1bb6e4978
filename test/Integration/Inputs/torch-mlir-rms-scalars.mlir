// An RMSNorm as torch-mlir's convert-torch-to-linalg writes it before any
// canonicalization: the mean is div.Scalar by an i64 count and the epsilon
// add.Scalar with an i64 alpha, each converted (sitofp) in the body, the
// epsilon an f64 truncated there.
#id = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#b0 = affine_map<(d0, d1, d2) -> (0, d1, d2)>
#r0 = affine_map<(d0, d1, d2) -> (0, d1, 0)>
#red = affine_map<(d0, d1, d2) -> (d0, d1, 0)>
#feat = affine_map<(d0, d1, d2) -> (d2)>
func.func @rms(%x: tensor<1x4x8xf32>) -> tensor<1x4x8xf32> {
  %c2 = arith.constant 2 : i64
  %c8 = arith.constant 8 : i64
  %c1 = arith.constant 1 : i64
  %eps = arith.constant 1.0e-05 : f64
  %e = tensor.empty() : tensor<1x4x8xf32>
  %sq = linalg.generic {indexing_maps = [#b0, #id], iterator_types = ["parallel", "parallel", "parallel"]} ins(%x : tensor<1x4x8xf32>) outs(%e : tensor<1x4x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %p = math.fpowi %a, %c2 : f32, i64
    linalg.yield %p : f32
  } -> tensor<1x4x8xf32>
  %zero = arith.constant 0.0 : f32
  %er = tensor.empty() : tensor<1x4x1xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%er : tensor<1x4x1xf32>) -> tensor<1x4x1xf32>
  %sum = linalg.generic {indexing_maps = [#id, #red], iterator_types = ["parallel", "parallel", "reduction"]} ins(%sq : tensor<1x4x8xf32>) outs(%acc : tensor<1x4x1xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.addf %a, %o : f32
    linalg.yield %s : f32
  } -> tensor<1x4x1xf32>
  %mean = linalg.generic {indexing_maps = [#r0, #id], iterator_types = ["parallel", "parallel", "parallel"]} ins(%sum : tensor<1x4x1xf32>) outs(%er : tensor<1x4x1xf32>) {
  ^bb0(%a: f32, %o: f32):
    %kf = arith.sitofp %c8 : i64 to f32
    %m = arith.divf %a, %kf : f32
    linalg.yield %m : f32
  } -> tensor<1x4x1xf32>
  %ve = linalg.generic {indexing_maps = [#r0, #id], iterator_types = ["parallel", "parallel", "parallel"]} ins(%mean : tensor<1x4x1xf32>) outs(%er : tensor<1x4x1xf32>) {
  ^bb0(%a: f32, %o: f32):
    %ef = arith.truncf %eps : f64 to f32
    %al = arith.sitofp %c1 : i64 to f32
    %m = arith.mulf %ef, %al : f32
    %v = arith.addf %a, %m : f32
    linalg.yield %v : f32
  } -> tensor<1x4x1xf32>
  %r = linalg.generic {indexing_maps = [#r0, #id], iterator_types = ["parallel", "parallel", "parallel"]} ins(%ve : tensor<1x4x1xf32>) outs(%er : tensor<1x4x1xf32>) {
  ^bb0(%a: f32, %o: f32):
    %q = math.rsqrt %a : f32
    linalg.yield %q : f32
  } -> tensor<1x4x1xf32>
  %n = linalg.generic {indexing_maps = [#b0, #r0, #id], iterator_types = ["parallel", "parallel", "parallel"]} ins(%x, %r : tensor<1x4x8xf32>, tensor<1x4x1xf32>) outs(%e : tensor<1x4x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %q = arith.mulf %a, %b : f32
    linalg.yield %q : f32
  } -> tensor<1x4x8xf32>
  return %n : tensor<1x4x8xf32>
}
