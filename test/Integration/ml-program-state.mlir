// A model's state in a mutable ml_program global (a KV cache, here a running
// sum): each call loads it, stores the sum with its input, and returns both
// the value it loaded and the new one. Three calls print 0 and x, x and 2x,
// 2x and 3x in every lowering: the reference, the CPU pipeline, and the GPU
// kernels run as CPU loops. (Upstream's bufferization of global_store
// stored an uninitialized buffer: the state was garbage after one call.)
// RUN: flashnorm-opt %s %lower-to-llvm | %run | FileCheck %s
// RUN: flashnorm-opt %s --flashnorm --flashnorm-cpu-pipeline | %async-run | FileCheck %s
// RUN: flashnorm-opt %s --flashnorm-gpu-to-kernels=gemm=codegen --flashnorm-test-gpu-launch-to-loops --flashnorm-cpu-buffers-to-llvm=vectorize=false | %async-run | FileCheck %s
// CHECK: [0,  0,  0,  0]
// CHECK: [1,  2,  3,  4]
// CHECK: [1,  2,  3,  4]
// CHECK: [2,  4,  6,  8]
// CHECK: [2,  4,  6,  8]
// CHECK: [3,  6,  9,  12]
// @reload loads the state again after the new value is computed, and a
// helper reads it there too: both see the old state (the value was computed
// straight into the global, before them); a load after the store sees the
// new one. Calls 4 and 5 print the helper's, the reload's and the later
// load's values.
// CHECK: [3,  6,  9,  12]
// CHECK: [3,  6,  9,  12]
// CHECK: [4,  8,  12,  16]
// CHECK: [4,  8,  12,  16]
// CHECK: [4,  8,  12,  16]
// CHECK: [5,  10,  15,  20]
// CHECK-NOT: [

ml_program.global private mutable @sum(dense<0.0> : tensor<4xf32>) : tensor<4xf32>

func.func @step(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %old = ml_program.global_load @sum : tensor<4xf32>
  %e = tensor.empty() : tensor<4xf32>
  %new = linalg.add ins(%old, %x : tensor<4xf32>, tensor<4xf32>)
                    outs(%e : tensor<4xf32>) -> tensor<4xf32>
  ml_program.global_store @sum = %new : tensor<4xf32>
  return %old, %new : tensor<4xf32>, tensor<4xf32>
}

func.func @peek() {
  %s = ml_program.global_load @sum : tensor<4xf32>
  %u = tensor.cast %s : tensor<4xf32> to tensor<*xf32>
  func.call @printMemrefF32(%u) : (tensor<*xf32>) -> ()
  return
}

func.func @reload(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %old = ml_program.global_load @sum : tensor<4xf32>
  %e = tensor.empty() : tensor<4xf32>
  %new = linalg.add ins(%old, %x : tensor<4xf32>, tensor<4xf32>)
                    outs(%e : tensor<4xf32>) -> tensor<4xf32>
  func.call @peek() : () -> ()
  %again = ml_program.global_load @sum : tensor<4xf32>
  ml_program.global_store @sum = %new : tensor<4xf32>
  %after = ml_program.global_load @sum : tensor<4xf32>
  return %again, %after : tensor<4xf32>, tensor<4xf32>
}

func.func @show_reload(%x: tensor<4xf32>) {
  %again, %after = func.call @reload(%x) : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
  %u = tensor.cast %again : tensor<4xf32> to tensor<*xf32>
  func.call @printMemrefF32(%u) : (tensor<*xf32>) -> ()
  %v = tensor.cast %after : tensor<4xf32> to tensor<*xf32>
  func.call @printMemrefF32(%v) : (tensor<*xf32>) -> ()
  return
}

func.func @main() {
  %x = arith.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %c0 = arith.constant 0 : index
  %c3 = arith.constant 3 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %c3 step %c1 {
    %old, %new = func.call @step(%x) : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
    %u = tensor.cast %old : tensor<4xf32> to tensor<*xf32>
    func.call @printMemrefF32(%u) : (tensor<*xf32>) -> ()
    %v = tensor.cast %new : tensor<4xf32> to tensor<*xf32>
    func.call @printMemrefF32(%v) : (tensor<*xf32>) -> ()
  }
  func.call @show_reload(%x) : (tensor<4xf32>) -> ()
  func.call @show_reload(%x) : (tensor<4xf32>) -> ()
  return
}
func.func private @printMemrefF32(tensor<*xf32>)
