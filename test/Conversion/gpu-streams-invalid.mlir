// What flashnorm-gpu-streams cannot turn into host code on streams is an
// error at the op or argument, never a kernel reading host memory.
// RUN: flashnorm-opt %s -split-input-file -verify-diagnostics --pass-pipeline='builtin.module(flashnorm-gpu-streams)'

// An unranked host buffer has no size to copy: its ranked cast would be
// read in host memory by the kernel.
// expected-error @below {{flashnorm-gpu-streams: cannot copy a buffer of type 'memref<*xf32>' (unranked) to the device; pass it ranked}}
func.func @unranked(%x: memref<*xf32>, %y: memref<4xf32>) {
  %c = memref.cast %x : memref<*xf32> to memref<4xf32>
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c4, %sy = %c1, %sz = %c1) {
    %a = memref.load %c[%tx] : memref<4xf32>
    memref.store %a, %y[%tx] : memref<4xf32>
    gpu.terminator
  }
  return
}

// -----

// A strided host view is not one contiguous copy.
// expected-error @below {{flashnorm-gpu-streams: cannot copy a buffer of type 'memref<4xf32, strided<[2]>>' (non-identity layout) to the device}}
func.func @strided(%x: memref<4xf32, strided<[2]>>, %y: memref<4xf32>) {
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c4, %sy = %c1, %sz = %c1) {
    %a = memref.load %x[%tx] : memref<4xf32, strided<[2]>>
    memref.store %a, %y[%tx] : memref<4xf32>
    gpu.terminator
  }
  return
}

// -----

// Host code with a region that holds device work (a kernel under a host
// condition) is not part of the token graph.
func.func @conditional(%x: memref<4xf32>, %p: i1) {
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  // expected-error @below {{flashnorm-gpu-streams: 'scf.if' would touch device memory on the host; a device function holds kernels, copies and views only}}
  scf.if %p {
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
               threads(%tx, %ty, %tz) in (%sx = %c4, %sy = %c1, %sz = %c1) {
      %z = arith.constant 0.0 : f32
      memref.store %z, %x[%tx] : memref<4xf32>
      gpu.terminator
    }
  }
  return
}
