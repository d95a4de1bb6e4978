// The pipeline changes only what it rewrites. A module with nothing to
// rewrite prints exactly as it does without passes: its KV-cache writes
// through bufferization.to_buffer / memref.store / to_tensor restrict (which
// canonicalize would fold into a wrong program), its dead code, duplicate
// constants and foldable arithmetic stay.
// RUN: flashnorm-opt %s > %t.plain
// RUN: flashnorm-opt %s --flashnorm > %t.flashnorm
// RUN: diff %t.plain %t.flashnorm
// RUN: flashnorm-opt %s --flashnorm=prepare-function=true > %t.prepare
// RUN: diff %t.plain %t.prepare

func.func @decode_step(%cache: tensor<4x8xf32>, %row: tensor<8xf32>, %pos: index) -> (tensor<4x8xf32>, f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %zero = arith.constant 0.0 : f32
  %zero_again = arith.constant 0.0 : f32
  %buf = bufferization.to_buffer %cache : tensor<4x8xf32> to memref<4x8xf32>
  scf.for %j = %c0 to %c8 step %c1 {
    %v = tensor.extract %row[%j] : tensor<8xf32>
    memref.store %v, %buf[%pos, %j] : memref<4x8xf32>
  }
  %new = bufferization.to_tensor %buf restrict : memref<4x8xf32> to tensor<4x8xf32>
  %first = tensor.extract %new[%c0, %c0] : tensor<4x8xf32>
  %same = arith.addf %first, %zero_again : f32
  %unused = arith.mulf %first, %first : f32
  return %new, %same : tensor<4x8xf32>, f32
}
