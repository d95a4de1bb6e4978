// flashnorm-pack-weights: constant weights relaid at compile time into the
// micro-kernel's panels [N / P][K][P], the projection an scf.forall over
// chunks (one per core) of a loop over panels, each a linalg.contract.
// RUN: flashnorm-opt %s --flashnorm-pack-weights='panel=2 threads=1'  | FileCheck %s
// RUN: flashnorm-opt %s --flashnorm-pack-weights='panel=2 threads=2 parallel-min-bytes=0'  | FileCheck %s --check-prefix=SPLIT
// RUN: not flashnorm-opt %s --flashnorm-pack-weights='panel=-1'  2>&1 | FileCheck %s --check-prefix=BADPANEL
// RUN: not flashnorm-opt %s --flashnorm-pack-weights='threads=-2'  2>&1 | FileCheck %s --check-prefix=BADTHREADS
// Each rewrite keeps the numbers, in a loop and split over two cores (the
// reference: the same file, whose N is too small for the default panels).
// RUN: flashnorm-run %s -e two_layouts --pipeline='flashnorm-pack-weights{panel=2 threads=1}' --compare | FileCheck %s --check-prefix=SAME
// RUN: flashnorm-run %s -e two_layouts --pipeline='flashnorm-pack-weights{panel=2 threads=2 parallel-min-bytes=0}' --compare | FileCheck %s --check-prefix=SAME
// RUN: flashnorm-run %s -e bf16_weights --pipeline='flashnorm-pack-weights{panel=2 threads=2 parallel-min-bytes=0}' --compare | FileCheck %s --check-prefix=SAME
// RUN: flashnorm-run %s -e fused_post_scale --pipeline='flashnorm-pack-weights{panel=2 threads=1}' --compare | FileCheck %s --check-prefix=SAME
// RUN: flashnorm-run %s -e fused_post_scale --pipeline='flashnorm-pack-weights{panel=2 threads=2 parallel-min-bytes=0}' --compare | FileCheck %s --check-prefix=SAME
// BADPANEL: flashnorm-pack-weights: panel must be 0 (by shape) or positive, not -1
// BADTHREADS: flashnorm-pack-weights: threads must be 0 (this machine's) or positive, not -2
// SAME: MATCH

// K x N and PyTorch's N x K: the same panels (column pairs of W, row by row).
// CHECK-LABEL: func.func @two_layouts
// CHECK-DAG: %[[P:.*]] = arith.constant dense<{{\[}}[{{\[}}0.000000e+00, 1.000000e+00], [4.000000e+00, 5.000000e+00]], [{{\[}}2.000000e+00, 3.000000e+00], [6.000000e+00, 7.000000e+00]]]> : tensor<2x2x2xf32>
// CHECK: scf.forall (%[[C:.*]]) in (1) shared_outs(%[[ACC:.*]] = %{{.*}}) -> (tensor<3x4xf32>)
// CHECK: scf.forall (%[[I:.*]]) in (2) shared_outs
// CHECK: tensor.extract_slice %[[P]][%{{.*}}, 0, 0] [1, 2, 2] [1, 1, 1] : tensor<2x2x2xf32> to tensor<2x2xf32>
// CHECK: linalg.contract
// CHECK: } {flashnorm.serial_panels}
// CHECK: } {flashnorm.serial_panels}
// CHECK-NOT: linalg.matmul
// The transposed weight: the same panels again (one constant after CSE;
// here a second one), no linalg.transpose left.
// CHECK: arith.constant dense<{{\[}}[{{\[}}0.000000e+00, 1.000000e+00], [4.000000e+00, 5.000000e+00]], [{{\[}}2.000000e+00, 3.000000e+00], [6.000000e+00, 7.000000e+00]]]> : tensor<2x2x2xf32>
// CHECK-NOT: linalg.transpose
// CHECK: linalg.contract
// CHECK: return
// With two cores and no size threshold, the two panels are two tasks.
// SPLIT-LABEL: func.func @two_layouts
// SPLIT: scf.forall (%{{.*}}) in (2) shared_outs
// SPLIT: scf.forall (%{{.*}}) in (1) shared_outs
// SPLIT: } {flashnorm.serial_panels}
// SPLIT-NEXT: scf.forall.in_parallel
// SPLIT: }{{$}}
func.func @two_layouts(%x: tensor<3x2xf32>) -> (tensor<3x4xf32>, tensor<3x4xf32>) {
  %w = arith.constant dense<[[0.0, 1.0, 2.0, 3.0], [4.0, 5.0, 6.0, 7.0]]> : tensor<2x4xf32>
  %wt = arith.constant dense<[[0.0, 4.0], [1.0, 5.0], [2.0, 6.0], [3.0, 7.0]]> : tensor<4x2xf32>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<3x4xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<3x4xf32>) -> tensor<3x4xf32>
  %a = linalg.matmul ins(%x, %w : tensor<3x2xf32>, tensor<2x4xf32>) outs(%f : tensor<3x4xf32>) -> tensor<3x4xf32>
  %te = tensor.empty() : tensor<2x4xf32>
  %t = linalg.transpose ins(%wt : tensor<4x2xf32>) outs(%te : tensor<2x4xf32>) permutation = [1, 0]
  %b = linalg.matmul ins(%x, %t : tensor<3x2xf32>, tensor<2x4xf32>) outs(%f : tensor<3x4xf32>) -> tensor<3x4xf32>
  return %a, %b : tensor<3x4xf32>, tensor<3x4xf32>
}

// bf16 weights with an f32 accumulator: bf16 panels; the bf16 activations
// widened to f32 once, before the panels, not at every k of each.
// CHECK-LABEL: func.func @bf16_weights
// CHECK: arith.constant dense<{{.*}}> : tensor<2x2x2xbf16>
// CHECK: %[[WIDE:.*]] = linalg.generic {{.*}} ins(%arg0 : tensor<3x2xbf16>) outs(%{{.*}} : tensor<3x2xf32>)
// CHECK: arith.extf %{{.*}} : bf16 to f32
// CHECK: scf.forall
// CHECK: linalg.contract {{.*}} ins(%[[WIDE]], %{{.*}} : tensor<3x2xf32>, tensor<2x2xbf16>) outs(%{{.*}} : tensor<3x2xf32>)
func.func @bf16_weights(%x: tensor<3x2xbf16>) -> tensor<3x4xf32> {
  %w = arith.constant dense<[[0.5, 1.0, 2.0, 3.0], [4.0, 5.0, 6.0, 7.0]]> : tensor<2x4xbf16>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<3x4xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<3x4xf32>) -> tensor<3x4xf32>
  %a = linalg.matmul ins(%x, %w : tensor<3x2xbf16>, tensor<2x4xbf16>) outs(%f : tensor<3x4xf32>) -> tensor<3x4xf32>
  return %a : tensor<3x4xf32>
}

// The projection's sole user, a post-scale, runs in each panel's epilogue,
// on a panel of the zero accumulator filled there; the loop goes where the
// post-scale was (its scale is computed after the projection).
// CHECK-LABEL: func.func @fused_post_scale
// CHECK: %[[S:.*]] = flashnorm.rms_inv
// CHECK: scf.forall
// CHECK: scf.forall
// CHECK: %[[OUT:.*]] = tensor.extract_slice %{{.*}}[0, %{{.*}}] [3, 2] [1, 1] : tensor<3x4xf32> to tensor<3x2xf32>
// CHECK: %[[ZERO:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%[[OUT]] : tensor<3x2xf32>)
// CHECK: %[[PROD:.*]] = linalg.contract {{.*}} outs(%[[ZERO]] : tensor<3x2xf32>)
// CHECK: flashnorm.post_scale %[[PROD]], %[[S]] : tensor<3x2xf32>, tensor<3xf32> -> tensor<3x2xf32>
// CHECK-NOT: flashnorm.post_scale
// CHECK: return
func.func @fused_post_scale(%x: tensor<3x2xf32>) -> tensor<3x4xf32> {
  %w = arith.constant dense<[[0.0, 1.0, 2.0, 3.0], [4.0, 5.0, 6.0, 7.0]]> : tensor<2x4xf32>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<3x4xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<3x4xf32>) -> tensor<3x4xf32>
  %p = linalg.matmul ins(%x, %w : tensor<3x2xf32>, tensor<2x4xf32>) outs(%f : tensor<3x4xf32>) -> tensor<3x4xf32>
  %s = flashnorm.rms_inv %x eps(1.0e-05) : tensor<3x2xf32> -> tensor<3xf32>
  %y = flashnorm.post_scale %p, %s : tensor<3x4xf32>, tensor<3xf32> -> tensor<3x4xf32>
  return %y : tensor<3x4xf32>
}

// A projection in a concurrent group (flashnorm-async-mark) on one core
// runs as a task beside its statistic: the loop takes the projection's
// marks and the post-scale stays after the join. Split over the cores, it
// leaves no core for the statistic: the post-scale is fused and the group's
// marks are removed (it runs serially).
// CHECK-LABEL: func.func @marked
// CHECK: flashnorm.rms_inv %{{.*}} {flashnorm.async_group = 0 : i64, flashnorm.async_role = #flashnorm.async_role<stat>}
// CHECK: } {flashnorm.async_group = 0 : i64, flashnorm.async_pair = 0 : i64, flashnorm.async_role = #flashnorm.async_role<proj>, flashnorm.serial_panels}
// CHECK: flashnorm.post_scale {{.*}} {flashnorm.async_group = 0 : i64, flashnorm.async_pair = 0 : i64, flashnorm.async_role = #flashnorm.async_role<post>}
// SPLIT-LABEL: func.func @marked
// SPLIT-NOT: flashnorm.async
// SPLIT: flashnorm.post_scale
// SPLIT-NOT: flashnorm.async
// SPLIT: return
func.func @marked(%x: tensor<3x2xf32>) -> tensor<3x4xf32> {
  %w = arith.constant dense<[[0.0, 1.0, 2.0, 3.0], [4.0, 5.0, 6.0, 7.0]]> : tensor<2x4xf32>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<3x4xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<3x4xf32>) -> tensor<3x4xf32>
  %s = flashnorm.rms_inv %x eps(1.0e-05) {flashnorm.async_group = 0 : i64, flashnorm.async_role = #flashnorm.async_role<stat>} : tensor<3x2xf32> -> tensor<3xf32>
  %p = linalg.matmul {flashnorm.async_group = 0 : i64, flashnorm.async_pair = 0 : i64, flashnorm.async_role = #flashnorm.async_role<proj>} ins(%x, %w : tensor<3x2xf32>, tensor<2x4xf32>) outs(%f : tensor<3x4xf32>) -> tensor<3x4xf32>
  %y = flashnorm.post_scale %p, %s {flashnorm.async_group = 0 : i64, flashnorm.async_pair = 0 : i64, flashnorm.async_role = #flashnorm.async_role<post>} : tensor<3x4xf32>, tensor<3xf32> -> tensor<3x4xf32>
  return %y : tensor<3x4xf32>
}

// Refused, left exactly as they are: a weight that is an argument, one in a
// checkpoint (an ml_program global), N not a multiple of the panel, an
// empty k.
// CHECK-LABEL: func.func @refused
// CHECK-NOT: scf.forall
// CHECK-COUNT-4: linalg.matmul
// CHECK-NOT: scf.forall
// CHECK: return
ml_program.global private @w(dense<1.0> : tensor<2x4xf32>) : tensor<2x4xf32>
func.func @refused(%x: tensor<3x2xf32>, %wa: tensor<2x4xf32>, %x0: tensor<3x0xf32>)
    -> (tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x3xf32>, tensor<3x4xf32>) {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<3x4xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<3x4xf32>) -> tensor<3x4xf32>
  %a = linalg.matmul ins(%x, %wa : tensor<3x2xf32>, tensor<2x4xf32>) outs(%f : tensor<3x4xf32>) -> tensor<3x4xf32>
  %wg = ml_program.global_load_const @w : tensor<2x4xf32>
  %b = linalg.matmul ins(%x, %wg : tensor<3x2xf32>, tensor<2x4xf32>) outs(%f : tensor<3x4xf32>) -> tensor<3x4xf32>
  %w3 = arith.constant dense<1.0> : tensor<2x3xf32>
  %e3 = tensor.empty() : tensor<3x3xf32>
  %f3 = linalg.fill ins(%z : f32) outs(%e3 : tensor<3x3xf32>) -> tensor<3x3xf32>
  %c = linalg.matmul ins(%x, %w3 : tensor<3x2xf32>, tensor<2x3xf32>) outs(%f3 : tensor<3x3xf32>) -> tensor<3x3xf32>
  %w0 = arith.constant dense<1.0> : tensor<0x4xf32>
  %d = linalg.matmul ins(%x0, %w0 : tensor<3x0xf32>, tensor<0x4xf32>) outs(%f : tensor<3x4xf32>) -> tensor<3x4xf32>
  return %a, %b, %c, %d : tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x3xf32>, tensor<3x4xf32>
}

// Refused: the projection reads column 0 of the constant for every output
// (a broadcasting layout generic over a constant of full shape).
// CHECK-LABEL: func.func @broadcast_column
// CHECK-NOT: scf.forall
// CHECK: linalg.matmul
// RUN: flashnorm-run %s -e broadcast_column --pipeline='flashnorm-pack-weights{panel=2 threads=1}' --compare | FileCheck %s --check-prefix=SAME
#column0 = [affine_map<(k, n) -> (k, 0)>, affine_map<(k, n) -> (k, n)>]
func.func @broadcast_column(%x: tensor<3x2xf32>) -> tensor<3x4xf32> {
  %w = arith.constant dense<[[0.0, 1.0, 2.0, 3.0], [4.0, 5.0, 6.0, 7.0]]> : tensor<2x4xf32>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<3x4xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<3x4xf32>) -> tensor<3x4xf32>
  %we = tensor.empty() : tensor<2x4xf32>
  %b = linalg.generic {indexing_maps = #column0, iterator_types = ["parallel", "parallel"]}
      ins(%w : tensor<2x4xf32>) outs(%we : tensor<2x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<2x4xf32>
  %p = linalg.matmul ins(%x, %b : tensor<3x2xf32>, tensor<2x4xf32>) outs(%f : tensor<3x4xf32>) -> tensor<3x4xf32>
  return %p : tensor<3x4xf32>
}
