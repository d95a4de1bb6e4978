// What the CPU lowering takes beside the norms, as importers write it:
// torch's exact GELU (math.erf, which no LLVM intrinsic lowers: a libm call;
// it stayed in the LLVM IR, which did not translate) and a contraction of
// float activations with integer weights into an integer accumulator (the
// vectorizer kept its mixed operand types: a vector.contract that does not
// verify; it is left to the scalar loops). Each run against the
// unrewritten function.
// RUN: flashnorm-run %s -e erf_gelu --pipeline=flashnorm --compare | FileCheck %s
// RUN: flashnorm-run %s -e mixed_int --pipeline=flashnorm --compare | FileCheck %s
// RUN: flashnorm-opt %s --flashnorm-cpu-pipeline | FileCheck %s --check-prefix=LLVM
// CHECK: MATCH
// LLVM: llvm.call @erff
// LLVM-NOT: math.erf
// Integer operands alone still vectorize (i8 x i8 into i32).
// RUN: flashnorm-run %s -e int8 --pipeline=flashnorm --compare | FileCheck %s
// LLVM-LABEL: llvm.func @int8
// LLVM: llvm.mul {{.*}} : vector<{{[0-9]+}}xi32>

#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @erf_gelu(%x: tensor<4x8xf32>) -> tensor<4x6xf32> {
  %g = arith.constant dense<[1.5, 0.5, 2.0, -1.0, 0.25, 3.0, 1.0, 0.75]> : tensor<8xf32>
  %n = flashnorm.rms_norm %x gain(%g : tensor<8xf32>) eps(1.0e-05) : tensor<4x8xf32>
  %w = arith.constant dense<[[-0.73, 0.69, 0.52, -0.48, -0.01, -0.10], [0.30, 0.57, -0.81, -0.94, 0.67, -0.13],
                             [0.52, -0.99, -0.10, 0.44, -0.54, 0.89], [0.80, -0.93, -0.94, 0.08, 0.87, -0.23],
                             [-0.56, -0.15, -0.94, -0.55, -0.12, -0.01], [-0.53, -0.53, -0.56, -0.08, -0.42, -0.95],
                             [0.67, 0.11, 0.28, -0.62, 0.98, 0.71], [-0.75, -0.33, 0.44, 0.42, 0.87, -0.15]]> : tensor<8x6xf32>
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x6xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<4x6xf32>) -> tensor<4x6xf32>
  %y = linalg.matmul ins(%n, %w : tensor<4x8xf32>, tensor<8x6xf32>) outs(%z : tensor<4x6xf32>) -> tensor<4x6xf32>
  // x * 0.5 * (1 + erf(x / sqrt(2))), as torch-mlir writes aten.gelu.
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%y : tensor<4x6xf32>) outs(%e : tensor<4x6xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.constant 0.70710678 : f32
    %h = arith.constant 0.5 : f32
    %one = arith.constant 1.0 : f32
    %t = arith.mulf %a, %s : f32
    %erf = math.erf %t : f32
    %p = arith.addf %erf, %one : f32
    %q = arith.mulf %a, %h : f32
    %v = arith.mulf %q, %p : f32
    linalg.yield %v : f32
  } -> tensor<4x6xf32>
  return %r : tensor<4x6xf32>
}

func.func @mixed_int(%x: tensor<4x2xf32>) -> tensor<4x3xi32> {
  %g = arith.constant dense<[2.0, 0.5]> : tensor<2xf32>
  %w = arith.constant dense<[[1, 2, 3], [-2, -3, -4]]> : tensor<2x3xi8>
  %n = flashnorm.rms_norm %x gain(%g : tensor<2xf32>) eps(1.0e-05) : tensor<4x2xf32>
  %c0 = arith.constant 0 : i32
  %e = tensor.empty() : tensor<4x3xi32>
  %z = linalg.fill ins(%c0 : i32) outs(%e : tensor<4x3xi32>) -> tensor<4x3xi32>
  %y = linalg.matmul ins(%n, %w : tensor<4x2xf32>, tensor<2x3xi8>) outs(%z : tensor<4x3xi32>) -> tensor<4x3xi32>
  return %y : tensor<4x3xi32>
}

func.func @int8(%a: tensor<16x64xi8>, %b: tensor<64x32xi8>) -> tensor<16x32xi32> {
  %c0 = arith.constant 0 : i32
  %e = tensor.empty() : tensor<16x32xi32>
  %z = linalg.fill ins(%c0 : i32) outs(%e : tensor<16x32xi32>) -> tensor<16x32xi32>
  %y = linalg.matmul ins(%a, %b : tensor<16x64xi8>, tensor<64x32xi8>) outs(%z : tensor<16x32xi32>) -> tensor<16x32xi32>
  return %y : tensor<16x32xi32>
}
