// Deferred norms the CPU schedule must keep serial, with the cost rule off
// (concurrent-min-bytes=0): a call between the tasks and their post-scale
// that writes a global they read (a callee without a body, which may
// write any global, is in test/Conversion/async-schedule.mlir), and a group in the body of a parallel
// loop (its iterations already run on the cores; the OpenMP lowering's
// scope cannot hold tasks: the pipeline failed on it). Executed: numbers
// unchanged against the sequential reference lowering.
// RUN: flashnorm-opt %s --flashnorm-cpu-to-buffers=concurrent-min-bytes=0 --remarks-filter=flashnorm --remark-format=emitRemark -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK
// RUN: flashnorm-opt %s %lower-to-llvm | %run > %t.ref
// RUN: flashnorm-opt %s --flashnorm-cpu-pipeline=concurrent-min-bytes=0 | %async-run > %t.out
// RUN: %compare %t.ref %t.out --rtol 1e-4 --atol 1e-5 | FileCheck %s
// CHECK: MATCH

memref.global "private" @st : memref<64x256xf32> = dense<1.0>

func.func @bump() {
  %g = memref.get_global @st : memref<64x256xf32>
  %c = arith.constant 1000.0 : f32
  linalg.fill ins(%c : f32) outs(%g : memref<64x256xf32>)
  return
}

// REMARK: Function=call_writes_global {{.*}}kept serial: an op before the post-scale writes a buffer the statistic or a projection uses
func.func @call_writes_global(%w: tensor<256x8xf32>) -> tensor<64x8xf32> {
  %g = memref.get_global @st : memref<64x256xf32>
  %x = bufferization.to_tensor %g restrict : memref<64x256xf32> to tensor<64x256xf32>
  %c0 = arith.constant 0.0 : f32
  %s = flashnorm.rms_inv %x eps(1.0e-05) : tensor<64x256xf32> -> tensor<64xf32>
  %e = tensor.empty() : tensor<64x8xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<64x8xf32>) -> tensor<64x8xf32>
  %p = linalg.matmul ins(%x, %w : tensor<64x256xf32>, tensor<256x8xf32>) outs(%z : tensor<64x8xf32>) -> tensor<64x8xf32>
  call @bump() : () -> ()
  %y = flashnorm.post_scale %p, %s : tensor<64x8xf32>, tensor<64xf32> -> tensor<64x8xf32>
  return %y : tensor<64x8xf32>
}

// REMARK: Function=forall_group {{.*}}kept serial: the group is in the body of a parallel loop, whose iterations already run on the cores
func.func @forall_group(%x: tensor<4x16x64xf32>, %w: tensor<64x32xf32>) -> tensor<4x16x32xf32> {
  %c0 = arith.constant 0.0 : f32
  %init = tensor.empty() : tensor<4x16x32xf32>
  %r = scf.forall (%b) in (4) shared_outs(%o = %init) -> (tensor<4x16x32xf32>) {
    %xs = tensor.extract_slice %x[%b, 0, 0] [1, 16, 64] [1, 1, 1] : tensor<4x16x64xf32> to tensor<16x64xf32>
    %s = flashnorm.rms_inv %xs eps(1.0e-05) : tensor<16x64xf32> -> tensor<16xf32>
    %e = tensor.empty() : tensor<16x32xf32>
    %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<16x32xf32>) -> tensor<16x32xf32>
    %p = linalg.matmul ins(%xs, %w : tensor<16x64xf32>, tensor<64x32xf32>) outs(%z : tensor<16x32xf32>) -> tensor<16x32xf32>
    %y = flashnorm.post_scale %p, %s : tensor<16x32xf32>, tensor<16xf32> -> tensor<16x32xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %y into %o[%b, 0, 0] [1, 16, 32] [1, 1, 1] : tensor<16x32xf32> into tensor<4x16x32xf32>
    }
  }
  return %r : tensor<4x16x32xf32>
}

func.func private @printMemrefF32(tensor<*xf32>)

#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @main() {
  %e = tensor.empty() : tensor<256x8xf32>
  %w = linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel"]} outs(%e : tensor<256x8xf32>) {
  ^bb0(%o: f32):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %ij = arith.addi %i, %j : index
    %n = arith.index_cast %ij : index to i32
    %f = arith.sitofp %n : i32 to f32
    %v = math.sin %f : f32
    linalg.yield %v : f32
  } -> tensor<256x8xf32>
  %a = call @call_writes_global(%w) : (tensor<256x8xf32>) -> tensor<64x8xf32>
  %ua = tensor.cast %a : tensor<64x8xf32> to tensor<*xf32>
  call @printMemrefF32(%ua) : (tensor<*xf32>) -> ()
  %e3 = tensor.empty() : tensor<4x16x64xf32>
  %x3 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} outs(%e3 : tensor<4x16x64xf32>) {
  ^bb0(%o: f32):
    %i = linalg.index 1 : index
    %k = linalg.index 2 : index
    %ik = arith.muli %i, %k : index
    %n = arith.index_cast %ik : index to i32
    %f = arith.sitofp %n : i32 to f32
    %v = math.cos %f : f32
    linalg.yield %v : f32
  } -> tensor<4x16x64xf32>
  %e4 = tensor.empty() : tensor<64x32xf32>
  %w4 = linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel"]} outs(%e4 : tensor<64x32xf32>) {
  ^bb0(%o: f32):
    %i = linalg.index 0 : index
    %n = arith.index_cast %i : index to i32
    %f = arith.sitofp %n : i32 to f32
    %v = math.sin %f : f32
    linalg.yield %v : f32
  } -> tensor<64x32xf32>
  %b = call @forall_group(%x3, %w4) : (tensor<4x16x64xf32>, tensor<64x32xf32>) -> tensor<4x16x32xf32>
  %ub = tensor.cast %b : tensor<4x16x32xf32> to tensor<*xf32>
  call @printMemrefF32(%ub) : (tensor<*xf32>) -> ()
  return
}
