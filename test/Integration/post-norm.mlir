// Execution: a post-norm block (BERT, the original Transformer): the
// LayerNorm's result is both the projection's input and the residual, so
// the residual add reads it too. --flashnorm folds the gain, bias and
// centering for the projection, which reads a weightless copy of the norm
// and is deferred (1/std beside it, a post-scale after it); the residual
// keeps the gained norm. f32: rtol 1e-4.
// RUN: flashnorm-opt %s %lower-to-llvm | %run > %t.ref
// RUN: flashnorm-opt %s --flashnorm | flashnorm-opt %lower-to-llvm | %run > %t.out
// RUN: %compare %t.ref %t.out --rtol 1e-4 --atol 1e-5 | FileCheck %s --check-prefix=CMP
// RUN: flashnorm-opt %s --flashnorm | flashnorm-opt --flashnorm-cpu-pipeline | %async-run > %t.async
// RUN: %compare %t.ref %t.async --rtol 1e-4 --atol 1e-5 | FileCheck %s --check-prefix=CMP
// RUN: flashnorm-opt %s --flashnorm | FileCheck %s
// With partial=false nothing is folded or deferred:
// RUN: flashnorm-opt %s --flashnorm=partial=false | FileCheck %s --check-prefix=NOPARTIAL
// CMP: MATCH
// CHECK-LABEL: func.func @block
// CHECK-SAME: (%[[X:.*]]: tensor<4x16xf32>)
// CHECK-DAG: %[[N:.*]] = flashnorm.layer_norm %[[X]] gain(%{{.*}}) bias(%{{.*}})
// CHECK-DAG: %[[S:.*]] = flashnorm.layer_inv %[[X]]
// CHECK: %[[P:.*]] = linalg.matmul ins(%[[X]],
// CHECK: flashnorm.post_scale %[[P]], %[[S]]
// CHECK: linalg.generic {{.*}} ins(%[[N]], %[[X]] :
// NOPARTIAL-LABEL: func.func @block
// NOPARTIAL-NOT: flashnorm.post_scale
// NOPARTIAL: return
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#feat = affine_map<(d0, d1) -> (d1)>
func.func @block(%x: tensor<4x16xf32>) -> (tensor<4x8xf32>, tensor<4x16xf32>) {
  %g = arith.constant dense<[0.5039, 1.2992, 0.6723, 0.9735, 1.2252, 1.0565, 0.8260, 1.0183, 1.0554, 1.2843, 0.6061, 1.0603, 0.7485, 0.7769, 1.2723, 1.0077]> : tensor<16xf32>
  %b = arith.constant dense<[0.0370, 0.1560, 0.2475, -0.0341, 0.0675, 0.0033, 0.0073, 0.1156, -0.0286, 0.0200, -0.0132, 0.2649, 0.1195, 0.2259, 0.2653, -0.1442]> : tensor<16xf32>
  %wq = arith.constant dense<[[-0.1762, -0.3492, 0.1509, -0.4276, 0.0359, -0.1343, -0.4420, 0.0074], [-0.4625, -0.0664, -0.4301, -0.4093, -0.0755, 0.3269, -0.3762, -0.2768], [0.1274, 0.4477, 0.0771, -0.1033, 0.4763, -0.4534, 0.3585, -0.2104], [-0.3557, -0.3822, -0.1915, 0.3161, -0.3193, 0.0816, 0.1389, -0.1276], [0.0477, -0.4372, -0.4404, -0.2940, 0.1804, -0.0724, -0.1859, 0.0856], [-0.0468, -0.2002, 0.2944, 0.1990, -0.2559, 0.0744, 0.0252, 0.3751], [0.2294, -0.2121, 0.4802, -0.3819, -0.0819, 0.2571, -0.3480, -0.0110], [-0.4608, 0.1682, 0.2646, 0.0730, 0.3755, -0.1863, 0.1953, 0.0944], [0.0799, -0.0438, 0.3400, 0.4447, -0.0259, 0.1642, -0.4393, 0.2015], [0.1471, 0.4931, 0.3219, -0.2154, -0.1142, 0.1687, -0.4774, -0.0383], [-0.3320, -0.3829, -0.4410, 0.2682, -0.3707, -0.2524, -0.1091, 0.3714], [-0.4194, -0.0508, 0.0494, 0.3834, 0.3193, 0.3640, -0.2216, -0.0847], [-0.1412, 0.3842, 0.4577, -0.3491, -0.3238, -0.2680, -0.2667, -0.0150], [0.0891, -0.2373, -0.4959, -0.0811, -0.1307, 0.0663, 0.4531, 0.1905], [0.0155, 0.1176, 0.1762, -0.4460, 0.3995, 0.2800, 0.3745, 0.2979], [-0.1076, -0.1010, -0.3965, 0.1343, -0.4378, -0.4327, -0.2912, -0.3377]]> : tensor<16x8xf32>
  %bq = arith.constant dense<0.5> : tensor<8xf32>
  %zero = arith.constant 0.0 : f32
  %er = tensor.empty() : tensor<4xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%er : tensor<4xf32>) -> tensor<4xf32>
  %sum = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<4x16xf32>) outs(%acc : tensor<4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.addf %o, %a : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  %e = tensor.empty() : tensor<4x16xf32>
  %c = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %sum : tensor<4x16xf32>, tensor<4xf32>) outs(%e : tensor<4x16xf32>) {
  ^bb0(%a: f32, %s: f32, %o: f32):
    %k = arith.constant 16.0 : f32
    %m = arith.divf %s, %k : f32
    %d = arith.subf %a, %m : f32
    linalg.yield %d : f32
  } -> tensor<4x16xf32>
  %vs = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%c : tensor<4x16xf32>) outs(%acc : tensor<4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %sq = arith.mulf %a, %a : f32
    %s = arith.addf %o, %sq : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  %n = linalg.generic {indexing_maps = [#id, #row, #feat, #feat, #id], iterator_types = ["parallel", "parallel"]}
      ins(%c, %vs, %g, %b : tensor<4x16xf32>, tensor<4xf32>, tensor<16xf32>, tensor<16xf32>) outs(%e : tensor<4x16xf32>) {
  ^bb0(%a: f32, %v: f32, %gg: f32, %bb: f32, %o: f32):
    %k = arith.constant 16.0 : f32
    %var = arith.divf %v, %k : f32
    %eps = arith.constant 1.0e-05 : f32
    %ve = arith.addf %var, %eps : f32
    %sd = math.sqrt %ve : f32
    %q = arith.divf %a, %sd : f32
    %qg = arith.mulf %q, %gg : f32
    %r = arith.addf %qg, %bb : f32
    linalg.yield %r : f32
  } -> tensor<4x16xf32>
  %e8 = tensor.empty() : tensor<4x8xf32>
  %z8 = linalg.fill ins(%zero : f32) outs(%e8 : tensor<4x8xf32>) -> tensor<4x8xf32>
  %q = linalg.matmul ins(%n, %wq : tensor<4x16xf32>, tensor<16x8xf32>) outs(%z8 : tensor<4x8xf32>) -> tensor<4x8xf32>
  %qb = linalg.generic {indexing_maps = [#id, #feat, #id], iterator_types = ["parallel", "parallel"]}
      ins(%q, %bq : tensor<4x8xf32>, tensor<8xf32>) outs(%e8 : tensor<4x8xf32>) {
  ^bb0(%a: f32, %bb: f32, %o: f32):
    %r = arith.addf %a, %bb : f32
    linalg.yield %r : f32
  } -> tensor<4x8xf32>
  %res = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%n, %x : tensor<4x16xf32>, tensor<4x16xf32>) outs(%e : tensor<4x16xf32>) {
  ^bb0(%a: f32, %bb: f32, %o: f32):
    %r = arith.addf %a, %bb : f32
    linalg.yield %r : f32
  } -> tensor<4x16xf32>
  return %qb, %res : tensor<4x8xf32>, tensor<4x16xf32>
}

func.func @main() {
  %s = arith.constant 3.0 : f32
  %o = arith.constant 1.0 : f32
  %x = call @input(%s, %o) : (f32, f32) -> tensor<4x16xf32>
  %a, %b = call @block(%x) : (tensor<4x16xf32>) -> (tensor<4x8xf32>, tensor<4x16xf32>)
  %ua = tensor.cast %a : tensor<4x8xf32> to tensor<*xf32>
  call @printMemrefF32(%ua) : (tensor<*xf32>) -> ()
  %ub = tensor.cast %b : tensor<4x16xf32> to tensor<*xf32>
  call @printMemrefF32(%ub) : (tensor<*xf32>) -> ()
  return
}
// Deterministic input: x[i, j] = scale * sin(1.3 i + 0.7 j + 0.1) + offset.
func.func @input(%scale: f32, %offset: f32) -> tensor<4x16xf32> {
  %e = tensor.empty() : tensor<4x16xf32>
  %x = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>],
                       iterator_types = ["parallel", "parallel"]} outs(%e : tensor<4x16xf32>) {
  ^bb0(%o: f32):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %ii = arith.index_cast %i : index to i32
    %jj = arith.index_cast %j : index to i32
    %fi = arith.sitofp %ii : i32 to f32
    %fj = arith.sitofp %jj : i32 to f32
    %a = arith.constant 1.3 : f32
    %b = arith.constant 0.7 : f32
    %c = arith.constant 0.1 : f32
    %t0 = arith.mulf %fi, %a : f32
    %t1 = arith.mulf %fj, %b : f32
    %t2 = arith.addf %t0, %t1 : f32
    %t3 = arith.addf %t2, %c : f32
    %s = math.sin %t3 : f32
    %v = arith.mulf %s, %scale : f32
    %r = arith.addf %v, %offset : f32
    linalg.yield %r : f32
  } -> tensor<4x16xf32>
  return %x : tensor<4x16xf32>
}
func.func private @printMemrefF32(tensor<*xf32>)
