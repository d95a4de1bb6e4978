// flashnorm-move-scale merges a query's post-scale into the logits' scale:
// past reshapes, a transpose and a rotary embedding (linear in q: its
// slices, negation and concatenation, and q cos + rot sin), out of the
// logits' rows, into the generic that multiplies the logits by 1/sqrt(d).
// RUN: flashnorm-opt %s --flashnorm-move-scale --split-input-file | FileCheck %s
// RUN: flashnorm-opt %s --flashnorm-move-scale --split-input-file \
// RUN:   --remarks-filter=flashnorm --remark-format=emitRemark 2>&1 >/dev/null \
// RUN:   | FileCheck %s --check-prefix=REMARK

// q [3 tokens, 2 heads x 4] rotated, against keys [3, 2 x 4]: the logits
// [heads, i, j] are scaled by 0.5 in the mask generic, which now reads s by
// its row i and multiplies by 0.5 s; the key's post-scale stays.
// CHECK: #[[SROW:map[0-9]*]] = affine_map<(d0, d1, d2) -> (d1)>
// CHECK-LABEL: func.func @rope
// CHECK: %[[S:.*]] = flashnorm.rms_inv
// CHECK: %[[QRAW:.*]] = linalg.matmul
// CHECK-NEXT: %[[KRAW:.*]] = linalg.matmul
// CHECK-NEXT: flashnorm.post_scale %[[KRAW]], %[[S]]
// CHECK-NEXT: tensor.expand_shape %[[QRAW]]
// CHECK-NOT: flashnorm.post_scale
// CHECK: linalg.generic {indexing_maps = [#map{{[0-9]*}}, #map{{[0-9]*}}, #[[SROW]], #map{{[0-9]*}}], iterator_types = ["parallel", "parallel", "parallel"]} ins(%{{.*}}, %{{.*}}, %[[S]] : tensor<2x3x3xf32>, tensor<2x3x3xf32>, tensor<3xf32>)
// CHECK-NEXT: ^bb0(%[[L:.*]]: f32, %{{.*}}: f32, %[[SV:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT: %[[CS:.*]] = arith.mulf %cst{{.*}}, %[[SV]] : f32
// CHECK-NEXT: arith.mulf %[[L]], %[[CS]] : f32
// REMARK: remark: [Passed] flashnorm-move-scale {{.*}} Function=rope {{.*}}merged the query's post-scale into the logits' scale, past 7 op(s) linear in q; saves 192 element-wise bytes per call
#id2 = affine_map<(i, j) -> (i, j)>
#id3 = affine_map<(h, i, j) -> (h, i, j)>
#table = affine_map<(t, h, j) -> (t, j)>
#qmap = affine_map<(h, i, j, d) -> (h, i, d)>
#kmap = affine_map<(h, i, j, d) -> (h, j, d)>
#lmap = affine_map<(h, i, j, d) -> (h, i, j)>
func.func @rope(%x: tensor<3x8xf32>, %wq: tensor<8x8xf32>, %wk: tensor<8x8xf32>,
                %cos: tensor<3x4xf32>, %sin: tensor<3x4xf32>,
                %mask: tensor<2x3x3xf32>) -> tensor<2x3x3xf32> {
  %s = flashnorm.rms_inv %x eps(1.0e-05) : tensor<3x8xf32> -> tensor<3xf32>
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<3x8xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<3x8xf32>) -> tensor<3x8xf32>
  %qraw = linalg.matmul ins(%x, %wq : tensor<3x8xf32>, tensor<8x8xf32>) outs(%z : tensor<3x8xf32>) -> tensor<3x8xf32>
  %q = flashnorm.post_scale %qraw, %s : tensor<3x8xf32>, tensor<3xf32> -> tensor<3x8xf32>
  %kraw = linalg.matmul ins(%x, %wk : tensor<3x8xf32>, tensor<8x8xf32>) outs(%z : tensor<3x8xf32>) -> tensor<3x8xf32>
  %k = flashnorm.post_scale %kraw, %s : tensor<3x8xf32>, tensor<3xf32> -> tensor<3x8xf32>
  // RoPE on q's heads.
  %qh = tensor.expand_shape %q [[0], [1, 2]] output_shape [3, 2, 4] : tensor<3x8xf32> into tensor<3x2x4xf32>
  %x1 = tensor.extract_slice %qh[0, 0, 0] [3, 2, 2] [1, 1, 1] : tensor<3x2x4xf32> to tensor<3x2x2xf32>
  %x2 = tensor.extract_slice %qh[0, 0, 2] [3, 2, 2] [1, 1, 1] : tensor<3x2x4xf32> to tensor<3x2x2xf32>
  %en = tensor.empty() : tensor<3x2x2xf32>
  %neg = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%x2 : tensor<3x2x2xf32>) outs(%en : tensor<3x2x2xf32>) {
  ^bb0(%a: f32, %o: f32):
    %n = arith.negf %a : f32
    linalg.yield %n : f32
  } -> tensor<3x2x2xf32>
  %rot = tensor.concat dim(2) %neg, %x1 : (tensor<3x2x2xf32>, tensor<3x2x2xf32>) -> tensor<3x2x4xf32>
  %er = tensor.empty() : tensor<3x2x4xf32>
  %qr = linalg.generic {indexing_maps = [#id3, #table, #id3, #table, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%qh, %cos, %rot, %sin : tensor<3x2x4xf32>, tensor<3x4xf32>, tensor<3x2x4xf32>, tensor<3x4xf32>) outs(%er : tensor<3x2x4xf32>) {
  ^bb0(%a: f32, %c: f32, %r: f32, %sn: f32, %o: f32):
    %ac = arith.mulf %a, %c : f32
    %rs = arith.mulf %r, %sn : f32
    %y = arith.addf %ac, %rs : f32
    linalg.yield %y : f32
  } -> tensor<3x2x4xf32>
  %et = tensor.empty() : tensor<2x3x4xf32>
  %qt = linalg.transpose ins(%qr : tensor<3x2x4xf32>) outs(%et : tensor<2x3x4xf32>) permutation = [1, 0, 2]
  %kh = tensor.expand_shape %k [[0], [1, 2]] output_shape [3, 2, 4] : tensor<3x8xf32> into tensor<3x2x4xf32>
  %kt = linalg.transpose ins(%kh : tensor<3x2x4xf32>) outs(%et : tensor<2x3x4xf32>) permutation = [1, 0, 2]
  %el = tensor.empty() : tensor<2x3x3xf32>
  %zl = linalg.fill ins(%c0 : f32) outs(%el : tensor<2x3x3xf32>) -> tensor<2x3x3xf32>
  %logits = linalg.generic {indexing_maps = [#qmap, #kmap, #lmap], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%qt, %kt : tensor<2x3x4xf32>, tensor<2x3x4xf32>) outs(%zl : tensor<2x3x3xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %sum = arith.addf %m, %acc : f32
    linalg.yield %sum : f32
  } -> tensor<2x3x3xf32>
  %half = arith.constant 0.5 : f32
  %scaled = linalg.generic {indexing_maps = [#id3, #id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%logits, %mask : tensor<2x3x3xf32>, tensor<2x3x3xf32>) outs(%el : tensor<2x3x3xf32>) {
  ^bb0(%l: f32, %mk: f32, %o: f32):
    %sc = arith.mulf %l, %half : f32
    %masked = arith.addf %sc, %mk : f32
    linalg.yield %masked : f32
  } -> tensor<2x3x3xf32>
  return %scaled : tensor<2x3x3xf32>
}

// -----

// Not merged: a bias between the post-scale and the logits (s q + b is no
// multiple of s), a logits' scale already folded into the query weight (no
// multiply left), and a rotation that adds a constant (not linear).
// CHECK-LABEL: func.func @refused
// CHECK-COUNT-3: flashnorm.post_scale
// REMARK: remark: [Missed] flashnorm-move-scale {{.*}} Function=refused {{.*}}query post-scale not merged into the logits' scale: its logits are not multiplied by a constant (the attention scale may already be folded into the query weight)
// REMARK-NOT: merged the query
#id2b = affine_map<(i, j) -> (i, j)>
#bias = affine_map<(i, j) -> (j)>
#qk = [affine_map<(i, j, d) -> (i, d)>, affine_map<(i, j, d) -> (j, d)>, affine_map<(i, j, d) -> (i, j)>]
func.func @refused(%x: tensor<3x8xf32>, %w: tensor<8x8xf32>, %b: tensor<8xf32>, %k: tensor<3x8xf32>)
    -> (tensor<3x3xf32>, tensor<3x3xf32>, tensor<3x3xf32>) {
  %s = flashnorm.rms_inv %x eps(1.0e-05) : tensor<3x8xf32> -> tensor<3xf32>
  %c0 = arith.constant 0.0 : f32
  %half = arith.constant 0.5 : f32
  %one = arith.constant 1.0 : f32
  %e = tensor.empty() : tensor<3x8xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<3x8xf32>) -> tensor<3x8xf32>
  %el = tensor.empty() : tensor<3x3xf32>
  %zl = linalg.fill ins(%c0 : f32) outs(%el : tensor<3x3xf32>) -> tensor<3x3xf32>
  // A bias.
  %r1 = linalg.matmul ins(%x, %w : tensor<3x8xf32>, tensor<8x8xf32>) outs(%z : tensor<3x8xf32>) -> tensor<3x8xf32>
  %q1 = flashnorm.post_scale %r1, %s : tensor<3x8xf32>, tensor<3xf32> -> tensor<3x8xf32>
  %qb = linalg.generic {indexing_maps = [#id2b, #bias, #id2b], iterator_types = ["parallel", "parallel"]} ins(%q1, %b : tensor<3x8xf32>, tensor<8xf32>) outs(%e : tensor<3x8xf32>) {
  ^bb0(%a: f32, %bb: f32, %o: f32):
    %y = arith.addf %a, %bb : f32
    linalg.yield %y : f32
  } -> tensor<3x8xf32>
  %l1 = linalg.generic {indexing_maps = #qk, iterator_types = ["parallel", "parallel", "reduction"]} ins(%qb, %k : tensor<3x8xf32>, tensor<3x8xf32>) outs(%zl : tensor<3x3xf32>) {
  ^bb0(%a: f32, %kk: f32, %acc: f32):
    %m = arith.mulf %a, %kk : f32
    %sum = arith.addf %m, %acc : f32
    linalg.yield %sum : f32
  } -> tensor<3x3xf32>
  %s1 = linalg.generic {indexing_maps = [#id2b, #id2b], iterator_types = ["parallel", "parallel"]} ins(%l1 : tensor<3x3xf32>) outs(%el : tensor<3x3xf32>) {
  ^bb0(%l: f32, %o: f32):
    %y = arith.mulf %l, %half : f32
    linalg.yield %y : f32
  } -> tensor<3x3xf32>
  // No multiply of the logits.
  %r2 = linalg.matmul ins(%x, %w : tensor<3x8xf32>, tensor<8x8xf32>) outs(%z : tensor<3x8xf32>) -> tensor<3x8xf32>
  %q2 = flashnorm.post_scale %r2, %s : tensor<3x8xf32>, tensor<3xf32> -> tensor<3x8xf32>
  %l2 = linalg.generic {indexing_maps = #qk, iterator_types = ["parallel", "parallel", "reduction"]} ins(%q2, %k : tensor<3x8xf32>, tensor<3x8xf32>) outs(%zl : tensor<3x3xf32>) {
  ^bb0(%a: f32, %kk: f32, %acc: f32):
    %m = arith.mulf %a, %kk : f32
    %sum = arith.addf %m, %acc : f32
    linalg.yield %sum : f32
  } -> tensor<3x3xf32>
  // q + 1 on the way.
  %r3 = linalg.matmul ins(%x, %w : tensor<3x8xf32>, tensor<8x8xf32>) outs(%z : tensor<3x8xf32>) -> tensor<3x8xf32>
  %q3 = flashnorm.post_scale %r3, %s : tensor<3x8xf32>, tensor<3xf32> -> tensor<3x8xf32>
  %qp = linalg.generic {indexing_maps = [#id2b, #id2b], iterator_types = ["parallel", "parallel"]} ins(%q3 : tensor<3x8xf32>) outs(%e : tensor<3x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %y = arith.addf %a, %one : f32
    linalg.yield %y : f32
  } -> tensor<3x8xf32>
  %l3 = linalg.generic {indexing_maps = #qk, iterator_types = ["parallel", "parallel", "reduction"]} ins(%qp, %k : tensor<3x8xf32>, tensor<3x8xf32>) outs(%zl : tensor<3x3xf32>) {
  ^bb0(%a: f32, %kk: f32, %acc: f32):
    %m = arith.mulf %a, %kk : f32
    %sum = arith.addf %m, %acc : f32
    linalg.yield %sum : f32
  } -> tensor<3x3xf32>
  %s3 = linalg.generic {indexing_maps = [#id2b, #id2b], iterator_types = ["parallel", "parallel"]} ins(%l3 : tensor<3x3xf32>) outs(%el : tensor<3x3xf32>) {
  ^bb0(%l: f32, %o: f32):
    %y = arith.mulf %l, %half : f32
    linalg.yield %y : f32
  } -> tensor<3x3xf32>
  return %s1, %l2, %s3 : tensor<3x3xf32>, tensor<3x3xf32>, tensor<3x3xf32>
}

// -----

// An MLP's up projection reaches a contraction with a stored weight (the
// down projection, wider than the up one: the scale stays, at the cost
// rule), not an attention's keys: not a query, and no query remark (there
// was one, "its logits are not multiplied by a constant").
// CHECK-LABEL: func.func @mlp_constant_down
// CHECK: flashnorm.post_scale
// REMARK-NOT: Function=mlp_constant_down | Remark="query post-scale
// REMARK: Function=mlp_constant_down | Remark="0 rewritten (0 approximate), 1 refused"
#id = affine_map<(i, j) -> (i, j)>
func.func @mlp_constant_down(%x: tensor<4x8xf32>, %wu: tensor<8x16xf32>) -> tensor<4x64xf32> {
  %s = flashnorm.rms_inv %x eps(1.0e-05) : tensor<4x8xf32> -> tensor<4xf32>
  %c0 = arith.constant 0.0 : f32
  %c2 = arith.constant 2.0 : f32
  %e = tensor.empty() : tensor<4x16xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<4x16xf32>) -> tensor<4x16xf32>
  %u = linalg.matmul ins(%x, %wu : tensor<4x8xf32>, tensor<8x16xf32>) outs(%z : tensor<4x16xf32>) -> tensor<4x16xf32>
  %us = flashnorm.post_scale %u, %s : tensor<4x16xf32>, tensor<4xf32> -> tensor<4x16xf32>
  %h = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%us : tensor<4x16xf32>) outs(%e : tensor<4x16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.mulf %a, %c2 : f32
    linalg.yield %r : f32
  } -> tensor<4x16xf32>
  %wd = arith.constant dense<0.5> : tensor<16x64xf32>
  %e64 = tensor.empty() : tensor<4x64xf32>
  %z64 = linalg.fill ins(%c0 : f32) outs(%e64 : tensor<4x64xf32>) -> tensor<4x64xf32>
  %d = linalg.matmul ins(%h, %wd : tensor<4x16xf32>, tensor<16x64xf32>) outs(%z64 : tensor<4x64xf32>) -> tensor<4x64xf32>
  return %d : tensor<4x64xf32>
}

// -----

// The same merge is exact whatever the contraction's other operand is: a
// constant one (stored keys, or an MLP's next weight) still takes it; only
// its refusals are not remarked.
// CHECK-LABEL: func.func @constant_keys
// CHECK-NOT: flashnorm.post_scale
// CHECK: return
// REMARK: Function=constant_keys | Remark="merged the query's post-scale into the logits' scale
#id2 = affine_map<(i, j) -> (i, j)>
func.func @constant_keys(%x: tensor<3x8xf32>, %wq: tensor<8x8xf32>) -> tensor<3x16xf32> {
  %s = flashnorm.rms_inv %x eps(1.0e-05) : tensor<3x8xf32> -> tensor<3xf32>
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<3x8xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<3x8xf32>) -> tensor<3x8xf32>
  %qraw = linalg.matmul ins(%x, %wq : tensor<3x8xf32>, tensor<8x8xf32>) outs(%z : tensor<3x8xf32>) -> tensor<3x8xf32>
  %q = flashnorm.post_scale %qraw, %s : tensor<3x8xf32>, tensor<3xf32> -> tensor<3x8xf32>
  %kt = arith.constant dense<0.25> : tensor<8x16xf32>
  %el = tensor.empty() : tensor<3x16xf32>
  %zl = linalg.fill ins(%c0 : f32) outs(%el : tensor<3x16xf32>) -> tensor<3x16xf32>
  %l = linalg.matmul ins(%q, %kt : tensor<3x8xf32>, tensor<8x16xf32>) outs(%zl : tensor<3x16xf32>) -> tensor<3x16xf32>
  %c = arith.constant 0.125 : f32
  %r = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%l : tensor<3x16xf32>) outs(%el : tensor<3x16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.mulf %a, %c : f32
    linalg.yield %m : f32
  } -> tensor<3x16xf32>
  return %r : tensor<3x16xf32>
}

// -----

// Batch 1 and 4-D heads as torch-mlir lowers them: q [1, 3, 8] split into
// [1, 3, 2, 4] heads, transposed, its batch collapsed with the heads
// around a batch_matmul, whose logits are expanded back to [1, 2, 3, 3]
// and scaled by a generic with literal-0 batch maps. The unit batch is no
// row to follow: the merged generic reads s [1, 3] at (0, i).
// CHECK: #[[SROW4:map[0-9]*]] = affine_map<(d0, d1, d2, d3) -> (0, d2)>
// CHECK-LABEL: func.func @unit_batch_heads
// CHECK: %[[S4:.*]] = flashnorm.rms_inv
// CHECK: %[[QRAW4:.*]] = linalg.batch_matmul
// CHECK-NEXT: tensor.expand_shape %[[QRAW4]]
// CHECK-NOT: flashnorm.post_scale
// CHECK: linalg.generic {indexing_maps = [#map{{[0-9]*}}, #[[SROW4]], #map{{[0-9]*}}], {{.*}} ins(%{{.*}}, %[[S4]] : tensor<1x2x3x3xf32>, tensor<1x3xf32>)
// CHECK-NEXT: ^bb0(%[[L4:.*]]: f32, %[[SV4:.*]]: f32, %{{.*}}: f32):
// CHECK: %[[C4:.*]] = arith.truncf
// CHECK-NEXT: %[[CS4:.*]] = arith.mulf %[[C4]], %[[SV4]] : f32
// CHECK-NEXT: arith.mulf %[[L4]], %[[CS4]] : f32
// REMARK: remark: [Passed] flashnorm-move-scale {{.*}} Function=unit_batch_heads {{.*}}merged the query's post-scale into the logits' scale, past 3 op(s) linear in q
#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#b04 = affine_map<(d0, d1, d2, d3) -> (0, d1, d2, d3)>
func.func @unit_batch_heads(%x: tensor<1x3x8xf32>, %wq: tensor<1x8x8xf32>,
                            %k: tensor<2x4x3xf32>) -> tensor<1x2x3x3xf32> {
  %s = flashnorm.rms_inv %x eps(1.0e-05) : tensor<1x3x8xf32> -> tensor<1x3xf32>
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x3x8xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<1x3x8xf32>) -> tensor<1x3x8xf32>
  %qraw = linalg.batch_matmul ins(%x, %wq : tensor<1x3x8xf32>, tensor<1x8x8xf32>) outs(%z : tensor<1x3x8xf32>) -> tensor<1x3x8xf32>
  %q = flashnorm.post_scale %qraw, %s : tensor<1x3x8xf32>, tensor<1x3xf32> -> tensor<1x3x8xf32>
  %qh = tensor.expand_shape %q [[0], [1], [2, 3]] output_shape [1, 3, 2, 4] : tensor<1x3x8xf32> into tensor<1x3x2x4xf32>
  %et = tensor.empty() : tensor<1x2x3x4xf32>
  %qt = linalg.transpose ins(%qh : tensor<1x3x2x4xf32>) outs(%et : tensor<1x2x3x4xf32>) permutation = [0, 2, 1, 3]
  %qc = tensor.collapse_shape %qt [[0, 1], [2], [3]] : tensor<1x2x3x4xf32> into tensor<2x3x4xf32>
  %el = tensor.empty() : tensor<2x3x3xf32>
  %zl = linalg.fill ins(%c0 : f32) outs(%el : tensor<2x3x3xf32>) -> tensor<2x3x3xf32>
  %l3 = linalg.batch_matmul ins(%qc, %k : tensor<2x3x4xf32>, tensor<2x4x3xf32>) outs(%zl : tensor<2x3x3xf32>) -> tensor<2x3x3xf32>
  %l4 = tensor.expand_shape %l3 [[0, 1], [2], [3]] output_shape [1, 2, 3, 3] : tensor<2x3x3xf32> into tensor<1x2x3x3xf32>
  %e4 = tensor.empty() : tensor<1x2x3x3xf32>
  %scaled = linalg.generic {indexing_maps = [#b04, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%l4 : tensor<1x2x3x3xf32>) outs(%e4 : tensor<1x2x3x3xf32>) {
  ^bb0(%l: f32, %o: f32):
    %c = arith.constant 5.000000e-01 : f64
    %ct = arith.truncf %c : f64 to f32
    %m = arith.mulf %l, %ct : f32
    linalg.yield %m : f32
  } -> tensor<1x2x3x3xf32>
  return %scaled : tensor<1x2x3x3xf32>
}

// -----

// Not merged: the logits' reshape merges q's rows with the heads, so the
// scaling generic's rows are no longer q's.
// CHECK-LABEL: func.func @logits_rows_merged
// CHECK: flashnorm.post_scale
// CHECK: arith.mulf %{{.*}}, %cst{{.*}} : f32
// CHECK-NEXT: linalg.yield
#id2m = affine_map<(d0, d1) -> (d0, d1)>
func.func @logits_rows_merged(%x: tensor<3x8xf32>, %wq: tensor<8x8xf32>,
                              %k: tensor<2x4x3xf32>) -> tensor<6x3xf32> {
  %s = flashnorm.rms_inv %x eps(1.0e-05) : tensor<3x8xf32> -> tensor<3xf32>
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<3x8xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<3x8xf32>) -> tensor<3x8xf32>
  %qraw = linalg.matmul ins(%x, %wq : tensor<3x8xf32>, tensor<8x8xf32>) outs(%z : tensor<3x8xf32>) -> tensor<3x8xf32>
  %q = flashnorm.post_scale %qraw, %s : tensor<3x8xf32>, tensor<3xf32> -> tensor<3x8xf32>
  %qh = tensor.expand_shape %q [[0], [1, 2]] output_shape [3, 2, 4] : tensor<3x8xf32> into tensor<3x2x4xf32>
  %et = tensor.empty() : tensor<2x3x4xf32>
  %qt = linalg.transpose ins(%qh : tensor<3x2x4xf32>) outs(%et : tensor<2x3x4xf32>) permutation = [1, 0, 2]
  %el = tensor.empty() : tensor<2x3x3xf32>
  %zl = linalg.fill ins(%c0 : f32) outs(%el : tensor<2x3x3xf32>) -> tensor<2x3x3xf32>
  %l3 = linalg.batch_matmul ins(%qt, %k : tensor<2x3x4xf32>, tensor<2x4x3xf32>) outs(%zl : tensor<2x3x3xf32>) -> tensor<2x3x3xf32>
  %l2 = tensor.collapse_shape %l3 [[0, 1], [2]] : tensor<2x3x3xf32> into tensor<6x3xf32>
  %e2 = tensor.empty() : tensor<6x3xf32>
  %half = arith.constant 0.5 : f32
  %scaled = linalg.generic {indexing_maps = [#id2m, #id2m], iterator_types = ["parallel", "parallel"]} ins(%l2 : tensor<6x3xf32>) outs(%e2 : tensor<6x3xf32>) {
  ^bb0(%l: f32, %o: f32):
    %m = arith.mulf %l, %half : f32
    linalg.yield %m : f32
  } -> tensor<6x3xf32>
  return %scaled : tensor<6x3xf32>
}
