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
// Scalars, integers and index values: seeded (integers in [0, --int-max]) or
// set with --arg N=VALUE; host values keep their element type.
// RUN: flashnorm-run %s -e scalar --arg 0=2.5 --print=values | FileCheck %s --check-prefix=SCALAR
// RUN: flashnorm-run %s -e lookup --arg 0=1 --arg 1=2 --print=values | FileCheck %s --check-prefix=LOOKUP
// RUN: not flashnorm-run %s -e scalar --arg 0=x 2>&1 | FileCheck %s --check-prefix=BADARG
// Bare pass names, function passes nested implicitly:
// RUN: flashnorm-run %s -e block --pipeline=flashnorm-drop-redundant,flashnorm-defer-scale --compare | FileCheck %s --check-prefix=SAME
// --prepare: the rewritten @f_flashnorm_prepare folds argument weights, then
// @f runs on them, against the original @f.
// RUN: flashnorm-run %s -e args --prepare | FileCheck %s --check-prefix=PREPARE
// RUN: not flashnorm-run %s -e block --prepare 2>&1 | FileCheck %s --check-prefix=NOPREP
// Unsupported signatures and missing functions are errors, not crashes; the
// pipeline is checked before any input is read:
// RUN: not flashnorm-run %s -e buffer 2>&1 | FileCheck %s --check-prefix=BUFFER
// RUN: not flashnorm-run %s -e missing 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: not flashnorm-run %s -e block --pipeline='builtin.module(no-such-pass)' 2>&1 | FileCheck %s --check-prefix=BADPIPE
// RUN: not flashnorm-run %s -e block --pipeline=no-such-pass --inputs=%t.missing 2>&1 | FileCheck %s --check-prefix=BADPIPE
// An element left open would be dropped, nothing run, and MATCH printed:
// RUN: not flashnorm-run %s -e block --pipeline='flashnorm-cpu-pipeline{threads=-1' --compare 2>&1 | FileCheck %s --check-prefix=BADPIPE
// RUN: not flashnorm-run %s -e block --pipeline='flashnorm)' --compare 2>&1 | FileCheck %s --check-prefix=BADPIPE
// Options that mean nothing, and files that are not there:
// RUN: not flashnorm-run %s -e block --input-range=-5 2>&1 | FileCheck %s --check-prefix=RANGE
// RUN: not flashnorm-run %s -e block --compare --rtol=-1 2>&1 | FileCheck %s --check-prefix=TOL
// RUN: not flashnorm-run %s -e block --params=%t.missing.safetensors 2>&1 | FileCheck %s --check-prefix=NOFILE
// RUN: not flashnorm-run %s -e block --shared-libs=%t.missing.so 2>&1 | FileCheck %s --check-prefix=NOFILE
// A library that exists but does not load (the JIT ran without it).
// RUN: not flashnorm-run %s -e block --shared-libs=%s 2>&1 | FileCheck %s --check-prefix=NOLIB
// RUN: not flashnorm-run %S/Inputs/huge-argument.mlir -e f 2>&1 | FileCheck %s --check-prefix=HUGE
// An infinity matches only itself (the tolerance around it is infinite):
// RUN: flashnorm-run %S/Inputs/infinity-reference.mlir -e f --compare --compare-with=%S/Inputs/infinity-reference.mlir | FileCheck %s --check-prefix=INFSAME
// RUN: not flashnorm-run %S/Inputs/infinity-finite.mlir -e f --compare --compare-with=%S/Inputs/infinity-reference.mlir | FileCheck %s --check-prefix=INF
// RUN: not flashnorm-run %S/Inputs/infinity-flipped.mlir -e f --compare --compare-with=%S/Inputs/infinity-reference.mlir | FileCheck %s --check-prefix=INF
// And so in the comparison of the lit tests' printed outputs:
// RUN: echo "[inf, 1, -inf]" > %t.inf
// RUN: echo "[12345, 1, -inf]" > %t.finite
// RUN: echo "[-inf, 1, -inf]" > %t.flipped
// RUN: %compare %t.inf %t.inf | FileCheck %s --check-prefix=INFSAME
// RUN: not %compare %t.inf %t.finite | FileCheck %s --check-prefix=INF
// RUN: not %compare %t.inf %t.flipped | FileCheck %s --check-prefix=INF

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
// SCALAR: output #0 f32: sum 2.5, sum|x| 2.5, values 2.5
// LOOKUP: output #0 2xf32: sum 8, sum|x| 8, values 4 4
// LOOKUP: output #1 index: sum 2, sum|x| 2, values 2
// BADARG: error: --arg 0=x: expected N=VALUE
// PREPARE: reference output #0 4x6xf32
// PREPARE: MATCH
// NOPREP: error: the rewritten module has no function @block_flashnorm_prepare with a body
// BUFFER: error: @buffer argument #0 has type memref<4xf32>: it is neither a ranked tensor nor a scalar
// MISSING: error: {{.*}} has no function @missing with a body
// BADPIPE: error: cannot parse --pipeline
// RANGE: error: --input-range must be a positive finite number, not -5
// TOL: error: --rtol and --atol must be 0 or more
// NOFILE: error: '{{.*}}missing{{.*}}' does not exist
// NOLIB: error: cannot load --shared-libs '{{.*}}flashnorm-run.mlir': {{.*}}invalid ELF header
// HUGE: error: @f argument #0 has type tensor<4000000000000xf32>: its bytes exceed this machine's memory
// INF: MISMATCH
// INFSAME: {{^}}MATCH

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

// table[ids[i]] * 2 and the position back: i64 ids, an index scalar.
func.func @lookup(%ids: tensor<2xi64>, %pos: index) -> (tensor<2xf32>, index) {
  %table = arith.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %e = tensor.empty() : tensor<2xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%ids : tensor<2xi64>) outs(%e : tensor<2xf32>) {
  ^bb0(%id: i64, %o: f32):
    %i = arith.index_cast %id : i64 to index
    %v = tensor.extract %table[%i] : tensor<4xf32>
    %two = arith.constant 2.0 : f32
    %d = arith.mulf %v, %two : f32
    linalg.yield %d : f32
  } -> tensor<2xf32>
  return %r, %pos : tensor<2xf32>, index
}

// Gain and weight as arguments, as importers pass them.
func.func @args(%x: tensor<4x8xf32>, %g: tensor<8xf32>, %w: tensor<8x6xf32>) -> tensor<4x6xf32> {
  %n = flashnorm.rms_norm %x gain(%g : tensor<8xf32>) eps(1.0e-05) : tensor<4x8xf32>
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x6xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<4x6xf32>) -> tensor<4x6xf32>
  %y = linalg.matmul ins(%n, %w : tensor<4x8xf32>, tensor<8x6xf32>) outs(%z : tensor<4x6xf32>) -> tensor<4x6xf32>
  return %y : tensor<4x6xf32>
}

func.func @buffer(%m: memref<4xf32>) {
  return
}
