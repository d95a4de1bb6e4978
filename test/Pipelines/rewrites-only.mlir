// Where a norm is rewritten, the rest of its function stays as it was: the
// user's dead code, duplicate constants and foldable arithmetic.
// RUN: flashnorm-opt %s --flashnorm | FileCheck %s

// CHECK-LABEL: func.func @norm_and_more
// CHECK-NEXT: %[[UNUSED:.*]] = arith.constant 2.5{{.*}} : f32
// CHECK: flashnorm.rms_inv
// CHECK: flashnorm.post_scale
// CHECK-NEXT: %[[DUP:.*]] = arith.constant 2.5{{.*}} : f32
// CHECK-NEXT: %[[T:.*]] = arith.addf %{{.*}}, %[[DUP]]
// CHECK-NEXT: arith.mulf %[[T]], %[[T]] : f32
func.func @norm_and_more(%x: tensor<4x8xf32>, %s: f32) -> (tensor<4x6xf32>, f32) {
  %dup = arith.constant 2.5 : f32
  %sq = arith.mulf %x, %x : tensor<4x8xf32>
  %zero = arith.constant 0.0 : f32
  %er = tensor.empty() : tensor<4xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%er : tensor<4xf32>) -> tensor<4xf32>
  %sum = linalg.reduce ins(%sq : tensor<4x8xf32>) outs(%acc : tensor<4xf32>) dimensions = [1]
    (%in: f32, %init: f32) {
      %a = arith.addf %in, %init : f32
      linalg.yield %a : f32
    }
  %e = tensor.empty() : tensor<4x8xf32>
  %rs = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x, %sum : tensor<4x8xf32>, tensor<4xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %k = arith.constant 0.125 : f32
    %eps = arith.constant 1.0e-5 : f32
    %m = arith.mulf %b, %k : f32
    %me = arith.addf %m, %eps : f32
    %r = math.rsqrt %me : f32
    %y = arith.mulf %a, %r : f32
    linalg.yield %y : f32
  } -> tensor<4x8xf32>
  %w = arith.constant dense<0.25> : tensor<8x6xf32>
  %ep = tensor.empty() : tensor<4x6xf32>
  %zp = linalg.fill ins(%zero : f32) outs(%ep : tensor<4x6xf32>) -> tensor<4x6xf32>
  %p = linalg.matmul ins(%rs, %w : tensor<4x8xf32>, tensor<8x6xf32>) outs(%zp : tensor<4x6xf32>) -> tensor<4x6xf32>
  // Foldable (x + 0) and dead (x * x) scalar code of the user's.
  %dup2 = arith.constant 2.5 : f32
  %t = arith.addf %s, %dup2 : f32
  %unused = arith.mulf %t, %t : f32
  return %p, %t : tensor<4x6xf32>, f32
}
