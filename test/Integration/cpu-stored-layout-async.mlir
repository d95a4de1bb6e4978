// Execution: a deferred RMSNorm whose projection reads a K x N argument
// weight in its stored layout at 16 rows (flashnorm-cpu-codegen copies
// blocks of it into a stack buffer), with the statistic and the
// projection as async tasks (concurrent-min-bytes=0): the buffer is
// allocated at the start of the projection's task, which runs as a
// coroutine on the async runtime. Numbers unchanged against the
// sequential reference lowering of the unrewritten program.
// RUN: flashnorm-opt %s %lower-to-llvm | %run > %t.ref
// RUN: flashnorm-opt %s --flashnorm | flashnorm-opt --flashnorm-cpu-pipeline=concurrent-min-bytes=0 | %async-run > %t.out
// RUN: %compare %t.ref %t.out --rtol 1e-4 --atol 1e-5 | FileCheck %s --check-prefix=CMP
// RUN: flashnorm-opt %s --flashnorm | flashnorm-opt --flashnorm-cpu-to-buffers=concurrent-min-bytes=0 | flashnorm-opt --pass-pipeline='builtin.module(func.func(flashnorm-cpu-codegen))' | FileCheck %s
// CMP: MATCH
// CHECK-LABEL: func.func @block
// CHECK: async.execute
// CHECK: async.execute
// CHECK-NEXT: memref.alloca() {alignment = 64 : i64}
// CHECK: memref.view

func.func @block(%x: tensor<16x64xf32>, %w: tensor<64x128xf32>) -> tensor<16x128xf32> {
  %c0 = arith.constant 0.0 : f32
  %sq = arith.mulf %x, %x : tensor<16x64xf32>
  %e1 = tensor.empty() : tensor<16xf32>
  %z1 = linalg.fill ins(%c0 : f32) outs(%e1 : tensor<16xf32>) -> tensor<16xf32>
  %s = linalg.reduce ins(%sq : tensor<16x64xf32>) outs(%z1 : tensor<16xf32>) dimensions = [1]
    (%a: f32, %b: f32) { %t = arith.addf %a, %b : f32
      linalg.yield %t : f32 }
  %n64 = arith.constant 64.0 : f32
  %eps = arith.constant 1.0e-5 : f32
  %e2 = tensor.empty() : tensor<16x64xf32>
  %nrm = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%x, %s : tensor<16x64xf32>, tensor<16xf32>) outs(%e2 : tensor<16x64xf32>) {
  ^bb0(%xv: f32, %sv: f32, %o: f32):
    %m = arith.divf %sv, %n64 : f32
    %me = arith.addf %m, %eps : f32
    %r = math.rsqrt %me : f32
    %y = arith.mulf %xv, %r : f32
    linalg.yield %y : f32
  } -> tensor<16x64xf32>
  %e = tensor.empty() : tensor<16x128xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<16x128xf32>) -> tensor<16x128xf32>
  %p = linalg.matmul ins(%nrm, %w : tensor<16x64xf32>, tensor<64x128xf32>) outs(%z : tensor<16x128xf32>) -> tensor<16x128xf32>
  return %p : tensor<16x128xf32>
}

func.func @fill2(%rows: index, %cols: index, %a: f32) -> tensor<?x?xf32> {
  %e = tensor.empty(%rows, %cols) : tensor<?x?xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} outs(%e : tensor<?x?xf32>) {
  ^bb0(%o: f32):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %ii = arith.index_cast %i : index to i32
    %jj = arith.index_cast %j : index to i32
    %fi = arith.sitofp %ii : i32 to f32
    %fj = arith.sitofp %jj : i32 to f32
    %ci = arith.constant 0.37 : f32
    %cj = arith.constant 0.11 : f32
    %mi = arith.mulf %fi, %ci : f32
    %mj = arith.mulf %fj, %cj : f32
    %t0 = arith.addf %mi, %mj : f32
    %t = arith.addf %t0, %a : f32
    %v = math.sin %t : f32
    linalg.yield %v : f32
  } -> tensor<?x?xf32>
  return %r : tensor<?x?xf32>
}
func.func @main() {
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %a0 = arith.constant 0.5 : f32
  %a1 = arith.constant 1.5 : f32
  %xd = call @fill2(%c16, %c64, %a0) : (index, index, f32) -> tensor<?x?xf32>
  %x = tensor.cast %xd : tensor<?x?xf32> to tensor<16x64xf32>
  %wd = call @fill2(%c64, %c128, %a1) : (index, index, f32) -> tensor<?x?xf32>
  %w = tensor.cast %wd : tensor<?x?xf32> to tensor<64x128xf32>
  %y = call @block(%x, %w) : (tensor<16x64xf32>, tensor<64x128xf32>) -> tensor<16x128xf32>
  %u = tensor.cast %y : tensor<16x128xf32> to tensor<*xf32>
  call @printMemrefF32(%u) : (tensor<*xf32>) -> ()
  return
}
func.func private @printMemrefF32(tensor<*xf32>)
