// flashnorm.centered_post_scale lowered with the same value as its mean
// and its column sums: each read by its own map (row, then feature), not
// chosen by value. (acc 1, scale 1, m = [1, 2]: 1 - m[r] m[n].)
// RUN: flashnorm-opt %s --flashnorm-lower-to-llvm | %run | FileCheck %s
// CHECK: {{\[}}[0,   -1],
// CHECK-NEXT: [-1,   -3]]
func.func @f(%acc: tensor<2x2xf32>, %s: tensor<2xf32>, %m: tensor<2xf32>) -> tensor<2x2xf32> {
  %y = flashnorm.centered_post_scale %acc, %s, %m, %m : tensor<2x2xf32>, tensor<2xf32>, tensor<2xf32> -> tensor<2x2xf32>
  return %y : tensor<2x2xf32>
}
func.func @main() {
  %acc = arith.constant dense<1.0> : tensor<2x2xf32>
  %s = arith.constant dense<1.0> : tensor<2xf32>
  %m = arith.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %y = call @f(%acc, %s, %m) : (tensor<2x2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<2x2xf32>
  %p = tensor.cast %y : tensor<2x2xf32> to tensor<*xf32>
  call @printMemrefF32(%p) : (tensor<*xf32>) -> ()
  return
}
func.func private @printMemrefF32(tensor<*xf32>)
