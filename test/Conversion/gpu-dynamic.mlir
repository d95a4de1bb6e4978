// Dynamic token counts on the GPU: device buffers are sized from the host
// arguments, kernels take their bounds at run time, the verifiers pass.
// REQUIRES: cuda-toolkit
// RUN: flashnorm-opt %s --flashnorm | flashnorm-opt --flashnorm-gpu-to-streams | FileCheck %s
// RUN: flashnorm-opt %s --flashnorm | flashnorm-opt --flashnorm-gpu-pipeline=format=isa -o /dev/null

// CHECK-LABEL: func.func @f(
// CHECK-SAME: %[[X:.*]]: memref<?x64xf32>
// CHECK: %[[M:.*]] = memref.dim %[[X]], %{{.*}} : memref<?x64xf32>
// CHECK: %[[DX:.*]], %{{.*}} = gpu.alloc async [%{{.*}}] (%[[M]]) : memref<?x64xf32>
// CHECK: gpu.memcpy async [%{{.*}}] %[[DX]], %[[X]] : memref<?x64xf32>, memref<?x64xf32>
// CHECK: gpu.launch async
// CHECK: gpu.wait [
func.func @f(%x: tensor<?x64xf32>, %w: tensor<64x96xf32>) -> tensor<?x96xf32> {
  %n = flashnorm.rms_norm %x eps(1.0e-5) : tensor<?x64xf32>
  %c0 = arith.constant 0 : index
  %m = tensor.dim %x, %c0 : tensor<?x64xf32>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty(%m) : tensor<?x96xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<?x96xf32>) -> tensor<?x96xf32>
  %y = linalg.matmul ins(%n, %w : tensor<?x64xf32>, tensor<64x96xf32>) outs(%f : tensor<?x96xf32>) -> tensor<?x96xf32>
  return %y : tensor<?x96xf32>
}
