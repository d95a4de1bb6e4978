// The grid's y and z hold at most 65535 blocks: where a kernel's rows may
// be more (70000 tokens; a token count known only at run time), all its
// blocks go along x, linearized; otherwise rows stay on y.
// RUN: flashnorm-opt %s --flashnorm-gpu-to-kernels | FileCheck %s
// CHECK-LABEL: func.func @many_rows
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %c70000, {{.*}} = %c1, {{.*}} = %c1) threads({{.*}}) in ({{.*}} = %c32,
// CHECK-LABEL: func.func @dynamic_rows
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %dim, {{.*}} = %c1, {{.*}} = %c1) threads
// CHECK-LABEL: func.func @few_rows
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %c1, {{.*}} = %c4, {{.*}} = %c1) threads
#id = affine_map<(i, j) -> (i, j)>
func.func @many_rows(%x: memref<70000x32xf32>, %y: memref<70000x32xf32>) {
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : memref<70000x32xf32>) outs(%y : memref<70000x32xf32>) {
  ^bb0(%a: f32, %o: f32):
    %n = arith.negf %a : f32
    linalg.yield %n : f32
  }
  return
}
func.func @dynamic_rows(%x: memref<?x32xf32>, %y: memref<?x32xf32>) {
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : memref<?x32xf32>) outs(%y : memref<?x32xf32>) {
  ^bb0(%a: f32, %o: f32):
    %n = arith.negf %a : f32
    linalg.yield %n : f32
  }
  return
}
func.func @few_rows(%x: memref<4x32xf32>, %y: memref<4x32xf32>) {
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : memref<4x32xf32>) outs(%y : memref<4x32xf32>) {
  ^bb0(%a: f32, %o: f32):
    %n = arith.negf %a : f32
    linalg.yield %n : f32
  }
  return
}
