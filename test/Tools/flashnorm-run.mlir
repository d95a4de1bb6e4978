// flashnorm-run: JIT runs of a function on seeded random inputs.
// RUN: flashnorm-run %s -e block | FileCheck %s --check-prefix=PLAIN
// RUN: flashnorm-run %s -e block --print=values | FileCheck %s --check-prefix=VALUES
// The whole pipeline keeps the numbers:
// RUN: flashnorm-run %s -e block --pipeline='builtin.module(flashnorm)' --compare | FileCheck %s --check-prefix=SAME
// On rows with mean square ~3e-5 (inputs in [-0.01, 0.01]) the exact merge
// of consecutive norms passes and the naive drop of the inner norm fails:
// RUN: flashnorm-run %s -e block --input-range=0.01 --compare \
// RUN:   --pipeline='builtin.module(func.func(flashnorm-drop-redundant))' | FileCheck %s --check-prefix=SAME
// RUN: not flashnorm-run %S/Inputs/naive-drop.mlir -e block --input-range=0.01 \
// RUN:   --compare --compare-with=%s | FileCheck %s --check-prefix=NAIVE
// Inputs from files (raw little-endian f32, row-major): x[i] = 0.1 i.
// RUN: %python -c "import struct; open('%t.bin', 'wb').write(struct.pack('<32f', *[0.1 * i for i in range(32)]))"
// RUN: flashnorm-run %s -e block --inputs=%t.bin --print=values | FileCheck %s --check-prefix=FILE
// RUN: not flashnorm-run %s -e block --inputs=%s 2>&1 | FileCheck %s --check-prefix=BADFILE
// Unsupported signatures and missing functions are errors, not crashes:
// RUN: not flashnorm-run %s -e scalar 2>&1 | FileCheck %s --check-prefix=SCALAR
// RUN: not flashnorm-run %s -e missing 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: not flashnorm-run %s -e block --pipeline='builtin.module(no-such-pass)' 2>&1 | FileCheck %s --check-prefix=BADPIPE

// PLAIN-NOT: error
// PLAIN: output #0 4x8xf32: sum {{.*}}, sum|x| {{.*}}
// PLAIN: output #1 4x8xf32: sum
// VALUES: output #0 4x8xf32: sum {{.*}}, values {{([-0-9.e]+ ){31}[-0-9.e]+$}}
// SAME: reference output #0 4x8xf32
// SAME: output #0 4x8xf32: max abs error {{.*}}, max rel error {{[0-9.e-]+$}}
// SAME: output #1 4x8xf32: max abs error {{.*}}, max rel error {{[0-9.e-]+$}}
// SAME: MATCH
// NAIVE: output #0 4x8xf32: max abs error {{.*}} past rtol 0.0001 atol 1e-05
// NAIVE: MISMATCH
// FILE: output #0 4x8xf32: sum 39.7943, sum|x| 39.7943, values 0 0.478091 0.239046 1.07571
// BADFILE: error: {{.*}}flashnorm-run.mlir holds {{[0-9]+}} bytes, expected 128 for tensor<4x8xf32>
// SCALAR: error: @scalar argument #0 has type f32: it is not a ranked tensor
// MISSING: error: {{.*}} has no function @missing with a body
// BADPIPE: error: cannot parse --pipeline

func.func @block(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %g = arith.constant dense<[1.0, 2.0, 0.5, 1.5, 1.0, 0.25, 3.0, 1.0]> : tensor<8xf32>
  %a = flashnorm.rms_norm %x eps(1.0e-06) : tensor<4x8xf32>
  %b = flashnorm.rms_norm %a gain(%g : tensor<8xf32>) eps(1.0e-06) : tensor<4x8xf32>
  %w = arith.constant dense<0.5> : tensor<8x8xf32>
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x8xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  %n = flashnorm.rms_norm %x gain(%g : tensor<8xf32>) eps(1.0e-05) : tensor<4x8xf32>
  %y = linalg.matmul ins(%n, %w : tensor<4x8xf32>, tensor<8x8xf32>) outs(%z : tensor<4x8xf32>) -> tensor<4x8xf32>
  return %b, %y : tensor<4x8xf32>, tensor<4x8xf32>
}

func.func @scalar(%s: f32) -> f32 {
  return %s : f32
}
