// Runs a forked and joined step three times, eagerly and as CUDA graphs: the
// results must agree, the first episode is instantiated, the later ones
// (another memset value, fresh allocations) update the executable graph.
// REQUIRES: cuda-runtime, gpu
// RUN: %upstream-mlir-opt %s %gpu-lower -o %t.llvm.mlir
// RUN: env FLASHNORM_CUDA_TRACE=1 FLASHNORM_CUDA_TRACE_FILE=%t.eager \
// RUN:   %gpu-run %t.llvm.mlir | FileCheck %s
// RUN: FileCheck %s --check-prefix=EAGER < %t.eager
// RUN: env FLASHNORM_CUDA_GRAPHS=1 FLASHNORM_CUDA_TRACE=1 \
// RUN:   FLASHNORM_CUDA_TRACE_FILE=%t.graphs %gpu-run %t.llvm.mlir \
// RUN:   | FileCheck %s
// RUN: FileCheck %s --check-prefix=GRAPHS < %t.graphs

// d = 2 * h + x, h <- d, with h = 1 and x = 1, 2, 3.
// CHECK: [3, 3, 3, 3]
// CHECK: [8, 8, 8, 8]
// CHECK: [19, 19, 19, 19]

// EAGER: flashnorm-cuda #{{[0-9]+}}: module load [[M:0x[0-9a-f]+]] (PTX JIT, O2)
// EAGER: stream create [[S0:0x[0-9a-f]+]]
// EAGER: alloc {{0x[0-9a-f]+}} bytes=16 stream=[[S0]]
// EAGER: memcpy {{.*}} bytes=16 pageable->device stream=[[S0]]
// EAGER: event record {{0x[0-9a-f]+}} on stream [[S0]]
// EAGER: stream create [[S1:0x[0-9a-f]+]]
// EAGER: memset32 {{.*}} value=0x3f800000 count=4 bytes=16 stream=[[S1]]
// EAGER: launch twice grid=(1,1,1) block=(4,1,1) smem=0 stream=[[S0]]
// EAGER: launch add grid=(1,1,1) block=(4,1,1) smem=0 stream=[[S2:0x[0-9a-f]+]]
// EAGER: memcpy {{.*}} bytes=16 device->pageable stream=[[S2]]
// EAGER: stream sync [[S2]]
// EAGER: stream destroy [[S2]]
// EAGER-NOT: graph episode
// EAGER: module unload [[M]]

// GRAPHS: graph episode 1 begins on stream [[S0:0x[0-9a-f]+]]
// GRAPHS-NEXT: stream create [[S0]]
// GRAPHS: alloc {{.*}} (graph block cache)
// GRAPHS: launch twice {{.*}} captured
// GRAPHS: stream sync {{.*}} (ends graph episode)
// GRAPHS-NEXT: graph episode 1: {{.*}} instantiated
// GRAPHS: graph episode 2: {{.*}} updated
// GRAPHS: graph episode 3: {{.*}} updated
// GRAPHS-NOT: warning

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @twice(%p: memref<4xf32>) kernel {
      %i = gpu.thread_id x
      %v = memref.load %p[%i] : memref<4xf32>
      %w = arith.addf %v, %v : f32
      memref.store %w, %p[%i] : memref<4xf32>
      gpu.return
    }
    gpu.func @add(%p: memref<4xf32>, %q: memref<4xf32>) kernel {
      %i = gpu.thread_id x
      %v = memref.load %p[%i] : memref<4xf32>
      %w = memref.load %q[%i] : memref<4xf32>
      %s = arith.addf %v, %w : f32
      memref.store %s, %p[%i] : memref<4xf32>
      gpu.return
    }
  }

  func.func @step(%h: memref<4xf32>, %x: f32) {
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %t0 = gpu.wait async
    %d, %t1 = gpu.alloc async [%t0] () : memref<4xf32>
    %t2 = gpu.memcpy async [%t1] %d, %h : memref<4xf32>, memref<4xf32>
    %f = gpu.wait async [%t2]
    %e, %t3 = gpu.alloc async [%f] () : memref<4xf32>
    %t4 = gpu.memset async [%t3] %e, %x : memref<4xf32>, f32
    %t5 = gpu.launch_func async [%t2] @kernels::@twice
        blocks in (%c1, %c1, %c1) threads in (%c4, %c1, %c1)
        args(%d : memref<4xf32>)
    %j = gpu.wait async [%t4, %t5]
    %t6 = gpu.launch_func async [%j] @kernels::@add
        blocks in (%c1, %c1, %c1) threads in (%c4, %c1, %c1)
        args(%d : memref<4xf32>, %e : memref<4xf32>)
    %t7 = gpu.memcpy async [%t6] %h, %d : memref<4xf32>, memref<4xf32>
    %t8 = gpu.dealloc async [%t7] %d : memref<4xf32>
    %t9 = gpu.dealloc async [%t8] %e : memref<4xf32>
    gpu.wait [%t9]
    return
  }

  func.func private @printMemrefF32(memref<*xf32>)
      attributes {llvm.emit_c_interface}

  func.func @main() {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %one = arith.constant 1.0 : f32
    %h = memref.alloc() : memref<4xf32>
    scf.for %i = %c0 to %c4 step %c1 {
      memref.store %one, %h[%i] : memref<4xf32>
    }
    %u = memref.cast %h : memref<4xf32> to memref<*xf32>
    %x = arith.constant 1.0 : f32
    call @step(%h, %x) : (memref<4xf32>, f32) -> ()
    call @printMemrefF32(%u) : (memref<*xf32>) -> ()
    %x2 = arith.constant 2.0 : f32
    call @step(%h, %x2) : (memref<4xf32>, f32) -> ()
    call @printMemrefF32(%u) : (memref<*xf32>) -> ()
    %x3 = arith.constant 3.0 : f32
    call @step(%h, %x3) : (memref<4xf32>, f32) -> ()
    call @printMemrefF32(%u) : (memref<*xf32>) -> ()
    memref.dealloc %h : memref<4xf32>
    return
  }
}
