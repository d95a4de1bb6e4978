// A statistic whose input is updated in place before the post-scale: the
// async schedule must keep it serial, the fused kernel must refuse.
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @forward(%a: tensor<4x16xf32>, %w: tensor<16x32xf32>) -> (tensor<4x32xf32>, tensor<4x16xf32>) {
  %e0 = tensor.empty() : tensor<4x16xf32>
  %x = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%a : tensor<4x16xf32>) outs(%e0 : tensor<4x16xf32>) {
  ^bb0(%i: f32, %o: f32):
    %c = arith.constant 1.5 : f32
    %m = arith.mulf %i, %c : f32
    linalg.yield %m : f32
  } -> tensor<4x16xf32>
  %s = flashnorm.rms_inv %x eps(1.0e-5) : tensor<4x16xf32> -> tensor<4xf32>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x32xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<4x32xf32>) -> tensor<4x32xf32>
  %p = linalg.matmul ins(%x, %w : tensor<4x16xf32>, tensor<16x32xf32>) outs(%f : tensor<4x32xf32>) -> tensor<4x32xf32>
  %x2 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<4x16xf32>) outs(%x : tensor<4x16xf32>) {
  ^bb0(%i: f32, %o: f32):
    %c = arith.constant 3.0 : f32
    %m = arith.addf %i, %c : f32
    linalg.yield %m : f32
  } -> tensor<4x16xf32>
  %y = flashnorm.post_scale %p, %s : tensor<4x32xf32>, tensor<4xf32> -> tensor<4x32xf32>
  return %y, %x2 : tensor<4x32xf32>, tensor<4x16xf32>
}
func.func @main() {
  %e = tensor.empty() : tensor<4x16xf32>
  %a = linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel"]} outs(%e : tensor<4x16xf32>) {
  ^bb0(%o: f32):
    %i0 = linalg.index 0 : index
    %i1 = linalg.index 1 : index
    %j0 = arith.index_cast %i0 : index to i32
    %j1 = arith.index_cast %i1 : index to i32
    %f0 = arith.sitofp %j0 : i32 to f32
    %f1 = arith.sitofp %j1 : i32 to f32
    %c = arith.constant 0.37 : f32
    %m = arith.mulf %f0, %c : f32
    %s = arith.addf %m, %f1 : f32
    %v = math.sin %s : f32
    linalg.yield %v : f32
  } -> tensor<4x16xf32>
  %ew = tensor.empty() : tensor<16x32xf32>
  %w = linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel"]} outs(%ew : tensor<16x32xf32>) {
  ^bb0(%o: f32):
    %i0 = linalg.index 0 : index
    %i1 = linalg.index 1 : index
    %j0 = arith.index_cast %i0 : index to i32
    %j1 = arith.index_cast %i1 : index to i32
    %f0 = arith.sitofp %j0 : i32 to f32
    %f1 = arith.sitofp %j1 : i32 to f32
    %c = arith.constant 0.21 : f32
    %m = arith.mulf %f1, %c : f32
    %s = arith.addf %m, %f0 : f32
    %v = math.cos %s : f32
    linalg.yield %v : f32
  } -> tensor<16x32xf32>
  %y, %x2 = func.call @forward(%a, %w) : (tensor<4x16xf32>, tensor<16x32xf32>) -> (tensor<4x32xf32>, tensor<4x16xf32>)
  %u = tensor.cast %y : tensor<4x32xf32> to tensor<*xf32>
  func.call @printMemrefF32(%u) : (tensor<*xf32>) -> ()
  %u2 = tensor.cast %x2 : tensor<4x16xf32> to tensor<*xf32>
  func.call @printMemrefF32(%u2) : (tensor<*xf32>) -> ()
  return
}
func.func private @printMemrefF32(tensor<*xf32>)
