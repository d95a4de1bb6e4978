// flashnorm-cpu-codegen: projections as register-blocked micro-kernels (the
// accumulator a vector carried across the k loop, read and written once per
// tile), other linalg ops vectorized, dynamic sizes left alone.
// RUN: flashnorm-opt %s --pass-pipeline='builtin.module(func.func(flashnorm-cpu-codegen))' | FileCheck %s
// RUN: not flashnorm-opt %s --pass-pipeline='builtin.module(func.func(flashnorm-cpu-codegen{tile-sizes=8,32}))' 2>&1 | FileCheck %s --check-prefix=BADTILES
// RUN: not flashnorm-opt %s --pass-pipeline='builtin.module(func.func(flashnorm-cpu-codegen{vector-width=0}))' 2>&1 | FileCheck %s --check-prefix=BADWIDTH
// BADTILES: tile-sizes needs 3 values (m, n, k), got 2
// BADWIDTH: tile-sizes and vector-width must be positive

// Prefill: 8 x 32 tiles.
// CHECK-LABEL: func.func @prefill
// CHECK: scf.for %[[M:.*]] = %c0 to %c16 step %c8
// CHECK: scf.for %[[N:.*]] = %c0 to %c64 step %c32
// CHECK: %[[INIT:.*]] = vector.transfer_read %arg2[%[[M]], %[[N]]]{{.*}} : memref<16x64xf32>, vector<8x32xf32>
// CHECK: %[[ACC:.*]] = scf.for %[[K:.*]] = %c0 to %c64 step %c1 iter_args(%[[A:.*]] = %[[INIT]]) -> (vector<8x32xf32>)
// CHECK: vector.transfer_read %arg0[%[[M]], %[[K]]]{{.*}} vector<8x1xf32>
// CHECK: vector.transfer_read %arg1[%[[K]], %[[N]]]{{.*}} vector<1x32xf32>
// CHECK: vector.contract {{.*}} %[[A]] : vector<8x1xf32>, vector<1x32xf32> into vector<8x32xf32>
// CHECK-NOT: vector.transfer_write
// CHECK: scf.yield
// CHECK: vector.transfer_write %[[ACC]], %arg2[%[[M]], %[[N]]]
func.func @prefill(%x: memref<16x64xf32>, %w: memref<64x64xf32>, %y: memref<16x64xf32>) {
  linalg.matmul ins(%x, %w : memref<16x64xf32>, memref<64x64xf32>) outs(%y : memref<16x64xf32>)
  return
}

// Decode with bf16 weights: one row by 256 outputs, the weight widened to
// the f32 accumulator.
// CHECK-LABEL: func.func @decode_bf16
// CHECK: scf.for %[[N:.*]] = %c0 to %c512 step %c256
// CHECK: scf.for %{{.*}} = %c0 to %c64 step %c1 iter_args(%[[A:.*]] = %{{.*}}) -> (vector<1x256xf32>)
// CHECK: %[[W:.*]] = vector.transfer_read %arg1{{.*}} vector<1x256xbf16>
// CHECK: %[[WIDE:.*]] = arith.extf %[[W]] : vector<1x256xbf16> to vector<1x256xf32>
// CHECK: vector.contract {{.*}} %[[WIDE]], %[[A]]
func.func @decode_bf16(%x: memref<1x64xf32>, %w: memref<64x512xbf16>, %y: memref<1x512xf32>) {
  linalg.matmul ins(%x, %w : memref<1x64xf32>, memref<64x512xbf16>) outs(%y : memref<1x512xf32>)
  return
}

// Element-wise: rows of 16-lane vectors.
// CHECK-LABEL: func.func @elementwise
// CHECK: scf.for
// CHECK: scf.for %{{.*}} step %c16
// CHECK: math.exp %{{.*}} : vector<1x16xf32>
func.func @elementwise(%x: memref<4x64xf32>, %y: memref<4x64xf32>) {
  linalg.exp ins(%x : memref<4x64xf32>) outs(%y : memref<4x64xf32>)
  return
}

// Dynamic sizes: left to convert-linalg-to-loops.
// CHECK-LABEL: func.func @dynamic
// CHECK-NEXT: linalg.matmul
func.func @dynamic(%x: memref<?x64xf32>, %w: memref<64x64xf32>, %y: memref<?x64xf32>) {
  linalg.matmul ins(%x, %w : memref<?x64xf32>, memref<64x64xf32>) outs(%y : memref<?x64xf32>)
  return
}
