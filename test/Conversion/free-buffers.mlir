// flashnorm-free-buffers: what bufferization allocated is freed after its
// last use (upstream's ownership-based deallocation); what a function
// returns is its caller's. A module that frees memory itself is left as it
// is, byte for byte.
// RUN: flashnorm-opt %s --split-input-file --one-shot-bufferize='bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map' --flashnorm-free-buffers | FileCheck %s
// RUN: flashnorm-opt %S/Inputs/frees-own-buffers.mlir > %t.in
// RUN: flashnorm-opt %t.in --flashnorm-free-buffers > %t.out
// RUN: diff %t.in %t.out
// A caller of functions that return buffers: freed, where upstream's
// simplification alone crashes (llvm-project#205228).
// RUN: flashnorm-opt %S/Inputs/calls-returning-buffers.mlir --flashnorm-free-buffers | FileCheck %s --check-prefix=CALLS
// CALLS-LABEL: func.func @main
// CALLS-DAG: memref.dealloc %{{.*}} : memref<1x64xbf16>
// CALLS-DAG: memref.dealloc %{{.*}} : memref<48x64xbf16>

// CHECK-LABEL: func.func @intermediate
// CHECK: %[[T:.*]] = memref.alloc() {{.*}} : memref<4xf32>
// CHECK: %[[R:.*]] = memref.alloc() {{.*}} : memref<4xf32>
// CHECK: memref.dealloc %[[T]] : memref<4xf32>
// CHECK-NOT: memref.dealloc
// CHECK: return %[[R]]
func.func @intermediate(%x: tensor<4xf32>) -> tensor<4xf32> {
  %e = tensor.empty() : tensor<4xf32>
  %t = linalg.exp ins(%x : tensor<4xf32>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  %e2 = tensor.empty() : tensor<4xf32>
  %r = linalg.add ins(%t, %x : tensor<4xf32>, tensor<4xf32>) outs(%e2 : tensor<4xf32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

// A returned constant is copied (its clone, lowered): the caller frees what
// it gets.
// CHECK-LABEL: func.func @constant
// CHECK: %[[G:.*]] = memref.get_global
// CHECK: %[[C:.*]] = memref.alloc() : memref<4xf32>
// CHECK: memref.copy %[[G]], %[[C]]
// CHECK-NOT: bufferization.clone
// CHECK: return
func.func @constant() -> tensor<4xf32> {
  %c = arith.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  return %c : tensor<4xf32>
}
