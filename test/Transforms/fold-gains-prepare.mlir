// RUN: flashnorm-opt %s --flashnorm-fold-gains=prepare-function=true --split-input-file | FileCheck %s
// RUN: flashnorm-opt %s --flashnorm-fold-gains=prepare-function=true --split-input-file \
// RUN:   --remarks-filter=flashnorm --remark-format=emitRemark 2>&1 >/dev/null \
// RUN:   | FileCheck %s --check-prefix=REMARK
// Without the option, argument weights are not folded.
// RUN: flashnorm-opt %s --flashnorm-fold-gains --split-input-file | FileCheck %s --check-prefix=OFF
// OFF-NOT: _flashnorm_prepare
// OFF: flashnorm.rms_norm %{{.*}} gain(

// Gain and weights are arguments (one in PyTorch layout through a
// transpose); the norm loses its gain, the weight arguments are marked, the
// prepare function computes W * (1 + g) along K, and callers go through it.
// CHECK-LABEL: func.func @block
// CHECK-SAME: %{{.*}}: tensor<8xf32>, %{{.*}}: tensor<8x16xf32> {flashnorm.folded}, %{{.*}}: tensor<16x8xf32> {flashnorm.folded}
// CHECK: flashnorm.rms_norm %{{.*}} eps(1.000000e-05) : tensor<4x8xf32>
// CHECK-LABEL: func.func @block_flashnorm_prepare
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>, %[[G:.*]]: tensor<8xf32>, %[[WQ:.*]]: tensor<8x16xf32>, %[[WK:.*]]: tensor<16x8xf32>) -> (tensor<8x16xf32>, tensor<16x8xf32>)
// CHECK: linalg.generic {{.*}} ins(%[[WQ]], %[[G]] : tensor<8x16xf32>, tensor<8xf32>)
// CHECK: arith.addf
// CHECK: linalg.generic {{.*}} ins(%[[WK]], %[[G]] : tensor<16x8xf32>, tensor<8xf32>)
// CHECK-LABEL: func.func @caller
// CHECK: %[[P:.*]]:2 = call @block_flashnorm_prepare(%arg0, %arg1, %arg2, %arg3)
// CHECK: call @block(%arg0, %arg1, %[[P]]#0, %[[P]]#1)
// REMARK: Function=block | Remark="folded the gain into 2 projection weight(s) (2 argument(s), through the prepare function)"
func.func @block(%x: tensor<4x8xf32>, %g: tensor<8xf32>, %wq: tensor<8x16xf32>, %wk: tensor<16x8xf32>)
    -> (tensor<4x16xf32>, tensor<4x16xf32>) {
  %n = flashnorm.rms_norm %x gain(%g : tensor<8xf32>) eps(1.0e-05) convention one_plus : tensor<4x8xf32>
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x16xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<4x16xf32>) -> tensor<4x16xf32>
  %q = linalg.matmul ins(%n, %wq : tensor<4x8xf32>, tensor<8x16xf32>) outs(%z : tensor<4x16xf32>) -> tensor<4x16xf32>
  %et = tensor.empty() : tensor<8x16xf32>
  %wkt = linalg.transpose ins(%wk : tensor<16x8xf32>) outs(%et : tensor<8x16xf32>) permutation = [1, 0]
  %k = linalg.matmul ins(%n, %wkt : tensor<4x8xf32>, tensor<8x16xf32>) outs(%z : tensor<4x16xf32>) -> tensor<4x16xf32>
  return %q, %k : tensor<4x16xf32>, tensor<4x16xf32>
}

func.func @caller(%x: tensor<4x8xf32>, %g: tensor<8xf32>, %wq: tensor<8x16xf32>, %wk: tensor<16x8xf32>)
    -> (tensor<4x16xf32>, tensor<4x16xf32>) {
  %q, %k = call @block(%x, %g, %wq, %wk) : (tensor<4x8xf32>, tensor<8xf32>, tensor<8x16xf32>, tensor<16x8xf32>) -> (tensor<4x16xf32>, tensor<4x16xf32>)
  return %q, %k : tensor<4x16xf32>, tensor<4x16xf32>
}

// A weight argument also used elsewhere (tied) cannot hold folded values.
// CHECK-LABEL: func.func @tied_argument
// CHECK: flashnorm.rms_norm %{{.*}} gain(
// REMARK: Function=tied_argument | Remark="not folded: user 'linalg.matmul' at {{.*}}: weight argument #2 has other users"
func.func @tied_argument(%x: tensor<4x8xf32>, %g: tensor<8xf32>, %w: tensor<8x8xf32>)
    -> (tensor<4x8xf32>, tensor<8x8xf32>) {
  %n = flashnorm.rms_norm %x gain(%g : tensor<8xf32>) eps(1.0e-05) : tensor<4x8xf32>
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x8xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  %y = linalg.matmul ins(%n, %w : tensor<4x8xf32>, tensor<8x8xf32>) outs(%z : tensor<4x8xf32>) -> tensor<4x8xf32>
  return %y, %w : tensor<4x8xf32>, tensor<8x8xf32>
}

// -----

// A weight argument that also reaches another matmul through its transpose
// cannot hold folded values.
// CHECK-LABEL: func.func @tied_through_transpose
// CHECK-NOT: flashnorm.folded
// REMARK: Function=tied_through_transpose | Remark="not folded: user 'linalg.matmul' at {{.*}}: weight argument #2 reaches other users through 'linalg.transpose'"
func.func @tied_through_transpose(%x: tensor<4x8xf32>, %g: tensor<8xf32>, %w: tensor<16x8xf32>, %y: tensor<4x8xf32>)
    -> (tensor<4x16xf32>, tensor<4x16xf32>) {
  %n = flashnorm.rms_norm %x gain(%g : tensor<8xf32>) eps(1.0e-05) : tensor<4x8xf32>
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x16xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<4x16xf32>) -> tensor<4x16xf32>
  %et = tensor.empty() : tensor<8x16xf32>
  %wt = linalg.transpose ins(%w : tensor<16x8xf32>) outs(%et : tensor<8x16xf32>) permutation = [1, 0]
  %q = linalg.matmul ins(%n, %wt : tensor<4x8xf32>, tensor<8x16xf32>) outs(%z : tensor<4x16xf32>) -> tensor<4x16xf32>
  %o = linalg.matmul ins(%y, %wt : tensor<4x8xf32>, tensor<8x16xf32>) outs(%z : tensor<4x16xf32>) -> tensor<4x16xf32>
  return %q, %o : tensor<4x16xf32>, tensor<4x16xf32>
}

// -----

// A loop-carried weight is a block argument of the loop body, not of the
// function: not an argument weight.
// CHECK-LABEL: func.func @loop_carried_weight
// CHECK-NOT: flashnorm.folded
// CHECK: flashnorm.rms_norm %{{.*}} gain(
// REMARK: Function=loop_carried_weight | Remark="not folded: user 'linalg.matmul' at {{.*}}: its weight is not a constant (block argument #2)"
func.func @loop_carried_weight(%x: tensor<4x8xf32>, %g: tensor<8xf32>, %other: tensor<8x8xf32>, %w0: tensor<8x8xf32>) -> (tensor<4x8xf32>, tensor<8x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %r:2 = scf.for %i = %c0 to %c2 step %c1 iter_args(%h = %x, %w = %w0) -> (tensor<4x8xf32>, tensor<8x8xf32>) {
    %n = flashnorm.rms_norm %h gain(%g : tensor<8xf32>) eps(1.0e-05) : tensor<4x8xf32>
    %cz = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<4x8xf32>
    %z = linalg.fill ins(%cz : f32) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
    %q = linalg.matmul ins(%n, %w : tensor<4x8xf32>, tensor<8x8xf32>) outs(%z : tensor<4x8xf32>) -> tensor<4x8xf32>
    scf.yield %q, %w0 : tensor<4x8xf32>, tensor<8x8xf32>
  }
  return %r#0, %other : tensor<4x8xf32>, tensor<8x8xf32>
}

// -----

// A weight argument with a dynamic shape is not folded at run time.
// CHECK-LABEL: func.func @dynamic_weight
// REMARK: Function=dynamic_weight | Remark="not folded: user 'linalg.matmul' at {{.*}}: weight argument #2 has a dynamic shape"
func.func @dynamic_weight(%x: tensor<4x8xf32>, %g: tensor<8xf32>, %w: tensor<?x16xf32>) -> tensor<4x16xf32> {
  %n = flashnorm.layer_norm %x gain(%g : tensor<8xf32>) eps(1.0e-05) : tensor<4x8xf32>
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x16xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<4x16xf32>) -> tensor<4x16xf32>
  %q = linalg.matmul ins(%n, %w : tensor<4x8xf32>, tensor<?x16xf32>) outs(%z : tensor<4x16xf32>) -> tensor<4x16xf32>
  return %q : tensor<4x16xf32>
}
