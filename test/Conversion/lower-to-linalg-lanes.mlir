// flashnorm-lower-to-linalg{sum-lanes=L}: a row's sum of squares as L
// partial sums (the row seen as [K / L, L], summed over K / L), then their
// sum; the vector code keeps the partial sums in one register. Rows whose K
// is not a multiple of L above L, or is dynamic, keep one running sum.
// RUN: flashnorm-opt %s --flashnorm-lower-to-linalg='sum-lanes=4' | FileCheck %s
// RUN: not flashnorm-opt %s --flashnorm-lower-to-linalg='sum-lanes=-1' 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: flashnorm-run %s -e lanes --pipeline='flashnorm-lower-to-linalg{sum-lanes=4}' --compare | FileCheck %s --check-prefix=SAME
// BAD: sum-lanes must not be negative
// SAME: output #0 3x64xf32: max abs error
// SAME: MATCH

// CHECK-LABEL: func.func @lanes
// CHECK: %[[B:.*]] = tensor.expand_shape %arg0 {{\[}}[0], [1, 2]] output_shape [3, 16, 4] : tensor<3x64xf32> into tensor<3x16x4xf32>
// CHECK: %[[P:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction", "parallel"]} ins(%[[B]] : tensor<3x16x4xf32>) outs(%{{.*}} : tensor<3x4xf32>)
// CHECK: arith.mulf
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%[[P]] : tensor<3x4xf32>) outs(%{{.*}} : tensor<3xf32>)
func.func @lanes(%x: tensor<3x64xf32>) -> tensor<3x64xf32> {
  %y = flashnorm.rms_norm %x eps(1.0e-05) : tensor<3x64xf32>
  return %y : tensor<3x64xf32>
}

// CHECK-LABEL: func.func @one_sum
// CHECK-NOT: tensor.expand_shape
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%arg0 : tensor<3x6xf32>)
// CHECK-NOT: tensor.expand_shape
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%arg1 : tensor<3x?xf32>)
// CHECK-NOT: tensor.expand_shape
// CHECK: return
func.func @one_sum(%x: tensor<3x6xf32>, %d: tensor<3x?xf32>) -> (tensor<3x6xf32>, tensor<3x?xf32>) {
  %y = flashnorm.rms_norm %x eps(1.0e-05) : tensor<3x6xf32>
  %z = flashnorm.rms_norm %d eps(1.0e-05) : tensor<3x?xf32>
  return %y, %z : tensor<3x6xf32>, tensor<3x?xf32>
}
