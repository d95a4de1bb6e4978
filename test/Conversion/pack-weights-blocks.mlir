// flashnorm-pack-weights on a prefill activation larger than
// `activation-block-bytes`: read in blocks (rows by k), each copied into a
// contiguous tensor once and then read by every panel of the chunk, the
// post-scale over a chunk's outputs after its last block, bf16 panels
// widened block by block; a chunk's panels in groups whose accumulator fits
// the budget too, the blocks inside each group. Blocks of 4 rows by 4 of k here (16 bytes), 4 rows
// by all 8 of k at 128 bytes, none at the default (256 KiB); never fewer
// rows than the register tile's (4 on AVX2).
// RUN: flashnorm-opt %s --flashnorm-pack-weights='panel=2 threads=1 vector-bits=256 activation-block-bytes=16' | FileCheck %s
// RUN: flashnorm-opt %s --flashnorm-pack-weights='panel=2 threads=2 parallel-min-bytes=0 vector-bits=256 activation-block-bytes=128' | FileCheck %s --check-prefix=ROWS
// RUN: flashnorm-opt %s --flashnorm-pack-weights='panel=2 threads=1 vector-bits=256' | FileCheck %s --check-prefix=WHOLE
// RUN: flashnorm-opt %s --flashnorm-pack-weights='panel=2 threads=1 vector-bits=256 activation-block-bytes=16' --remarks-filter=flashnorm --remark-format=emitRemark -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK
// REMARK: Remark="weight packed into 2 panels of 2 outputs, in a loop on one core, the activation read in blocks of 4 rows by 4 of k"
// REMARK: Remark="weight packed into 2 panels of 2 outputs, in a loop on one core, the activation read in blocks of 4 rows by 4 of k, each panel's block widened once, post-scale fused"
// RUN: not flashnorm-opt %s --flashnorm-pack-weights='activation-block-bytes=-1' 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: not flashnorm-opt %s --flashnorm-pack-prepared-weights='activation-block-bytes=-1' 2>&1 | FileCheck %s --check-prefix=BADPREP
// BAD: flashnorm-pack-weights: activation-block-bytes must not be negative, not -1
// BADPREP: flashnorm-pack-prepared-weights: panel, threads, parallel-min-bytes and activation-block-bytes must not be negative
//
// Numbers unchanged (against the file as it is, the weights in their stored
// layout: N is too small for the pipeline's own panels), in a loop and split
// over two cores, through the whole CPU pipeline (the micro-kernel on the
// blocks' views).
// RUN: flashnorm-run %s -e blocks --pipeline='flashnorm-pack-weights{panel=2 threads=1 activation-block-bytes=16}' --compare | FileCheck %s --check-prefix=SAME
// RUN: flashnorm-run %s -e blocks --pipeline='flashnorm-pack-weights{panel=2 threads=2 parallel-min-bytes=0 activation-block-bytes=16}' --compare | FileCheck %s --check-prefix=SAME
// RUN: flashnorm-run %s -e blocks --pipeline='flashnorm-pack-weights{panel=2 threads=2 parallel-min-bytes=0 activation-block-bytes=128}' --compare | FileCheck %s --check-prefix=SAME
// RUN: flashnorm-run %s -e post_blocks --pipeline='flashnorm-pack-weights{panel=2 threads=1 vector-bits=256 activation-block-bytes=16}' --compare | FileCheck %s --check-prefix=SAME
// RUN: flashnorm-run %s -e post_blocks --pipeline='flashnorm-pack-weights{panel=2 threads=2 parallel-min-bytes=0 vector-bits=256 activation-block-bytes=16}' --compare | FileCheck %s --check-prefix=SAME
// RUN: flashnorm-run %s -e post_blocks --pipeline='flashnorm-pack-weights{panel=2 threads=2 parallel-min-bytes=0 vector-bits=256 activation-block-bytes=128}' --compare | FileCheck %s --check-prefix=SAME
// SAME: MATCH
//
// In the pipeline the accumulator of each tile stays in registers across a
// block's k (a vector carried by the k loop, read and written outside it).
// RUN: flashnorm-opt %s --flashnorm-cpu-to-buffers='vector-bits=256 threads=1 activation-block-bytes=16' | flashnorm-opt --pass-pipeline='builtin.module(func.func(flashnorm-cpu-codegen{vector-bits=256 threads=1}))' | FileCheck %s --check-prefix=KERNEL

// f32: two groups of one panel (a group's accumulator fills the budget
// too, at least one panel), each two row blocks of 4 rows, each two k
// blocks of 4, each the group's panel loop reading the block's copy.
// CHECK-LABEL: func.func @blocks
// CHECK: scf.forall (%{{.*}}) in (1) shared_outs(%[[ACC:.*]] = %{{.*}}) -> (tensor<8x4xf32>)
// CHECK: %[[CHUNK:.*]] = tensor.extract_slice %[[ACC]][0, %{{.*}}] [8, 4] [1, 1]
// CHECK: %[[GDONE:.*]] = scf.for %[[G:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[GACC:.*]] = %[[CHUNK]]) -> (tensor<8x4xf32>)
// CHECK: %[[FIRST:.*]] = arith.addi %{{.*}}, %[[G]]
// CHECK: %[[GSLICE:.*]] = tensor.extract_slice %[[GACC]][0, %{{.*}}] [8, 2] [1, 1]
// CHECK: %[[RDONE:.*]] = scf.for %[[R:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[RACC:.*]] = %[[GSLICE]]) -> (tensor<8x2xf32>)
// CHECK: %[[RSLICE:.*]] = tensor.extract_slice %[[RACC]][%[[R]], 0] [4, 2] [1, 1]
// CHECK: %[[KS:.*]] = scf.for %[[K:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[KACC:.*]] = %[[RSLICE]]) -> (tensor<4x2xf32>)
// CHECK: %[[XB:.*]] = tensor.extract_slice %arg0[%[[R]], %[[K]]] [4, 4] [1, 1] : tensor<8x8xf32> to tensor<4x4xf32>
// CHECK: %[[COPY:.*]] = linalg.copy ins(%[[XB]] : tensor<4x4xf32>)
// CHECK: scf.forall (%[[P:.*]]) in (1) shared_outs(%{{.*}} = %[[KACC]])
// CHECK: %[[IDX:.*]] = arith.addi %[[FIRST]], %[[P]]
// CHECK: tensor.extract_slice %{{.*}}[%[[IDX]], %[[K]], 0] [1, 4, 2] [1, 1, 1] : tensor<2x8x2xf32> to tensor<4x2xf32>
// CHECK: linalg.contract {{.*}} ins(%[[COPY]], %{{.*}} : tensor<4x4xf32>, tensor<4x2xf32>) outs(%{{.*}} : tensor<4x2xf32>)
// CHECK: } {flashnorm.serial_panels}
// CHECK: scf.yield
// CHECK: tensor.insert_slice %[[KS]] into %[[RACC]][%[[R]], 0] [4, 2] [1, 1]
// CHECK: tensor.insert_slice %[[RDONE]] into %[[GACC]][0, %{{.*}}] [8, 2] [1, 1]
// CHECK: tensor.parallel_insert_slice %[[GDONE]] into %[[ACC]]
// ROWS-LABEL: func.func @blocks
// ROWS: scf.forall (%{{.*}}) in (2)
// ROWS: scf.for %{{.*}} = %c0 to %c8 step %c4
// ROWS-NOT: scf.for %
// ROWS: tensor.extract_slice %arg0[%{{.*}}, 0] [4, 8] [1, 1] : tensor<8x8xf32> to tensor<4x8xf32>
// ROWS: linalg.copy
// WHOLE-LABEL: func.func @blocks
// WHOLE-NOT: scf.for %
// WHOLE-NOT: linalg.copy
// WHOLE: linalg.contract {{.*}} ins(%arg0, %{{.*}} : tensor<8x8xf32>, tensor<8x2xf32>)
// WHOLE-LABEL: func.func @post_blocks
func.func @blocks(%x: tensor<8x8xf32>) -> tensor<8x4xf32> {
  %w = arith.constant dense<[[0.479, 0.974, 0.042, -0.952], [0.932, 0.598, -0.612, -0.926], [0.946, -0.058, -0.978, -0.465], [0.516, -0.688, -0.883, 0.215], [-0.158, -0.994, -0.374, 0.794], [-0.757, -0.832, 0.312, 0.999], [-1.000, -0.279, 0.850, 0.734], [-0.773, 0.405, 0.989, 0.124]]> : tensor<8x4xf32>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x4xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<8x4xf32>) -> tensor<8x4xf32>
  %a = linalg.matmul ins(%x, %w : tensor<8x8xf32>, tensor<8x4xf32>) outs(%f : tensor<8x4xf32>) -> tensor<8x4xf32>
  return %a : tensor<8x4xf32>
}

// bf16 with a post-scale to bf16: the forall carries the f32 accumulator
// (the projection's zero fill, whole) beside the bf16 result; each chunk's
// outputs are post-scaled after the blocks. The activation is widened by
// the copy of each block, never whole (no M x K f32 copy of it); each
// panel's block is widened before the row tiles (8 rows: two tiles of 4 on
// AVX2) read it.
// CHECK-LABEL: func.func @post_blocks
// CHECK: %[[FILL:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<8x4xf32>)
// CHECK: %[[S:.*]] = flashnorm.rms_inv
// CHECK-NOT: tensor<8x8xf32>
// CHECK: %[[OUT:.*]] = tensor.empty() : tensor<8x4xbf16>
// CHECK: scf.forall (%{{.*}}) in (1) shared_outs(%[[ACC:.*]] = %[[FILL]], %[[RES:.*]] = %[[OUT]]) -> (tensor<8x4xf32>, tensor<8x4xbf16>)
// CHECK: %[[BLOCK:.*]] = tensor.extract_slice %arg0{{.*}} : tensor<8x8xbf16> to tensor<4x4xbf16>
// CHECK: linalg.generic {{.*}} ins(%[[BLOCK]] : tensor<4x4xbf16>) outs(%{{.*}} : tensor<4x4xf32>)
// CHECK: arith.extf
// CHECK: %[[PANEL:.*]] = tensor.extract_slice %{{.*}} : tensor<2x8x2xbf16> to tensor<4x2xbf16>
// CHECK: %[[WPANEL:.*]] = linalg.generic {{.*}} ins(%[[PANEL]] : tensor<4x2xbf16>) outs(%{{.*}} : tensor<4x2xf32>)
// CHECK: linalg.contract {{.*}} ins(%{{.*}}, %[[WPANEL]] : tensor<4x4xf32>, tensor<4x2xf32>)
// CHECK-NOT: flashnorm.post_scale
// CHECK: tensor.insert_slice
// CHECK: %[[SCALED:.*]] = flashnorm.post_scale %{{.*}}, %[[S]] : tensor<8x4xf32>, tensor<8xf32> -> tensor<8x4xbf16>
// CHECK: scf.forall.in_parallel
// CHECK-NEXT: tensor.parallel_insert_slice %{{.*}} into %[[ACC]]
// CHECK-NEXT: tensor.parallel_insert_slice %[[SCALED]] into %[[RES]]
// CHECK: return %{{.*}}#1 : tensor<8x4xbf16>
// The same without blocks: the post-scale in each panel's epilogue.
// WHOLE: scf.forall (%{{.*}}) in (1) shared_outs(%{{.*}} = %{{.*}}) -> (tensor<8x4xbf16>)
// WHOLE-NOT: scf.for %
// WHOLE: flashnorm.post_scale %{{.*}} : tensor<8x2xf32>, tensor<8xf32> -> tensor<8x2xbf16>
func.func @post_blocks(%x: tensor<8x8xbf16>) -> tensor<8x4xbf16> {
  %w = arith.constant dense<[[0.997, 0.335, -0.818, -0.773], [0.808, -0.351, -0.996, -0.182], [0.239, -0.872, -0.706, 0.494], [-0.443, -0.982, -0.083, 0.938], [-0.916, -0.631, 0.578, 0.941], [-0.959, 0.017, 0.968, 0.501], [-0.551, 0.657, 0.902, -0.174], [0.117, 0.988, 0.412, -0.768]]> : tensor<8x4xbf16>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x4xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<8x4xf32>) -> tensor<8x4xf32>
  %p = linalg.matmul ins(%x, %w : tensor<8x8xbf16>, tensor<8x4xbf16>) outs(%f : tensor<8x4xf32>) -> tensor<8x4xf32>
  %s = flashnorm.rms_inv %x eps(1.0e-05) : tensor<8x8xbf16> -> tensor<8xf32>
  %y = flashnorm.post_scale %p, %s : tensor<8x4xf32>, tensor<8xf32> -> tensor<8x4xbf16>
  return %y : tensor<8x4xbf16>
}

// Through the pipeline's own panels (16 outputs on AVX2): the tile's
// accumulator is read before a block's k loop, carried in it, written after.
// KERNEL-LABEL: func.func @kernel
// KERNEL: %[[A:.*]] = vector.transfer_read %{{.*}} : memref<8x32xf32>, vector<4x16xf32>
// KERNEL-NEXT: %[[K:.*]] = scf.for %{{.*}} iter_args(%{{.*}} = %[[A]]) -> (vector<4x16xf32>)
// KERNEL: vector.contract
// KERNEL: scf.yield
// KERNEL-NEXT: }
// KERNEL-NEXT: vector.transfer_write %[[K]], %{{.*}} : vector<4x16xf32>, memref<8x32xf32>
func.func @kernel(%x: tensor<8x8xf32>) -> tensor<8x32xf32> {
  %w = arith.constant dense<0.5> : tensor<8x32xf32>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x32xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<8x32xf32>) -> tensor<8x32xf32>
  %a = linalg.matmul ins(%x, %w : tensor<8x8xf32>, tensor<8x32xf32>) outs(%f : tensor<8x32xf32>) -> tensor<8x32xf32>
  return %a : tensor<8x32xf32>
}
