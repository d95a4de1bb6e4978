// A function built for device buffers (host-buffers=false), called with an
// argument at an element offset from an aligned buffer: the check on entry
// names the argument, its address and the alignment its kernels need, and
// ends the process before any device work (no stream is created). The same
// call on aligned buffers runs. The host code runs under the fake driver
// (runtime/testing/FakeDriver.cpp, host memory as device memory, no kernel
// runs).
// REQUIRES: cuda-runtime
// RUN: flashnorm-opt %s --flashnorm-gpu-pipeline="host-buffers=false format=isa" -o %t.llvm.mlir
// RUN: env LD_LIBRARY_PATH=%fake-cuda-dir FLASHNORM_CUDA_TRACE=1 %gpu-run %t.llvm.mlir -e aligned 2>&1 | FileCheck %s --check-prefix=ALIGNED
// RUN: env LD_LIBRARY_PATH=%fake-cuda-dir FLASHNORM_CUDA_TRACE=1 not --crash %gpu-run %t.llvm.mlir -e misaligned 2>&1 | FileCheck %s --check-prefix=MISALIGNED

// ALIGNED: stream create
// ALIGNED: launch double_elementwise_0
// ALIGNED: fake-cuda: launches=1

// MISALIGNED-NOT: stream create
// MISALIGNED: flashnorm-cuda: argument #0 of @double (memref<2x8xf32>) is at 0x{{[0-9a-f]*}}4, not 16-byte aligned: device buffers must be aligned as the driver aligns an allocation
// MISALIGNED-NOT: stream create
// MISALIGNED-NOT: launch

#map = affine_map<(d0, d1) -> (d0, d1)>
func.func @double(%x: memref<2x8xf32>, %y: memref<2x8xf32>) {
  linalg.generic {indexing_maps = [#map, #map],
                  iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<2x8xf32>) outs(%y : memref<2x8xf32>) {
  ^bb0(%a: f32, %b: f32):
    %s = arith.addf %a, %a : f32
    linalg.yield %s : f32
  }
  return
}

// Two buffers at byte `shift` and 128 of a 64-byte-aligned allocation.
func.func @call(%shift: index) {
  %buffer = memref.alloc() {alignment = 64 : i64} : memref<256xi8>
  %c128 = arith.constant 128 : index
  %x = memref.view %buffer[%shift][] : memref<256xi8> to memref<2x8xf32>
  %y = memref.view %buffer[%c128][] : memref<256xi8> to memref<2x8xf32>
  call @double(%x, %y) : (memref<2x8xf32>, memref<2x8xf32>) -> ()
  memref.dealloc %buffer : memref<256xi8>
  return
}

func.func @aligned() {
  %c0 = arith.constant 0 : index
  call @call(%c0) : (index) -> ()
  return
}

func.func @misaligned() {
  %c4 = arith.constant 4 : index
  call @call(%c4) : (index) -> ()
  return
}
