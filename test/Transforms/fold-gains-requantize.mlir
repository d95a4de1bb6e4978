// RUN: flashnorm-opt %s --flashnorm-fold-gains=allow-requantize=true | FileCheck %s
// RUN: flashnorm-opt %s --flashnorm-fold-gains=allow-requantize=true \
// RUN:   --remarks-filter=flashnorm --remark-format=emitRemark 2>&1 >/dev/null \
// RUN:   | FileCheck %s --check-prefix=REMARK
// A tolerance below the requantization's error refuses it; without the
// option nothing is requantized.
// RUN: flashnorm-opt %s --flashnorm-fold-gains='allow-requantize=true requantize-tolerance=1e-4' \
// RUN:   --remarks-filter=flashnorm --remark-format=emitRemark 2>&1 >/dev/null \
// RUN:   | FileCheck %s --check-prefix=STRICT
// RUN: flashnorm-opt %s --flashnorm-fold-gains | FileCheck %s --check-prefix=OFF
// RUN: not flashnorm-opt %s --flashnorm-fold-gains=requantize-tolerance=0 2>&1 | FileCheck %s --check-prefix=BAD

// w = s[n] q[n, k] with g = [2, 1]: s q g = [[1, -1], [1.5, 1]], so
// s' = [1, 1.5] / 127 and q' = [[127, -127], [127, round(84.67) = 85]];
// the largest error is 1 - 85 * 1.5 / 127, the RMS error
// sqrt(0.003937^2 / 5.25) and the output bound sqrt(2) * 0.003937.
// CHECK-LABEL: func.func @int8
// CHECK: flashnorm.rms_norm %{{.*}} eps(1.000000e-05) : tensor<3x2xf32>
// CHECK-DAG: arith.constant dense<{{\[}}[127, -127], [127, 85]]> : tensor<2x2xi8>
// CHECK-DAG: arith.constant dense<[0.00787401571, 0.0118110236]> : tensor<2xf32>
// REMARK: Remark="approximate: folded the gain into 1 projection weight(s), requantizing 1 int8 one(s); 'linalg.matmul' at {{.*}}: max abs error 0.003937, RMS error 0.00171825 of the weight's RMS, output error <= 0.00556776 per unit-RMS row"
// STRICT: Remark="not folded: requantizing the int8 weight of 'linalg.matmul' at {{.*}} with the gain exceeds requantize-tolerance=0.0001 (max abs error 0.003937
// OFF: flashnorm.rms_norm %{{.*}} gain(
// BAD: error: flashnorm-fold-gains: requantize-tolerance must be a positive number, not 0
func.func @int8(%x: tensor<3x2xf32>) -> tensor<3x2xf32> {
  %g = arith.constant dense<[2.0, 1.0]> : tensor<2xf32>
  %n = flashnorm.rms_norm %x gain(%g : tensor<2xf32>) eps(1.0e-05) : tensor<3x2xf32>
  %q = arith.constant dense<[[1, -2], [3, 4]]> : tensor<2x2xi8>
  %s = arith.constant dense<[0.5, 0.25]> : tensor<2xf32>
  %e = tensor.empty() : tensor<2x2xf32>
  %w = linalg.generic {indexing_maps = [affine_map<(n, k) -> (n, k)>, affine_map<(n, k) -> (n)>, affine_map<(n, k) -> (n, k)>],
                       iterator_types = ["parallel", "parallel"]}
      ins(%q, %s : tensor<2x2xi8>, tensor<2xf32>) outs(%e : tensor<2x2xf32>) {
  ^bb0(%a: i8, %sc: f32, %o: f32):
    %i = arith.extsi %a : i8 to i32
    %v = arith.sitofp %i : i32 to f32
    %m = arith.mulf %v, %sc : f32
    linalg.yield %m : f32
  } -> tensor<2x2xf32>
  %c0 = arith.constant 0.0 : f32
  %e2 = tensor.empty() : tensor<3x2xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e2 : tensor<3x2xf32>) -> tensor<3x2xf32>
  %y = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
      ins(%n, %w : tensor<3x2xf32>, tensor<2x2xf32>) outs(%z : tensor<3x2xf32>) -> tensor<3x2xf32>
  return %y : tensor<3x2xf32>
}
