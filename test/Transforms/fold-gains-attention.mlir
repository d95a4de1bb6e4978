// RUN: flashnorm-opt %s --flashnorm-fold-gains --split-input-file | FileCheck %s
// RUN: flashnorm-opt %s --flashnorm-fold-gains=fold-attention-scale=false --split-input-file | FileCheck %s --check-prefix=OFF
// RUN: flashnorm-opt %s --flashnorm-fold-gains --split-input-file \
// RUN:   --remarks-filter=flashnorm --remark-format=emitRemark 2>&1 >/dev/null \
// RUN:   | FileCheck %s --check-prefix=REMARK

// The logits q k^T are scaled by 0.5 in the mask generic: the query
// projection's weight takes g * 0.5 (one rounding), its bias 0.5 b, the
// multiply goes; the key projection (the contraction's other side) keeps
// its weight times g only.
// CHECK-LABEL: func.func @logits
// CHECK-DAG: %[[WQ:.*]] = arith.constant dense<{{\[}}[1.000000e+00, 2.000000e+00], [3.000000e+00, 4.000000e+00]]> : tensor<2x2xf32>
// CHECK-DAG: %[[WK:.*]] = arith.constant dense<{{\[}}[2.000000e+00, 4.000000e+00], [6.000000e+00, 8.000000e+00]]> : tensor<2x2xf32>
// CHECK-DAG: %[[BQ:.*]] = arith.constant dense<[5.000000e-01, -5.000000e-01]> : tensor<2xf32>
// CHECK: linalg.matmul ins(%{{.*}}, %[[WQ]] :
// CHECK: ins(%[[BQ]], %{{.*}} : tensor<2xf32>, tensor<3x2xf32>)
// CHECK: linalg.matmul ins(%{{.*}}, %[[WK]] :
// CHECK: linalg.generic
// CHECK-NEXT: ^bb0(%[[S:.*]]: f32, %{{.*}}: f32, %{{.*}}: f32):
// CHECK-NEXT: %[[A:.*]] = arith.addf %[[S]], %{{.*}} : f32
// CHECK-NEXT: linalg.yield %[[A]]
// OFF-LABEL: func.func @logits
// OFF: arith.mulf %{{.*}}, %cst{{.*}} : f32
// REMARK: Remark="folded the gain into 2 projection weight(s) (with the attention scale of 1 query projection(s))"
#id = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (j)>
func.func @logits(%x: tensor<3x2xf32>, %mask: tensor<3x3xf32>) -> tensor<3x3xf32> {
  %g = arith.constant dense<[2.0, 2.0]> : tensor<2xf32>
  %n = flashnorm.rms_norm %x gain(%g : tensor<2xf32>) eps(1.0e-05) : tensor<3x2xf32>
  %wq = arith.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %wk = arith.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %bq = arith.constant dense<[1.0, -1.0]> : tensor<2xf32>
  %c0 = arith.constant 0.0 : f32
  %half = arith.constant 0.5 : f32
  %e = tensor.empty() : tensor<3x2xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<3x2xf32>) -> tensor<3x2xf32>
  %q = linalg.matmul ins(%n, %wq : tensor<3x2xf32>, tensor<2x2xf32>) outs(%z : tensor<3x2xf32>) -> tensor<3x2xf32>
  %qb = linalg.generic {indexing_maps = [#row, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%bq, %q : tensor<2xf32>, tensor<3x2xf32>) outs(%e : tensor<3x2xf32>) {
  ^bb0(%b: f32, %v: f32, %o: f32):
    %s = arith.addf %b, %v : f32
    linalg.yield %s : f32
  } -> tensor<3x2xf32>
  %k = linalg.matmul ins(%n, %wk : tensor<3x2xf32>, tensor<2x2xf32>) outs(%z : tensor<3x2xf32>) -> tensor<3x2xf32>
  %et = tensor.empty() : tensor<2x3xf32>
  %kt = linalg.transpose ins(%k : tensor<3x2xf32>) outs(%et : tensor<2x3xf32>) permutation = [1, 0]
  %e3 = tensor.empty() : tensor<3x3xf32>
  %z3 = linalg.fill ins(%c0 : f32) outs(%e3 : tensor<3x3xf32>) -> tensor<3x3xf32>
  %l = linalg.matmul ins(%qb, %kt : tensor<3x2xf32>, tensor<2x3xf32>) outs(%z3 : tensor<3x3xf32>) -> tensor<3x3xf32>
  %m = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%l, %mask : tensor<3x3xf32>, tensor<3x3xf32>) outs(%e3 : tensor<3x3xf32>) {
  ^bb0(%s: f32, %mk: f32, %o: f32):
    %sc = arith.mulf %s, %half : f32
    %a = arith.addf %sc, %mk : f32
    linalg.yield %a : f32
  } -> tensor<3x3xf32>
  return %m : tensor<3x3xf32>
}

// -----

// torch-mlir's aten.mul.Scalar: the f64 scalar truncated to f32 in the body.
// The scale is the truncated value (1/sqrt(3) rounds to 0.577350259 in
// f32); the multiply goes, the dead truncation with it.
// CHECK-LABEL: func.func @f64_scalar
// CHECK: %[[WQ:.*]] = arith.constant dense<{{\[}}[1.15470052, 2.30940104], [3.46410155, 4.61880207]]> : tensor<2x2xf32>
// CHECK: linalg.matmul ins(%{{.*}}, %[[WQ]] :
// CHECK: linalg.generic
// CHECK-NEXT: ^bb0(%[[S:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT: linalg.yield %[[S]]
// REMARK: Remark="folded the gain into 2 projection weight(s) (with the attention scale of 1 query projection(s))"
#id = affine_map<(i, j) -> (i, j)>
func.func @f64_scalar(%x: tensor<3x2xf32>) -> tensor<3x3xf32> {
  %g = arith.constant dense<[2.0, 2.0]> : tensor<2xf32>
  %n = flashnorm.rms_norm %x gain(%g : tensor<2xf32>) eps(1.0e-05) : tensor<3x2xf32>
  %wq = arith.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %wk = arith.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %c0 = arith.constant 0.0 : f32
  %scale = arith.constant 0.57735026918962584 : f64
  %e = tensor.empty() : tensor<3x2xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<3x2xf32>) -> tensor<3x2xf32>
  %q = linalg.matmul ins(%n, %wq : tensor<3x2xf32>, tensor<2x2xf32>) outs(%z : tensor<3x2xf32>) -> tensor<3x2xf32>
  %k = linalg.matmul ins(%n, %wk : tensor<3x2xf32>, tensor<2x2xf32>) outs(%z : tensor<3x2xf32>) -> tensor<3x2xf32>
  %et = tensor.empty() : tensor<2x3xf32>
  %kt = linalg.transpose ins(%k : tensor<3x2xf32>) outs(%et : tensor<2x3xf32>) permutation = [1, 0]
  %e3 = tensor.empty() : tensor<3x3xf32>
  %z3 = linalg.fill ins(%c0 : f32) outs(%e3 : tensor<3x3xf32>) -> tensor<3x3xf32>
  %l = linalg.matmul ins(%q, %kt : tensor<3x2xf32>, tensor<2x3xf32>) outs(%z3 : tensor<3x3xf32>) -> tensor<3x3xf32>
  %m = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%l : tensor<3x3xf32>) outs(%e3 : tensor<3x3xf32>) {
  ^bb0(%s: f32, %o: f32):
    %t = arith.truncf %scale : f64 to f32
    %sc = arith.mulf %s, %t : f32
    linalg.yield %sc : f32
  } -> tensor<3x3xf32>
  return %m : tensor<3x3xf32>
}

// -----

// Truncated upward (an explicit rounding mode): not read as a scale, which
// stays; the gain alone folds.
// CHECK-LABEL: func.func @f64_scalar_upward
// CHECK: arith.truncf %{{.*}} upward : f64 to f32
// REMARK: Function=f64_scalar_upward | Remark="folded the gain into 2 projection weight(s)"
#id = affine_map<(i, j) -> (i, j)>
func.func @f64_scalar_upward(%x: tensor<3x2xf32>) -> tensor<3x3xf32> {
  %g = arith.constant dense<[2.0, 2.0]> : tensor<2xf32>
  %n = flashnorm.rms_norm %x gain(%g : tensor<2xf32>) eps(1.0e-05) : tensor<3x2xf32>
  %wq = arith.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %wk = arith.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %c0 = arith.constant 0.0 : f32
  %scale = arith.constant 0.57735026918962584 : f64
  %e = tensor.empty() : tensor<3x2xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<3x2xf32>) -> tensor<3x2xf32>
  %q = linalg.matmul ins(%n, %wq : tensor<3x2xf32>, tensor<2x2xf32>) outs(%z : tensor<3x2xf32>) -> tensor<3x2xf32>
  %k = linalg.matmul ins(%n, %wk : tensor<3x2xf32>, tensor<2x2xf32>) outs(%z : tensor<3x2xf32>) -> tensor<3x2xf32>
  %et = tensor.empty() : tensor<2x3xf32>
  %kt = linalg.transpose ins(%k : tensor<3x2xf32>) outs(%et : tensor<2x3xf32>) permutation = [1, 0]
  %e3 = tensor.empty() : tensor<3x3xf32>
  %z3 = linalg.fill ins(%c0 : f32) outs(%e3 : tensor<3x3xf32>) -> tensor<3x3xf32>
  %l = linalg.matmul ins(%q, %kt : tensor<3x2xf32>, tensor<2x3xf32>) outs(%z3 : tensor<3x3xf32>) -> tensor<3x3xf32>
  %m = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%l : tensor<3x3xf32>) outs(%e3 : tensor<3x3xf32>) {
  ^bb0(%s: f32, %o: f32):
    %t = arith.truncf %scale upward : f64 to f32
    %sc = arith.mulf %s, %t : f32
    linalg.yield %sc : f32
  } -> tensor<3x3xf32>
  return %m : tensor<3x3xf32>
}

// -----

// TOSA: q scaled by a splat before the logits (tosa.mul): bypassed, the
// weight takes it. A query that is also returned keeps its scale.
// CHECK-LABEL: func.func @tosa_q
// CHECK: "tosa.const"() <{values = dense<{{\[}}{{\[}}[2.500000e-01], [5.000000e-01]]]> : tensor<1x2x1xf32>}>
// CHECK-NOT: tosa.mul
// CHECK: tosa.matmul
// CHECK: return
// CHECK-LABEL: func.func @shared
// CHECK: tosa.mul
func.func @tosa_q(%x: tensor<1x3x2xf32>, %k: tensor<1x1x3xf32>) -> tensor<1x3x3xf32> {
  %g = "tosa.const"() <{values = dense<[1.0, 2.0]> : tensor<2xf32>}> : () -> tensor<2xf32>
  %n = flashnorm.rms_norm %x gain(%g : tensor<2xf32>) eps(1.0e-05) : tensor<1x3x2xf32>
  %w = "tosa.const"() <{values = dense<[[[1.0], [1.0]]]> : tensor<1x2x1xf32>}> : () -> tensor<1x2x1xf32>
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %q = tosa.matmul %n, %w, %zp, %zp : (tensor<1x3x2xf32>, tensor<1x2x1xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x3x1xf32>
  %c = "tosa.const"() <{values = dense<0.25> : tensor<1x1x1xf32>}> : () -> tensor<1x1x1xf32>
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %qs = tosa.mul %q, %c, %shift : (tensor<1x3x1xf32>, tensor<1x1x1xf32>, tensor<1xi8>) -> tensor<1x3x1xf32>
  %l = tosa.matmul %qs, %k, %zp, %zp : (tensor<1x3x1xf32>, tensor<1x1x3xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x3x3xf32>
  return %l : tensor<1x3x3xf32>
}
func.func @shared(%x: tensor<1x3x2xf32>, %k: tensor<1x1x3xf32>) -> (tensor<1x3x3xf32>, tensor<1x3x1xf32>) {
  %g = "tosa.const"() <{values = dense<[1.0, 2.0]> : tensor<2xf32>}> : () -> tensor<2xf32>
  %n = flashnorm.rms_norm %x gain(%g : tensor<2xf32>) eps(1.0e-05) : tensor<1x3x2xf32>
  %w = "tosa.const"() <{values = dense<[[[1.0], [1.0]]]> : tensor<1x2x1xf32>}> : () -> tensor<1x2x1xf32>
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %q = tosa.matmul %n, %w, %zp, %zp : (tensor<1x3x2xf32>, tensor<1x2x1xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x3x1xf32>
  %c = "tosa.const"() <{values = dense<0.25> : tensor<1x1x1xf32>}> : () -> tensor<1x1x1xf32>
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %qs = tosa.mul %q, %c, %shift : (tensor<1x3x1xf32>, tensor<1x1x1xf32>, tensor<1xi8>) -> tensor<1x3x1xf32>
  %l = tosa.matmul %qs, %k, %zp, %zp : (tensor<1x3x1xf32>, tensor<1x1x3xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x3x3xf32>
  return %l, %q : tensor<1x3x3xf32>, tensor<1x3x1xf32>
}
