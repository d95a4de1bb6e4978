// A norm whose result also feeds users that are not projections of it (the
// residual add of a post-norm block, as in BERT: x1 = LN(x + attn(x)) is
// both the next sublayer's input and its residual) is folded for its
// projections, which read a weightless copy of it; the others keep the
// gained norm. With partial=false such a norm is not folded.
// RUN: flashnorm-opt %s --flashnorm-fold-gains --split-input-file | FileCheck %s
// RUN: flashnorm-opt %s --flashnorm-fold-gains --split-input-file \
// RUN:   --remarks-filter=flashnorm --remark-format=emitRemark 2>&1 >/dev/null \
// RUN:   | FileCheck %s --check-prefix=REMARK
// RUN: flashnorm-opt %s --flashnorm-fold-gains=partial=false --split-input-file \
// RUN:   --remarks-filter=flashnorm --remark-format=emitRemark 2>&1 >/dev/null \
// RUN:   | FileCheck %s --check-prefix=NOPARTIAL
// Through the pipeline, the weightless copy's projection is deferred:
// RUN: flashnorm-opt %s --flashnorm --split-input-file | FileCheck %s --check-prefix=PIPELINE

// A LayerNorm with gain and bias: the gain and centering go into the
// weight, the bias into a bias after the projection; the residual add
// reads the gained norm, unchanged.
// CHECK-LABEL: func.func @post_norm_residual
// CHECK-SAME: (%[[X:.*]]: tensor<4x2xf32>)
// CHECK-DAG: %[[G:.*]] = arith.constant dense<[2.000000e+00, 5.000000e-01]>
// CHECK-DAG: %[[B:.*]] = arith.constant dense<[1.000000e+00, -1.000000e+00]>
// CHECK-DAG: %[[W:.*]] = arith.constant dense<{{\[}}[1.500000e+00, 2.750000e+00, 4.000000e+00], [-1.500000e+00, -2.750000e+00, -4.000000e+00]]>
// CHECK-DAG: %[[GAINED:.*]] = flashnorm.layer_norm %[[X]] gain(%[[G]] : tensor<2xf32>) bias(%[[B]] : tensor<2xf32>)
// CHECK-DAG: %[[BARE:.*]] = flashnorm.layer_norm %[[X]] eps(1.000000e-05) : tensor<4x2xf32>
// CHECK: %[[P:.*]] = linalg.matmul {flashnorm.centered_weights} ins(%[[BARE]], %[[W]] : tensor<4x2xf32>, tensor<2x3xf32>)
// CHECK: %[[BIAS:.*]] = arith.constant dense<[3.000000e+00, 5.000000e+00, 7.000000e+00]> : tensor<3xf32>
// CHECK: linalg.generic {{.*}} ins(%[[P]], %[[BIAS]] : tensor<4x3xf32>, tensor<3xf32>)
// CHECK: arith.addf %[[GAINED]], %[[X]] : tensor<4x2xf32>
// REMARK: Function=post_norm_residual | Remark="folded the gain and bias (and the mean-centering) into 1 projection weight(s); kept the gained norm for the others; user 'arith.addf' at {{.*}}: it is not a projection (matmul-like op)"
// REMARK: Function=post_norm_residual | Remark="1 rewritten (0 approximate), 0 refused"
// NOPARTIAL: Function=post_norm_residual | Remark="not folded: user 'arith.addf' at {{.*}}: it is not a projection (matmul-like op)"
// PIPELINE-LABEL: func.func @post_norm_residual
// PIPELINE-SAME: (%[[X:.*]]: tensor<4x2xf32>)
// PIPELINE-DAG: %[[GAINED:.*]] = flashnorm.layer_norm %[[X]] gain(
// PIPELINE-DAG: %[[S:.*]] = flashnorm.layer_inv %[[X]]
// PIPELINE: %[[P:.*]] = linalg.matmul ins(%[[X]],
// PIPELINE: flashnorm.post_scale %[[P]], %[[S]]
// PIPELINE: arith.addf %[[GAINED]], %[[X]]
func.func @post_norm_residual(%x: tensor<4x2xf32>) -> (tensor<4x3xf32>, tensor<4x2xf32>) {
  %g = arith.constant dense<[2.0, 0.5]> : tensor<2xf32>
  %b = arith.constant dense<[1.0, -1.0]> : tensor<2xf32>
  %n = flashnorm.layer_norm %x gain(%g : tensor<2xf32>) bias(%b : tensor<2xf32>) eps(1.0e-05) : tensor<4x2xf32>
  %w = arith.constant dense<[[1.0, 2.0, 3.0], [-2.0, -3.0, -4.0]]> : tensor<2x3xf32>
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x3xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<4x3xf32>) -> tensor<4x3xf32>
  %y = linalg.matmul ins(%n, %w : tensor<4x2xf32>, tensor<2x3xf32>) outs(%z : tensor<4x3xf32>) -> tensor<4x3xf32>
  %r = arith.addf %n, %x : tensor<4x2xf32>
  return %y, %r : tensor<4x3xf32>, tensor<4x2xf32>
}

// -----

// Users that are not projections alone: nothing to fold, and each is named.
// CHECK-LABEL: func.func @no_projection
// CHECK: flashnorm.rms_norm %{{.*}} gain(
// CHECK-NOT: flashnorm.rms_norm
// REMARK: Function=no_projection | Remark="not folded: user 'arith.addf' at {{.*}}: it is not a projection (matmul-like op); user 'math.exp' at {{.*}}: it is not a projection (matmul-like op)"
func.func @no_projection(%x: tensor<4x2xf32>) -> (tensor<4x2xf32>, tensor<4x2xf32>) {
  %g = arith.constant dense<[2.0, 0.5]> : tensor<2xf32>
  %n = flashnorm.rms_norm %x gain(%g : tensor<2xf32>) eps(1.0e-05) : tensor<4x2xf32>
  %a = math.exp %n : tensor<4x2xf32>
  %r = arith.addf %n, %x : tensor<4x2xf32>
  return %a, %r : tensor<4x2xf32>, tensor<4x2xf32>
}

// -----

// A projection that cannot take the fold (its weight is an argument, and
// there is no prepare function) still refuses the whole norm: folded into
// all of its projections or none.
// CHECK-LABEL: func.func @unfoldable_projection
// CHECK: %[[N:.*]] = flashnorm.rms_norm %{{.*}} gain(
// CHECK-NOT: flashnorm.rms_norm
// CHECK: linalg.matmul ins(%[[N]], %{{.*}} : tensor<4x2xf32>, tensor<2x3xf32>)
// CHECK: linalg.matmul ins(%[[N]], %{{.*}} : tensor<4x2xf32>, tensor<2x3xf32>)
// CHECK: arith.addf %[[N]]
// REMARK: Function=unfoldable_projection | Remark="not folded: user 'linalg.matmul' at {{.*}}: its weight is not a constant (block argument #1) (prepare-function=true folds it through a prepare function)"
func.func @unfoldable_projection(%x: tensor<4x2xf32>, %v: tensor<2x3xf32>) -> (tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x2xf32>) {
  %g = arith.constant dense<[2.0, 0.5]> : tensor<2xf32>
  %n = flashnorm.rms_norm %x gain(%g : tensor<2xf32>) eps(1.0e-05) : tensor<4x2xf32>
  %w = arith.constant dense<[[1.0, 2.0, 3.0], [-2.0, -3.0, -4.0]]> : tensor<2x3xf32>
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x3xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<4x3xf32>) -> tensor<4x3xf32>
  %y = linalg.matmul ins(%n, %w : tensor<4x2xf32>, tensor<2x3xf32>) outs(%z : tensor<4x3xf32>) -> tensor<4x3xf32>
  %u = linalg.matmul ins(%n, %v : tensor<4x2xf32>, tensor<2x3xf32>) outs(%z : tensor<4x3xf32>) -> tensor<4x3xf32>
  %r = arith.addf %n, %x : tensor<4x2xf32>
  return %y, %u, %r : tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x2xf32>
}

// -----

// A user that reads the norm through a reshape the projection reads too
// (torch-mlir's view before both): the projection reads a copy of the
// reshape on the weightless norm, the user the original.
// CHECK-LABEL: func.func @through_reshape
// CHECK-SAME: (%[[X:.*]]: tensor<1x4x2xf32>)
// CHECK-DAG: %[[BARE:.*]] = flashnorm.rms_norm %[[X]] eps(1.000000e-05) : tensor<1x4x2xf32>
// CHECK-DAG: %[[GAINED:.*]] = flashnorm.rms_norm %[[X]] gain(
// CHECK-DAG: %[[FLAT:.*]] = tensor.collapse_shape %[[GAINED]] {{\[}}[0, 1], [2]]
// CHECK-DAG: %[[BAREFLAT:.*]] = tensor.collapse_shape %[[BARE]] {{\[}}[0, 1], [2]]
// CHECK: linalg.matmul ins(%[[BAREFLAT]], %{{.*}} :
// CHECK: math.exp %[[FLAT]]
// REMARK: Function=through_reshape | Remark="folded the gain into 1 projection weight(s); kept the gained norm for the others; user 'math.exp' at {{.*}}: it is not a projection (matmul-like op)"
// A reshape only projections read moves to the weightless norm whole (no
// copy is left behind).
// CHECK-LABEL: func.func @projection_reshape
// CHECK-SAME: (%[[X:.*]]: tensor<1x4x2xf32>)
// CHECK-DAG: %[[BARE:.*]] = flashnorm.rms_norm %[[X]] eps(1.000000e-05) : tensor<1x4x2xf32>
// CHECK-DAG: %[[GAINED:.*]] = flashnorm.rms_norm %[[X]] gain(
// CHECK-NOT: tensor.collapse_shape %[[GAINED]]
// CHECK: %[[BAREFLAT:.*]] = tensor.collapse_shape %[[BARE]]
// CHECK-NOT: tensor.collapse_shape
// CHECK: linalg.matmul ins(%[[BAREFLAT]], %{{.*}} :
// CHECK: math.exp %[[GAINED]]
func.func @through_reshape(%x: tensor<1x4x2xf32>) -> (tensor<4x3xf32>, tensor<4x2xf32>) {
  %g = arith.constant dense<[2.0, 0.5]> : tensor<2xf32>
  %n = flashnorm.rms_norm %x gain(%g : tensor<2xf32>) eps(1.0e-05) : tensor<1x4x2xf32>
  %flat = tensor.collapse_shape %n [[0, 1], [2]] : tensor<1x4x2xf32> into tensor<4x2xf32>
  %w = arith.constant dense<[[1.0, 2.0, 3.0], [-2.0, -3.0, -4.0]]> : tensor<2x3xf32>
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x3xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<4x3xf32>) -> tensor<4x3xf32>
  %y = linalg.matmul ins(%flat, %w : tensor<4x2xf32>, tensor<2x3xf32>) outs(%z : tensor<4x3xf32>) -> tensor<4x3xf32>
  %a = math.exp %flat : tensor<4x2xf32>
  return %y, %a : tensor<4x3xf32>, tensor<4x2xf32>
}

func.func @projection_reshape(%x: tensor<1x4x2xf32>) -> (tensor<4x3xf32>, tensor<1x4x2xf32>) {
  %g = arith.constant dense<[2.0, 0.5]> : tensor<2xf32>
  %n = flashnorm.rms_norm %x gain(%g : tensor<2xf32>) eps(1.0e-05) : tensor<1x4x2xf32>
  %flat = tensor.collapse_shape %n [[0, 1], [2]] : tensor<1x4x2xf32> into tensor<4x2xf32>
  %w = arith.constant dense<[[1.0, 2.0, 3.0], [-2.0, -3.0, -4.0]]> : tensor<2x3xf32>
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x3xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<4x3xf32>) -> tensor<4x3xf32>
  %y = linalg.matmul ins(%flat, %w : tensor<4x2xf32>, tensor<2x3xf32>) outs(%z : tensor<4x3xf32>) -> tensor<4x3xf32>
  %a = math.exp %n : tensor<1x4x2xf32>
  return %y, %a : tensor<4x3xf32>, tensor<1x4x2xf32>
}
