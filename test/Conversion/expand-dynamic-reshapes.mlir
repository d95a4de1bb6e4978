// A memref.expand_shape with two dynamic sizes in one group (an importer's
// view of [B*T, N] back to [B, T, N]) becomes a reinterpret_cast of its
// source's base with the sizes it states: upstream's expand-strided-metadata
// crashed on it. Groups with one dynamic size are left to upstream.
// RUN: flashnorm-opt %s --flashnorm-expand-dynamic-reshapes | FileCheck %s
// RUN: flashnorm-opt %s --flashnorm-expand-dynamic-reshapes --expand-strided-metadata | FileCheck %s --check-prefix=LOWERED

// CHECK-LABEL: func.func @two_dynamic(
// CHECK-SAME: %[[X:.*]]: memref<?x8xf32>, %[[B:.*]]: index, %[[T:.*]]: index
// CHECK: %[[BASE:.*]], %{{.*}}, %{{.*}}:2, %{{.*}}:2 = memref.extract_strided_metadata %[[X]]
// CHECK: %[[S0:.*]] = arith.muli %c8, %[[T]] : index
// CHECK: memref.reinterpret_cast %[[BASE]] to offset: [0], sizes: [%[[B]], %[[T]], 8], strides: [%[[S0]], 8, 1]
// CHECK-NOT: memref.expand_shape
// LOWERED-LABEL: func.func @two_dynamic(
// LOWERED: memref.reinterpret_cast
// LOWERED-NOT: memref.expand_shape
func.func @two_dynamic(%x: memref<?x8xf32>, %b: index, %t: index) -> memref<?x?x8xf32> {
  %y = memref.expand_shape %x [[0, 1], [2]] output_shape [%b, %t, 8] : memref<?x8xf32> into memref<?x?x8xf32>
  return %y : memref<?x?x8xf32>
}

// A strided source (a column slice of n rows, viewed as b x t): the
// innermost expanded stride is the source dimension's, the offset the
// source's.
// CHECK-LABEL: func.func @strided_source(
// CHECK-SAME: %{{.*}}: memref<?x8xf32>, %{{.*}}: index, %[[B:.*]]: index, %[[T:.*]]: index
// CHECK: %[[BASE:.*]], %[[OFF:.*]], %{{.*}}, %{{.*}} = memref.extract_strided_metadata
// CHECK: %[[S0:.*]] = arith.muli %c8, %[[T]] : index
// CHECK: memref.reinterpret_cast %[[BASE]] to offset: [%[[OFF]]], sizes: [%[[B]], %[[T]]], strides: [%[[S0]], 8]
// LOWERED-LABEL: func.func @strided_source(
// LOWERED-NOT: memref.expand_shape
func.func @strided_source(%m: memref<?x8xf32>, %n: index, %b: index, %t: index) -> memref<?x?xf32, strided<[?, 8], offset: ?>> {
  %c3 = arith.constant 3 : index
  %col = memref.subview %m[0, %c3] [%n, 1] [1, 1] : memref<?x8xf32> to memref<?xf32, strided<[8], offset: ?>>
  %y = memref.expand_shape %col [[0, 1]] output_shape [%b, %t] : memref<?xf32, strided<[8], offset: ?>> into memref<?x?xf32, strided<[?, 8], offset: ?>>
  return %y : memref<?x?xf32, strided<[?, 8], offset: ?>>
}

// One dynamic size per group: upstream derives it, the op stays.
// CHECK-LABEL: func.func @one_dynamic(
// CHECK: memref.expand_shape
// LOWERED-LABEL: func.func @one_dynamic(
// LOWERED: memref.reinterpret_cast
func.func @one_dynamic(%x: memref<?x8xf32>, %t: index) -> memref<2x?x8xf32> {
  %y = memref.expand_shape %x [[0, 1], [2]] output_shape [2, %t, 8] : memref<?x8xf32> into memref<2x?x8xf32>
  return %y : memref<2x?x8xf32>
}
