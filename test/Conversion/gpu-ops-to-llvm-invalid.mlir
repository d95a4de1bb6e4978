// The GPU runtime calls lower only on their stream (one async dependency,
// which flashnorm-gpu-streams gives them): one without is an error, not an
// op left behind casts in "lowered" output.
// RUN: not flashnorm-opt %s --gpu-to-llvm -o /dev/null 2>&1 | FileCheck %s
// RUN: not flashnorm-opt %s --convert-to-llvm -o /dev/null 2>&1 | FileCheck %s
// CHECK: error: failed to legalize operation 'flashnorm.resident' that was explicitly marked illegal
func.func @no_stream(%w: memref<4xf32>, %m: memref<16x16xf32>) {
  %d, %t1 = flashnorm.resident %w : memref<4xf32>
  %t2 = flashnorm.gemm_lt %m, %m, %m : memref<16x16xf32>, memref<16x16xf32>, memref<16x16xf32>
  gpu.wait [%t1, %t2]
  return
}
