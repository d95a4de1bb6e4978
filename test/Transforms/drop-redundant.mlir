// RUN: flashnorm-opt %s --flashnorm-drop-redundant --split-input-file | FileCheck %s
// RUN: flashnorm-opt %s --flashnorm-drop-redundant --split-input-file \
// RUN:   --remarks-filter=flashnorm --remark-format=emitRemark 2>&1 >/dev/null \
// RUN:   | FileCheck %s --check-prefix=REMARK
// --flashnorm runs the pass before fold-gains and after it: each refusal
// is reported once, by the second run.
// RUN: flashnorm-opt %s --flashnorm --split-input-file \
// RUN:   --remarks-filter=flashnorm --remark-format=emitRemark 2>&1 >/dev/null \
// RUN:   | FileCheck %s --check-prefix=ONCE
// RUN: flashnorm-opt %s --flashnorm-drop-redundant=allow-approximate=true \
// RUN:   --split-input-file | FileCheck %s --check-prefix=APPROX-IR
// RUN: flashnorm-opt %s --flashnorm-drop-redundant=allow-approximate=true \
// RUN:   --split-input-file --remarks-filter=flashnorm \
// RUN:   --remark-format=emitRemark 2>&1 >/dev/null | FileCheck %s --check-prefix=APPROX

// Consecutive norms, weightless inner: one norm with eps' = e1 e2 / (1 + e2)
// and gain g / sqrt(1 + e2) (folded in f32 since g is constant).
// CHECK-LABEL: func.func @consecutive
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>
// CHECK: %[[G:.*]] = arith.constant dense<[0.999999463, 1.99999893, 0.999999463, 1.99999893, 0.999999463, 1.99999893, 0.999999463, 1.99999893]> : tensor<8xf32>
// CHECK: %[[N:.*]] = flashnorm.rms_norm %[[X]] gain(%[[G]] : tensor<8xf32>) eps(1.099998790001331E-12) : tensor<4x8xf32>
// CHECK-NEXT: return %[[N]]
// REMARK: Function=consecutive | Remark="merged two consecutive norms (exact): scale 1, eps 1.1e-12"
func.func @consecutive(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %g = arith.constant dense<[1.0, 2.0, 1.0, 2.0, 1.0, 2.0, 1.0, 2.0]> : tensor<8xf32>
  %a = flashnorm.rms_norm %x eps(1.0e-06) : tensor<4x8xf32>
  %b = flashnorm.rms_norm %a gain(%g : tensor<8xf32>) eps(1.1e-06) : tensor<4x8xf32>
  return %b : tensor<4x8xf32>
}

// -----

// A uniform constant multiply between the norms, an inner uniform one_plus
// gain, and a runtime one_plus outer gain in bf16 (widened before 1 + g).
// CHECK-LABEL: func.func @scaled_between
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>, %[[G:.*]]: tensor<8xbf16>
// CHECK: %[[W:.*]] = arith.extf %[[G]] : tensor<8xbf16> to tensor<8xf32>
// CHECK: %[[P:.*]] = arith.addf %[[W]], %{{.*}} : tensor<8xf32>
// CHECK: %[[F:.*]] = arith.mulf %[[P]], %{{.*}} : tensor<8xf32>
// CHECK: flashnorm.rms_norm %[[X]] gain(%[[F]] : tensor<8xf32>) eps({{.*}}) : tensor<4x8xf32>
// CHECK-NOT: flashnorm.rms_norm
// REMARK: Function=scaled_between | Remark="merged two consecutive norms (exact): scale 6, eps
func.func @scaled_between(%x: tensor<4x8xf32>, %g: tensor<8xbf16>) -> tensor<4x8xf32> {
  %gi = arith.constant dense<2.0> : tensor<8xf32>
  %c = arith.constant dense<2.0> : tensor<4x8xf32>
  %a = flashnorm.rms_norm %x gain(%gi : tensor<8xf32>) eps(1.0e-06) convention one_plus : tensor<4x8xf32>
  %m = arith.mulf %c, %a : tensor<4x8xf32>
  %b = flashnorm.rms_norm %m gain(%g : tensor<8xbf16>) eps(1.0e-05) convention one_plus : tensor<4x8xf32>
  return %b : tensor<4x8xf32>
}

// -----

// Refused: a per-feature inner gain does not commute with the outer norm.
// CHECK-LABEL: func.func @inner_gain_not_uniform
// CHECK: flashnorm.rms_norm
// CHECK: flashnorm.rms_norm
// REMARK: Function=inner_gain_not_uniform | Remark="not merged with the norm before it: its gain is not a uniform constant"
func.func @inner_gain_not_uniform(%x: tensor<4x2xf32>) -> tensor<4x2xf32> {
  %g = arith.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %a = flashnorm.rms_norm %x gain(%g : tensor<2xf32>) eps(1.0e-06) : tensor<4x2xf32>
  %b = flashnorm.rms_norm %a eps(1.0e-06) : tensor<4x2xf32>
  return %b : tensor<4x2xf32>
}

// -----

// Refused: a zero scale between the norms.
// CHECK-LABEL: func.func @zero_scale
// CHECK: %[[A:.*]] = flashnorm.rms_norm %arg0
// CHECK: %[[M:.*]] = arith.mulf %[[A]]
// CHECK: flashnorm.rms_norm %[[M]]
// REMARK: Function=zero_scale | Remark="not merged: the scale between the norms is 0"
func.func @zero_scale(%x: tensor<4x2xf32>) -> tensor<4x2xf32> {
  %c = arith.constant dense<0.0> : tensor<4x2xf32>
  %a = flashnorm.rms_norm %x eps(1.0e-06) : tensor<4x2xf32>
  %m = arith.mulf %a, %c : tensor<4x2xf32>
  %b = flashnorm.rms_norm %m eps(1.0e-06) : tensor<4x2xf32>
  return %b : tensor<4x2xf32>
}

// -----

// A merge whose epsilon e1 e2 / (c^2 + e2) falls below f32's normal range
// (1e-20 * 1e-20 / (1e6^2)): the statistic adds eps in f32, where it would
// vanish and a zero row would give 0/0. Refused; both norms stay.
// CHECK-LABEL: func.func @eps_underflow
// CHECK: flashnorm.rms_norm
// CHECK: flashnorm.rms_norm
// REMARK: Function=eps_underflow | Remark="not merged: the merged epsilon 1e-52 is below f32's normal range"
func.func @eps_underflow(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %c = arith.constant dense<1.0e+06> : tensor<4x8xf32>
  %a = flashnorm.rms_norm %x eps(1.0e-20) : tensor<4x8xf32>
  %s = arith.mulf %a, %c : tensor<4x8xf32>
  %b = flashnorm.rms_norm %s eps(1.0e-20) : tensor<4x8xf32>
  return %b : tensor<4x8xf32>
}

// -----

// Cancellation (QK-norm shape): norm -> projection -> expand_shape -> norm
// over each head. With eps = 0 it is exact and always done; the first norm
// stays for V, which does not reach a second norm.
// CHECK-LABEL: func.func @qk_norm_exact
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>
// CHECK: %[[N:.*]] = flashnorm.rms_norm %[[X]]
// CHECK: %[[Q:.*]] = linalg.matmul ins(%[[X]], %{{.*}} :
// CHECK: %[[QH:.*]] = tensor.expand_shape %[[Q]]
// The second norm reads the raw scale: its statistic runs in f64.
// CHECK: %[[W:.*]] = arith.extf %[[QH]] : tensor<4x2x4xf32> to tensor<4x2x4xf64>
// CHECK: %[[QN:.*]] = flashnorm.rms_norm %[[W]] eps(0.000000e+00) : tensor<4x2x4xf64>
// CHECK: arith.truncf %[[QN]] : tensor<4x2x4xf64> to tensor<4x2x4xf32>
// CHECK: linalg.matmul ins(%[[N]], %{{.*}} :
// REMARK: Function=qk_norm_exact | Remark="cancelled the scale of the norm at {{.*}} (exact: eps = 0; the statistic in f64)"
func.func @qk_norm_exact(%x: tensor<4x8xf32>, %wq: tensor<8x8xf32>, %wv: tensor<8x8xf32>)
    -> (tensor<4x2x4xf32>, tensor<4x8xf32>) {
  %n = flashnorm.rms_norm %x eps(1.0e-06) : tensor<4x8xf32>
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x8xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  %q = linalg.matmul ins(%n, %wq : tensor<4x8xf32>, tensor<8x8xf32>) outs(%z : tensor<4x8xf32>) -> tensor<4x8xf32>
  %qh = tensor.expand_shape %q [[0], [1, 2]] output_shape [4, 2, 4] : tensor<4x8xf32> into tensor<4x2x4xf32>
  %qn = flashnorm.rms_norm %qh eps(0.0) : tensor<4x2x4xf32>
  %v = linalg.matmul ins(%n, %wv : tensor<4x8xf32>, tensor<8x8xf32>) outs(%z : tensor<4x8xf32>) -> tensor<4x8xf32>
  return %qn, %v : tensor<4x2x4xf32>, tensor<4x8xf32>
}

// -----

// With eps > 0 the cancellation is approximate: refused by default, done and
// reported with its bound under allow-approximate.
// CHECK-LABEL: func.func @qk_norm_eps
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>
// CHECK: %[[N:.*]] = flashnorm.rms_norm %[[X]]
// CHECK: linalg.matmul ins(%[[N]], %{{.*}} :
// REMARK: Function=qk_norm_eps | Remark="not cancelled: exact only for eps = 0 (this norm has eps 1e-06); enable allow-approximate"
// ONCE: flashnorm-drop-redundant | Category:flashnorm | Function=qk_norm_eps | Remark="not cancelled: exact only for eps = 0 (this norm has eps 1e-06); enable allow-approximate"
// ONCE-NOT: Function=qk_norm_eps | Remark="not cancelled
// ONCE: flashnorm-drop-redundant | Category:flashnorm | Function=qk_norm_eps | Remark="0 rewritten (0 approximate), 1 refused"
// APPROX-IR-LABEL: func.func @qk_norm_eps
// APPROX-IR-NOT: flashnorm.rms_norm %arg0
// APPROX-IR: linalg.matmul ins(%arg0, %{{.*}} :
// APPROX: Function=qk_norm_eps | Remark="approximate: cancelled the scale of the norm at {{.*}}; per-row relative error |sqrt((my + 1e-06 * (mx + 1e-05)) / (my + 1e-06)) - 1|, about 1e-06 * |mx + 1e-05 - 1| / (2 * my)
func.func @qk_norm_eps(%x: tensor<4x8xf32>, %wq: tensor<8x8xf32>) -> tensor<2x4x4xf32> {
  %n = flashnorm.rms_norm %x eps(1.0e-05) : tensor<4x8xf32>
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x8xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  %q = linalg.matmul ins(%n, %wq : tensor<4x8xf32>, tensor<8x8xf32>) outs(%z : tensor<4x8xf32>) -> tensor<4x8xf32>
  %qh = tensor.expand_shape %q [[0], [1, 2]] output_shape [4, 2, 4] : tensor<4x8xf32> into tensor<4x2x4xf32>
  %e2 = tensor.empty() : tensor<2x4x4xf32>
  %qt = linalg.transpose ins(%qh : tensor<4x2x4xf32>) outs(%e2 : tensor<2x4x4xf32>) permutation = [1, 0, 2]
  %qn = flashnorm.rms_norm %qt eps(1.0e-06) : tensor<2x4x4xf32>
  return %qn : tensor<2x4x4xf32>
}

// -----

// Not cancelled: a collapse that merges rows, and a bias in the accumulator.
// Both second norms have eps 0 (exact): only these refusals keep the first
// norm, so both projections must still read it.
// CHECK-LABEL: func.func @not_cancellable
// CHECK: %[[N:.*]] = flashnorm.rms_norm %arg0
// CHECK: linalg.matmul ins(%[[N]], %{{.*}} :
// CHECK: flashnorm.rms_norm %{{.*}} eps(0.000000e+00) : tensor<32xf32>
// CHECK: linalg.matmul ins(%[[N]], %{{.*}} : {{.*}} outs(%arg2 :
// REMARK: Function=not_cancellable | Remark="not cancelled: the projection between the norms does not keep rows or has a bias"
// REMARK: Function=not_cancellable | Remark="0 rewritten (0 approximate), 1 refused"
// APPROX-IR-LABEL: func.func @not_cancellable
// APPROX-IR: %[[AN:.*]] = flashnorm.rms_norm %arg0
// APPROX-IR: linalg.matmul ins(%[[AN]], %{{.*}} :
// APPROX-IR: linalg.matmul ins(%[[AN]], %{{.*}} :
// APPROX-IR-LABEL: func.func @runtime_f64_gain
// APPROX-NOT: Function=not_cancellable | Remark="approximate
func.func @not_cancellable(%x: tensor<4x8xf32>, %wq: tensor<8x8xf32>, %b: tensor<4x8xf32>)
    -> (tensor<32xf32>, tensor<4x8xf32>) {
  %n = flashnorm.rms_norm %x eps(1.0e-05) : tensor<4x8xf32>
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x8xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  %q = linalg.matmul ins(%n, %wq : tensor<4x8xf32>, tensor<8x8xf32>) outs(%z : tensor<4x8xf32>) -> tensor<4x8xf32>
  %flat = tensor.collapse_shape %q [[0, 1]] : tensor<4x8xf32> into tensor<32xf32>
  %qn = flashnorm.rms_norm %flat eps(0.0) : tensor<32xf32>
  %k = linalg.matmul ins(%n, %wq : tensor<4x8xf32>, tensor<8x8xf32>) outs(%b : tensor<4x8xf32>) -> tensor<4x8xf32>
  %kn = flashnorm.rms_norm %k eps(0.0) : tensor<4x8xf32>
  return %qn, %kn : tensor<32xf32>, tensor<4x8xf32>
}

// -----

// A runtime f64 gain keeps f64 for the correction (never narrowed).
// CHECK-LABEL: func.func @runtime_f64_gain
// CHECK: %[[C:.*]] = arith.constant dense<0.99999500003749975> : tensor<8xf64>
// CHECK: %[[G:.*]] = arith.mulf %arg1, %[[C]] : tensor<8xf64>
// CHECK: flashnorm.rms_norm %arg0 gain(%[[G]] : tensor<8xf64>)
func.func @runtime_f64_gain(%x: tensor<4x8xf32>, %g: tensor<8xf64>) -> tensor<4x8xf32> {
  %n = flashnorm.rms_norm %x eps(1.0e-05) : tensor<4x8xf32>
  %m = flashnorm.rms_norm %n gain(%g : tensor<8xf64>) eps(1.0e-05) : tensor<4x8xf32>
  return %m : tensor<4x8xf32>
}

// -----

// A projection narrower than f32 between the norms: without the first norm
// its product of the raw input could overflow (f16 past 65504) where the
// normalized one fits. Refused, whatever the eps.
// CHECK-LABEL: func.func @narrow_between
// CHECK: flashnorm.rms_norm %{{.*}} eps(9.99
// CHECK: flashnorm.rms_norm %{{.*}} eps(0.000000e+00) : tensor<4x8xf16>
// REMARK: Function=narrow_between | Remark="not cancelled: the f16 projection of the raw input could overflow without the first norm"
func.func @narrow_between(%x: tensor<4x8xf16>, %wq: tensor<8x8xf16>) -> tensor<4x8xf16> {
  %n = flashnorm.rms_norm %x eps(1.0e-06) : tensor<4x8xf16>
  %c0 = arith.constant 0.0 : f16
  %e = tensor.empty() : tensor<4x8xf16>
  %z = linalg.fill ins(%c0 : f16) outs(%e : tensor<4x8xf16>) -> tensor<4x8xf16>
  %q = linalg.matmul ins(%n, %wq : tensor<4x8xf16>, tensor<8x8xf16>) outs(%z : tensor<4x8xf16>) -> tensor<4x8xf16>
  %qn = flashnorm.rms_norm %q eps(0.0) : tensor<4x8xf16>
  return %qn : tensor<4x8xf16>
}

// -----

// With e1 = 0 the merged eps would be 0 and the merged norm would read the
// raw row: a row of 1e-22, whose mean square is an f32 subnormal, had a
// 1/RMS 7.7% off, which the original's second norm corrected. Not merged.
// CHECK-LABEL: func.func @e1_zero
// CHECK-COUNT-2: flashnorm.rms_norm
// REMARK: Function=e1_zero | Remark="not merged: the norm before it has eps 0, so the merged one would too, and its f32 statistic of rows below ~1e-19 is inaccurate where the original's is corrected"
func.func @e1_zero(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %a = flashnorm.rms_norm %x eps(0.0) : tensor<4x8xf32>
  %b = flashnorm.rms_norm %a eps(1.0e-05) : tensor<4x8xf32>
  return %b : tensor<4x8xf32>
}

// -----

// A scale between the norms whose products the original cannot hold: its
// rows come out 0 (or NaN), the merged norm's would not. 1e20 on 8
// features: a sum of squares up to 8e40, past f32; 4e4 on f16: elements
// up to 4e4 sqrt(8), past 65504; 11072 on 35 f16 features: 65502.8,
// but f16's sqrt(35) rounds up, and the original's product to inf.
// CHECK-LABEL: func.func @scale_overflows
// CHECK-COUNT-6: flashnorm.rms_norm
// REMARK-DAG: Function=scale_overflows | Remark="not merged: the original's sum of squares (up to c^2 K = 8e+40) overflows f32, where its rows come out 0"
// REMARK-DAG: Function=scale_overflows | Remark="not merged: the original's scaled row (up to |c| sqrt(K) = 113137) overflows f16"
// REMARK-DAG: Function=scale_overflows | Remark="not merged: the original's scaled row (up to |c| sqrt(K) = 65502.8) overflows f16"
func.func @scale_overflows(%x: tensor<4x8xf32>, %h: tensor<4x8xf16>, %h35: tensor<1x35xf16>)
    -> (tensor<4x8xf32>, tensor<4x8xf16>, tensor<1x35xf16>) {
  %a = flashnorm.rms_norm %x eps(1.0e-05) : tensor<4x8xf32>
  %c = arith.constant dense<1.0e20> : tensor<4x8xf32>
  %m = arith.mulf %a, %c : tensor<4x8xf32>
  %b = flashnorm.rms_norm %m eps(1.0e-05) : tensor<4x8xf32>
  %a35 = flashnorm.rms_norm %h35 eps(1.0e-05) : tensor<1x35xf16>
  %c35 = arith.constant dense<11072.0> : tensor<1x35xf16>
  %m35 = arith.mulf %a35, %c35 : tensor<1x35xf16>
  %b35 = flashnorm.rms_norm %m35 eps(1.0e-05) : tensor<1x35xf16>
  %ah = flashnorm.rms_norm %h eps(1.0e-05) : tensor<4x8xf16>
  %ch = arith.constant dense<4.0e4> : tensor<4x8xf16>
  %mh = arith.mulf %ah, %ch : tensor<4x8xf16>
  %bh = flashnorm.rms_norm %mh eps(1.0e-05) : tensor<4x8xf16>
  return %b, %bh, %b35 : tensor<4x8xf32>, tensor<4x8xf16>, tensor<1x35xf16>
}
