// Argument weights reach @f through its prepare function (fold-gains'
// prepare-function): flashnorm-pack-prepared-weights has the prepare
// function return them in the CPU kernel's panels [N / P][K][P] and @f read
// the panels, in either stored layout; nothing is relaid per call.
// RUN: flashnorm-opt %s --flashnorm-pack-prepared-weights=panel=16 | FileCheck %s
// RUN: flashnorm-opt %s --flashnorm-pack-prepared-weights=panel=16 --remarks-filter=flashnorm --remark-format=emitRemark -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK
// The numbers: @f on the prepared panels through the CPU pipeline against
// the original @f on the same weights (this prepare function folds nothing,
// so both read the same values).
// RUN: flashnorm-run %s -e f --prepare | FileCheck %s --check-prefix=EXEC
// --pack-weights=false: @f on the prepared weights in their stored layout.
// RUN: flashnorm-run %s -e f --prepare --pack-weights=false | FileCheck %s --check-prefix=EXEC
// Run alone, @g is packed (its other caller is not compiled) and @h is not;
// both are called with the types the packing leaves.
// RUN: flashnorm-run %s -e g --prepare | FileCheck %s --check-prefix=EXEC
// RUN: flashnorm-run %s -e h --prepare | FileCheck %s --check-prefix=EXEC
// The activation read in blocks of 4 of k (16 bytes; the panels' loop in a
// loop over the blocks, as flashnorm-pack-weights builds it).
// RUN: flashnorm-opt %s --flashnorm-pack-prepared-weights='panel=16 activation-block-bytes=16' | FileCheck %s --check-prefix=BLOCKS
// RUN: flashnorm-run %s -e f --prepare --pipeline='flashnorm-pack-prepared-weights{panel=16 activation-block-bytes=16}' | FileCheck %s --check-prefix=EXEC
// BLOCKS-LABEL: func.func @f(
// BLOCKS: scf.for %{{.*}} = %c0 to %c8 step %c4 iter_args
// BLOCKS: linalg.copy
// BLOCKS: linalg.contract
// The step timed on the prepared weights, as a server runs it.
// RUN: flashnorm-run %s -e f --prepare --time 3 | FileCheck %s --check-prefix=TIME
// TIME: time: median {{[0-9.]+}} ms of 3 calls
// TIME: MATCH
// RUN: not flashnorm-opt %s --flashnorm-pack-prepared-weights=panel=-1 2>&1 | FileCheck %s --check-prefix=BAD

// CHECK-LABEL: func.func @f(
// CHECK-SAME: %{{.*}}: tensor<2x8xf32>, %[[W:.*]]: tensor<4x8x16xf32> {flashnorm.folded}, %[[V:.*]]: tensor<4x8x16xf32> {flashnorm.folded}, %[[U:.*]]: tensor<8x64xf32> {flashnorm.folded})
// CHECK: scf.forall
// CHECK: tensor.extract_slice %[[W]]
// CHECK: linalg.contract
// CHECK: scf.forall
// CHECK: tensor.extract_slice %[[V]]
// CHECK: linalg.contract
// CHECK-NOT: scf.forall (
// CHECK: linalg.matmul ins(%{{.*}}, %[[U]] :
// CHECK: return
// K x N: split n into (block, p), then (block, k, p); N x K: (block, p, k)
// then (block, k, p).
// CHECK-LABEL: func.func @f_flashnorm_prepare(
// CHECK-SAME: -> (tensor<4x8x16xf32>, tensor<4x8x16xf32>, tensor<8x64xf32>)
// CHECK: %[[WE:.*]] = tensor.expand_shape %arg1 {{\[\[}}0], [1, 2]] output_shape [8, 4, 16]
// CHECK: %[[WP:.*]] = linalg.transpose ins(%[[WE]] : tensor<8x4x16xf32>) outs(%{{.*}} : tensor<4x8x16xf32>) permutation = [1, 0, 2]
// CHECK: %[[VE:.*]] = tensor.expand_shape %arg2 {{\[\[}}0, 1], [2]] output_shape [4, 16, 8]
// CHECK: %[[VP:.*]] = linalg.transpose ins(%[[VE]] : tensor<4x16x8xf32>) outs(%{{.*}} : tensor<4x8x16xf32>) permutation = [0, 2, 1]
// CHECK: return %[[WP]], %[[VP]], %arg3
// CHECK-LABEL: func.func @main(
// CHECK: %[[P:.*]]:3 = call @f_flashnorm_prepare({{.*}}) : ({{.*}}) -> (tensor<4x8x16xf32>, tensor<4x8x16xf32>, tensor<8x64xf32>)
// CHECK: call @f(%{{.*}}, %[[P]]#0, %[[P]]#1, %[[P]]#2)
// A weight that something else reads too keeps its layout.
// REMARK: remark: [Missed] flashnorm-pack-prepared-weights {{.*}} Function=f {{.*}}argument #3 left in its layout: it has users that are not projections
// REMARK-COUNT-2: remark: [Passed] flashnorm-pack-prepared-weights {{.*}}Remark="weight packed into 4 panels of 16 outputs
// EXEC-NOT: max abs error {{[1-9]}}
// EXEC: MATCH
// BAD: flashnorm-pack-prepared-weights: panel, threads, parallel-min-bytes and activation-block-bytes must not be negative

#nk = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
func.func @f(%x: tensor<2x8xf32>, %w: tensor<8x64xf32> {flashnorm.folded},
             %v: tensor<64x8xf32> {flashnorm.folded},
             %u: tensor<8x64xf32> {flashnorm.folded})
    -> (tensor<2x64xf32>, tensor<2x64xf32>, tensor<2x64xf32>, tensor<8x64xf32>) {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x64xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<2x64xf32>) -> tensor<2x64xf32>
  %a = linalg.matmul ins(%x, %w : tensor<2x8xf32>, tensor<8x64xf32>) outs(%f : tensor<2x64xf32>) -> tensor<2x64xf32>
  %b = linalg.matmul indexing_maps = #nk ins(%x, %v : tensor<2x8xf32>, tensor<64x8xf32>) outs(%f : tensor<2x64xf32>) -> tensor<2x64xf32>
  %c = linalg.matmul ins(%x, %u : tensor<2x8xf32>, tensor<8x64xf32>) outs(%f : tensor<2x64xf32>) -> tensor<2x64xf32>
  return %a, %b, %c, %u : tensor<2x64xf32>, tensor<2x64xf32>, tensor<2x64xf32>, tensor<8x64xf32>
}
func.func @f_flashnorm_prepare(%x: tensor<2x8xf32>, %w: tensor<8x64xf32>,
                               %v: tensor<64x8xf32>, %u: tensor<8x64xf32>)
    -> (tensor<8x64xf32>, tensor<64x8xf32>, tensor<8x64xf32>) {
  return %w, %v, %u : tensor<8x64xf32>, tensor<64x8xf32>, tensor<8x64xf32>
}
func.func @main() {
  %x = arith.constant dense<0.5> : tensor<2x8xf32>
  %w = arith.constant dense<1.5> : tensor<8x64xf32>
  %v = arith.constant dense<2.0> : tensor<64x8xf32>
  %p:3 = func.call @f_flashnorm_prepare(%x, %w, %v, %w) : (tensor<2x8xf32>, tensor<8x64xf32>, tensor<64x8xf32>, tensor<8x64xf32>) -> (tensor<8x64xf32>, tensor<64x8xf32>, tensor<8x64xf32>)
  %r:4 = func.call @f(%x, %p#0, %p#1, %p#2) : (tensor<2x8xf32>, tensor<8x64xf32>, tensor<64x8xf32>, tensor<8x64xf32>) -> (tensor<2x64xf32>, tensor<2x64xf32>, tensor<2x64xf32>, tensor<8x64xf32>)
  return
}

// Refused, left exactly as they are: @g's weight reaches a caller other
// than @g (it would see the panels), and @g is called with a weight that
// did not come from its prepare function.
// CHECK-LABEL: func.func @g(
// CHECK-SAME: tensor<8x64xf32> {flashnorm.folded})
// CHECK: linalg.matmul
// CHECK-LABEL: func.func @g_flashnorm_prepare(
// CHECK-SAME: -> tensor<8x64xf32>
// CHECK-NEXT: return %arg1
// REMARK: remark: [Missed] flashnorm-pack-prepared-weights {{.*}}Function=g {{.*}}argument #1 left in its layout: the module passes it between @g_flashnorm_prepare and @g other than by a call of each
func.func @g(%x: tensor<2x8xf32>, %w: tensor<8x64xf32> {flashnorm.folded}) -> tensor<2x64xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x64xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<2x64xf32>) -> tensor<2x64xf32>
  %a = linalg.matmul ins(%x, %w : tensor<2x8xf32>, tensor<8x64xf32>) outs(%f : tensor<2x64xf32>) -> tensor<2x64xf32>
  return %a : tensor<2x64xf32>
}
func.func @g_flashnorm_prepare(%x: tensor<2x8xf32>, %w: tensor<8x64xf32>) -> tensor<8x64xf32> {
  return %w : tensor<8x64xf32>
}
func.func @g_weights(%x: tensor<2x8xf32>, %w: tensor<8x64xf32>) -> tensor<8x64xf32> {
  %p = func.call @g_flashnorm_prepare(%x, %w) : (tensor<2x8xf32>, tensor<8x64xf32>) -> tensor<8x64xf32>
  return %p : tensor<8x64xf32>
}

// Refused: @h's projection reads column 0 of its argument for every output
// (a layout generic that broadcasts, though the argument has the full
// shape); panels of the whole argument would not be what it reads.
// CHECK-LABEL: func.func @h(
// CHECK-SAME: tensor<8x64xf32> {flashnorm.folded})
// CHECK: linalg.generic
// CHECK: linalg.matmul
// REMARK: remark: [Missed] flashnorm-pack-prepared-weights {{.*}}Function=h {{.*}}argument #1 left in its layout: a projection reads it broadcast, not as its k x n
#column0 = [affine_map<(k, n) -> (k, 0)>, affine_map<(k, n) -> (k, n)>]
func.func @h(%x: tensor<2x8xf32>, %w: tensor<8x64xf32> {flashnorm.folded}) -> tensor<2x64xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x64xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<2x64xf32>) -> tensor<2x64xf32>
  %we = tensor.empty() : tensor<8x64xf32>
  %b = linalg.generic {indexing_maps = #column0, iterator_types = ["parallel", "parallel"]}
      ins(%w : tensor<8x64xf32>) outs(%we : tensor<8x64xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<8x64xf32>
  %a = linalg.matmul ins(%x, %b : tensor<2x8xf32>, tensor<8x64xf32>) outs(%f : tensor<2x64xf32>) -> tensor<2x64xf32>
  return %a : tensor<2x64xf32>
}
func.func @h_flashnorm_prepare(%x: tensor<2x8xf32>, %w: tensor<8x64xf32>) -> tensor<8x64xf32> {
  return %w : tensor<8x64xf32>
}
