// RUN: flashnorm-opt %s | FileCheck %s
// Round trip through the generic form too.
// RUN: flashnorm-opt %s --mlir-print-op-generic | flashnorm-opt | FileCheck %s

// CHECK-LABEL: func.func @rms_norm_forms
func.func @rms_norm_forms(%x: tensor<4x8xf32>, %g: tensor<8xbf16>,
                          %h: tensor<?x?x8xf16>, %hg: tensor<8xf16>)
    -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<?x?x8xf16>) {
  // CHECK: flashnorm.rms_norm %{{.*}} eps(9.9999999999999995E-7) : tensor<4x8xf32>
  %a = flashnorm.rms_norm %x eps(1.0e-06) : tensor<4x8xf32>
  // CHECK: flashnorm.rms_norm %{{.*}} gain(%{{.*}} : tensor<8xbf16>) eps(0.000000e+00) convention one_plus : tensor<4x8xf32>
  %b = flashnorm.rms_norm %x gain(%g : tensor<8xbf16>) eps(0.0) convention one_plus : tensor<4x8xf32>
  // The default convention is not printed.
  // CHECK: flashnorm.rms_norm %{{.*}} gain(%{{.*}} : tensor<8xf16>) eps(1.000000e-05) : tensor<?x?x8xf16>
  %c = flashnorm.rms_norm %h gain(%hg : tensor<8xf16>) eps(1.0e-05) convention plain : tensor<?x?x8xf16>
  return %a, %b, %c : tensor<4x8xf32>, tensor<4x8xf32>, tensor<?x?x8xf16>
}

// CHECK-LABEL: func.func @deferred
func.func @deferred(%x: tensor<2x3x8xbf16>, %acc: tensor<2x3x16xf32>,
                    %v: tensor<8xf32>) -> (tensor<2x3x16xbf16>, tensor<f32>) {
  // CHECK: flashnorm.rms_inv %{{.*}} eps(1.000000e-05) : tensor<2x3x8xbf16> -> tensor<2x3xf32>
  %s = flashnorm.rms_inv %x eps(1.0e-05) : tensor<2x3x8xbf16> -> tensor<2x3xf32>
  // CHECK: flashnorm.post_scale %{{.*}}, %{{.*}} : tensor<2x3x16xf32>, tensor<2x3xf32> -> tensor<2x3x16xbf16>
  %y = flashnorm.post_scale %acc, %s : tensor<2x3x16xf32>, tensor<2x3xf32> -> tensor<2x3x16xbf16>
  // A rank-1 input is a single row.
  // CHECK: flashnorm.rms_inv %{{.*}} : tensor<8xf32> -> tensor<f32>
  %t = flashnorm.rms_inv %v eps(0.0) : tensor<8xf32> -> tensor<f32>
  return %y, %t : tensor<2x3x16xbf16>, tensor<f32>
}

// A narrow LayerNorm's statistics and its centering post-scale.
// CHECK-LABEL: func.func @centered
// CHECK: %[[M:.*]], %[[S:.*]] = flashnorm.layer_stats %{{.*}} eps(1.000000e-05) : tensor<2x3x8xbf16> -> tensor<2x3xf32>
// CHECK: flashnorm.centered_post_scale %{{.*}}, %[[S]], %[[M]], %{{.*}} : tensor<2x3x16xf32>, tensor<2x3xf32>, tensor<16xf32> -> tensor<2x3x16xbf16>
func.func @centered(%x: tensor<2x3x8xbf16>, %acc: tensor<2x3x16xf32>,
                    %c: tensor<16xf32>) -> tensor<2x3x16xbf16> {
  %m, %s = flashnorm.layer_stats %x eps(1.0e-05) : tensor<2x3x8xbf16> -> tensor<2x3xf32>
  %y = flashnorm.centered_post_scale %acc, %s, %m, %c : tensor<2x3x16xf32>, tensor<2x3xf32>, tensor<16xf32> -> tensor<2x3x16xbf16>
  return %y : tensor<2x3x16xbf16>
}

// CHECK-LABEL: func.func @gemm_lt
// CHECK: %[[T1:.*]] = flashnorm.gemm_lt [%{{.*}}] %{{.*}}, %{{.*}}, %{{.*}} : memref<16x576xf16>, memref<576x1536xf16>, memref<16x1536xf32>
// CHECK: %[[T2:.*]] = flashnorm.gemm_lt [%[[T1]]] %{{.*}}, %{{.*}}, %{{.*}} transpose_b : memref<16x576xbf16>, memref<1536x576xbf16>, memref<16x1536xf32>
// CHECK: flashnorm.gemm_lt [%[[T2]]] %{{.*}}, %{{.*}}, %{{.*}} transpose_b : memref<16x576xbf16>, memref<1536x576xbf16>, memref<16x1536xbf16>
func.func @gemm_lt(%x: memref<16x576xf16>, %w: memref<576x1536xf16>,
                   %xb: memref<16x576xbf16>, %wt: memref<1536x576xbf16>,
                   %y: memref<16x1536xf32>, %o: memref<16x1536xbf16>) {
  %t0 = gpu.wait async
  %t1 = flashnorm.gemm_lt [%t0] %x, %w, %y : memref<16x576xf16>, memref<576x1536xf16>, memref<16x1536xf32>
  %t2 = flashnorm.gemm_lt [%t1] %xb, %wt, %y transpose_b : memref<16x576xbf16>, memref<1536x576xbf16>, memref<16x1536xf32>
  %t3 = flashnorm.gemm_lt [%t2] %xb, %wt, %o transpose_b : memref<16x576xbf16>, memref<1536x576xbf16>, memref<16x1536xbf16>
  gpu.wait [%t3]
  return
}

// CHECK-LABEL: func.func @resident
// CHECK: %{{.*}}, %[[T:.*]] = flashnorm.resident [%{{.*}}] %{{.*}} : memref<576x1536xbf16>
// CHECK: flashnorm.resident %{{.*}} : memref<4xf32>
memref.global "private" constant @w4 : memref<4xf32> = dense<1.0>
func.func @resident(%w: memref<576x1536xbf16>) {
  %t0 = gpu.wait async
  %d, %t1 = flashnorm.resident [%t0] %w : memref<576x1536xbf16>
  %g = memref.get_global @w4 : memref<4xf32>
  %e, %t2 = flashnorm.resident %g : memref<4xf32>
  gpu.wait [%t1, %t2]
  return
}

// CHECK-LABEL: func.func @check_alignment
// CHECK: flashnorm.check_alignment %{{.*}}, 16, "argument #0 of @decode" : memref<16x4096xbf16>
func.func @check_alignment(%x: memref<16x4096xbf16>) {
  flashnorm.check_alignment %x, 16, "argument #0 of @decode" : memref<16x4096xbf16>
  return
}

// An f64 norm adds its epsilon in f64: one below f32's range is its own.
// CHECK-LABEL: func.func @f64_tiny_eps
// CHECK: flashnorm.rms_norm %{{.*}} eps(1.000000e-300) : tensor<4x8xf64>
func.func @f64_tiny_eps(%x: tensor<4x8xf64>) -> tensor<4x8xf64> {
  %y = flashnorm.rms_norm %x eps(1.0e-300) : tensor<4x8xf64>
  return %y : tensor<4x8xf64>
}
