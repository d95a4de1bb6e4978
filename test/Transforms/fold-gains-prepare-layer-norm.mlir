// RUN: flashnorm-opt %s --flashnorm-fold-gains=prepare-function=true --split-input-file | FileCheck %s
// RUN: flashnorm-opt %s --flashnorm-fold-gains=prepare-function=true --split-input-file \
// RUN:   --remarks-filter=flashnorm --remark-format=emitRemark 2>&1 >/dev/null \
// RUN:   | FileCheck %s --check-prefix=REMARK
// Folded once: run again, the pass finds nothing to fold and says nothing
// (the weights are centered or summed already, the prepare functions exist).
// RUN: flashnorm-opt %s --flashnorm-fold-gains=prepare-function=true --split-input-file -o %t.once.mlir
// RUN: flashnorm-opt %t.once.mlir --flashnorm-fold-gains=prepare-function=true --split-input-file -o %t.twice.mlir 2>&1 | count 0
// RUN: diff %t.once.mlir %t.twice.mlir
// Then defer-scale: the post-scales read the prepared column sums.
// RUN: flashnorm-opt %s --split-input-file \
// RUN:   --pass-pipeline="builtin.module(flashnorm-fold-gains{prepare-function=true},func.func(flashnorm-defer-scale))" \
// RUN:   | FileCheck %s --check-prefix=DEFER

// A LayerNorm's gain and bias as GPT-2's importers pass them, arguments,
// through f32 argument weights (one K x N, one N x K behind a transpose):
// the prepare function folds the gain and the centering into each weight,
// and the bias through it, sum_k b[k] W[k, n], into an argument appended to
// @gpt2 (marked folded, as the weights), which the projection's product
// adds. The caller passes the prepare function's results in order.
// CHECK-LABEL: func.func @gpt2(
// CHECK-SAME: %{{.*}}: tensor<8x16xf32> {flashnorm.folded}, %{{.*}}: tensor<16x8xf32> {flashnorm.folded}, %[[BK:[^:]*]]: tensor<16xf32> {flashnorm.folded}, %[[BQ:[^:]*]]: tensor<16xf32> {flashnorm.folded})
// CHECK: %[[N:.*]] = flashnorm.layer_norm %{{.*}} eps(1.000000e-05) : tensor<4x8xf32>
// CHECK: %[[Q:.*]] = linalg.matmul {flashnorm.centered_weights} ins(%[[N]],
// CHECK: %[[QB:.*]] = linalg.generic {{.*}} ins(%[[Q]], %[[BQ]] : tensor<4x16xf32>, tensor<16xf32>)
// CHECK: %[[K:.*]] = linalg.matmul {flashnorm.centered_weights} ins(%[[N]],
// CHECK: %[[KB:.*]] = linalg.generic {{.*}} ins(%[[K]], %[[BK]] : tensor<4x16xf32>, tensor<16xf32>)
// CHECK: return %[[QB]], %[[KB]]
// CHECK-LABEL: func.func @gpt2_flashnorm_prepare(
// CHECK-SAME: %[[X:[^:]*]]: tensor<4x8xf32>, %[[G:[^:]*]]: tensor<8xf32>, %[[B:[^:]*]]: tensor<8xf32>, %[[WQ:[^:]*]]: tensor<8x16xf32>, %[[WK:[^:]*]]: tensor<16x8xf32>) -> (tensor<8x16xf32>, tensor<16x8xf32>, tensor<16xf32>, tensor<16xf32>)
// The bias through the weights as they came in, summed along k.
// CHECK: %[[SQ:.*]] = linalg.generic {{.*}} iterator_types = ["reduction", "parallel"]} ins(%[[WQ]], %[[B]] : tensor<8x16xf32>, tensor<8xf32>)
// CHECK: %[[SK:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%[[WK]], %[[B]] : tensor<16x8xf32>, tensor<8xf32>)
// CHECK: return %{{.*}}, %{{.*}}, %[[SK]], %[[SQ]]
// CHECK-LABEL: func.func @caller
// CHECK: %[[P:.*]]:4 = call @gpt2_flashnorm_prepare(%arg0, %arg1, %arg2, %arg3, %arg4)
// CHECK: call @gpt2(%arg0, %arg1, %arg2, %[[P]]#0, %[[P]]#1, %[[P]]#2, %[[P]]#3)
// REMARK: Function=gpt2 | Remark="folded the gain and bias (and the mean-centering) into 2 projection weight(s) (2 argument(s), through the prepare function)"
// DEFER-LABEL: func.func @gpt2(
// DEFER: flashnorm.layer_inv
// DEFER-COUNT-2: flashnorm.post_scale
func.func @gpt2(%x: tensor<4x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>, %wq: tensor<8x16xf32>, %wk: tensor<16x8xf32>)
    -> (tensor<4x16xf32>, tensor<4x16xf32>) {
  %n = flashnorm.layer_norm %x gain(%g : tensor<8xf32>) bias(%b : tensor<8xf32>) eps(1.0e-05) : tensor<4x8xf32>
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x16xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<4x16xf32>) -> tensor<4x16xf32>
  %q = linalg.matmul ins(%n, %wq : tensor<4x8xf32>, tensor<8x16xf32>) outs(%z : tensor<4x16xf32>) -> tensor<4x16xf32>
  %et = tensor.empty() : tensor<8x16xf32>
  %wkt = linalg.transpose ins(%wk : tensor<16x8xf32>) outs(%et : tensor<8x16xf32>) permutation = [1, 0]
  %k = linalg.matmul ins(%n, %wkt : tensor<4x8xf32>, tensor<8x16xf32>) outs(%z : tensor<4x16xf32>) -> tensor<4x16xf32>
  return %q, %k : tensor<4x16xf32>, tensor<4x16xf32>
}

func.func @caller(%x: tensor<4x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>, %wq: tensor<8x16xf32>, %wk: tensor<16x8xf32>)
    -> (tensor<4x16xf32>, tensor<4x16xf32>) {
  %q, %k = call @gpt2(%x, %g, %b, %wq, %wk) : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8x16xf32>, tensor<16x8xf32>) -> (tensor<4x16xf32>, tensor<4x16xf32>)
  return %q, %k : tensor<4x16xf32>, tensor<4x16xf32>
}

// -----

// bf16 (Phi-2, Falcon): a bf16 weight cannot carry the centering. The
// prepare function folds the gain into it, rounded once, the bias through it
// into an f32 argument (the product's type), and sums the folded weight's
// columns as stored into another f32 argument, named on the projection;
// defer-scale's centered post-scale reads it. A constant gain and bias go in
// as the values the plan read.
// CHECK-LABEL: func.func @phi(
// CHECK-SAME: %{{.*}}: tensor<8x16xbf16> {flashnorm.folded}, %[[BIAS:[^:]*]]: tensor<16xf32> {flashnorm.folded}, %[[SUMS:[^:]*]]: tensor<16xf32> {flashnorm.folded})
// CHECK: linalg.matmul {flashnorm.column_sums_argument = 3 : i64}
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %[[BIAS]] : tensor<4x16xf32>, tensor<16xf32>)
// CHECK-LABEL: func.func @phi_flashnorm_prepare(
// CHECK-SAME: %{{[^:]*}}: tensor<4x8xbf16>, %[[W:[^:]*]]: tensor<8x16xbf16>) -> (tensor<8x16xbf16>, tensor<16xf32>, tensor<16xf32>)
// CHECK: %[[GAIN:.*]] = arith.constant dense<[1.000000e+00, 2.000000e+00, {{.*}}]> : tensor<8xf32>
// CHECK: %[[FOLDED:.*]] = linalg.generic {{.*}} ins(%[[W]], %[[GAIN]] : tensor<8x16xbf16>, tensor<8xf32>)
// CHECK: %[[BV:.*]] = arith.constant dense<[5.000000e-01, {{.*}}]> : tensor<8xf32>
// CHECK: %[[FB:.*]] = linalg.generic {{.*}} ins(%[[W]], %[[BV]] : tensor<8x16xbf16>, tensor<8xf32>)
// CHECK: %[[FS:.*]] = linalg.generic {{.*}} ins(%[[FOLDED]] : tensor<8x16xbf16>)
// CHECK: return %[[FOLDED]], %[[FB]], %[[FS]]
// REMARK: Function=phi | Remark="folded the gain and bias (not the mean-centering: f16/bf16 weights cannot carry it exactly) into 1 projection weight(s) (1 argument(s), through the prepare function)"
// DEFER-LABEL: func.func @phi(
// DEFER-SAME: %[[SUMS:[^:]*]]: tensor<16xf32> {flashnorm.folded})
// DEFER: %[[MEAN:.*]], %[[INV:.*]] = flashnorm.layer_stats
// DEFER: flashnorm.centered_post_scale %{{.*}}, %[[INV]], %[[MEAN]], %[[SUMS]]
func.func @phi(%x: tensor<4x8xbf16>, %w: tensor<8x16xbf16>) -> tensor<4x16xf32> {
  %g = arith.constant dense<[1.0, 2.0, 0.5, 1.5, 1.0, 0.25, 3.0, 1.0]> : tensor<8xbf16>
  %b = arith.constant dense<[0.5, -0.5, 0.25, 0.0, 1.0, -1.0, 0.125, 2.0]> : tensor<8xbf16>
  %n = flashnorm.layer_norm %x gain(%g : tensor<8xbf16>) bias(%b : tensor<8xbf16>) eps(1.0e-05) : tensor<4x8xbf16>
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x16xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<4x16xf32>) -> tensor<4x16xf32>
  %q = linalg.matmul ins(%n, %w : tensor<4x8xbf16>, tensor<8x16xbf16>) outs(%z : tensor<4x16xf32>) -> tensor<4x16xf32>
  return %q : tensor<4x16xf32>
}

// -----

// OLMo's LayerNorm, without gain or bias, on bf16 weights: nothing folds
// into the weight (it stays as passed, not marked); the prepare function
// sums its columns for the centered post-scale.
// CHECK-LABEL: func.func @olmo(
// CHECK-SAME: %{{[^:]*}}: tensor<4x8xbf16>, %{{[^:]*}}: tensor<16x8xbf16>, %{{[^:]*}}: tensor<16xf32> {flashnorm.folded})
// CHECK: linalg.matmul indexing_maps = {{.*}} {flashnorm.column_sums_argument = 2 : i64}
// CHECK-LABEL: func.func @olmo_flashnorm_prepare(
// CHECK-SAME: %{{[^:]*}}: tensor<4x8xbf16>, %[[W:[^:]*]]: tensor<16x8xbf16>) -> tensor<16xf32>
// CHECK-NEXT: arith.constant 0.0
// CHECK-NEXT: tensor.empty() : tensor<16xf32>
// CHECK-NEXT: linalg.fill
// CHECK-NEXT: %[[S:.*]] = linalg.generic {{.*}} ins(%[[W]] : tensor<16x8xbf16>)
// CHECK: return %[[S]]
// REMARK: Function=olmo | Remark="recorded the column sums of 1 projection weight(s) (1 argument(s), through the prepare function) for defer-scale (f16/bf16 weights cannot carry the mean-centering)"
// DEFER-LABEL: func.func @olmo(
// DEFER-SAME: %[[SUMS:[^:]*]]: tensor<16xf32> {flashnorm.folded})
// DEFER: %[[MEAN:.*]], %[[INV:.*]] = flashnorm.layer_stats
// DEFER: flashnorm.centered_post_scale %{{.*}}, %[[INV]], %[[MEAN]], %[[SUMS]]
func.func @olmo(%x: tensor<4x8xbf16>, %w: tensor<16x8xbf16>) -> tensor<4x16xf32> {
  %n = flashnorm.layer_norm %x eps(1.0e-05) : tensor<4x8xbf16>
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x16xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<4x16xf32>) -> tensor<4x16xf32>
  %q = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>] ins(%n, %w : tensor<4x8xbf16>, tensor<16x8xbf16>) outs(%z : tensor<4x16xf32>) -> tensor<4x16xf32>
  return %q : tensor<4x16xf32>
}

// -----

// A bias argument cannot meet a constant weight at compile time: the norm
// keeps its gain and bias.
// CHECK-LABEL: func.func @bias_argument_constant_weight
// CHECK: flashnorm.layer_norm %{{.*}} gain(
// CHECK-NOT: _flashnorm_prepare
// REMARK: Function=bias_argument_constant_weight | Remark="not folded: user 'linalg.matmul' has a constant weight but the bias is an argument"
func.func @bias_argument_constant_weight(%x: tensor<4x8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  %g = arith.constant dense<2.0> : tensor<8xf32>
  %n = flashnorm.layer_norm %x gain(%g : tensor<8xf32>) bias(%b : tensor<8xf32>) eps(1.0e-05) : tensor<4x8xf32>
  %w = arith.constant dense<0.5> : tensor<8x8xf32>
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x8xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  %q = linalg.matmul ins(%n, %w : tensor<4x8xf32>, tensor<8x8xf32>) outs(%z : tensor<4x8xf32>) -> tensor<4x8xf32>
  return %q : tensor<4x8xf32>
}
