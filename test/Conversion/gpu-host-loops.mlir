// Host code that touches buffers in a device function becomes a kernel in
// its place (flashnorm-gpu-kernels, HostLoops.cpp): every buffer is on the
// device there. A nest whose iterations store to distinct elements and read
// nothing they write (a PyTorch importer's KV-cache update) is a parallel
// kernel; anything else runs as it is on one thread, with a remark.
// RUN: flashnorm-opt %s --flashnorm-gpu-kernels | FileCheck %s
// RUN: flashnorm-opt %s --flashnorm-gpu-kernels --remarks-filter=flashnorm --remark-format=emitRemark -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK
// The streams pass then accepts them (no host loop is left), copies the
// written cache back into the caller's buffer, keeps the timer call in
// place, and leaves the driver alone.
// RUN: flashnorm-opt %s --flashnorm-gpu-kernels --flashnorm-gpu-streams | FileCheck %s --check-prefix=STREAMS
// A value the host needs from device memory cannot come out of a kernel:
// the remark says so and the streams pass stops with an error.
// HOSTVALUE: remark: [Missed] flashnorm-gpu-kernels {{.*}} Function=host_value {{.*}}host code that touches device buffers stays on the host: 'memref.load' makes a value the host uses
// HOSTVALUE: error: flashnorm-gpu-streams: 'memref.load' would touch device memory on the host
// RUN: not flashnorm-opt %S/Inputs/host-value.mlir --flashnorm-gpu-kernels --flashnorm-gpu-streams --remarks-filter=flashnorm --remark-format=emitRemark -o /dev/null 2>&1 | FileCheck %s --check-prefix=HOSTVALUE

// The importer's form after bufferization: row `pos + t` of the cache gets
// row t of x, one element per iteration.
// CHECK-LABEL: func.func @kv_update(
// CHECK-NOT: scf.for
// CHECK: gpu.launch blocks({{.*}}) threads({{.*}}) module(@kv_update_kernels) function(@kv_update_host_loop_0)
// CHECK-NOT: scf.for
// CHECK: %[[ROW:.*]] = arith.addi %arg2, %{{.*}} : index
// CHECK: %[[V:.*]] = memref.load %arg1[%{{.*}}, %[[COL:.*]]] : memref<2x64xf32>
// CHECK: memref.store %[[V]], %arg0[%[[ROW]], %[[COL]]] : memref<8x64xf32>
// REMARK: remark: [Passed] flashnorm-gpu-kernels {{.*}} Function=kv_update {{.*}}kernel @kv_update_host_loop_0
// STREAMS-LABEL: func.func @kv_update(
// STREAMS: %[[DEV:.*]], %{{.*}} = gpu.alloc async {{.*}} : memref<8x64xf32>
// STREAMS: gpu.launch async
// STREAMS: gpu.memcpy async [%{{.*}}] %arg0, %[[DEV]] : memref<8x64xf32>, memref<8x64xf32>
// STREAMS: gpu.wait [
func.func @kv_update(%cache: memref<8x64xf32>, %x: memref<2x64xf32>, %pos: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c64 = arith.constant 64 : index
  scf.for %t = %c0 to %c2 step %c1 {
    %row = arith.addi %pos, %t : index
    scf.for %j = %c0 to %c64 step %c1 {
      %v = memref.load %x[%t, %j] : memref<2x64xf32>
      memref.store %v, %cache[%row, %j] : memref<8x64xf32>
    }
  }
  return
}

// Rows shifted up inside one buffer: each iteration reads what the next
// one overwrites, so the loop keeps its order on one thread.
// CHECK-LABEL: func.func @shift(
// CHECK: gpu.launch {{.*}} threads({{.*}}) in ({{.*}} = %[[ONE:.*]], {{.*}} = %[[ONE]], {{.*}} = %[[ONE]]) module(@shift_kernels) function(@shift_host_op_0)
// CHECK-NEXT: scf.for
// REMARK: remark: [Missed] flashnorm-gpu-kernels {{.*}} Function=shift {{.*}}host code runs as a kernel of one thread: it reads a buffer it writes
func.func @shift(%cache: memref<8x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c7 = arith.constant 7 : index
  %c64 = arith.constant 64 : index
  scf.for %i = %c0 to %c7 step %c1 {
    %next = arith.addi %i, %c1 : index
    scf.for %j = %c0 to %c64 step %c1 {
      %v = memref.load %cache[%next, %j] : memref<8x64xf32>
      memref.store %v, %cache[%i, %j] : memref<8x64xf32>
    }
  }
  return
}

// Every iteration writes the same element: one thread, in order.
// REMARK: remark: [Missed] flashnorm-gpu-kernels {{.*}} Function=same_element {{.*}}host code runs as a kernel of one thread: iterations may store to the same element
// And a single store is a kernel of one thread too.
// REMARK: remark: [Missed] flashnorm-gpu-kernels {{.*}} Function=same_element {{.*}}host code runs as a kernel of one thread: it is not a loop
func.func @same_element(%out: memref<4xf32>, %x: memref<16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  scf.for %i = %c0 to %c16 step %c1 {
    %v = memref.load %x[%i] : memref<16xf32>
    memref.store %v, %out[%c0] : memref<4xf32>
  }
  %one = arith.constant 1.0 : f32
  memref.store %one, %out[%c1] : memref<4xf32>
  return
}

// A view whose strides overlap ([1, 1]: element (i, j) is i + j): distinct
// indices, one element, so the iterations' order matters.
// REMARK: remark: [Missed] flashnorm-gpu-kernels {{.*}} Function=overlapping_view {{.*}}host code runs as a kernel of one thread: its stores go through a view whose elements may overlap
// REMARK: remark: {{.*}} Function=overlapping_view {{.*}}kernel @overlapping_view_host_op_0
func.func @overlapping_view(%buf: memref<68xf32>, %x: memref<4x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c64 = arith.constant 64 : index
  %v = memref.reinterpret_cast %buf to offset: [0], sizes: [4, 64], strides: [1, 1] : memref<68xf32> to memref<4x64xf32, strided<[1, 1]>>
  scf.for %i = %c0 to %c4 step %c1 {
    scf.for %j = %c0 to %c64 step %c1 {
      %a = memref.load %x[%i, %j] : memref<4x64xf32>
      memref.store %a, %v[%i, %j] : memref<4x64xf32, strided<[1, 1]>>
    }
  }
  return
}

// Rows of the cache through a subview: its strides keep elements apart.
// REMARK: remark: {{.*}} Function=rows_view {{.*}}kernel @rows_view_host_loop_0
func.func @rows_view(%cache: memref<8x64xf32>, %x: memref<2x64xf32>, %pos: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c64 = arith.constant 64 : index
  %rows = memref.subview %cache[%pos, 0] [2, 64] [1, 1] : memref<8x64xf32> to memref<2x64xf32, strided<[64, 1], offset: ?>>
  scf.for %t = %c0 to %c2 step %c1 {
    scf.for %j = %c0 to %c64 step %c1 {
      %v = memref.load %x[%t, %j] : memref<2x64xf32>
      memref.store %v, %rows[%t, %j] : memref<2x64xf32, strided<[64, 1], offset: ?>>
    }
  }
  return
}

// A helper that takes no buffer (a timer) stays a host call in a device
// function, where the program makes it.
// CHECK-LABEL: func.func @timed(
// CHECK: call @clock()
// CHECK: gpu.launch
// STREAMS-LABEL: func.func @timed(
// STREAMS: call @clock() : () -> i64
// STREAMS: gpu.launch async
func.func private @clock() -> i64
func.func @timed(%x: memref<16xf32>) -> i64 {
  %t = func.call @clock() : () -> i64
  %z = arith.constant 0.0 : f32
  linalg.fill ins(%z : f32) outs(%x : memref<16xf32>)
  return %t : i64
}

// So does what can reach no buffer, such as a print of a host value: it is
// neither a one-thread kernel nor an error of the streams pass.
// CHECK-LABEL: func.func @printed(
// CHECK-NOT: gpu.launch
// CHECK: vector.print %arg1 : f32
// CHECK: gpu.launch
// STREAMS-LABEL: func.func @printed(
// STREAMS-NOT: gpu.launch
// STREAMS: vector.print %arg1 : f32
// STREAMS: gpu.launch async
func.func @printed(%x: memref<16xf32>, %v: f32) {
  vector.print %v : f32
  linalg.fill ins(%v : f32) outs(%x : memref<16xf32>)
  return
}

// A function that hands buffers to another is a driver: it stays on the
// host, and says so.
// CHECK-LABEL: func.func @driver(
// CHECK-NOT: gpu.launch
// CHECK: linalg.fill
// REMARK: remark: [Missed] flashnorm-gpu-kernels {{.*}} Function=driver {{.*}}@driver stays on the host: it calls @timed with buffers or tensors (a driver)
func.func @driver(%x: memref<16xf32>) -> i64 {
  %one = arith.constant 1.0 : f32
  linalg.fill ins(%one : f32) outs(%x : memref<16xf32>)
  %t = func.call @timed(%x) : (memref<16xf32>) -> i64
  return %t : i64
}
