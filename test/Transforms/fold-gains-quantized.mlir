// RUN: flashnorm-opt %s --flashnorm-fold-gains --split-input-file | FileCheck %s
// RUN: flashnorm-opt %s --flashnorm-fold-gains --split-input-file \
// RUN:   --remarks-filter=flashnorm --remark-format=emitRemark 2>&1 >/dev/null \
// RUN:   | FileCheck %s --check-prefix=REMARK

// An int8 weight dequantized with a per-output-channel scale and a
// per-input-channel factor f[k], behind a transpose: the gain folds into f
// (g * f, once rounded), the integers and scales stay as they are.
// CHECK-LABEL: func.func @kfactor
// CHECK: flashnorm.rms_norm %{{.*}} eps(1.000000e-05) : tensor<2x4xf32>
// CHECK: %[[F:.*]] = arith.constant dense<[5.000000e-01, 3.000000e+00, 1.000000e+00, 2.000000e+00]> : tensor<4xf32>
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}}, %[[F]] : tensor<3x4xi8>, tensor<3xf32>, tensor<4xf32>)
// REMARK: Function=kfactor | Remark="folded the gain into 1 projection weight(s) (1 quantized, into the per-input-channel factor of their dequantization)"
#nk = affine_map<(n, k) -> (n, k)>
#n = affine_map<(n, k) -> (n)>
#k = affine_map<(n, k) -> (k)>
func.func @kfactor(%x: tensor<2x4xf32>) -> tensor<2x3xf32> {
  %g = arith.constant dense<[0.5, 1.5, 1.0, 4.0]> : tensor<4xf32>
  %n = flashnorm.rms_norm %x gain(%g : tensor<4xf32>) eps(1.0e-05) : tensor<2x4xf32>
  %q = arith.constant dense<[[1, -2, 3, -4], [5, 6, -7, 8], [-9, 10, 11, 12]]> : tensor<3x4xi8>
  %s = arith.constant dense<[0.1, 0.2, 0.3]> : tensor<3xf32>
  %f = arith.constant dense<[1.0, 2.0, 1.0, 0.5]> : tensor<4xf32>
  %e = tensor.empty() : tensor<3x4xf32>
  %w = linalg.generic {indexing_maps = [#nk, #n, #k, #nk], iterator_types = ["parallel", "parallel"]}
      ins(%q, %s, %f : tensor<3x4xi8>, tensor<3xf32>, tensor<4xf32>) outs(%e : tensor<3x4xf32>) {
  ^bb0(%a: i8, %sc: f32, %fk: f32, %o: f32):
    %i = arith.extsi %a : i8 to i32
    %v = arith.sitofp %i : i32 to f32
    %m = arith.mulf %v, %sc : f32
    %mk = arith.mulf %m, %fk : f32
    linalg.yield %mk : f32
  } -> tensor<3x4xf32>
  %et = tensor.empty() : tensor<4x3xf32>
  %wt = linalg.transpose ins(%w : tensor<3x4xf32>) outs(%et : tensor<4x3xf32>) permutation = [1, 0]
  %c0 = arith.constant 0.0 : f32
  %e2 = tensor.empty() : tensor<2x3xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e2 : tensor<2x3xf32>) -> tensor<2x3xf32>
  %y = linalg.matmul ins(%n, %wt : tensor<2x4xf32>, tensor<4x3xf32>) outs(%z : tensor<2x3xf32>) -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}

// -----

// Refused: the factor is added, not multiplied; the dequantized weight is
// also returned; a LayerNorm (its centering cannot go into a factor).
// CHECK-LABEL: func.func @refused
// CHECK-COUNT-2: flashnorm.rms_norm %{{.*}} gain(
// CHECK: flashnorm.layer_norm %{{.*}} gain(
// REMARK-DAG: Function=refused | Remark="not folded: user 'linalg.matmul' at {{.*}}: its weight is dequantized from integers by a 'linalg.generic' (a gain folds only into a per-input-channel factor of the dequantization)"
// REMARK-DAG: Function=refused | Remark="not folded: user 'linalg.matmul' at {{.*}}: its dequantized weight has other users"
// REMARK-DAG: Function=refused | Remark="not folded: user 'linalg.matmul' at {{.*}}: its weight is quantized: a LayerNorm's mean-centering cannot fold into the per-input-channel factor of its dequantization"
#kn = affine_map<(k, n) -> (k, n)>
#kk = affine_map<(k, n) -> (k)>
func.func @refused(%x: tensor<2x4xf32>, %q: tensor<4x3xi8>)
    -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<4x3xf32>, tensor<2x3xf32>) {
  %g = arith.constant dense<[0.5, 1.5, 1.0, 4.0]> : tensor<4xf32>
  %f = arith.constant dense<[1.0, 2.0, 1.0, 0.5]> : tensor<4xf32>
  %e = tensor.empty() : tensor<4x3xf32>
  %c0 = arith.constant 0.0 : f32
  %e2 = tensor.empty() : tensor<2x3xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e2 : tensor<2x3xf32>) -> tensor<2x3xf32>
  %n1 = flashnorm.rms_norm %x gain(%g : tensor<4xf32>) eps(1.0e-05) : tensor<2x4xf32>
  %w1 = linalg.generic {indexing_maps = [#kn, #kk, #kn], iterator_types = ["parallel", "parallel"]}
      ins(%q, %f : tensor<4x3xi8>, tensor<4xf32>) outs(%e : tensor<4x3xf32>) {
  ^bb0(%a: i8, %fk: f32, %o: f32):
    %v = arith.sitofp %a : i8 to f32
    %m = arith.addf %v, %fk : f32
    linalg.yield %m : f32
  } -> tensor<4x3xf32>
  %y1 = linalg.matmul ins(%n1, %w1 : tensor<2x4xf32>, tensor<4x3xf32>) outs(%z : tensor<2x3xf32>) -> tensor<2x3xf32>
  %n2 = flashnorm.rms_norm %x gain(%g : tensor<4xf32>) eps(1.0e-05) : tensor<2x4xf32>
  %w2 = linalg.generic {indexing_maps = [#kn, #kk, #kn], iterator_types = ["parallel", "parallel"]}
      ins(%q, %f : tensor<4x3xi8>, tensor<4xf32>) outs(%e : tensor<4x3xf32>) {
  ^bb0(%a: i8, %fk: f32, %o: f32):
    %v = arith.sitofp %a : i8 to f32
    %m = arith.mulf %v, %fk : f32
    linalg.yield %m : f32
  } -> tensor<4x3xf32>
  %y2 = linalg.matmul ins(%n2, %w2 : tensor<2x4xf32>, tensor<4x3xf32>) outs(%z : tensor<2x3xf32>) -> tensor<2x3xf32>
  %b = arith.constant dense<0.25> : tensor<4xf32>
  %n3 = flashnorm.layer_norm %x gain(%g : tensor<4xf32>) bias(%b : tensor<4xf32>) eps(1.0e-05) : tensor<2x4xf32>
  %w3 = linalg.generic {indexing_maps = [#kn, #kk, #kn], iterator_types = ["parallel", "parallel"]}
      ins(%q, %f : tensor<4x3xi8>, tensor<4xf32>) outs(%e : tensor<4x3xf32>) {
  ^bb0(%a: i8, %fk: f32, %o: f32):
    %v = arith.sitofp %a : i8 to f32
    %m = arith.mulf %v, %fk : f32
    linalg.yield %m : f32
  } -> tensor<4x3xf32>
  %y3 = linalg.matmul ins(%n3, %w3 : tensor<2x4xf32>, tensor<4x3xf32>) outs(%z : tensor<2x3xf32>) -> tensor<2x3xf32>
  return %y1, %y2, %w2, %y3 : tensor<2x3xf32>, tensor<2x3xf32>, tensor<4x3xf32>, tensor<2x3xf32>
}
