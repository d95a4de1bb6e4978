// A call between a group's tasks and its post-scale to a function without
// a body: it may write any memory the caller can name (an argument, a
// global that is not constant), so a group whose tasks read such memory
// stays serial (a callee with a body is checked by what it writes:
// test/Integration/async-refusals.mlir). A constant global, or a buffer
// the function allocated, it cannot write.
// RUN: flashnorm-opt %s --flashnorm-cpu-to-buffers=concurrent-min-bytes=0 --remarks-filter=flashnorm --remark-format=emitRemark -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK
// RUN: flashnorm-opt %s --flashnorm-cpu-to-buffers=concurrent-min-bytes=0 | FileCheck %s
// CHECK-LABEL: func.func @reads_mutable_global
// CHECK-NOT: async.execute
// CHECK: call @external_helper()
// CHECK-LABEL: func.func @reads_argument
// CHECK-NOT: async.execute
// CHECK: call @external_helper()
// CHECK-LABEL: func.func @reads_constant_global
// CHECK: async.execute
// CHECK: call @external_helper()
// CHECK: async.await

memref.global "private" @st : memref<64x256xf32> = dense<1.0>
memref.global "private" constant @cst : memref<64x256xf32> = dense<1.0>

func.func private @external_helper()

// REMARK: Function=reads_mutable_global {{.*}}kept serial: an op before the post-scale writes a buffer the statistic or a projection uses
func.func @reads_mutable_global(%w: tensor<256x8xf32>) -> tensor<64x8xf32> {
  %g = memref.get_global @st : memref<64x256xf32>
  %x = bufferization.to_tensor %g restrict : memref<64x256xf32> to tensor<64x256xf32>
  %c0 = arith.constant 0.0 : f32
  %s = flashnorm.rms_inv %x eps(1.0e-05) : tensor<64x256xf32> -> tensor<64xf32>
  %e = tensor.empty() : tensor<64x8xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<64x8xf32>) -> tensor<64x8xf32>
  %p = linalg.matmul ins(%x, %w : tensor<64x256xf32>, tensor<256x8xf32>) outs(%z : tensor<64x8xf32>) -> tensor<64x8xf32>
  call @external_helper() : () -> ()
  %y = flashnorm.post_scale %p, %s : tensor<64x8xf32>, tensor<64xf32> -> tensor<64x8xf32>
  return %y : tensor<64x8xf32>
}

// REMARK: Function=reads_argument {{.*}}kept serial: an op before the post-scale writes a buffer the statistic or a projection uses
func.func @reads_argument(%x: tensor<64x256xf32>, %w: tensor<256x8xf32>) -> tensor<64x8xf32> {
  %c0 = arith.constant 0.0 : f32
  %s = flashnorm.rms_inv %x eps(1.0e-05) : tensor<64x256xf32> -> tensor<64xf32>
  %e = tensor.empty() : tensor<64x8xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<64x8xf32>) -> tensor<64x8xf32>
  %p = linalg.matmul ins(%x, %w : tensor<64x256xf32>, tensor<256x8xf32>) outs(%z : tensor<64x8xf32>) -> tensor<64x8xf32>
  call @external_helper() : () -> ()
  %y = flashnorm.post_scale %p, %s : tensor<64x8xf32>, tensor<64xf32> -> tensor<64x8xf32>
  return %y : tensor<64x8xf32>
}

// REMARK: Function=reads_constant_global {{.*}}run as async tasks
func.func @reads_constant_global() -> tensor<64x8xf32> {
  %g = memref.get_global @cst : memref<64x256xf32>
  %x = bufferization.to_tensor %g restrict : memref<64x256xf32> to tensor<64x256xf32>
  %w = arith.constant dense<0.5> : tensor<256x8xf32>
  %c0 = arith.constant 0.0 : f32
  %s = flashnorm.rms_inv %x eps(1.0e-05) : tensor<64x256xf32> -> tensor<64xf32>
  %e = tensor.empty() : tensor<64x8xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<64x8xf32>) -> tensor<64x8xf32>
  %p = linalg.matmul ins(%x, %w : tensor<64x256xf32>, tensor<256x8xf32>) outs(%z : tensor<64x8xf32>) -> tensor<64x8xf32>
  call @external_helper() : () -> ()
  %y = flashnorm.post_scale %p, %s : tensor<64x8xf32>, tensor<64xf32> -> tensor<64x8xf32>
  return %y : tensor<64x8xf32>
}
