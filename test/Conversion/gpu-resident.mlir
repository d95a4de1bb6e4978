// Constants live on the device: flashnorm-gpu-streams turns a constant
// global into flashnorm.resident (uploaded once per process by the runtime,
// never freed by the function) and still copies a mutable global on every
// call; gpu-to-llvm lowers the resident copy to mgpuFlashNormResident on the
// main stream. (test/Runtime/resident-weights.test counts the copies over
// repeated calls.)
// RUN: flashnorm-opt %s --pass-pipeline='builtin.module(flashnorm-gpu-streams)' | FileCheck %s
// RUN: flashnorm-opt %s --pass-pipeline='builtin.module(flashnorm-gpu-streams)' | flashnorm-opt --flashnorm-gpu-streams-to-llvm=format=isa | FileCheck %s --check-prefix=LLVM

memref.global "private" constant @w : memref<4xf32> = dense<[1.0, 2.0, 3.0, 4.0]>
memref.global "private" @state : memref<4xf32> = dense<0.0>

// Host buffers are copied into driver allocations: no alignment to check.
// CHECK-NOT: flashnorm.check_alignment
// CHECK-LABEL: func.func @f(
// CHECK: %[[IN:.*]] = gpu.memcpy async
// CHECK: %[[W:.*]] = memref.get_global @w
// CHECK: %[[WDEV:.*]], %[[T:.*]] = flashnorm.resident [%[[IN]]] %[[W]] : memref<4xf32>
// CHECK: %[[S:.*]] = memref.get_global @state
// CHECK: %[[SDEV:.*]], %{{.*}} = gpu.alloc async [%[[T]]] () : memref<4xf32>
// CHECK: gpu.memcpy async [%{{.*}}] %[[SDEV]], %[[S]]
// CHECK: gpu.launch async
// CHECK: memref.load %[[WDEV]]
// CHECK: memref.load %[[SDEV]]
// The kernel writes the argument: the caller's buffer gets what it wrote.
// CHECK: gpu.memcpy async [%{{.*}}] %arg0, %{{.*}} : memref<4xf32>, memref<4xf32>
// CHECK: gpu.dealloc async [%{{.*}}] %[[SDEV]]
// CHECK-NOT: gpu.dealloc async [%{{.*}}] %[[WDEV]]
// CHECK: return

// LLVM-LABEL: llvm.func @f(
// LLVM: %[[STREAM:.*]] = llvm.call @mgpuStreamCreate()
// LLVM: llvm.call @mgpuMemcpy(
// LLVM: %[[BYTES:.*]] = llvm.mlir.constant(16 : i64) : i64
// LLVM: llvm.call @mgpuFlashNormResident(%[[STREAM]], %{{.*}}, %[[BYTES]]) : (!llvm.ptr, !llvm.ptr, i64) -> !llvm.ptr
// The argument and the mutable global are copied in, the argument back
// out; the constant is not copied.
// LLVM-COUNT-2: llvm.call @mgpuMemcpy(
// LLVM-NOT: llvm.call @mgpuMemcpy(
// LLVM: llvm.return
func.func @f(%out: memref<4xf32>) {
  %w = memref.get_global @w : memref<4xf32>
  %s = memref.get_global @state : memref<4xf32>
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c4, %sy = %c1, %sz = %c1) {
    %a = memref.load %w[%tx] : memref<4xf32>
    %b = memref.load %s[%tx] : memref<4xf32>
    %c = arith.addf %a, %b : f32
    memref.store %c, %out[%tx] : memref<4xf32>
    gpu.terminator
  }
  return
}

// With device buffers (host-buffers=false) the caller owns and frees what
// it gets: a returned constant is a copy of its device copy.
// RUN: flashnorm-opt %s --pass-pipeline='builtin.module(flashnorm-gpu-streams{host-buffers=false})' | FileCheck %s --check-prefix=OWNED
// OWNED-LABEL: func.func @returns_constant(
// OWNED: flashnorm.check_alignment %arg0, 16, "argument #0 of @returns_constant (memref<4xf32>)"
// OWNED: %[[DEV:.*]], %{{.*}} = flashnorm.resident
// OWNED: %[[COPY:.*]], %{{.*}} = gpu.alloc async
// OWNED: gpu.memcpy async [%{{.*}}] %[[COPY]], %[[DEV]]
// OWNED-NOT: gpu.dealloc async [%{{.*}}] %[[COPY]]
// OWNED: return %[[COPY]]
func.func @returns_constant(%out: memref<4xf32>) -> memref<4xf32> {
  %w = memref.get_global @w : memref<4xf32>
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c4, %sy = %c1, %sz = %c1) {
    %a = memref.load %w[%tx] : memref<4xf32>
    memref.store %a, %out[%tx] : memref<4xf32>
    gpu.terminator
  }
  return %w : memref<4xf32>
}
