// The CPU schedule of deferred norms: each statistic and each projection in
// an async.execute, both awaited before every post-scale; also when the
// statistic comes after the projection in the input.
// An in-place update of the statistic's input before the post-scale keeps the
// group serial (the task would race with it). The cost rule is off here
// (concurrent-min-bytes=0) except where it is tested.
// RUN: flashnorm-opt %S/../Integration/Inputs/inplace-update.mlir '--flashnorm-cpu-to-buffers=concurrent-min-bytes=0' --remarks-filter=flashnorm --remark-format=emitRemark -o /dev/null 2>&1 | FileCheck %s --check-prefix=INPLACE
// INPLACE: kept serial: an op before the post-scale writes a buffer the statistic or a projection uses
// RUN: flashnorm-opt %s '--flashnorm-cpu-to-buffers=concurrent-min-bytes=0' | FileCheck %s
// RUN: flashnorm-opt %s '--flashnorm-cpu-to-buffers=concurrent-min-bytes=0' --remarks-filter=flashnorm \
// RUN:   --remark-format=emitRemark 2>&1 >/dev/null | FileCheck %s --check-prefix=REMARK
// RUN: flashnorm-run %s -e stat_after_projection --concurrent --compare \
// RUN:   --compare-with=%s | FileCheck %s --check-prefix=SAME
// RUN: flashnorm-run %s -e two_projections --concurrent --compare | FileCheck %s --check-prefix=RAN
// The cost rule (the pipeline's default concurrent-min-bytes, 16 MiB): these
// statistics are far too small for a task of their own.
// RUN: flashnorm-opt %s --flashnorm-cpu-to-buffers --remarks-filter=flashnorm \
// RUN:   --remark-format=emitRemark 2>&1 >/dev/null | FileCheck %s --check-prefix=RULE
// RULE: kept serial: the statistic reads 128 bytes, below min-stat-bytes (its task would cost more than the overlap saves)
// RULE-NOT: run as async tasks

// REMARK-DAG: Function=stat_after_projection | Remark="statistic and 1 projection(s) run as async tasks, joined before 1 post-scale(s)"
// REMARK-DAG: Function=two_projections | Remark="statistic and 2 projection(s) run as async tasks, joined before 2 post-scale(s)"
// CHECK-LABEL: func.func @stat_after_projection
// CHECK: %[[P:.*]] = async.execute {
// CHECK-NEXT: linalg.matmul
// CHECK: %[[S:.*]] = async.execute {
// CHECK: async.await %[[S]]
// CHECK-NEXT: async.await %[[P]]
// CHECK-NEXT: linalg.generic
// CHECK-LABEL: func.func @two_projections
// CHECK: %[[S2:.*]] = async.execute {
// CHECK: %[[P1:.*]] = async.execute {
// CHECK: async.await %[[S2]]
// CHECK-NEXT: async.await %[[P1]]
// CHECK: %[[P2:.*]] = async.execute {
// CHECK: async.await %[[S2]]
// CHECK-NEXT: async.await %[[P2]]
// SAME: MATCH
// RAN: output #0 4x16xf32
// RAN: output #1 4x16xf32
// RAN: MATCH

func.func @stat_after_projection(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>) -> tensor<4x16xf32> {
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x16xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<4x16xf32>) -> tensor<4x16xf32>
  %p = linalg.matmul ins(%x, %w : tensor<4x8xf32>, tensor<8x16xf32>) outs(%z : tensor<4x16xf32>) -> tensor<4x16xf32>
  %s = flashnorm.rms_inv %x eps(1.0e-05) : tensor<4x8xf32> -> tensor<4xf32>
  %y = flashnorm.post_scale %p, %s : tensor<4x16xf32>, tensor<4xf32> -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}

func.func @two_projections(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>, %v: tensor<8x16xf32>)
    -> (tensor<4x16xf32>, tensor<4x16xf32>) {
  %s = flashnorm.rms_inv %x eps(1.0e-05) : tensor<4x8xf32> -> tensor<4xf32>
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x16xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<4x16xf32>) -> tensor<4x16xf32>
  %p = linalg.matmul ins(%x, %w : tensor<4x8xf32>, tensor<8x16xf32>) outs(%z : tensor<4x16xf32>) -> tensor<4x16xf32>
  %y = flashnorm.post_scale %p, %s : tensor<4x16xf32>, tensor<4xf32> -> tensor<4x16xf32>
  %q = linalg.matmul ins(%x, %v : tensor<4x8xf32>, tensor<8x16xf32>) outs(%z : tensor<4x16xf32>) -> tensor<4x16xf32>
  %u = flashnorm.post_scale %q, %s : tensor<4x16xf32>, tensor<4xf32> -> tensor<4x16xf32>
  return %y, %u : tensor<4x16xf32>, tensor<4x16xf32>
}
