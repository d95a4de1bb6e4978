// RUN: flashnorm-opt %s --flashnorm-defer-scale --split-input-file | FileCheck %s
// RUN: flashnorm-opt %s --flashnorm-defer-scale --split-input-file \
// RUN:   --remarks-filter=flashnorm --remark-format=emitRemark 2>&1 >/dev/null \
// RUN:   | FileCheck %s --check-prefix=REMARK

// Three projections of one weightless norm share one rms_inv; each result is
// post-scaled before its bias add.
// CHECK-LABEL: func.func @qkv
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>, %[[B:.*]]: tensor<4x16xf32>
// CHECK: %[[S:.*]] = flashnorm.rms_inv %[[X]] eps(1.000000e-05) : tensor<4x8xf32> -> tensor<4xf32>
// CHECK-NOT: flashnorm.rms_norm
// CHECK: %[[Q:.*]] = linalg.matmul ins(%[[X]], %{{.*}} :
// CHECK: %[[QS:.*]] = flashnorm.post_scale %[[Q]], %[[S]] : tensor<4x16xf32>, tensor<4xf32> -> tensor<4x16xf32>
// CHECK: arith.addf %[[QS]], %[[B]]
// CHECK: %[[K:.*]] = linalg.matmul ins(%[[X]], %{{.*}} :
// CHECK: flashnorm.post_scale %[[K]], %[[S]]
// CHECK: %[[V:.*]] = linalg.matmul ins(%[[X]], %{{.*}} :
// CHECK: flashnorm.post_scale %[[V]], %[[S]]
// REMARK: Function=qkv | Remark="deferred 1/RMS past 3 projection(s)"
// REMARK: Function=qkv | Remark="1 rewritten (0 approximate), 0 refused"
func.func @qkv(%x: tensor<4x8xf32>, %bias: tensor<4x16xf32>, %wq: tensor<8x16xf32>,
               %wk: tensor<8x16xf32>, %wv: tensor<8x16xf32>)
    -> (tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>) {
  %n = flashnorm.rms_norm %x eps(1.0e-05) : tensor<4x8xf32>
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x16xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<4x16xf32>) -> tensor<4x16xf32>
  %q = linalg.matmul ins(%n, %wq : tensor<4x8xf32>, tensor<8x16xf32>) outs(%z : tensor<4x16xf32>) -> tensor<4x16xf32>
  %qb = arith.addf %q, %bias : tensor<4x16xf32>
  %k = linalg.matmul ins(%n, %wk : tensor<4x8xf32>, tensor<8x16xf32>) outs(%z : tensor<4x16xf32>) -> tensor<4x16xf32>
  %v = linalg.matmul ins(%n, %wv : tensor<4x8xf32>, tensor<8x16xf32>) outs(%z : tensor<4x16xf32>) -> tensor<4x16xf32>
  return %qb, %k, %v : tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>
}

// -----

// An f16 projection is rebuilt to accumulate in f32; the post-scale rounds
// the scaled value to f16 (no overflow of the unnormalized product).
// CHECK-LABEL: func.func @f16_widened
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf16>
// CHECK: %[[S:.*]] = flashnorm.rms_inv %[[X]]
// CHECK: %[[Z:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<4x16xf32>)
// CHECK: %[[P:.*]] = linalg.matmul ins(%[[X]], %{{.*}} : tensor<4x8xf16>, tensor<8x16xf16>) outs(%[[Z]] : tensor<4x16xf32>)
// CHECK: %[[R:.*]] = flashnorm.post_scale %[[P]], %[[S]] : tensor<4x16xf32>, tensor<4xf32> -> tensor<4x16xf16>
// CHECK: return %[[R]]
func.func @f16_widened(%x: tensor<4x8xf16>, %w: tensor<8x16xf16>) -> tensor<4x16xf16> {
  %n = flashnorm.rms_norm %x eps(1.0e-05) : tensor<4x8xf16>
  %c0 = arith.constant 0.0 : f16
  %e = tensor.empty() : tensor<4x16xf16>
  %z = linalg.fill ins(%c0 : f16) outs(%e : tensor<4x16xf16>) -> tensor<4x16xf16>
  %y = linalg.matmul ins(%n, %w : tensor<4x8xf16>, tensor<8x16xf16>) outs(%z : tensor<4x16xf16>) -> tensor<4x16xf16>
  return %y : tensor<4x16xf16>
}

// -----

// bf16 through tosa.matmul (result widened to f32), a bf16 contraction
// generic (rebuilt with an f32 body) and a batch_matmul with dynamic rows.
// CHECK-LABEL: func.func @bf16_forms
// CHECK-SAME: (%[[X:.*]]: tensor<1x4x8xbf16>
// CHECK: %[[S:.*]] = flashnorm.rms_inv %[[X]] eps(9.9999999999999995E-7) : tensor<1x4x8xbf16> -> tensor<1x4xf32>
// CHECK: %[[T:.*]] = tosa.matmul %[[X]], {{.*}} -> tensor<1x4x16xf32>
// CHECK: flashnorm.post_scale %[[T]], %[[S]] : tensor<1x4x16xf32>, tensor<1x4xf32> -> tensor<1x4x16xf32>
// CHECK: %[[G:.*]] = linalg.generic {{.*}} ins(%[[X]], %{{.*}} : tensor<1x4x8xbf16>, tensor<8x16xbf16>) outs(%{{.*}} : tensor<1x4x16xf32>)
// CHECK: arith.extf
// CHECK: arith.extf
// CHECK: arith.mulf {{.*}} : f32
// CHECK: arith.addf {{.*}} : f32
// CHECK: flashnorm.post_scale %[[G]], %[[S]] : tensor<1x4x16xf32>, tensor<1x4xf32> -> tensor<1x4x16xbf16>
func.func @bf16_forms(%x: tensor<1x4x8xbf16>, %w: tensor<1x8x16xbf16>, %v: tensor<8x16xbf16>)
    -> (tensor<1x4x16xbf16>, tensor<1x4x16xbf16>) {
  %n = flashnorm.rms_norm %x eps(1.0e-06) : tensor<1x4x8xbf16>
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xbf16>}> : () -> tensor<1xbf16>
  %t = tosa.matmul %n, %w, %zp, %zp : (tensor<1x4x8xbf16>, tensor<1x8x16xbf16>, tensor<1xbf16>, tensor<1xbf16>) -> tensor<1x4x16xf32>
  %tb = tosa.cast %t : (tensor<1x4x16xf32>) -> tensor<1x4x16xbf16>
  %c0 = arith.constant 0.0 : bf16
  %e = tensor.empty() : tensor<1x4x16xbf16>
  %z = linalg.fill ins(%c0 : bf16) outs(%e : tensor<1x4x16xbf16>) -> tensor<1x4x16xbf16>
  %g = linalg.generic {
      indexing_maps = [affine_map<(b, m, n, k) -> (b, m, k)>, affine_map<(b, m, n, k) -> (k, n)>, affine_map<(b, m, n, k) -> (b, m, n)>],
      iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%n, %v : tensor<1x4x8xbf16>, tensor<8x16xbf16>) outs(%z : tensor<1x4x16xbf16>) {
  ^bb0(%a: bf16, %b: bf16, %c: bf16):
    %p = arith.mulf %a, %b : bf16
    %s = arith.addf %c, %p : bf16
    linalg.yield %s : bf16
  } -> tensor<1x4x16xbf16>
  return %tb, %g : tensor<1x4x16xbf16>, tensor<1x4x16xbf16>
}

// -----

// Dynamic rows through batch_matmul.
// CHECK-LABEL: func.func @dynamic_rows
// CHECK: %[[S:.*]] = flashnorm.rms_inv %{{.*}} : tensor<2x?x8xf32> -> tensor<2x?xf32>
// CHECK: %[[P:.*]] = linalg.batch_matmul
// CHECK: flashnorm.post_scale %[[P]], %[[S]] : tensor<2x?x4xf32>, tensor<2x?xf32> -> tensor<2x?x4xf32>
func.func @dynamic_rows(%x: tensor<2x?x8xf32>, %w: tensor<2x8x4xf32>) -> tensor<2x?x4xf32> {
  %n = flashnorm.rms_norm %x eps(1.0e-05) : tensor<2x?x8xf32>
  %c1 = arith.constant 1 : index
  %m = tensor.dim %x, %c1 : tensor<2x?x8xf32>
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty(%m) : tensor<2x?x4xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<2x?x4xf32>) -> tensor<2x?x4xf32>
  %y = linalg.batch_matmul ins(%n, %w : tensor<2x?x8xf32>, tensor<2x8x4xf32>) outs(%z : tensor<2x?x4xf32>) -> tensor<2x?x4xf32>
  return %y : tensor<2x?x4xf32>
}

// -----

// A gain fold-gains left (argument weights without the prepare function) is
// applied before the projections instead: 1/RMS of x beside the projection
// of x * g, the post-scale after it.
// CHECK-LABEL: func.func @has_gain
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>, %[[G:.*]]: tensor<8xf32>, %[[W:.*]]: tensor<8x16xf32>)
// CHECK: %[[XG:.*]] = linalg.generic {{.*}} ins(%[[X]], %[[G]] : tensor<4x8xf32>, tensor<8xf32>)
// CHECK: arith.mulf
// CHECK: %[[S:.*]] = flashnorm.rms_inv %[[X]]
// CHECK: %[[P:.*]] = linalg.matmul ins(%[[XG]], %[[W]] :
// CHECK: flashnorm.post_scale %[[P]], %[[S]]
// REMARK: Function=has_gain | Remark="deferred 1/RMS past 1 projection(s) without folding its gain (x * g feeds them)"
func.func @has_gain(%x: tensor<4x8xf32>, %g: tensor<8xf32>, %w: tensor<8x16xf32>) -> tensor<4x16xf32> {
  %n = flashnorm.rms_norm %x gain(%g : tensor<8xf32>) eps(1.0e-05) : tensor<4x8xf32>
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x16xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<4x16xf32>) -> tensor<4x16xf32>
  %y = linalg.matmul ins(%n, %w : tensor<4x8xf32>, tensor<8x16xf32>) outs(%z : tensor<4x16xf32>) -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}

// -----

// A 1 + g gain on bf16 rows, through a reshape that keeps the features:
// x * (1 + g) formed in f32 and rounded once to bf16, the reshape re-made on
// it and on x.
// CHECK-LABEL: func.func @one_plus_bf16
// CHECK: linalg.generic
// CHECK: arith.extf {{.*}} : bf16 to f32
// CHECK: arith.addf
// CHECK: arith.truncf {{.*}} : f32 to bf16
// CHECK: %[[X3:.*]] = tensor.expand_shape %arg0
// CHECK: %[[S:.*]] = flashnorm.rms_inv %[[X3]]
// CHECK: %[[XG3:.*]] = tensor.expand_shape %{{.*}} {{\[}}[0, 1], [2]] output_shape [1, 4, 8] : tensor<4x8xbf16>
// CHECK: %[[P:.*]] = linalg.batch_matmul ins(%[[XG3]],
// CHECK: flashnorm.post_scale %[[P]], %[[S]]
// REMARK: Function=one_plus_bf16 | Remark="deferred 1/RMS past 1 projection(s) without folding its gain (x * g feeds them)"
func.func @one_plus_bf16(%x: tensor<4x8xbf16>, %g: tensor<8xbf16>, %w: tensor<1x8x16xbf16>) -> tensor<1x4x16xbf16> {
  %n = flashnorm.rms_norm %x gain(%g : tensor<8xbf16>) eps(1.0e-06) convention one_plus : tensor<4x8xbf16>
  %n3 = tensor.expand_shape %n [[0, 1], [2]] output_shape [1, 4, 8] : tensor<4x8xbf16> into tensor<1x4x8xbf16>
  %c0 = arith.constant 0.0 : bf16
  %e = tensor.empty() : tensor<1x4x16xbf16>
  %z = linalg.fill ins(%c0 : bf16) outs(%e : tensor<1x4x16xbf16>) -> tensor<1x4x16xbf16>
  %y = linalg.batch_matmul ins(%n3, %w : tensor<1x4x8xbf16>, tensor<1x8x16xbf16>) outs(%z : tensor<1x4x16xbf16>) -> tensor<1x4x16xbf16>
  return %y : tensor<1x4x16xbf16>
}

// -----

// Not without folding: f16 rows (x * g could overflow before the
// projection) and a LayerNorm's gain and bias.
// CHECK-LABEL: func.func @gain_refused
// CHECK-NOT: flashnorm.rms_inv
// CHECK-NOT: flashnorm.layer_inv
// REMARK-DAG: Function=gain_refused | Remark="not deferred: its gain is not folded and x * g could overflow f16 before the projections"
// REMARK-DAG: Function=gain_refused | Remark="not deferred: the LayerNorm still has a gain or bias
func.func @gain_refused(%x: tensor<4x8xf16>, %g: tensor<8xf16>, %w: tensor<8x16xf16>, %y: tensor<4x8xf32>, %g2: tensor<8xf32>) -> (tensor<4x16xf16>, tensor<4x16xf32>) {
  %w2 = arith.constant dense<0.5> : tensor<8x16xf32>
  %n = flashnorm.rms_norm %x gain(%g : tensor<8xf16>) eps(1.0e-05) : tensor<4x8xf16>
  %c0 = arith.constant 0.0 : f16
  %e = tensor.empty() : tensor<4x16xf16>
  %z = linalg.fill ins(%c0 : f16) outs(%e : tensor<4x16xf16>) -> tensor<4x16xf16>
  %p = linalg.matmul ins(%n, %w : tensor<4x8xf16>, tensor<8x16xf16>) outs(%z : tensor<4x16xf16>) -> tensor<4x16xf16>
  %l = flashnorm.layer_norm %y gain(%g2 : tensor<8xf32>) eps(1.0e-05) : tensor<4x8xf32>
  %c1 = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<4x16xf32>
  %z1 = linalg.fill ins(%c1 : f32) outs(%e1 : tensor<4x16xf32>) -> tensor<4x16xf32>
  %q = linalg.matmul ins(%l, %w2 : tensor<4x8xf32>, tensor<8x16xf32>) outs(%z1 : tensor<4x16xf32>) -> tensor<4x16xf32>
  return %p, %q : tensor<4x16xf16>, tensor<4x16xf32>
}

// -----

// A bias fused into the accumulator would be scaled too: refused.
// CHECK-LABEL: func.func @bias_in_init
// CHECK-NOT: flashnorm.rms_inv
// REMARK: Function=bias_in_init | Remark="not deferred; user 'linalg.matmul' at {{.*}}: it accumulates into a non-zero init (a fused bias would be scaled too)"
func.func @bias_in_init(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>, %bias: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %n = flashnorm.rms_norm %x eps(1.0e-05) : tensor<4x8xf32>
  %y = linalg.matmul ins(%n, %w : tensor<4x8xf32>, tensor<8x16xf32>) outs(%bias : tensor<4x16xf32>) -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}

// -----

// An accumulator straight from tensor.empty is undefined, not a bias: the
// remark says what it is.
// CHECK-LABEL: func.func @empty_init
// CHECK-NOT: flashnorm.rms_inv
// REMARK: Function=empty_init | Remark="not deferred; user 'linalg.matmul' at {{.*}}: it accumulates into an uninitialized 'tensor.empty' (its result is undefined; fill it with zero)"
func.func @empty_init(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>) -> tensor<4x16xf32> {
  %n = flashnorm.rms_norm %x eps(1.0e-05) : tensor<4x8xf32>
  %e = tensor.empty() : tensor<4x16xf32>
  %y = linalg.matmul ins(%n, %w : tensor<4x8xf32>, tensor<8x16xf32>) outs(%e : tensor<4x16xf32>) -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}

// -----

// A norm that also feeds a non-projection keeps the norm for that user; with
// partial=false it is left alone.
// RUN: flashnorm-opt %s --flashnorm-defer-scale=partial=false --split-input-file \
// RUN:   --remarks-filter=flashnorm --remark-format=emitRemark 2>&1 >/dev/null \
// RUN:   | FileCheck %s --check-prefix=NOPARTIAL
// CHECK-LABEL: func.func @mixed_users
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>
// CHECK: %[[N:.*]] = flashnorm.rms_norm %[[X]]
// CHECK: %[[S:.*]] = flashnorm.rms_inv %[[X]]
// CHECK: %[[P:.*]] = linalg.matmul ins(%[[X]],
// CHECK: flashnorm.post_scale %[[P]], %[[S]]
// CHECK: math.exp %[[N]]
// REMARK: Function=mixed_users | Remark="deferred 1/RMS past 1 projection(s); kept the norm for the others; user 'math.exp' at {{.*}}: it is not a projection (matmul-like op)"
// NOPARTIAL: Function=mixed_users | Remark="not deferred; user 'math.exp' at {{.*}}: it is not a projection (matmul-like op)"
func.func @mixed_users(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>) -> (tensor<4x16xf32>, tensor<4x8xf32>) {
  %n = flashnorm.rms_norm %x eps(1.0e-05) : tensor<4x8xf32>
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x16xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<4x16xf32>) -> tensor<4x16xf32>
  %y = linalg.matmul ins(%n, %w : tensor<4x8xf32>, tensor<8x16xf32>) outs(%z : tensor<4x16xf32>) -> tensor<4x16xf32>
  %o = math.exp %n : tensor<4x8xf32>
  return %y, %o : tensor<4x16xf32>, tensor<4x8xf32>
}

// -----

// A projection behind a reshape that keeps the feature dimension: the same
// reshape is applied to the raw input and the statistic taken there.
// CHECK-LABEL: func.func @through_reshape
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x8xf32>
// CHECK: %[[C:.*]] = tensor.collapse_shape %[[X]] {{\[}}[0, 1], [2]] : tensor<2x3x8xf32> into tensor<6x8xf32>
// CHECK: %[[S:.*]] = flashnorm.rms_inv %[[C]] eps(1.000000e-05) : tensor<6x8xf32> -> tensor<6xf32>
// CHECK: %[[P:.*]] = linalg.matmul ins(%[[C]], %{{.*}} :
// CHECK: flashnorm.post_scale %[[P]], %[[S]]
// CHECK-NOT: flashnorm.rms_norm
func.func @through_reshape(%x: tensor<2x3x8xf32>, %w: tensor<8x16xf32>) -> tensor<6x16xf32> {
  %n = flashnorm.rms_norm %x eps(1.0e-05) : tensor<2x3x8xf32>
  %c = tensor.collapse_shape %n [[0, 1], [2]] : tensor<2x3x8xf32> into tensor<6x8xf32>
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<6x16xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<6x16xf32>) -> tensor<6x16xf32>
  %y = linalg.matmul ins(%c, %w : tensor<6x8xf32>, tensor<8x16xf32>) outs(%z : tensor<6x16xf32>) -> tensor<6x16xf32>
  return %y : tensor<6x16xf32>
}
