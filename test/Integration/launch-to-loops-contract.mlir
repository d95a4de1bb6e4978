// The test lowering that runs GPU kernels on the CPU
// (flashnorm-test-gpu-launch-to-loops) runs each vector.contract (the
// tensor-core kernels' fragments) as loops over its iteration space on
// stack buffers allocated once where the function or async task starts,
// one per operand: lhs (m, k) bf16, rhs (n, k), acc 0.5 in f32, once as
// (m, n) and, inside an async task, transposed (n, m):
// acc + [[1 2 3 4] [5 6 7 8]] x [[1 0 0 1] [0 1 0 0] [1 1 1 1]]^T
//   = [[5.5 2.5 10.5] [13.5 6.5 26.5]];
// and [[1 2 3 4] [5 6 7 8]] x [[1 0 0 1] [0 1 0 0]]^T, operands of one
// type in buffers of their own: [[5 2] [13 6]].
// RUN: flashnorm-opt %s --pass-pipeline='builtin.module(func.func(flashnorm-test-gpu-launch-to-loops))' | flashnorm-opt --flashnorm-cpu-buffers-to-llvm=vectorize=false | %async-run | FileCheck %s
// CHECK: [5.5,   2.5,   10.5],
// CHECK-NEXT: [13.5,   6.5,   26.5]
// CHECK: [5.5,   13.5],
// CHECK-NEXT: [2.5,   6.5],
// CHECK-NEXT: [10.5,   26.5]
// CHECK: [5,   2],
// CHECK-NEXT: [13,   6]
// RUN: flashnorm-opt %s --pass-pipeline='builtin.module(func.func(flashnorm-test-gpu-launch-to-loops))' | FileCheck %s --check-prefix=LOOPS
// LOOPS-LABEL: func.func @contract
// LOOPS-NEXT: memref.alloca() : memref<2x2xf32>
// LOOPS-NEXT: memref.alloca() : memref<2x4xbf16>
// LOOPS-NEXT: memref.alloca() : memref<2x3xf32>
// LOOPS-NEXT: memref.alloca() : memref<3x4xbf16>
// LOOPS-NEXT: memref.alloca() : memref<2x4xbf16>
// LOOPS: async.execute
// LOOPS-NEXT: memref.alloca() : memref<3x2xf32>
// LOOPS-NEXT: memref.alloca() : memref<3x4xbf16>
// LOOPS-NEXT: memref.alloca() : memref<2x4xbf16>
// LOOPS-NOT: vector.contract
// LOOPS: math.fma
// LOOPS-NOT: vector.contract
// Contractions it cannot run as loops of fused multiply-adds are refused.
// RUN: not flashnorm-opt %S/Inputs/contract-integer.mlir --pass-pipeline='builtin.module(func.func(flashnorm-test-gpu-launch-to-loops))' 2>&1 | FileCheck %s --check-prefix=REFUSED
// REFUSED: error: only unmasked float contractions that add, their maps projected permutations, run here

#lhs = affine_map<(m, n, k) -> (m, k)>
#rhs = affine_map<(m, n, k) -> (n, k)>
#acc = affine_map<(m, n, k) -> (m, n)>
#accT = affine_map<(m, n, k) -> (n, m)>

func.func @contract(%out: memref<2x3xf32>, %outT: memref<3x2xf32>,
                    %square: memref<2x2xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %a = arith.constant dense<[[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0]]> : vector<2x4xbf16>
  %b = arith.constant dense<[[1.0, 0.0, 0.0, 1.0], [0.0, 1.0, 0.0, 0.0], [1.0, 1.0, 1.0, 1.0]]> : vector<3x4xbf16>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    %acc = arith.constant dense<0.5> : vector<2x3xf32>
    %r = vector.contract {indexing_maps = [#lhs, #rhs, #acc],
                          iterator_types = ["parallel", "parallel", "reduction"],
                          kind = #vector.kind<add>} %a, %b, %acc
      : vector<2x4xbf16>, vector<3x4xbf16> into vector<2x3xf32>
    vector.transfer_write %r, %out[%c0, %c0] {in_bounds = [true, true]}
      : vector<2x3xf32>, memref<2x3xf32>
    %c = arith.constant dense<[[1.0, 0.0, 0.0, 1.0], [0.0, 1.0, 0.0, 0.0]]> : vector<2x4xbf16>
    %zero = arith.constant dense<0.0> : vector<2x2xf32>
    %s = vector.contract {indexing_maps = [#lhs, #rhs, #acc],
                          iterator_types = ["parallel", "parallel", "reduction"],
                          kind = #vector.kind<add>} %a, %c, %zero
      : vector<2x4xbf16>, vector<2x4xbf16> into vector<2x2xf32>
    vector.transfer_write %s, %square[%c0, %c0] {in_bounds = [true, true]}
      : vector<2x2xf32>, memref<2x2xf32>
    gpu.terminator
  }
  %done = async.execute {
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
               threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
      %acc = arith.constant dense<0.5> : vector<3x2xf32>
      %r = vector.contract {indexing_maps = [#lhs, #rhs, #accT],
                            iterator_types = ["parallel", "parallel", "reduction"],
                            kind = #vector.kind<add>} %a, %b, %acc
        : vector<2x4xbf16>, vector<3x4xbf16> into vector<3x2xf32>
      vector.transfer_write %r, %outT[%c0, %c0] {in_bounds = [true, true]}
        : vector<3x2xf32>, memref<3x2xf32>
      gpu.terminator
    }
    async.yield
  }
  async.await %done : !async.token
  return
}

func.func @main() {
  %out = memref.alloc() : memref<2x3xf32>
  %outT = memref.alloc() : memref<3x2xf32>
  %square = memref.alloc() : memref<2x2xf32>
  call @contract(%out, %outT, %square)
    : (memref<2x3xf32>, memref<3x2xf32>, memref<2x2xf32>) -> ()
  %p = memref.cast %out : memref<2x3xf32> to memref<*xf32>
  call @printMemrefF32(%p) : (memref<*xf32>) -> ()
  %pT = memref.cast %outT : memref<3x2xf32> to memref<*xf32>
  call @printMemrefF32(%pT) : (memref<*xf32>) -> ()
  %pS = memref.cast %square : memref<2x2xf32> to memref<*xf32>
  call @printMemrefF32(%pS) : (memref<*xf32>) -> ()
  memref.dealloc %out : memref<2x3xf32>
  memref.dealloc %square : memref<2x2xf32>
  memref.dealloc %outT : memref<3x2xf32>
  return
}

func.func private @printMemrefF32(memref<*xf32>)
