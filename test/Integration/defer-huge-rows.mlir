// Deferral on rows whose mean square overflows f32 (|x| ~ 1e38): the
// original's statistic is rsqrt(inf) = 0 and its rows are 0; the deferred
// raw product overflows to inf, and inf * 0 would be NaN. post_scale makes
// a row with a zero scale 0, so every finite input matches; rows of
// ordinary size and of 1e30 (raw product finite) too. Both lowerings.
// RUN: flashnorm-run %s -e proj --pipeline=flashnorm-defer-scale --compare --input-range=1e38 | FileCheck %s
// RUN: flashnorm-run %s -e proj --pipeline=flashnorm-defer-scale --compare --input-range=1e38 --concurrent | FileCheck %s
// RUN: flashnorm-run %s -e proj --pipeline=flashnorm-defer-scale --compare --input-range=1e30 | FileCheck %s
// RUN: flashnorm-run %s -e proj --pipeline=flashnorm-defer-scale --compare | FileCheck %s
// Rows of no features: their statistic is 0/0, which the norm's empty
// result never carries but a post-scale would multiply into the product's
// zeros (NaN where the original gives 0): not deferred.
// RUN: flashnorm-run %s -e empty_rows --pipeline=flashnorm --compare | FileCheck %s
// So are rows whose number of features is known only at run time (it may
// be 0, as here).
// RUN: flashnorm-run %s -e dynamic_empty_rows --pipeline=flashnorm --compare | FileCheck %s
// RUN: flashnorm-opt %s --flashnorm-defer-scale --remarks-filter=flashnorm --remark-format=emitRemark -o /dev/null 2>&1 | FileCheck %s --check-prefix=EMPTY
// EMPTY: Function=empty_rows | Remark="not deferred: its rows are empty (0 features), and their statistic is NaN"
// EMPTY: Function=dynamic_features | Remark="not deferred: its number of features is known only at run time, and rows of none would make their statistic NaN"
// The lowered post-scale selects 0 where its scale is 0.
// RUN: flashnorm-opt %s --flashnorm-defer-scale --flashnorm-lower-to-linalg | FileCheck %s --check-prefix=IR
// The query's scale merged into the logits' 0.5 keeps the rule: the raw
// logits of a huge row are NaN (inf q times the key's 0), the merged
// multiply selects 0 where the row's scale is 0.
// RUN: flashnorm-run %s -e query --pipeline=flashnorm-defer-scale,flashnorm-move-scale --compare --input-range=1e38 | FileCheck %s
// RUN: flashnorm-run %s -e query --pipeline=flashnorm-defer-scale,flashnorm-move-scale --compare | FileCheck %s
// RUN: flashnorm-opt %s --flashnorm-defer-scale --flashnorm-move-scale | FileCheck %s --check-prefix=MERGED
// CHECK: MATCH
// IR: arith.cmpf oeq
// IR-NEXT: arith.select
// MERGED-LABEL: func.func @query
// MERGED: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<4x4xf32>, tensor<4xf32>)
// MERGED-NEXT: ^bb0(%{{.*}}: f32, %[[S:.*]]: f32, %{{.*}}: f32):
// MERGED-NEXT: %[[CS:.*]] = arith.mulf %{{.*}}, %[[S]] : f32
// MERGED-NEXT: %[[P:.*]] = arith.mulf %{{.*}}, %[[CS]] : f32
// MERGED-NEXT: %[[Z:.*]] = arith.constant 0.0
// MERGED-NEXT: %[[IS0:.*]] = arith.cmpf oeq, %[[S]], %[[Z]] : f32
// MERGED-NEXT: arith.select %[[IS0]], %[[Z]], %[[P]] : f32
func.func @proj(%x: tensor<4x8xf32>) -> tensor<4x4xf32> {
  %w = arith.constant dense<[[1.0, -2.0, 0.5, 3.0], [2.0, 1.0, -1.0, 0.25], [-3.0, 0.5, 2.0, 1.0], [1.5, -1.0, 0.75, -2.0], [2.5, 2.0, -0.5, 1.0], [-1.0, 3.0, 1.0, -0.5], [0.5, -2.5, 2.0, 1.5], [3.0, 1.0, -2.0, 2.0]]> : tensor<8x4xf32>
  %n = flashnorm.rms_norm %x eps(1.0e-06) : tensor<4x8xf32>
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x4xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<4x4xf32>) -> tensor<4x4xf32>
  %y = linalg.matmul ins(%n, %w : tensor<4x8xf32>, tensor<8x4xf32>) outs(%z : tensor<4x4xf32>) -> tensor<4x4xf32>
  return %y : tensor<4x4xf32>
}

#qk = [affine_map<(i, j, d) -> (i, d)>, affine_map<(i, j, d) -> (j, d)>, affine_map<(i, j, d) -> (i, j)>]
#id2 = affine_map<(i, j) -> (i, j)>
func.func @query(%x: tensor<4x8xf32>) -> tensor<4x4xf32> {
  %wq = arith.constant dense<[[1.0, -2.0, 0.5, 3.0], [2.0, 1.0, -1.0, 0.25], [-3.0, 0.5, 2.0, 1.0], [1.5, -1.0, 0.75, -2.0], [2.5, 2.0, -0.5, 1.0], [-1.0, 3.0, 1.0, -0.5], [0.5, -2.5, 2.0, 1.5], [3.0, 1.0, -2.0, 2.0]]> : tensor<8x4xf32>
  %wk = arith.constant dense<[[0.5, 1.0, -1.5, 2.0], [1.0, -0.5, 2.0, 1.0], [2.0, 1.5, -1.0, 0.5], [-0.5, 2.0, 1.0, -1.0], [1.0, 1.0, 0.5, 2.5], [3.0, -1.0, 1.5, 0.5], [-2.0, 0.5, 1.0, 1.0], [1.0, 2.0, -0.5, 1.5]]> : tensor<8x4xf32>
  %n = flashnorm.rms_norm %x eps(1.0e-06) : tensor<4x8xf32>
  %c0 = arith.constant 0.0 : f32
  %half = arith.constant 0.5 : f32
  %e = tensor.empty() : tensor<4x4xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<4x4xf32>) -> tensor<4x4xf32>
  %q = linalg.matmul ins(%n, %wq : tensor<4x8xf32>, tensor<8x4xf32>) outs(%z : tensor<4x4xf32>) -> tensor<4x4xf32>
  %k = linalg.matmul ins(%n, %wk : tensor<4x8xf32>, tensor<8x4xf32>) outs(%z : tensor<4x4xf32>) -> tensor<4x4xf32>
  %l = linalg.generic {indexing_maps = #qk, iterator_types = ["parallel", "parallel", "reduction"]} ins(%q, %k : tensor<4x4xf32>, tensor<4x4xf32>) outs(%z : tensor<4x4xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %m, %acc : f32
    linalg.yield %s : f32
  } -> tensor<4x4xf32>
  %y = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%l : tensor<4x4xf32>) outs(%e : tensor<4x4xf32>) {
  ^bb0(%v: f32, %o: f32):
    %w = arith.mulf %v, %half : f32
    linalg.yield %w : f32
  } -> tensor<4x4xf32>
  return %y : tensor<4x4xf32>
}

func.func @empty_rows(%x: tensor<4x0xf32>, %w: tensor<0x4xf32>) -> tensor<4x4xf32> {
  %n = flashnorm.rms_norm %x eps(1.0e-05) : tensor<4x0xf32>
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x4xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<4x4xf32>) -> tensor<4x4xf32>
  %p = linalg.matmul ins(%n, %w : tensor<4x0xf32>, tensor<0x4xf32>) outs(%z : tensor<4x4xf32>) -> tensor<4x4xf32>
  return %p : tensor<4x4xf32>
}

func.func @dynamic_features(%x: tensor<4x?xf32>, %w: tensor<?x4xf32>) -> tensor<4x4xf32> {
  %n = flashnorm.rms_norm %x eps(1.0e-05) : tensor<4x?xf32>
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x4xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<4x4xf32>) -> tensor<4x4xf32>
  %p = linalg.matmul ins(%n, %w : tensor<4x?xf32>, tensor<?x4xf32>) outs(%z : tensor<4x4xf32>) -> tensor<4x4xf32>
  return %p : tensor<4x4xf32>
}

func.func @dynamic_empty_rows(%x: tensor<4x0xf32>, %w: tensor<0x4xf32>) -> tensor<4x4xf32> {
  %xd = tensor.cast %x : tensor<4x0xf32> to tensor<4x?xf32>
  %wd = tensor.cast %w : tensor<0x4xf32> to tensor<?x4xf32>
  %p = call @dynamic_features(%xd, %wd) : (tensor<4x?xf32>, tensor<?x4xf32>) -> tensor<4x4xf32>
  return %p : tensor<4x4xf32>
}
