// RUN: flashnorm-opt %s --flashnorm-defer-scale --split-input-file | FileCheck %s
// RUN: flashnorm-opt %s --flashnorm-defer-scale --split-input-file \
// RUN:   --remarks-filter=flashnorm --remark-format=emitRemark 2>&1 >/dev/null \
// RUN:   | FileCheck %s --check-prefix=REMARK

// A weightless bf16 LayerNorm (fold-gains has folded its gain and bias)
// before three projections. The bf16 weights cannot carry the
// mean-centering: their projections run on the raw rows, accumulate in f32
// and subtract mean(x) times the weight's column sums in the post-scale,
// in both layouts (K x N: [22, 26, 30]; N x K, PyTorch's: [4, 2, 2]). The
// f32 weight is centered as before ([0, 0] once centered), and its
// post-scale takes 1/std from the same statistics.
// CHECK-LABEL: func.func @layouts
// CHECK-SAME: (%[[X:.*]]: tensor<5x4xbf16>
// CHECK-DAG: %[[WQ:.*]] = arith.constant dense<{{\[}}[1.000000e+00, 2.000000e+00, 3.000000e+00], {{.*}} : tensor<4x3xbf16>
// CHECK-DAG: %[[WV:.*]] = arith.constant dense<{{\[}}[-1.500000e+00, 0.000000e+00], [-5.000000e-01, 0.000000e+00], [5.000000e-01, 0.000000e+00], [1.500000e+00, 0.000000e+00]]> : tensor<4x2xf32>
// CHECK: %[[M:.*]], %[[S:.*]] = flashnorm.layer_stats %[[X]] eps(1.000000e-05) : tensor<5x4xbf16> -> tensor<5xf32>
// CHECK-NOT: flashnorm.layer_norm
// CHECK: %[[Q:.*]] = linalg.matmul ins(%[[X]], %[[WQ]] : tensor<5x4xbf16>, tensor<4x3xbf16>) outs(%{{.*}} : tensor<5x3xf32>)
// CHECK: %[[CQ:.*]] = arith.constant dense<[2.200000e+01, 2.600000e+01, 3.000000e+01]> : tensor<3xf32>
// CHECK: %[[YQ:.*]] = flashnorm.centered_post_scale %[[Q]], %[[S]], %[[M]], %[[CQ]] : tensor<5x3xf32>, tensor<5xf32>, tensor<3xf32> -> tensor<5x3xbf16>
// CHECK: %[[K:.*]] = linalg.matmul indexing_maps = {{.*}} ins(%[[X]], %{{.*}} : tensor<5x4xbf16>, tensor<3x4xbf16>) outs(%{{.*}} : tensor<5x3xf32>)
// CHECK: %[[CK:.*]] = arith.constant dense<[4.000000e+00, 2.000000e+00, 2.000000e+00]> : tensor<3xf32>
// CHECK: %[[YK:.*]] = flashnorm.centered_post_scale %[[K]], %[[S]], %[[M]], %[[CK]] : tensor<5x3xf32>, tensor<5xf32>, tensor<3xf32> -> tensor<5x3xf32>
// CHECK: %[[V:.*]] = linalg.matmul ins(%[[X]], %[[WV]] : tensor<5x4xbf16>, tensor<4x2xf32>)
// CHECK: %[[YV:.*]] = flashnorm.post_scale %[[V]], %[[S]] : tensor<5x2xf32>, tensor<5xf32> -> tensor<5x2xf32>
// CHECK: return %[[YQ]], %[[YK]], %[[YV]]
// REMARK: Function=layouts | Remark="deferred 1/std past 3 projection(s); 2 subtract(s) the mean's share after the projection (f16/bf16 weights cannot carry the mean-centering)"
func.func @layouts(%x: tensor<5x4xbf16>) -> (tensor<5x3xbf16>, tensor<5x3xf32>, tensor<5x2xf32>) {
  %wq = arith.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0], [10.0, 11.0, 12.0]]> : tensor<4x3xbf16>
  %wk = arith.constant dense<[[1.0, 1.0, 1.0, 1.0], [0.5, 0.5, 0.5, 0.5], [2.0, 0.0, 0.0, 0.0]]> : tensor<3x4xbf16>
  %wv = arith.constant dense<[[1.0, 0.5], [2.0, 0.5], [3.0, 0.5], [4.0, 0.5]]> : tensor<4x2xf32>
  %n = flashnorm.layer_norm %x eps(1.0e-05) : tensor<5x4xbf16>
  %c0 = arith.constant 0.0 : bf16
  %e = tensor.empty() : tensor<5x3xbf16>
  %z = linalg.fill ins(%c0 : bf16) outs(%e : tensor<5x3xbf16>) -> tensor<5x3xbf16>
  %q = linalg.matmul ins(%n, %wq : tensor<5x4xbf16>, tensor<4x3xbf16>) outs(%z : tensor<5x3xbf16>) -> tensor<5x3xbf16>
  %f0 = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<5x3xf32>
  %z1 = linalg.fill ins(%f0 : f32) outs(%e1 : tensor<5x3xf32>) -> tensor<5x3xf32>
  %k = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
      ins(%n, %wk : tensor<5x4xbf16>, tensor<3x4xbf16>) outs(%z1 : tensor<5x3xf32>) -> tensor<5x3xf32>
  %e2 = tensor.empty() : tensor<5x2xf32>
  %z2 = linalg.fill ins(%f0 : f32) outs(%e2 : tensor<5x2xf32>) -> tensor<5x2xf32>
  %v = linalg.matmul ins(%n, %wv : tensor<5x4xbf16>, tensor<4x2xf32>) outs(%z2 : tensor<5x2xf32>) -> tensor<5x2xf32>
  return %q, %k, %v : tensor<5x3xbf16>, tensor<5x3xf32>, tensor<5x2xf32>
}

// -----

// TOSA's batched form: the [1, K, N] weight's unit batch leaves one sum per
// output. Two LayerNorms of one f16 input share its statistics.
// CHECK-LABEL: func.func @tosa_shared
// CHECK-SAME: (%[[X:.*]]: tensor<1x2x4xf16>
// CHECK: %[[M:.*]], %[[S:.*]] = flashnorm.layer_stats %[[X]] eps(1.000000e-05)
// CHECK-NOT: flashnorm.layer_stats
// CHECK: %[[A:.*]] = tosa.matmul %[[X]]
// CHECK: %[[C:.*]] = arith.constant dense<[1.000000e+01, -2.000000e+00]> : tensor<2xf32>
// CHECK: flashnorm.centered_post_scale %[[A]], %[[S]], %[[M]], %[[C]] : tensor<1x2x2xf32>, tensor<1x2xf32>, tensor<2xf32> -> tensor<1x2x2xf32>
// CHECK: %[[B:.*]] = tosa.matmul %[[X]]
// CHECK: flashnorm.centered_post_scale %[[B]], %[[S]], %[[M]], %{{.*}} : tensor<1x2x2xf32>, tensor<1x2xf32>, tensor<2xf32> -> tensor<1x2x2xf32>
func.func @tosa_shared(%x: tensor<1x2x4xf16>) -> (tensor<1x2x2xf32>, tensor<1x2x2xf32>) {
  %w = "tosa.const"() <{values = dense<[[[1.0, -1.0], [2.0, 0.0], [3.0, 0.0], [4.0, -1.0]]]> : tensor<1x4x2xf16>}> : () -> tensor<1x4x2xf16>
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf16>}> : () -> tensor<1xf16>
  %n = flashnorm.layer_norm %x eps(1.0e-05) : tensor<1x2x4xf16>
  %a = tosa.matmul %n, %w, %zp, %zp : (tensor<1x2x4xf16>, tensor<1x4x2xf16>, tensor<1xf16>, tensor<1xf16>) -> tensor<1x2x2xf32>
  %n2 = flashnorm.layer_norm %x eps(1.0e-05) : tensor<1x2x4xf16>
  %b = tosa.matmul %n2, %w, %zp, %zp : (tensor<1x2x4xf16>, tensor<1x4x2xf16>, tensor<1xf16>, tensor<1xf16>) -> tensor<1x2x2xf32>
  return %a, %b : tensor<1x2x2xf32>, tensor<1x2x2xf32>
}

// -----

// Refused: a weight per batch has column sums per batch and output, not one
// per output; an extern bf16 weight's sums are in a checkpoint.
// CHECK-LABEL: func.func @refused
// CHECK-COUNT-2: flashnorm.layer_norm
// CHECK-NOT: flashnorm.layer_stats
// REMARK-DAG: Function=refused | Remark="not deferred; user 'linalg.batch_matmul' at {{.*}}: the column sums of its weight (which a narrow weight needs in place of the mean-centering) are not one per output"
// REMARK-DAG: Function=refused | Remark="not deferred; user 'linalg.matmul' at {{.*}}: the mean-centering cannot be folded: its weight is the extern global @w, and its f16/bf16 values cannot carry the mean-centering: its column sums are not known before the checkpoint is read"
ml_program.global private @w(#ml_program.extern : tensor<4x3xbf16>) : tensor<4x3xbf16>
func.func @refused(%x: tensor<2x5x4xbf16>, %y: tensor<5x4xbf16>) -> (tensor<2x5x3xf32>, tensor<5x3xf32>) {
  %wb = arith.constant dense<1.0> : tensor<2x4x3xbf16>
  %n = flashnorm.layer_norm %x eps(1.0e-05) : tensor<2x5x4xbf16>
  %f0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x5x3xf32>
  %z = linalg.fill ins(%f0 : f32) outs(%e : tensor<2x5x3xf32>) -> tensor<2x5x3xf32>
  %p = linalg.batch_matmul ins(%n, %wb : tensor<2x5x4xbf16>, tensor<2x4x3xbf16>) outs(%z : tensor<2x5x3xf32>) -> tensor<2x5x3xf32>
  %w = ml_program.global_load_const @w : tensor<4x3xbf16>
  %m = flashnorm.layer_norm %y eps(1.0e-05) : tensor<5x4xbf16>
  %e2 = tensor.empty() : tensor<5x3xf32>
  %z2 = linalg.fill ins(%f0 : f32) outs(%e2 : tensor<5x3xf32>) -> tensor<5x3xf32>
  %q = linalg.matmul ins(%m, %w : tensor<5x4xbf16>, tensor<4x3xbf16>) outs(%z2 : tensor<5x3xf32>) -> tensor<5x3xf32>
  return %p, %q : tensor<2x5x3xf32>, tensor<5x3xf32>
}

// -----

// A flashnorm.column_sums mark (fold-gains' for a checkpoint's weight) that
// names no global of one sum per output in the statistic's type: refused.
// CHECK-LABEL: func.func @bad_sums
// CHECK: flashnorm.layer_norm
// CHECK-NOT: flashnorm.layer_stats
// REMARK: Function=bad_sums | Remark="not deferred; user 'linalg.matmul' at {{.*}}: its column sums (flashnorm.column_sums) are not an immutable global of tensor<3xf32>"
ml_program.global private @sums(#ml_program.extern : tensor<3xf64>) : tensor<3xf64>
func.func @bad_sums(%x: tensor<5x4xbf16>, %w: tensor<4x3xbf16>) -> tensor<5x3xf32> {
  %n = flashnorm.layer_norm %x eps(1.0e-05) : tensor<5x4xbf16>
  %f0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<5x3xf32>
  %z = linalg.fill ins(%f0 : f32) outs(%e : tensor<5x3xf32>) -> tensor<5x3xf32>
  %p = linalg.matmul {flashnorm.column_sums = @sums} ins(%n, %w : tensor<5x4xbf16>, tensor<4x3xbf16>) outs(%z : tensor<5x3xf32>) -> tensor<5x3xf32>
  return %p : tensor<5x3xf32>
}

// -----

// A flashnorm.column_sums_argument mark (fold-gains' for an argument
// weight, which the prepare function sums) that names no argument of one
// sum per output in the statistic's type (here past the last one, and one
// of f64): refused.
// CHECK-LABEL: func.func @bad_sums_argument
// CHECK: flashnorm.layer_norm
// CHECK-NOT: flashnorm.layer_stats
// REMARK: Function=bad_sums_argument | Remark="not deferred; user 'linalg.matmul' at {{.*}}: its column sums (flashnorm.column_sums_argument) are not an argument of tensor<3xf32>"
// REMARK: Function=sums_argument_f64 | Remark="not deferred; user 'linalg.matmul' at {{.*}}: its column sums (flashnorm.column_sums_argument) are not an argument of tensor<3xf32>"
func.func @bad_sums_argument(%x: tensor<5x4xbf16>, %w: tensor<4x3xbf16>) -> tensor<5x3xf32> {
  %n = flashnorm.layer_norm %x eps(1.0e-05) : tensor<5x4xbf16>
  %f0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<5x3xf32>
  %z = linalg.fill ins(%f0 : f32) outs(%e : tensor<5x3xf32>) -> tensor<5x3xf32>
  %p = linalg.matmul {flashnorm.column_sums_argument = 2 : i64} ins(%n, %w : tensor<5x4xbf16>, tensor<4x3xbf16>) outs(%z : tensor<5x3xf32>) -> tensor<5x3xf32>
  return %p : tensor<5x3xf32>
}
func.func @sums_argument_f64(%x: tensor<5x4xbf16>, %w: tensor<4x3xbf16>, %sums: tensor<3xf64>) -> tensor<5x3xf32> {
  %n = flashnorm.layer_norm %x eps(1.0e-05) : tensor<5x4xbf16>
  %f0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<5x3xf32>
  %z = linalg.fill ins(%f0 : f32) outs(%e : tensor<5x3xf32>) -> tensor<5x3xf32>
  %p = linalg.matmul {flashnorm.column_sums_argument = 2 : i64} ins(%n, %w : tensor<5x4xbf16>, tensor<4x3xbf16>) outs(%z : tensor<5x3xf32>) -> tensor<5x3xf32>
  return %p : tensor<5x3xf32>
}

// -----

// A weight whose one dimension besides k is not the loop of the result's
// last dimension (here m, which the result's rows also index): its column
// sums are not the outputs' (with M == N the counts agree, and only the
// diagonal came out right). Refused.
// CHECK-LABEL: func.func @odd_columns
// CHECK: flashnorm.layer_norm
// CHECK-NOT: flashnorm.layer_stats
// REMARK: Function=odd_columns | Remark="not deferred; user 'linalg.generic' at {{.*}}: the column sums of its weight (which a narrow weight needs in place of the mean-centering) are not one per output"
func.func @odd_columns(%x: tensor<3x8xbf16>) -> tensor<3x3xf32> {
  %w = arith.constant dense<[[0.0, 0.71875, 0.390625], [0.484375, 0.609375, -0.390625], [0.734375, 0.03125, -0.75], [0.640625, -0.5625, -0.28125], [0.25, -0.734375, 0.5], [-0.265625, -0.34375, 0.734375], [-0.65625, 0.296875, 0.171875], [-0.734375, 0.71875, -0.578125]]> : tensor<8x3xbf16>
  %n = flashnorm.layer_norm %x eps(1.0e-05) : tensor<3x8xbf16>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<3x3xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<3x3xf32>) -> tensor<3x3xf32>
  %q = linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (k, m)>, affine_map<(m, n, k) -> (m, n)>], iterator_types = ["parallel", "parallel", "reduction"]}
     ins(%n, %w : tensor<3x8xbf16>, tensor<8x3xbf16>) outs(%f : tensor<3x3xf32>) {
  ^bb0(%a: bf16, %b: bf16, %o: f32):
    %aa = arith.extf %a : bf16 to f32
    %bb = arith.extf %b : bf16 to f32
    %p = arith.mulf %aa, %bb : f32
    %s = arith.addf %o, %p : f32
    linalg.yield %s : f32
  } -> tensor<3x3xf32>
  return %q : tensor<3x3xf32>
}

// -----

// Two LayerNorms of one x, one before a bf16 weight (it needs the mean
// and 1/std), one before an f32 weight (centered: 1/std alone), which the
// driver rewrites first. The 1/std made for it becomes the mean and 1/std
// the other needs: one statistic of x, not a layer_inv beside a
// layer_stats.
// CHECK-LABEL: func.func @upgraded_statistic
// CHECK-SAME: (%[[X:.*]]: tensor<5x4xbf16>
// CHECK-NOT: flashnorm.layer_inv
// CHECK: %[[M:.*]], %[[S:.*]] = flashnorm.layer_stats %[[X]] eps(1.000000e-05)
// CHECK-NOT: flashnorm.layer_inv
// CHECK-NOT: flashnorm.layer_stats
// CHECK: %[[Q:.*]] = linalg.matmul ins(%[[X]], %{{.*}} : tensor<5x4xbf16>, tensor<4x3xbf16>)
// CHECK: flashnorm.centered_post_scale %[[Q]], %[[S]], %[[M]], %{{.*}} : tensor<5x3xf32>, tensor<5xf32>, tensor<3xf32> -> tensor<5x3xf32>
// CHECK-NOT: flashnorm.layer_inv
// CHECK: %[[V:.*]] = linalg.matmul ins(%[[X]], %{{.*}} : tensor<5x4xbf16>, tensor<4x2xf32>)
// CHECK: flashnorm.post_scale %[[V]], %[[S]] : tensor<5x2xf32>, tensor<5xf32> -> tensor<5x2xf32>
func.func @upgraded_statistic(%x: tensor<5x4xbf16>) -> (tensor<5x3xf32>, tensor<5x2xf32>) {
  %wv = arith.constant dense<[[1.0, 0.5], [2.0, 0.5], [3.0, 0.5], [4.0, 0.5]]> : tensor<4x2xf32>
  %wq = arith.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0], [10.0, 11.0, 12.0]]> : tensor<4x3xbf16>
  %f0 = arith.constant 0.0 : f32
  %n2 = flashnorm.layer_norm %x eps(1.0e-05) : tensor<5x4xbf16>
  %e2 = tensor.empty() : tensor<5x3xf32>
  %z2 = linalg.fill ins(%f0 : f32) outs(%e2 : tensor<5x3xf32>) -> tensor<5x3xf32>
  %q = linalg.matmul ins(%n2, %wq : tensor<5x4xbf16>, tensor<4x3xbf16>) outs(%z2 : tensor<5x3xf32>) -> tensor<5x3xf32>
  %n1 = flashnorm.layer_norm %x eps(1.0e-05) : tensor<5x4xbf16>
  %e1 = tensor.empty() : tensor<5x2xf32>
  %z1 = linalg.fill ins(%f0 : f32) outs(%e1 : tensor<5x2xf32>) -> tensor<5x2xf32>
  %v = linalg.matmul ins(%n1, %wv : tensor<5x4xbf16>, tensor<4x2xf32>) outs(%z1 : tensor<5x2xf32>) -> tensor<5x2xf32>
  return %q, %v : tensor<5x3xf32>, tensor<5x2xf32>
}
