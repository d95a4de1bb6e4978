// RUN: flashnorm-opt %s --flashnorm-lower-to-linalg --split-input-file | FileCheck %s
// Raising the lowered form gives the ops back (raise inverts the lowering).
// RUN: flashnorm-opt %s --flashnorm-lower-to-linalg --split-input-file \
// RUN:   | flashnorm-opt --flashnorm-raise --split-input-file | FileCheck %s --check-prefix=RAISE

// f16 input: statistics in f32, the gain (1 + g, formed in f32) applied in
// f32, one rounding to f16 at the end.
// CHECK-LABEL: func.func @rms_norm_f16
// CHECK: %[[SUM:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%{{.*}} : tensor<4x8xf16>) outs(%{{.*}} : tensor<4xf32>)
// CHECK: arith.extf %{{.*}} : f16 to f32
// CHECK: arith.mulf
// CHECK: arith.addf
// CHECK: %[[INV:.*]] = linalg.generic {{.*}} ins(%[[SUM]] : tensor<4xf32>)
// CHECK: arith.divf
// CHECK: math.rsqrt
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %[[INV]], %{{.*}} : tensor<4x8xf16>, tensor<4xf32>, tensor<8xbf16>) outs(%{{.*}} : tensor<4x8xf16>)
// CHECK: arith.extf %{{.*}} : bf16 to f32
// CHECK: arith.addf
// CHECK: arith.truncf %{{.*}} : f32 to f16
// CHECK-NOT: flashnorm.
// RAISE-LABEL: func.func @rms_norm_f16
// RAISE: flashnorm.rms_norm %arg0 gain(%arg1 : tensor<8xbf16>) eps(9.9999999747524271E-7) convention one_plus : tensor<4x8xf16>
func.func @rms_norm_f16(%x: tensor<4x8xf16>, %g: tensor<8xbf16>) -> tensor<4x8xf16> {
  %y = flashnorm.rms_norm %x gain(%g : tensor<8xbf16>) eps(1.0e-06) convention one_plus : tensor<4x8xf16>
  return %y : tensor<4x8xf16>
}

// -----

// Dynamic rows and a dynamic normalized dimension (K from tensor.dim).
// CHECK-LABEL: func.func @dynamic
// CHECK: %[[D0:.*]] = tensor.dim %{{.*}}, %c0
// CHECK: tensor.empty(%[[D0]]) : tensor<?xf32>
// CHECK: tensor.dim %{{.*}}, %c1
// CHECK: arith.index_cast
// CHECK: arith.uitofp
// CHECK: tensor.empty({{.*}}) : tensor<?x?xf32>
func.func @dynamic(%x: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %y = flashnorm.rms_norm %x eps(1.0e-05) : tensor<?x?xf32>
  return %y : tensor<?x?xf32>
}

// -----

// A rank-1 input is one row: its statistic is a 0-d tensor.
// CHECK-LABEL: func.func @one_row
// CHECK: linalg.generic {{.*}} iterator_types = ["reduction"]} ins(%{{.*}} : tensor<8xf32>) outs(%{{.*}} : tensor<f32>)
// RAISE-LABEL: func.func @one_row
// RAISE: flashnorm.rms_norm
func.func @one_row(%x: tensor<8xf32>) -> (tensor<f32>, tensor<8xf32>) {
  %s = flashnorm.rms_inv %x eps(1.0e-05) : tensor<8xf32> -> tensor<f32>
  %y = flashnorm.rms_norm %x eps(1.0e-05) : tensor<8xf32>
  return %s, %y : tensor<f32>, tensor<8xf32>
}

// -----

// LayerNorm: mean, then the variance around it (two passes), then
// (x - mean) * rsqrt(var + eps) * g + b.
// CHECK-LABEL: func.func @layer_norm
// CHECK: %[[SUM:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]}
// CHECK: %[[MEAN:.*]] = linalg.generic {{.*}} ins(%[[SUM]]
// CHECK: %[[VAR:.*]] = linalg.generic {{.*}} ins(%{{.*}}, %[[MEAN]] : tensor<4x8xf32>, tensor<4xf32>)
// CHECK: arith.subf
// CHECK: arith.mulf
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}}, %[[MEAN]], %{{.*}}, %{{.*}} : tensor<4x8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<8xf32>, tensor<8xf32>)
// RAISE-LABEL: func.func @layer_norm
// RAISE: flashnorm.layer_norm %arg0 gain(%arg1 : tensor<8xf32>) bias(%arg2 : tensor<8xf32>)
func.func @layer_norm(%x: tensor<4x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  %y = flashnorm.layer_norm %x gain(%g : tensor<8xf32>) bias(%b : tensor<8xf32>) eps(1.0e-05) : tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// post_scale: the f32 accumulator times the row scale, rounded once to bf16.
// CHECK-LABEL: func.func @post_scale
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<2x3x16xf32>, tensor<2x3xf32>) outs(%{{.*}} : tensor<2x3x16xbf16>)
// CHECK: arith.mulf %{{.*}}, %{{.*}} : f32
// CHECK: arith.truncf %{{.*}} : f32 to bf16
func.func @post_scale(%acc: tensor<2x3x16xf32>, %s: tensor<2x3xf32>) -> tensor<2x3x16xbf16> {
  %y = flashnorm.post_scale %acc, %s : tensor<2x3x16xf32>, tensor<2x3xf32> -> tensor<2x3x16xbf16>
  return %y : tensor<2x3x16xbf16>
}

// -----

// layer_stats: layer_inv's two passes, the mean kept as a result too;
// centered_post_scale: the product minus the row's mean times the column's
// sum, times the row's scale (0 where the scale is 0), rounded once.
// CHECK-LABEL: func.func @centered
// CHECK: %[[SUM:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%{{.*}} : tensor<4x8xbf16>) outs(%{{.*}} : tensor<4xf32>)
// CHECK: %[[MEAN:.*]] = linalg.generic {{.*}} ins(%[[SUM]] : tensor<4xf32>)
// CHECK: arith.divf
// CHECK: %[[DEV:.*]] = linalg.generic {{.*}} ins(%{{.*}}, %[[MEAN]] : tensor<4x8xbf16>, tensor<4xf32>)
// CHECK: %[[INV:.*]] = linalg.generic {{.*}} ins(%[[DEV]] : tensor<4xf32>)
// CHECK: math.rsqrt
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %[[INV]], %[[MEAN]], %{{.*}} : tensor<4x16xf32>, tensor<4xf32>, tensor<4xf32>, tensor<16xf32>) outs(%{{.*}} : tensor<4x16xbf16>)
// CHECK-NEXT: ^bb0(%[[ACC:.*]]: f32, %[[S:.*]]: f32, %[[M:.*]]: f32, %[[C:.*]]: f32, %{{.*}}: bf16):
// CHECK-NEXT: %[[SH:.*]] = arith.mulf %[[M]], %[[C]] : f32
// CHECK-NEXT: %[[D:.*]] = arith.subf %[[ACC]], %[[SH]] : f32
// CHECK-NEXT: %[[R:.*]] = arith.mulf %[[D]], %[[S]] : f32
// CHECK: %[[Z:.*]] = arith.cmpf oeq, %[[S]]
// CHECK-NEXT: %[[Y:.*]] = arith.select %[[Z]], %{{.*}}, %[[R]] : f32
// CHECK-NEXT: arith.truncf %[[Y]] : f32 to bf16
// CHECK-NOT: flashnorm.
func.func @centered(%x: tensor<4x8xbf16>, %acc: tensor<4x16xf32>, %c: tensor<16xf32>) -> tensor<4x16xbf16> {
  %m, %s = flashnorm.layer_stats %x eps(1.0e-05) : tensor<4x8xbf16> -> tensor<4xf32>
  %y = flashnorm.centered_post_scale %acc, %s, %m, %c : tensor<4x16xf32>, tensor<4xf32>, tensor<16xf32> -> tensor<4x16xbf16>
  return %y : tensor<4x16xbf16>
}
