// The test lowering that runs GPU kernels on the CPU
// (flashnorm-test-gpu-launch-to-loops) keeps a barrier's meaning: every
// thread of a block finishes the phase before it, then every thread runs
// the next, in a workgroup buffer each block reuses. Thread t of a block of
// 4 writes 10 * block + t, then reads its neighbour's (t + 1) mod 4: run as
// one pass per thread, thread t would read a slot not yet written.
// RUN: flashnorm-opt %s --pass-pipeline='builtin.module(func.func(flashnorm-test-gpu-launch-to-loops))' | flashnorm-opt --flashnorm-cpu-buffers-to-llvm=vectorize=false | %run | FileCheck %s
// CHECK: [1,  2,  3,  0,  11,  12,  13,  10]
// A value loaded before a barrier and used after it cannot be recomputed
// there: each thread keeps it in its slot of a buffer.
// RUN: flashnorm-opt %S/Inputs/barrier-crossing-load.mlir --pass-pipeline='builtin.module(func.func(flashnorm-test-gpu-launch-to-loops))' | flashnorm-opt --flashnorm-cpu-buffers-to-llvm=vectorize=false | %run | FileCheck %s --check-prefix=CROSS
// CROSS: [3,  5,  7,  9]
// A loop with barriers in its body (the staged tensor-core kernels' k loop)
// runs as a loop around its phases: the carried value and the one loaded
// before the first barrier live in each thread's slot. Each of 3
// iterations adds the right neighbour's value to a thread's own:
// [0, 1, 2, 3] becomes [12, 16, 12, 8] (block 1: [10, 11, 12, 13]).
// RUN: flashnorm-opt %S/Inputs/barrier-loop.mlir --pass-pipeline='builtin.module(func.func(flashnorm-test-gpu-launch-to-loops))' | flashnorm-opt --flashnorm-cpu-buffers-to-llvm=vectorize=false | %run | FileCheck %s --check-prefix=LOOP
// LOOP: [12,  16,  12,  8,  92,  96,  92,  88]
// Barriers elsewhere (under an scf.if) are refused.
// RUN: not flashnorm-opt %S/Inputs/barrier-nested.mlir --pass-pipeline='builtin.module(func.func(flashnorm-test-gpu-launch-to-loops))' 2>&1 | FileCheck %s --check-prefix=NESTED
// NESTED: error: only barriers at the top level of the kernel or of a loop there are supported
// Views of dynamic shared memory (the staged kernels' rings) become buffers
// of their own, so views that overlap are refused.
// RUN: not flashnorm-opt %S/Inputs/dynamic-shared-overlap.mlir --pass-pipeline='builtin.module(func.func(flashnorm-test-gpu-launch-to-loops))' 2>&1 | FileCheck %s --check-prefix=OVERLAP
// OVERLAP: error: views of dynamic shared memory overlap
func.func @neighbours(%out: memref<8xf32>) {
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c2, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c4, %sy = %c1, %sz = %c1)
             workgroup(%slots : memref<4xf32, #gpu.address_space<workgroup>>) {
    %c10 = arith.constant 10 : index
    %v = affine.apply affine_map<(b, t) -> (b * 10 + t)>(%bx, %tx)
    %vi = arith.index_cast %v : index to i32
    %vf = arith.sitofp %vi : i32 to f32
    memref.store %vf, %slots[%tx] : memref<4xf32, #gpu.address_space<workgroup>>
    gpu.barrier
    %next = affine.apply affine_map<(t) -> ((t + 1) mod 4)>(%tx)
    %n = memref.load %slots[%next] : memref<4xf32, #gpu.address_space<workgroup>>
    %at = affine.apply affine_map<(b, t) -> (b * 4 + t)>(%bx, %tx)
    memref.store %n, %out[%at] : memref<8xf32>
    gpu.terminator
  }
  return
}

func.func @main() {
  %out = memref.alloc() : memref<8xf32>
  call @neighbours(%out) : (memref<8xf32>) -> ()
  %u = memref.cast %out : memref<8xf32> to memref<*xf32>
  call @printMemrefF32(%u) : (memref<*xf32>) -> ()
  memref.dealloc %out : memref<8xf32>
  return
}
func.func private @printMemrefF32(memref<*xf32>)
