// A norm written as x * (1/RMS * g): the row's scale times the gain first,
// then x (the order of an importer that folds the gain into the scale).
// Raised like x * 1/RMS * g, in linalg bodies, in TOSA with broadcasts, and
// with a 1 + g gain; then folded and deferred, executed against the
// unrewritten program. Two gains on the way are no norm's (refused with a
// remark, the numbers kept).
// RUN: flashnorm-opt %s --flashnorm-raise | FileCheck %s
// RUN: flashnorm-run %s -e linalg_form --pipeline=flashnorm --compare --rtol 1e-5 | FileCheck %s --check-prefix=CMP
// RUN: flashnorm-run %s -e tosa_form --pipeline=flashnorm --compare --rtol 1e-5 | FileCheck %s --check-prefix=CMP
// RUN: flashnorm-run %s -e one_plus --pipeline=flashnorm --compare --rtol 1e-5 | FileCheck %s --check-prefix=CMP
// RUN: flashnorm-run %s -e two_gains --pipeline=flashnorm --compare --rtol 1e-5 | FileCheck %s --check-prefix=CMP
// RUN: flashnorm-opt %s --flashnorm --remarks-filter=flashnorm --remark-format=emitRemark -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK
// CMP: MATCH
// CHECK-LABEL: func.func @linalg_form
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>
// CHECK: flashnorm.rms_norm %[[X]] gain(%{{.*}} : tensor<8xf32>) eps(9.9999997473787516E-6) : tensor<4x8xf32>
// CHECK-NOT: linalg.generic
// CHECK: linalg.matmul
// CHECK-LABEL: func.func @tosa_form
// CHECK: flashnorm.rms_norm %{{.*}} gain(%{{.*}} : tensor<8xf32>) eps(9.9999997473787516E-6) : tensor<1x4x8xf32>
// CHECK-NOT: tosa.rsqrt
// CHECK: tosa.matmul
// CHECK-LABEL: func.func @one_plus
// CHECK: flashnorm.rms_norm %{{.*}} gain(%{{.*}} : tensor<8xf32>) eps(9.9999999747524271E-7) convention one_plus : tensor<4x8xf32>
// CHECK-LABEL: func.func @two_gains
// CHECK-NOT: flashnorm.rms_norm
// CHECK: return
// REMARK-DAG: Function=linalg_form | Remark="deferred 1/RMS past 1 projection(s)
// REMARK-DAG: Function=tosa_form | Remark="deferred 1/RMS past 1 projection(s)
// REMARK-DAG: Function=one_plus | Remark="deferred 1/RMS past 1 projection(s)
// REMARK-DAG: Function=two_gains | Remark="not raised: its gain is not g or 1 + g"
// A bias added to the scale before x: x * (1/RMS * g + b) is no norm (a
// raise would drop b).
// RUN: flashnorm-run %s -e biased_factor --pipeline=flashnorm --compare --rtol 1e-5 | FileCheck %s --check-prefix=CMP
// CHECK-LABEL: func.func @biased_factor
// CHECK-NOT: flashnorm.rms_norm
// CHECK: return

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#feat = affine_map<(d0, d1) -> (d1)>

func.func @linalg_form(%x: tensor<4x8xf32>) -> tensor<4x6xf32> {
  %g = arith.constant dense<[-1.79, 0.68, 0.26, 0.76, -1.75, 1.65, -1.65, -1.26]> : tensor<8xf32>
  %w = arith.constant dense<[[-0.43, -0.87, 0.70, 0.97, -0.82, 0.60], [-0.17, -0.69, -0.41, 0.53, 0.74, -0.91], [0.22, -0.91, 0.43, -0.33, 0.76, 0.96], [0.01, 0.99, -0.38, -0.84, 0.19, -0.93], [-0.60, -0.18, 0.22, -0.68, -0.91, 0.73], [-0.37, 0.91, 0.79, -0.24, -0.07, 0.04], [0.28, 0.19, 0.11, 0.24, 0.88, 0.01], [-0.13, 0.44, -0.52, -0.39, 0.95, 0.04]]> : tensor<8x6xf32>
  %zero = arith.constant 0.0 : f32
  %er = tensor.empty() : tensor<4xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%er : tensor<4xf32>) -> tensor<4xf32>
  %sum = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<4x8xf32>) outs(%acc : tensor<4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %p = arith.mulf %a, %a : f32
    %s = arith.addf %o, %p : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  // rsqrt(mean + eps) * g, of x's shape, before x.
  %e = tensor.empty() : tensor<4x8xf32>
  %sg = linalg.generic {indexing_maps = [#row, #feat, #id], iterator_types = ["parallel", "parallel"]} ins(%sum, %g : tensor<4xf32>, tensor<8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%s: f32, %gg: f32, %o: f32):
    %k = arith.constant 8.0 : f32
    %m = arith.divf %s, %k : f32
    %eps = arith.constant 1.0e-05 : f32
    %v = arith.addf %m, %eps : f32
    %r = math.rsqrt %v : f32
    %q = arith.mulf %r, %gg : f32
    linalg.yield %q : f32
  } -> tensor<4x8xf32>
  %n = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%x, %sg : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %p = arith.mulf %a, %b : f32
    linalg.yield %p : f32
  } -> tensor<4x8xf32>
  %eo = tensor.empty() : tensor<4x6xf32>
  %z = linalg.fill ins(%zero : f32) outs(%eo : tensor<4x6xf32>) -> tensor<4x6xf32>
  %y = linalg.matmul ins(%n, %w : tensor<4x8xf32>, tensor<8x6xf32>) outs(%z : tensor<4x6xf32>) -> tensor<4x6xf32>
  return %y : tensor<4x6xf32>
}

func.func @tosa_form(%x: tensor<1x4x8xf32>) -> tensor<1x4x6xf32> {
  %g = "tosa.const"() {values = dense<[-1.79, 0.68, 0.26, 0.76, -1.75, 1.65, -1.65, -1.26]> : tensor<8xf32>} : () -> tensor<8xf32>
  %w = "tosa.const"() {values = dense<[[[-0.43, -0.87, 0.70, 0.97, -0.82, 0.60], [-0.17, -0.69, -0.41, 0.53, 0.74, -0.91], [0.22, -0.91, 0.43, -0.33, 0.76, 0.96], [0.01, 0.99, -0.38, -0.84, 0.19, -0.93], [-0.60, -0.18, 0.22, -0.68, -0.91, 0.73], [-0.37, 0.91, 0.79, -0.24, -0.07, 0.04], [0.28, 0.19, 0.11, 0.24, 0.88, 0.01], [-0.13, 0.44, -0.52, -0.39, 0.95, 0.04]]]> : tensor<1x8x6xf32>} : () -> tensor<1x8x6xf32>
  %shift = "tosa.const"() {values = dense<0> : tensor<1xi8>} : () -> tensor<1xi8>
  %inv_k = "tosa.const"() {values = dense<0.125> : tensor<1x1x1xf32>} : () -> tensor<1x1x1xf32>
  %eps = "tosa.const"() {values = dense<1.0e-05> : tensor<1x1x1xf32>} : () -> tensor<1x1x1xf32>
  %sq = tosa.mul %x, %x, %shift : (tensor<1x4x8xf32>, tensor<1x4x8xf32>, tensor<1xi8>) -> tensor<1x4x8xf32>
  %sum = tosa.reduce_sum %sq {axis = 2 : i32} : (tensor<1x4x8xf32>) -> tensor<1x4x1xf32>
  %mean = tosa.mul %sum, %inv_k, %shift : (tensor<1x4x1xf32>, tensor<1x1x1xf32>, tensor<1xi8>) -> tensor<1x4x1xf32>
  %v = tosa.add %mean, %eps : (tensor<1x4x1xf32>, tensor<1x1x1xf32>) -> tensor<1x4x1xf32>
  %r = tosa.rsqrt %v : (tensor<1x4x1xf32>) -> tensor<1x4x1xf32>
  %gs = tosa.const_shape {values = dense<[1, 1, 8]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %g3 = tosa.reshape %g, %gs : (tensor<8xf32>, !tosa.shape<3>) -> tensor<1x1x8xf32>
  %rg = tosa.mul %r, %g3, %shift : (tensor<1x4x1xf32>, tensor<1x1x8xf32>, tensor<1xi8>) -> tensor<1x4x8xf32>
  %n = tosa.mul %x, %rg, %shift : (tensor<1x4x8xf32>, tensor<1x4x8xf32>, tensor<1xi8>) -> tensor<1x4x8xf32>
  %azp = "tosa.const"() {values = dense<0.0> : tensor<1xf32>} : () -> tensor<1xf32>
  %y = tosa.matmul %n, %w, %azp, %azp : (tensor<1x4x8xf32>, tensor<1x8x6xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x4x6xf32>
  return %y : tensor<1x4x6xf32>
}

// Gemma's 1 + g, formed beside the scale: x * (rsqrt(ms + eps) * (1 + g)).
func.func @one_plus(%x: tensor<4x8xf32>) -> tensor<4x6xf32> {
  %g = arith.constant dense<[-0.79, 0.68, 0.26, 0.76, -0.75, 0.65, -0.65, -0.26]> : tensor<8xf32>
  %w = arith.constant dense<[[-0.43, -0.87, 0.70, 0.97, -0.82, 0.60], [-0.17, -0.69, -0.41, 0.53, 0.74, -0.91], [0.22, -0.91, 0.43, -0.33, 0.76, 0.96], [0.01, 0.99, -0.38, -0.84, 0.19, -0.93], [-0.60, -0.18, 0.22, -0.68, -0.91, 0.73], [-0.37, 0.91, 0.79, -0.24, -0.07, 0.04], [0.28, 0.19, 0.11, 0.24, 0.88, 0.01], [-0.13, 0.44, -0.52, -0.39, 0.95, 0.04]]> : tensor<8x6xf32>
  %zero = arith.constant 0.0 : f32
  %er = tensor.empty() : tensor<4xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%er : tensor<4xf32>) -> tensor<4xf32>
  %sum = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<4x8xf32>) outs(%acc : tensor<4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %p = arith.mulf %a, %a : f32
    %s = arith.addf %o, %p : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  %e = tensor.empty() : tensor<4x8xf32>
  %n = linalg.generic {indexing_maps = [#id, #row, #feat, #id], iterator_types = ["parallel", "parallel"]} ins(%x, %sum, %g : tensor<4x8xf32>, tensor<4xf32>, tensor<8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %s: f32, %gg: f32, %o: f32):
    %k = arith.constant 0.125 : f32
    %m = arith.mulf %s, %k : f32
    %eps = arith.constant 1.0e-06 : f32
    %v = arith.addf %m, %eps : f32
    %r = math.rsqrt %v : f32
    %one = arith.constant 1.0 : f32
    %g1 = arith.addf %gg, %one : f32
    %q = arith.mulf %r, %g1 : f32
    %p = arith.mulf %a, %q : f32
    linalg.yield %p : f32
  } -> tensor<4x8xf32>
  %eo = tensor.empty() : tensor<4x6xf32>
  %z = linalg.fill ins(%zero : f32) outs(%eo : tensor<4x6xf32>) -> tensor<4x6xf32>
  %y = linalg.matmul ins(%n, %w : tensor<4x8xf32>, tensor<8x6xf32>) outs(%z : tensor<4x6xf32>) -> tensor<4x6xf32>
  return %y : tensor<4x6xf32>
}

// A gain on each side: g1 * g2 is no single gain the norm takes.
func.func @two_gains(%x: tensor<4x8xf32>, %g1: tensor<8xf32>, %g2: tensor<8xf32>) -> tensor<4x8xf32> {
  %zero = arith.constant 0.0 : f32
  %er = tensor.empty() : tensor<4xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%er : tensor<4xf32>) -> tensor<4xf32>
  %sum = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<4x8xf32>) outs(%acc : tensor<4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %p = arith.mulf %a, %a : f32
    %s = arith.addf %o, %p : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  %e = tensor.empty() : tensor<4x8xf32>
  %n = linalg.generic {indexing_maps = [#id, #row, #feat, #feat, #id], iterator_types = ["parallel", "parallel"]} ins(%x, %sum, %g1, %g2 : tensor<4x8xf32>, tensor<4xf32>, tensor<8xf32>, tensor<8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %s: f32, %ga: f32, %gb: f32, %o: f32):
    %k = arith.constant 0.125 : f32
    %m = arith.mulf %s, %k : f32
    %eps = arith.constant 1.0e-06 : f32
    %v = arith.addf %m, %eps : f32
    %r = math.rsqrt %v : f32
    %q = arith.mulf %r, %ga : f32
    %p = arith.mulf %a, %q : f32
    %t = arith.mulf %p, %gb : f32
    linalg.yield %t : f32
  } -> tensor<4x8xf32>
  return %n : tensor<4x8xf32>
}

func.func @biased_factor(%x: tensor<4x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  %zero = arith.constant 0.0 : f32
  %er = tensor.empty() : tensor<4xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%er : tensor<4xf32>) -> tensor<4xf32>
  %sum = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<4x8xf32>) outs(%acc : tensor<4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %p = arith.mulf %a, %a : f32
    %s = arith.addf %o, %p : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  %e = tensor.empty() : tensor<4x8xf32>
  %n = linalg.generic {indexing_maps = [#id, #row, #feat, #feat, #id], iterator_types = ["parallel", "parallel"]} ins(%x, %sum, %g, %b : tensor<4x8xf32>, tensor<4xf32>, tensor<8xf32>, tensor<8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %s: f32, %gg: f32, %bb: f32, %o: f32):
    %k = arith.constant 0.125 : f32
    %m = arith.mulf %s, %k : f32
    %eps = arith.constant 1.0e-06 : f32
    %v = arith.addf %m, %eps : f32
    %r = math.rsqrt %v : f32
    %q = arith.mulf %r, %gg : f32
    %qb = arith.addf %q, %bb : f32
    %p = arith.mulf %a, %qb : f32
    linalg.yield %p : f32
  } -> tensor<4x8xf32>
  return %n : tensor<4x8xf32>
}
