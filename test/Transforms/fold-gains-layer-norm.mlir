// RUN: flashnorm-opt %s --flashnorm-fold-gains --split-input-file | FileCheck %s
// RUN: flashnorm-opt %s --flashnorm-fold-gains --split-input-file \
// RUN:   --remarks-filter=flashnorm --remark-format=emitRemark 2>&1 >/dev/null \
// RUN:   | FileCheck %s --check-prefix=REMARK

// LayerNorm: the gain and the mean-centering go into the weight (each column
// of diag(g) W minus its mean over K), the bias b into a new bias b W after
// the projection; the projection is marked as having centered weights.
// g = [2, 1], W = [[1, 2], [3, 4]]: diag(g) W = [[2, 4], [3, 4]], column
// means [2.5, 4] -> [[-0.5, 0], [0.5, 0]]; b = [1, -1]: b W = [-2, -2].
// CHECK-LABEL: func.func @gain_bias_centering
// CHECK-DAG: %[[W:.*]] = arith.constant dense<{{\[}}[-5.000000e-01, 0.000000e+00], [5.000000e-01, 0.000000e+00]]> : tensor<2x2xf32>
// CHECK-DAG: %[[N:.*]] = flashnorm.layer_norm %arg0 eps(1.000000e-05) : tensor<4x2xf32>
// CHECK: %[[P:.*]] = linalg.matmul {flashnorm.centered_weights} ins(%[[N]], %[[W]] :
// CHECK: %[[B:.*]] = arith.constant dense<-2.000000e+00> : tensor<2xf32>
// CHECK: linalg.generic {{.*}} ins(%[[P]], %[[B]] : tensor<4x2xf32>, tensor<2xf32>)
// REMARK: Function=gain_bias_centering | Remark="folded the gain and bias (and the mean-centering) into 1 projection weight(s)"
func.func @gain_bias_centering(%x: tensor<4x2xf32>) -> tensor<4x2xf32> {
  %g = arith.constant dense<[2.0, 1.0]> : tensor<2xf32>
  %b = arith.constant dense<[1.0, -1.0]> : tensor<2xf32>
  %w = arith.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %n = flashnorm.layer_norm %x gain(%g : tensor<2xf32>) bias(%b : tensor<2xf32>) eps(1.0e-05) : tensor<4x2xf32>
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x2xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<4x2xf32>) -> tensor<4x2xf32>
  %y = linalg.matmul ins(%n, %w : tensor<4x2xf32>, tensor<2x2xf32>) outs(%z : tensor<4x2xf32>) -> tensor<4x2xf32>
  return %y : tensor<4x2xf32>
}

// -----

// The same with a dynamic row count: the new bias add sizes its result from
// the projection's (tensor.dim), which must read the projection itself, not
// the biased value that replaces it (a dominance error once).
// CHECK-LABEL: func.func @bias_dynamic_rows
// CHECK: %[[P:.*]] = linalg.matmul
// CHECK: %[[D:.*]] = tensor.dim %[[P]], %{{.*}} : tensor<?x2xf32>
// CHECK: %[[E:.*]] = tensor.empty(%[[D]]) : tensor<?x2xf32>
// CHECK: %[[Y:.*]] = linalg.generic {{.*}} ins(%[[P]], %{{.*}} : tensor<?x2xf32>, tensor<2xf32>) outs(%[[E]]
// CHECK: return %[[Y]]
func.func @bias_dynamic_rows(%x: tensor<?x2xf32>) -> tensor<?x2xf32> {
  %g = arith.constant dense<[2.0, 1.0]> : tensor<2xf32>
  %b = arith.constant dense<[1.0, -1.0]> : tensor<2xf32>
  %w = arith.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %n = flashnorm.layer_norm %x gain(%g : tensor<2xf32>) bias(%b : tensor<2xf32>) eps(1.0e-05) : tensor<?x2xf32>
  %c0 = arith.constant 0.0 : f32
  %i0 = arith.constant 0 : index
  %rows = tensor.dim %x, %i0 : tensor<?x2xf32>
  %e = tensor.empty(%rows) : tensor<?x2xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<?x2xf32>) -> tensor<?x2xf32>
  %y = linalg.matmul ins(%n, %w : tensor<?x2xf32>, tensor<2x2xf32>) outs(%z : tensor<?x2xf32>) -> tensor<?x2xf32>
  return %y : tensor<?x2xf32>
}

// -----

// W n^T: the result's rows are W's, not the norm's, so the bias b W would be
// added along the wrong dimension. Refused.
// CHECK-LABEL: func.func @bias_through_transposed_product
// CHECK: flashnorm.layer_norm %{{.*}} bias(
// REMARK: Function=bias_through_transposed_product | Remark="not folded: user 'linalg.generic' at {{.*}}: a bias folds only through a projection whose rows are the norm's rows"
func.func @bias_through_transposed_product(%x: tensor<4x4xf32>, %b: tensor<4xf32>) -> tensor<4x4xf32> {
  %bc = arith.constant dense<[0.1, 0.2, 0.3, 0.4]> : tensor<4xf32>
  %w = arith.constant dense<[[1.0, 0.0, 0.0, 0.0], [0.0, 2.0, 0.0, 0.0], [0.0, 0.0, 3.0, 0.0], [0.0, 0.0, 0.0, 4.0]]> : tensor<4x4xf32>
  %n = flashnorm.layer_norm %x bias(%bc : tensor<4xf32>) eps(1.0e-05) : tensor<4x4xf32>
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x4xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<4x4xf32>) -> tensor<4x4xf32>
  %q = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]}
     ins(%n, %w : tensor<4x4xf32>, tensor<4x4xf32>) outs(%z : tensor<4x4xf32>) {
  ^bb0(%p: f32, %q2: f32, %acc: f32):
    %m = arith.mulf %p, %q2 : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<4x4xf32>
  return %q : tensor<4x4xf32>
}

// -----

// A bias folded through the weight, b W = [120000, 120000], is past f16's
// range: the result type it is added in would hold inf. Refused, the norm
// keeps its gain and bias.
// CHECK-LABEL: func.func @bias_overflows_f16
// CHECK: flashnorm.layer_norm %arg0 gain(
// REMARK: Function=bias_overflows_f16 | Remark="not folded: the bias folded through the weight of 'linalg.matmul' overflows f16"
func.func @bias_overflows_f16(%x: tensor<4x2xf16>) -> tensor<4x2xf16> {
  %g = arith.constant dense<[2.0, 1.0]> : tensor<2xf16>
  %b = arith.constant dense<[60000.0, 60000.0]> : tensor<2xf16>
  %w = arith.constant dense<1.0> : tensor<2x2xf16>
  %n = flashnorm.layer_norm %x gain(%g : tensor<2xf16>) bias(%b : tensor<2xf16>) eps(1.0e-05) : tensor<4x2xf16>
  %c0 = arith.constant 0.0 : f16
  %e = tensor.empty() : tensor<4x2xf16>
  %z = linalg.fill ins(%c0 : f16) outs(%e : tensor<4x2xf16>) -> tensor<4x2xf16>
  %y = linalg.matmul ins(%n, %w : tensor<4x2xf16>, tensor<2x2xf16>) outs(%z : tensor<4x2xf16>) -> tensor<4x2xf16>
  return %y : tensor<4x2xf16>
}
