// Every mgpu* function the stock gpu-to-llvm lowering of MLIR 22 references
// must be exported by the runtime: lower a module using every async op kind
// (fork, join, launch with dynamic shared memory and with clusters, copies,
// memsets of both widths, host-shared allocation, host registration), link
// it into an executable against the runtime and the driver stub.
// REQUIRES: cuda-runtime
// RUN: %upstream-mlir-opt %s %gpu-lower -o %t.llvm.mlir
// RUN: mlir-translate --mlir-to-llvmir %t.llvm.mlir -o %t.ll
// RUN: FileCheck %s < %t.ll
// RUN: llc -filetype=obj -relocation-model=pic %t.ll -o %t.o
// RUN: %host-cc %t.o -o %t.exe %cuda-runtime-lib %cuda-driver-stub

// The module is loaded by a global constructor, per gpu.binary, and unloaded
// by a global destructor; functions are looked up at every launch.
// CHECK: @llvm.global_ctors = {{.*}} @kernels_load
// CHECK: @llvm.global_dtors = {{.*}} @kernels_unload
// CHECK-DAG: declare ptr @mgpuStreamCreate()
// CHECK-DAG: declare void @mgpuStreamDestroy(ptr)
// CHECK-DAG: declare void @mgpuStreamSynchronize(ptr)
// CHECK-DAG: declare void @mgpuStreamWaitEvent(ptr, ptr)
// CHECK-DAG: declare ptr @mgpuEventCreate()
// CHECK-DAG: declare void @mgpuEventDestroy(ptr)
// CHECK-DAG: declare void @mgpuEventRecord(ptr, ptr)
// CHECK-DAG: declare ptr @mgpuMemAlloc(i64, ptr, i8)
// CHECK-DAG: declare void @mgpuMemFree(ptr, ptr)
// CHECK-DAG: declare void @mgpuMemcpy(ptr, ptr, i64, ptr)
// CHECK-DAG: declare void @mgpuMemset32(ptr, i32, i64, ptr)
// CHECK-DAG: declare void @mgpuMemset16(ptr, i16, i64, ptr)
// CHECK-DAG: declare void @mgpuMemHostRegisterMemRef(i64, ptr, i64)
// CHECK-DAG: declare void @mgpuMemHostUnregisterMemRef(i64, ptr, i64)
// CHECK-DAG: declare void @mgpuSetDefaultDevice(i32)
// CHECK-DAG: declare ptr @mgpuModuleLoadJIT(ptr, i32)
// CHECK-DAG: declare void @mgpuModuleUnload(ptr)
// CHECK-DAG: declare ptr @mgpuModuleGetFunction(ptr, ptr)
// CHECK-DAG: declare void @mgpuLaunchKernel(ptr, i64, i64, i64, i64, i64, i64, i32, ptr, ptr, ptr, i64)
// CHECK-DAG: declare void @mgpuLaunchClusterKernel(ptr, i64, i64, i64, i64, i64, i64, i64, i64, i64, i32, ptr, ptr, ptr)
// A token carried through a block argument reaches its host wait as an
// "event" although it is a stream; the runtime accepts both.
// CHECK-DAG: declare void @mgpuEventSynchronize(ptr)

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @twice(%p: memref<?xf32>) kernel {
      %i = gpu.thread_id x
      %v = memref.load %p[%i] : memref<?xf32>
      %w = arith.addf %v, %v : f32
      memref.store %w, %p[%i] : memref<?xf32>
      gpu.return
    }
  }

  func.func @all_ops(%h: memref<?xf32>, %h16: memref<?xf16>, %n: index) {
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %one = arith.constant 1.0 : f32
    %half = arith.constant 1.0 : f16
    %smem = arith.constant 1024 : i32
    %dev = arith.constant 0 : i32
    gpu.set_default_device %dev
    %u = memref.cast %h : memref<?xf32> to memref<*xf32>
    gpu.host_register %u : memref<*xf32>
    %t0 = gpu.wait async
    %d, %t1 = gpu.alloc async [%t0] (%n) : memref<?xf32>
    %d16, %t1b = gpu.alloc async [%t1] (%n) : memref<?xf16>
    %t2 = gpu.memcpy async [%t1b] %d, %h : memref<?xf32>, memref<?xf32>
    // Fork: a second stream waits on the first.
    %f = gpu.wait async [%t2]
    %t3 = gpu.memset async [%f] %d16, %half : memref<?xf16>, f16
    %t4 = gpu.launch_func async [%t2] @kernels::@twice
        blocks in (%c1, %c1, %c1) threads in (%n, %c1, %c1)
        dynamic_shared_memory_size %smem args(%d : memref<?xf32>)
    %t5 = gpu.launch_func async [%t4] @kernels::@twice
        clusters in (%c2, %c1, %c1) blocks in (%c2, %c1, %c1)
        threads in (%n, %c1, %c1) args(%d : memref<?xf32>)
    // Join both streams before anything reads both.
    %j = gpu.wait async [%t3, %t5]
    %t6 = gpu.memset async [%j] %d, %one : memref<?xf32>, f32
    %t7 = gpu.memcpy async [%t6] %h, %d : memref<?xf32>, memref<?xf32>
    %t8 = gpu.memcpy async [%t7] %h16, %d16 : memref<?xf16>, memref<?xf16>
    %t9 = gpu.dealloc async [%t8] %d : memref<?xf32>
    %t10 = gpu.dealloc async [%t9] %d16 : memref<?xf16>
    gpu.wait [%t10]
    gpu.host_unregister %u : memref<*xf32>
    return
  }

  func.func @host_shared(%n: index) {
    %s = gpu.alloc host_shared (%n) : memref<?xf32>
    %t0 = gpu.wait async
    %t1 = gpu.dealloc async [%t0] %s : memref<?xf32>
    gpu.wait [%t1]
    return
  }

  func.func @loop(%d: memref<?xf32>, %n: index) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %one = arith.constant 1.0 : f32
    %t0 = gpu.wait async
    %r = scf.for %i = %c0 to %n step %c1 iter_args(%t = %t0) -> !gpu.async.token {
      %t1 = gpu.memset async [%t] %d, %one : memref<?xf32>, f32
      scf.yield %t1 : !gpu.async.token
    }
    gpu.wait [%r]
    return
  }

  func.func @main() -> i32 {
    %z = arith.constant 0 : i32
    return %z : i32
  }
}
