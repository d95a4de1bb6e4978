// Streams and events come from pools: a destroyed handle is handed out again,
// destroying it twice is ignored, and a stream passed where the lowering
// expects an event (a token through a block argument) is waited on,
// synchronized and destroyed as a stream.
// REQUIRES: cuda-runtime, gpu
// RUN: %upstream-mlir-opt %s %gpu-lower -o %t.llvm.mlir
// RUN: env FLASHNORM_CUDA_TRACE=1 %gpu-run %t.llvm.mlir 2>&1 | FileCheck %s

// CHECK: flashnorm-cuda #{{[0-9]+}}: stream create [[S:0x[0-9a-f]+]]
// CHECK-NEXT: stream destroy [[S]]{{$}}
// CHECK-NEXT: stream destroy [[S]] (not live: ignored)
// CHECK-NEXT: stream create [[S]]
// CHECK-NEXT: stream create [[B:0x[0-9a-f]+]]
// CHECK-NEXT: event create [[E:0x[0-9a-f]+]]
// CHECK-NEXT: event record [[E]] on stream [[S]]{{$}}
// CHECK-NEXT: stream [[B]] waits on event [[E]]
// CHECK-NEXT: stream [[B]] waits on stream [[S]]
// CHECK-NEXT: event destroy [[E]]{{$}}
// CHECK-NEXT: event destroy [[E]] (not live: ignored)
// CHECK-NEXT: event create [[E]]
// CHECK-NEXT: stream sync [[B]]
// CHECK-NEXT: stream destroy [[B]]{{$}}
// CHECK-NEXT: stream sync [[S]]
// CHECK-NEXT: stream destroy [[S]]{{$}}

module {
  func.func private @mgpuStreamCreate() -> !llvm.ptr
  func.func private @mgpuStreamDestroy(!llvm.ptr)
  func.func private @mgpuStreamSynchronize(!llvm.ptr)
  func.func private @mgpuStreamWaitEvent(!llvm.ptr, !llvm.ptr)
  func.func private @mgpuEventCreate() -> !llvm.ptr
  func.func private @mgpuEventDestroy(!llvm.ptr)
  func.func private @mgpuEventRecord(!llvm.ptr, !llvm.ptr)
  func.func private @mgpuEventSynchronize(!llvm.ptr)

  func.func @main() {
    %s = call @mgpuStreamCreate() : () -> !llvm.ptr
    call @mgpuStreamDestroy(%s) : (!llvm.ptr) -> ()
    call @mgpuStreamDestroy(%s) : (!llvm.ptr) -> ()
    %a = call @mgpuStreamCreate() : () -> !llvm.ptr
    %b = call @mgpuStreamCreate() : () -> !llvm.ptr
    %e = call @mgpuEventCreate() : () -> !llvm.ptr
    call @mgpuEventRecord(%e, %a) : (!llvm.ptr, !llvm.ptr) -> ()
    call @mgpuStreamWaitEvent(%b, %e) : (!llvm.ptr, !llvm.ptr) -> ()
    call @mgpuStreamWaitEvent(%b, %a) : (!llvm.ptr, !llvm.ptr) -> ()
    call @mgpuEventDestroy(%e) : (!llvm.ptr) -> ()
    call @mgpuEventDestroy(%e) : (!llvm.ptr) -> ()
    %e2 = call @mgpuEventCreate() : () -> !llvm.ptr
    call @mgpuEventSynchronize(%b) : (!llvm.ptr) -> ()
    call @mgpuEventDestroy(%b) : (!llvm.ptr) -> ()
    call @mgpuStreamSynchronize(%a) : (!llvm.ptr) -> ()
    call @mgpuStreamDestroy(%a) : (!llvm.ptr) -> ()
    call @mgpuEventDestroy(%e2) : (!llvm.ptr) -> ()
    return
  }
}
