// RUN: flashnorm-opt %s --flashnorm-fold-gains --split-input-file | FileCheck %s
// RUN: flashnorm-opt %s --flashnorm-fold-gains --split-input-file \
// RUN:   --remarks-filter=flashnorm --remark-format=emitRemark 2>&1 >/dev/null \
// RUN:   | FileCheck %s --check-prefix=REMARK
// Argument weights are worth a warning without flags: it names the option.
// RUN: flashnorm-opt %s --flashnorm-fold-gains --split-input-file 2>&1 >/dev/null | FileCheck %s --check-prefix=WARN

// linalg.matmul with a K x N weight: row k of W is scaled by g[k].
// CHECK-LABEL: func.func @matmul_kn
// CHECK-DAG: %[[W:.*]] = arith.constant dense<{{\[}}[2.000000e+00, 4.000000e+00, 6.000000e+00], [-1.000000e+00, -1.500000e+00, -2.000000e+00]]> : tensor<2x3xf32>
// CHECK: %[[N:.*]] = flashnorm.rms_norm %{{.*}} eps(1.000000e-05) : tensor<4x2xf32>
// CHECK: linalg.matmul ins(%[[N]], %[[W]] : tensor<4x2xf32>, tensor<2x3xf32>)
// REMARK: remark: [Passed] flashnorm-fold-gains | Category:flashnorm | Function=matmul_kn | Remark="folded the gain into 1 projection weight(s)"
// REMARK: remark: [Analysis] flashnorm-fold-gains | Category:flashnorm | Function=matmul_kn | Remark="1 rewritten (0 approximate), 0 refused"
func.func @matmul_kn(%x: tensor<4x2xf32>) -> tensor<4x3xf32> {
  %g = arith.constant dense<[2.0, 0.5]> : tensor<2xf32>
  %w = arith.constant dense<[[1.0, 2.0, 3.0], [-2.0, -3.0, -4.0]]> : tensor<2x3xf32>
  %n = flashnorm.rms_norm %x gain(%g : tensor<2xf32>) eps(1.0e-05) : tensor<4x2xf32>
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x3xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<4x3xf32>) -> tensor<4x3xf32>
  %y = linalg.matmul ins(%n, %w : tensor<4x2xf32>, tensor<2x3xf32>) outs(%z : tensor<4x3xf32>) -> tensor<4x3xf32>
  return %y : tensor<4x3xf32>
}

// -----

// PyTorch layout (N x K) through transposed-B indexing maps; one_plus gain
// (1 + g formed in f64); a splat weight becomes a non-splat one.
// CHECK-LABEL: func.func @matmul_nk_maps_one_plus
// CHECK: %[[W:.*]] = arith.constant dense<{{\[}}[2.000000e+00, 5.000000e-01], [2.000000e+00, 5.000000e-01], [2.000000e+00, 5.000000e-01]]> : tensor<3x2xf32>
// CHECK: %[[N:.*]] = flashnorm.rms_norm %{{.*}} eps(1.000000e-05) : tensor<4x2xf32>
// CHECK: linalg.matmul indexing_maps = [{{.*}}] ins(%[[N]], %[[W]] :
func.func @matmul_nk_maps_one_plus(%x: tensor<4x2xf32>) -> tensor<4x3xf32> {
  %g = arith.constant dense<[1.0, -0.5]> : tensor<2xf32>
  %w = arith.constant dense<1.0> : tensor<3x2xf32>
  %n = flashnorm.rms_norm %x gain(%g : tensor<2xf32>) eps(1.0e-05) convention one_plus : tensor<4x2xf32>
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x3xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<4x3xf32>) -> tensor<4x3xf32>
  %y = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
      ins(%n, %w : tensor<4x2xf32>, tensor<3x2xf32>) outs(%z : tensor<4x3xf32>) -> tensor<4x3xf32>
  return %y : tensor<4x3xf32>
}

// -----

// A weight transposed by linalg.transpose (N x K constant) and one by
// tosa.transpose of a tosa.const: the folded constant keeps its kind.
// CHECK-LABEL: func.func @through_transposes
func.func @through_transposes(%x: tensor<4x2xf32>) -> (tensor<4x3xf32>, tensor<1x4x3xf32>) {
  %g = arith.constant dense<[2.0, 3.0]> : tensor<2xf32>
  %n = flashnorm.rms_norm %x gain(%g : tensor<2xf32>) eps(1.0e-05) : tensor<4x2xf32>
  // CHECK-DAG: %[[WT:.*]] = arith.constant dense<{{\[}}[2.000000e+00, 3.000000e+00], [4.000000e+00, 6.000000e+00], [6.000000e+00, 9.000000e+00]]> : tensor<3x2xf32>
  %w = arith.constant dense<[[1.0, 1.0], [2.0, 2.0], [3.0, 3.0]]> : tensor<3x2xf32>
  %e0 = tensor.empty() : tensor<2x3xf32>
  // CHECK: linalg.transpose ins(%[[WT]] : tensor<3x2xf32>)
  %wt = linalg.transpose ins(%w : tensor<3x2xf32>) outs(%e0 : tensor<2x3xf32>) permutation = [1, 0]
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x3xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<4x3xf32>) -> tensor<4x3xf32>
  %y = linalg.matmul ins(%n, %wt : tensor<4x2xf32>, tensor<2x3xf32>) outs(%z : tensor<4x3xf32>) -> tensor<4x3xf32>
  %t = "tosa.const"() <{values = dense<[[[1.0, 3.0, 5.0], [2.0, 4.0, 6.0]]]> : tensor<1x2x3xf32>}> : () -> tensor<1x2x3xf32>
  %tt = "tosa.const"() <{values = dense<[[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]]> : tensor<1x3x2xf32>}> : () -> tensor<1x3x2xf32>
  // CHECK: %[[TT:.*]] = "tosa.const"() <{values = dense<{{\[}}[{{\[}}2.000000e+00, 6.000000e+00], [6.000000e+00, 1.200000e+01], [1.000000e+01, 1.800000e+01]]]> : tensor<1x3x2xf32>}>
  // CHECK: tosa.transpose %[[TT]]
  // CHECK: %[[E:.*]] = tensor.expand_shape
  // CHECK: tosa.matmul %[[E]]
  %tw = tosa.transpose %tt {perms = array<i32: 0, 2, 1>} : (tensor<1x3x2xf32>) -> tensor<1x2x3xf32>
  %n3 = tensor.expand_shape %n [[0, 1], [2]] output_shape [1, 4, 2] : tensor<4x2xf32> into tensor<1x4x2xf32>
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %m = tosa.matmul %n3, %tw, %zp, %zp : (tensor<1x4x2xf32>, tensor<1x2x3xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x4x3xf32>
  return %y, %m : tensor<4x3xf32>, tensor<1x4x3xf32>
}

// -----

// batch_matmul whose weight is broadcast over the batch, a contraction
// linalg.generic, and dynamic row counts.
// CHECK-LABEL: func.func @batch_and_generic
// CHECK: %[[B:.*]] = arith.constant dense<{{\[}}[2.000000e+00], [3.000000e+00]]> : tensor<2x1xf32>
// CHECK: linalg.broadcast ins(%[[B]]
// CHECK: %[[G:.*]] = arith.constant dense<{{\[}}[4.000000e+00, 2.000000e+00], [6.000000e+00, 3.000000e+00]]> : tensor<2x2xf32>
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %[[G]] :
func.func @batch_and_generic(%x: tensor<3x?x2xf32>) -> (tensor<3x?x1xf32>, tensor<3x?x2xf32>) {
  %g = arith.constant dense<[2.0, 3.0]> : tensor<2xf32>
  %n = flashnorm.rms_norm %x gain(%g : tensor<2xf32>) eps(1.0e-05) : tensor<3x?x2xf32>
  %c1 = arith.constant 1 : index
  %m = tensor.dim %x, %c1 : tensor<3x?x2xf32>
  %w = arith.constant dense<[[1.0], [1.0]]> : tensor<2x1xf32>
  %e0 = tensor.empty() : tensor<3x2x1xf32>
  %wb = linalg.broadcast ins(%w : tensor<2x1xf32>) outs(%e0 : tensor<3x2x1xf32>) dimensions = [0]
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty(%m) : tensor<3x?x1xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<3x?x1xf32>) -> tensor<3x?x1xf32>
  %y = linalg.batch_matmul ins(%n, %wb : tensor<3x?x2xf32>, tensor<3x2x1xf32>) outs(%z : tensor<3x?x1xf32>) -> tensor<3x?x1xf32>
  %v = arith.constant dense<[[2.0, 1.0], [2.0, 1.0]]> : tensor<2x2xf32>
  %e2 = tensor.empty(%m) : tensor<3x?x2xf32>
  %z2 = linalg.fill ins(%c0 : f32) outs(%e2 : tensor<3x?x2xf32>) -> tensor<3x?x2xf32>
  %o = linalg.generic {
      indexing_maps = [affine_map<(b, m, n, k) -> (b, m, k)>, affine_map<(b, m, n, k) -> (k, n)>, affine_map<(b, m, n, k) -> (b, m, n)>],
      iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%n, %v : tensor<3x?x2xf32>, tensor<2x2xf32>) outs(%z2 : tensor<3x?x2xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %c, %p : f32
    linalg.yield %s : f32
  } -> tensor<3x?x2xf32>
  return %y, %o : tensor<3x?x1xf32>, tensor<3x?x2xf32>
}

// -----

// f16 and bf16 weights: the product is formed in f64 and rounded once, ties
// to even. 3 * (1 + 2^-11) rounds up to 3 + 2^-9 in f16; 1 + 1.5 * 2^-7 is a
// bf16 tie and goes to the even 1 + 2^-6.
// CHECK-LABEL: func.func @narrow_weights
// CHECK-DAG: arith.constant dense<{{\[}}[3.001950e+00, 1.000000e+00]]> : tensor<1x2xf16>
// CHECK-DAG: arith.constant dense<{{\[}}[1.015630e+00, 2.031250e+00]]> : tensor<1x2xbf16>
func.func @narrow_weights(%x: tensor<4x1xf16>) -> (tensor<4x2xf16>, tensor<4x2xf32>) {
  %g = arith.constant dense<1.00048828125> : tensor<1xf32>
  %n = flashnorm.rms_norm %x gain(%g : tensor<1xf32>) eps(1.0e-05) : tensor<4x1xf16>
  %w = arith.constant dense<[[3.0, 0.99951171875]]> : tensor<1x2xf16>
  %c0 = arith.constant 0.0 : f16
  %e = tensor.empty() : tensor<4x2xf16>
  %z = linalg.fill ins(%c0 : f16) outs(%e : tensor<4x2xf16>) -> tensor<4x2xf16>
  %y = linalg.matmul ins(%n, %w : tensor<4x1xf16>, tensor<1x2xf16>) outs(%z : tensor<4x2xf16>) -> tensor<4x2xf16>
  %gb = arith.constant dense<1.01171875> : tensor<1xf32>
  %nb = flashnorm.rms_norm %x gain(%gb : tensor<1xf32>) eps(1.0e-05) : tensor<4x1xf16>
  %wb = arith.constant dense<[[1.0, 2.0]]> : tensor<1x2xbf16>
  %cf = arith.constant 0.0 : f32
  %ef = tensor.empty() : tensor<4x2xf32>
  %zf = linalg.fill ins(%cf : f32) outs(%ef : tensor<4x2xf32>) -> tensor<4x2xf32>
  %yb = linalg.matmul ins(%nb, %wb : tensor<4x1xf16>, tensor<1x2xbf16>) outs(%zf : tensor<4x2xf32>) -> tensor<4x2xf32>
  return %y, %yb : tensor<4x2xf16>, tensor<4x2xf32>
}

// -----

// A dense_resource weight stays a dense_resource (a new blob); the original
// blob is untouched.
// CHECK-LABEL: func.func @resource_weight
// CHECK: arith.constant dense_resource<w_kn_folded> : tensor<2x2xf32>
// CHECK: w_kn_folded: "0x08000000000000400000804000004040000080C0"
func.func @resource_weight(%x: tensor<4x2xf32>) -> tensor<4x2xf32> {
  %g = arith.constant dense<[2.0, 1.0]> : tensor<2xf32>
  %n = flashnorm.rms_norm %x gain(%g : tensor<2xf32>) eps(1.0e-05) : tensor<4x2xf32>
  %w = arith.constant dense_resource<w_kn> : tensor<2x2xf32>
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x2xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<4x2xf32>) -> tensor<4x2xf32>
  %y = linalg.matmul ins(%n, %w : tensor<4x2xf32>, tensor<2x2xf32>) outs(%z : tensor<4x2xf32>) -> tensor<4x2xf32>
  %keep = arith.constant dense_resource<w_kn> : tensor<2x2xf32>
  return %y : tensor<4x2xf32>
}
{-#
  dialect_resources: {
    builtin: {
      w_kn: "0x040000000000803F0000004000004040000080C0"
    }
  }
#-}

// -----

// Q, K and V share one norm: all three weights are folded; the bias add
// after Q stays; K's weight is also returned (a tied weight) and is cloned.
// CHECK-LABEL: func.func @qkv_shared_norm
// CHECK-DAG: %[[K:.*]] = arith.constant dense<1.000000e+00> : tensor<2x2xf32>
// CHECK-DAG: %[[KF:.*]] = arith.constant dense<{{\[}}[2.000000e+00, 2.000000e+00], [4.000000e+00, 4.000000e+00]]> : tensor<2x2xf32>
// CHECK-DAG: %[[N:.*]] = flashnorm.rms_norm %{{.*}} eps(1.000000e-05) : tensor<4x2xf32>
// CHECK: %[[Q:.*]] = linalg.matmul ins(%[[N]], %{{.*}} :
// CHECK: arith.addf %[[Q]], %{{.*}} : tensor<4x2xf32>
// CHECK: linalg.matmul ins(%[[N]], %[[KF]] :
// CHECK: linalg.matmul ins(%[[N]], %{{.*}} :
// CHECK: return {{.*}}, %[[K]] :
// REMARK: Function=qkv_shared_norm | Remark="folded the gain into 3 projection weight(s)"
func.func @qkv_shared_norm(%x: tensor<4x2xf32>, %bias: tensor<4x2xf32>)
    -> (tensor<4x2xf32>, tensor<4x2xf32>, tensor<4x2xf32>, tensor<2x2xf32>) {
  %g = arith.constant dense<[2.0, 4.0]> : tensor<2xf32>
  %n = flashnorm.rms_norm %x gain(%g : tensor<2xf32>) eps(1.0e-05) : tensor<4x2xf32>
  %wq = arith.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %wk = arith.constant dense<1.0> : tensor<2x2xf32>
  %wv = arith.constant dense<[[0.5, 0.5], [0.5, 0.5]]> : tensor<2x2xf32>
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x2xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<4x2xf32>) -> tensor<4x2xf32>
  %q = linalg.matmul ins(%n, %wq : tensor<4x2xf32>, tensor<2x2xf32>) outs(%z : tensor<4x2xf32>) -> tensor<4x2xf32>
  %qb = arith.addf %q, %bias : tensor<4x2xf32>
  %k = linalg.matmul ins(%n, %wk : tensor<4x2xf32>, tensor<2x2xf32>) outs(%z : tensor<4x2xf32>) -> tensor<4x2xf32>
  %v = linalg.matmul ins(%n, %wv : tensor<4x2xf32>, tensor<2x2xf32>) outs(%z : tensor<4x2xf32>) -> tensor<4x2xf32>
  return %qb, %k, %v, %wk : tensor<4x2xf32>, tensor<4x2xf32>, tensor<4x2xf32>, tensor<2x2xf32>
}

// -----

// clone-shared-weights=false refuses instead of duplicating a tied weight.
// RUN: flashnorm-opt %s --flashnorm-fold-gains=clone-shared-weights=false \
// RUN:   --split-input-file --remarks-filter=flashnorm \
// RUN:   --remark-format=emitRemark 2>&1 >/dev/null | FileCheck %s --check-prefix=NOCLONE
// NOCLONE: Function=tied | Remark="not folded: the weight of 'linalg.matmul' has other users and clone-shared-weights=false"
// CHECK-LABEL: func.func @tied
// CHECK: arith.constant dense<{{\[}}[2.000000e+00, 2.000000e+00], [3.000000e+00, 3.000000e+00]]>
func.func @tied(%x: tensor<4x2xf32>) -> (tensor<4x2xf32>, tensor<2x2xf32>) {
  %g = arith.constant dense<[2.0, 3.0]> : tensor<2xf32>
  %n = flashnorm.rms_norm %x gain(%g : tensor<2xf32>) eps(1.0e-05) : tensor<4x2xf32>
  %w = arith.constant dense<1.0> : tensor<2x2xf32>
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x2xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<4x2xf32>) -> tensor<4x2xf32>
  %y = linalg.matmul ins(%n, %w : tensor<4x2xf32>, tensor<2x2xf32>) outs(%z : tensor<4x2xf32>) -> tensor<4x2xf32>
  return %y, %w : tensor<4x2xf32>, tensor<2x2xf32>
}

// -----

// Refusals: nothing is folded and the remark names the user and the reason.
// CHECK-LABEL: func.func @weight_is_argument
// CHECK: flashnorm.rms_norm %{{.*}} gain(
// REMARK: Function=weight_is_argument | Remark="not folded: user 'linalg.matmul' at {{.*}}: its weight is not a constant (block argument #1) (prepare-function=true folds it through a prepare function)"
// WARN: warning: flashnorm-fold-gains: 1 norm(s) of @weight_is_argument not folded because their gains or projection weights are function arguments; --flashnorm=prepare-function=true folds them through a @weight_is_argument_flashnorm_prepare function
func.func @weight_is_argument(%x: tensor<4x2xf32>, %w: tensor<2x3xf32>) -> tensor<4x3xf32> {
  %g = arith.constant dense<[2.0, 0.5]> : tensor<2xf32>
  %n = flashnorm.rms_norm %x gain(%g : tensor<2xf32>) eps(1.0e-05) : tensor<4x2xf32>
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x3xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<4x3xf32>) -> tensor<4x3xf32>
  %y = linalg.matmul ins(%n, %w : tensor<4x2xf32>, tensor<2x3xf32>) outs(%z : tensor<4x3xf32>) -> tensor<4x3xf32>
  return %y : tensor<4x3xf32>
}

// -----

// One foldable projection and one non-projection user (a residual add):
// the projection's weight takes the gain and reads a weightless copy of the
// norm, the add keeps the gained norm (more in fold-gains-partial.mlir).
// CHECK-LABEL: func.func @non_projection_user
// CHECK-SAME: (%[[X:.*]]: tensor<4x2xf32>)
// CHECK-DAG: %[[BARE:.*]] = flashnorm.rms_norm %[[X]] eps(1.000000e-05) : tensor<4x2xf32>
// CHECK-DAG: %[[GAINED:.*]] = flashnorm.rms_norm %[[X]] gain(
// CHECK-DAG: %[[W:.*]] = arith.constant dense<{{\[}}[2.000000e+00, 4.000000e+00, 6.000000e+00], [-1.000000e+00, -1.500000e+00, -2.000000e+00]]>
// CHECK: linalg.matmul ins(%[[BARE]], %[[W]] :
// CHECK: arith.addf %[[GAINED]], %[[X]]
// REMARK: Function=non_projection_user | Remark="folded the gain into 1 projection weight(s); kept the gained norm for the others; user 'arith.addf' at {{.*}}: it is not a projection (matmul-like op)"
func.func @non_projection_user(%x: tensor<4x2xf32>) -> (tensor<4x3xf32>, tensor<4x2xf32>) {
  %g = arith.constant dense<[2.0, 0.5]> : tensor<2xf32>
  %n = flashnorm.rms_norm %x gain(%g : tensor<2xf32>) eps(1.0e-05) : tensor<4x2xf32>
  %w = arith.constant dense<[[1.0, 2.0, 3.0], [-2.0, -3.0, -4.0]]> : tensor<2x3xf32>
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x3xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<4x3xf32>) -> tensor<4x3xf32>
  %y = linalg.matmul ins(%n, %w : tensor<4x2xf32>, tensor<2x3xf32>) outs(%z : tensor<4x3xf32>) -> tensor<4x3xf32>
  %r = arith.addf %n, %x : tensor<4x2xf32>
  return %y, %r : tensor<4x3xf32>, tensor<4x2xf32>
}

// -----

// The users torch-mlir writes beside projections, named as what they are: a
// residual add (an element-wise generic) and a QK-norm's head transpose.
// REMARK: Function=residual_generic | Remark="not folded: user 'linalg.generic' at {{.*}}: it reduces no dimension (element-wise, or an outer product): not a contraction"
// REMARK: Function=head_transpose | Remark="not folded: user 'linalg.transpose' at {{.*}}: it moves values (a transpose, broadcast or copy) rather than contracting them"
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @residual_generic(%x: tensor<4x2xf32>) -> tensor<4x2xf32> {
  %g = arith.constant dense<[2.0, 0.5]> : tensor<2xf32>
  %n = flashnorm.rms_norm %x gain(%g : tensor<2xf32>) eps(1.0e-05) : tensor<4x2xf32>
  %e = tensor.empty() : tensor<4x2xf32>
  %r = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%n, %x : tensor<4x2xf32>, tensor<4x2xf32>) outs(%e : tensor<4x2xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<4x2xf32>
  return %r : tensor<4x2xf32>
}

func.func @head_transpose(%x: tensor<4x2xf32>) -> tensor<2x4xf32> {
  %g = arith.constant dense<[2.0, 0.5]> : tensor<2xf32>
  %n = flashnorm.rms_norm %x gain(%g : tensor<2xf32>) eps(1.0e-05) : tensor<4x2xf32>
  %e = tensor.empty() : tensor<2x4xf32>
  %t = linalg.transpose ins(%n : tensor<4x2xf32>) outs(%e : tensor<2x4xf32>) permutation = [1, 0]
  return %t : tensor<2x4xf32>
}

// -----

// CHECK-LABEL: func.func @gain_is_argument
// CHECK: flashnorm.rms_norm %{{.*}} gain(
// REMARK: Function=gain_is_argument | Remark="not folded: gain is not foldable: it is not a constant tensor (prepare-function=true folds it through a prepare function)"
func.func @gain_is_argument(%x: tensor<4x2xf32>, %g: tensor<2xf32>) -> tensor<4x3xf32> {
  %n = flashnorm.rms_norm %x gain(%g : tensor<2xf32>) eps(1.0e-05) : tensor<4x2xf32>
  %w = arith.constant dense<1.0> : tensor<2x3xf32>
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x3xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<4x3xf32>) -> tensor<4x3xf32>
  %y = linalg.matmul ins(%n, %w : tensor<4x2xf32>, tensor<2x3xf32>) outs(%z : tensor<4x3xf32>) -> tensor<4x3xf32>
  return %y : tensor<4x3xf32>
}

// -----

// The norm is the matmul's right-hand side: it is not contracted over its
// normalized dimension, so it is not a projection of it.
// CHECK-LABEL: func.func @norm_as_rhs
// CHECK: flashnorm.rms_norm %{{.*}} gain(
// REMARK: Function=norm_as_rhs | Remark="not folded: user 'linalg.matmul' at {{.*}}: it does not contract the normalized (last) dimension"
func.func @norm_as_rhs(%x: tensor<2x4xf32>) -> tensor<3x4xf32> {
  %g = arith.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %n = flashnorm.rms_norm %x gain(%g : tensor<4xf32>) eps(1.0e-05) : tensor<2x4xf32>
  %a = arith.constant dense<1.0> : tensor<3x2xf32>
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<3x4xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<3x4xf32>) -> tensor<3x4xf32>
  %y = linalg.matmul ins(%a, %n : tensor<3x2xf32>, tensor<2x4xf32>) outs(%z : tensor<3x4xf32>) -> tensor<3x4xf32>
  return %y : tensor<3x4xf32>
}

// -----

// A TOSA gain constant of shape [1, 1, K] (raised as a collapse_shape of the
// constant) is read through the reshape and folded.
// RUN: flashnorm-opt %s --split-input-file --flashnorm | FileCheck %s --check-prefix=PIPE
// PIPE-LABEL: func.func @tosa_rms
// Row k of the weight is 0.5 * g[k]: 0.5 (0x3F000000), 1.0 (0x3F800000), ...
// PIPE-DAG: flashnorm.rms_inv
// PIPE-DAG: %[[W:.*]] = "tosa.const"() <{values = dense<"0x0000003F{{.*}}0000803F{{.*}}"> : tensor<1x8x16xf32>}>
// PIPE: tosa.matmul %{{.*}}, %[[W]]
// PIPE: flashnorm.post_scale
func.func @tosa_rms(%x: tensor<1x4x8xf32>) -> tensor<1x4x16xf32> {
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %two = "tosa.const"() <{values = dense<2.0> : tensor<1x1x1xf32>}> : () -> tensor<1x1x1xf32>
  %sq = tosa.pow %x, %two : (tensor<1x4x8xf32>, tensor<1x1x1xf32>) -> tensor<1x4x8xf32>
  %sum = tosa.reduce_sum %sq {axis = 2 : i32} : (tensor<1x4x8xf32>) -> tensor<1x4x1xf32>
  %invk = "tosa.const"() <{values = dense<0.125> : tensor<1x1x1xf32>}> : () -> tensor<1x1x1xf32>
  %mean = tosa.mul %sum, %invk, %shift : (tensor<1x4x1xf32>, tensor<1x1x1xf32>, tensor<1xi8>) -> tensor<1x4x1xf32>
  %eps = "tosa.const"() <{values = dense<1.0e-05> : tensor<1x1x1xf32>}> : () -> tensor<1x1x1xf32>
  %v = tosa.add %mean, %eps : (tensor<1x4x1xf32>, tensor<1x1x1xf32>) -> tensor<1x4x1xf32>
  %r = tosa.rsqrt %v : (tensor<1x4x1xf32>) -> tensor<1x4x1xf32>
  %n = tosa.mul %x, %r, %shift : (tensor<1x4x8xf32>, tensor<1x4x1xf32>, tensor<1xi8>) -> tensor<1x4x8xf32>
  %g3 = "tosa.const"() <{values = dense<[[[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]]]> : tensor<1x1x8xf32>}> : () -> tensor<1x1x8xf32>
  %y = tosa.mul %n, %g3, %shift : (tensor<1x4x8xf32>, tensor<1x1x8xf32>, tensor<1xi8>) -> tensor<1x4x8xf32>
  %w = "tosa.const"() <{values = dense<0.5> : tensor<1x8x16xf32>}> : () -> tensor<1x8x16xf32>
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %o = tosa.matmul %y, %w, %zp, %zp : (tensor<1x4x8xf32>, tensor<1x8x16xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x4x16xf32>
  return %o : tensor<1x4x16xf32>
}

// -----

// A weight in a nested module's global, loaded as @weights::@w: the folded
// global goes beside it, visible from above, loaded through the same path.
// CHECK: module @weights
// CHECK-NEXT: ml_program.global nested @w.flashnorm(dense<{{\[}}[2.000000e+00, 4.000000e+00, 6.000000e+00], [-1.000000e+00, 2.500000e-01, 2.000000e+00]]>
// CHECK-LABEL: func.func @nested_global
// CHECK: %[[W:.*]] = ml_program.global_load_const @weights::@w.flashnorm
// CHECK: linalg.matmul ins(%{{.*}}, %[[W]] :
module @weights {
  ml_program.global public @w(dense<[[1.0, 2.0, 3.0], [-2.0, 0.5, 4.0]]> : tensor<2x3xf32>) : tensor<2x3xf32>
}
func.func @nested_global(%x: tensor<4x2xf32>) -> tensor<4x3xf32> {
  %g = arith.constant dense<[2.0, 0.5]> : tensor<2xf32>
  %w = ml_program.global_load_const @weights::@w : tensor<2x3xf32>
  %n = flashnorm.rms_norm %x gain(%g : tensor<2xf32>) eps(1.0e-05) : tensor<4x2xf32>
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x3xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<4x3xf32>) -> tensor<4x3xf32>
  %y = linalg.matmul ins(%n, %w : tensor<4x2xf32>, tensor<2x3xf32>) outs(%z : tensor<4x3xf32>) -> tensor<4x3xf32>
  return %y : tensor<4x3xf32>
}
