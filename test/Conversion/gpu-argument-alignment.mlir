// With device buffers (host-buffers=false) the caller's arguments go to the
// kernels as they are, and the kernels read them in vectors as wide as a
// driver allocation's alignment allows: flashnorm-gpu-streams checks each
// argument's address on entry, before any device work, at the alignment its
// static size gives (at most 16 bytes), and gpu-to-llvm lowers the check to
// mgpuFlashNormCheckAlignment. (test/Runtime/argument-alignment.mlir runs a
// misaligned call.)
// RUN: flashnorm-opt %s --pass-pipeline='builtin.module(flashnorm-gpu-streams{host-buffers=false})' | FileCheck %s
// RUN: flashnorm-opt %s --pass-pipeline='builtin.module(flashnorm-gpu-streams{host-buffers=false})' | flashnorm-opt --flashnorm-gpu-streams-to-llvm=format=isa | FileCheck %s --check-prefix=LLVM
// (Host buffers are copied into driver allocations, with nothing to check:
// gpu-resident.mlir.)

// Rows of 8 bf16 (16 bytes): 16. 3 bf16 (6 bytes): nothing beyond the
// element's 2. 6 bf16 (12 bytes): 4. A strided view: its static offset and
// strides count from a 16-byte base. 2 f64 (16 bytes): 16; 1 f64: its own 8.
// An unused argument is not checked. All before the main stream is made.
// CHECK-LABEL: func.func @f(
// CHECK-SAME: %[[X:[a-z0-9]+]]: memref<2x8xbf16>, %[[Y:[a-z0-9]+]]: memref<2x8xbf16>, %[[S:[a-z0-9]+]]: memref<3xbf16>, %[[T:[a-z0-9]+]]: memref<6xbf16>, %[[V:[a-z0-9]+]]: memref<4xbf16, strided<[2], offset: 8>>, %[[D:[a-z0-9]+]]: memref<2xf64>, %[[E:[a-z0-9]+]]: memref<1xf64>, %{{.*}}: memref<8xf32>
// CHECK-NEXT: flashnorm.check_alignment %[[X]], 16, "argument #0 of @f (memref<2x8xbf16>)" : memref<2x8xbf16>
// CHECK-NEXT: flashnorm.check_alignment %[[Y]], 16, "argument #1 of @f (memref<2x8xbf16>)"
// CHECK-NEXT: flashnorm.check_alignment %[[T]], 4, "argument #3 of @f (memref<6xbf16>)"
// CHECK-NEXT: flashnorm.check_alignment %[[V]], 16, "argument #4 of @f (memref<4xbf16, strided<[2], offset: 8>>)"
// CHECK-NEXT: flashnorm.check_alignment %[[D]], 16, "argument #5 of @f (memref<2xf64>)"
// CHECK-NEXT: gpu.wait async
// CHECK-NOT: flashnorm.check_alignment
// CHECK: return

// LLVM: llvm.mlir.global internal constant @flashnorm_check_alignment_0("argument #0 of @f (memref<2x8xbf16>)\00")
// LLVM-LABEL: llvm.func @f(
// LLVM: %[[MSG:.*]] = llvm.mlir.addressof @flashnorm_check_alignment_0
// LLVM: %[[SIXTEEN:.*]] = llvm.mlir.constant(16 : i64) : i64
// LLVM: llvm.call @mgpuFlashNormCheckAlignment(%{{.*}}, %[[SIXTEEN]], %{{.*}}) : (!llvm.ptr, i64, !llvm.ptr) -> ()
// LLVM-COUNT-4: llvm.call @mgpuFlashNormCheckAlignment(
// LLVM-NOT: llvm.call @mgpuFlashNormCheckAlignment(
// LLVM: llvm.call @mgpuStreamCreate()

func.func @f(%x: memref<2x8xbf16>, %y: memref<2x8xbf16>, %s: memref<3xbf16>,
             %t: memref<6xbf16>, %v: memref<4xbf16, strided<[2], offset: 8>>,
             %d: memref<2xf64>, %e: memref<1xf64>, %unused: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c8, %sy = %c1, %sz = %c1) {
    %a = memref.load %x[%c1, %tx] : memref<2x8xbf16>
    %b = memref.load %s[%c1] : memref<3xbf16>
    %c = memref.load %t[%c1] : memref<6xbf16>
    %w = memref.load %v[%c1] : memref<4xbf16, strided<[2], offset: 8>>
    %ab = arith.addf %a, %b : bf16
    %abc = arith.addf %ab, %c : bf16
    %sum = arith.addf %abc, %w : bf16
    memref.store %sum, %y[%c1, %tx] : memref<2x8xbf16>
    %p = memref.load %d[%c0] : memref<2xf64>
    %q = memref.load %e[%c0] : memref<1xf64>
    %pq = arith.addf %p, %q : f64
    memref.store %pq, %d[%c1] : memref<2xf64>
    gpu.terminator
  }
  return
}
