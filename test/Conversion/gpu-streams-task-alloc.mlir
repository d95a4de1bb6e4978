// A task that allocates a buffer of its own: the main stream issues the
// allocation, so the task's stream forks after it (it forked before, and
// its kernels used the buffer unordered after its allocation: a race the
// streams verifier then rejected).
// RUN: flashnorm-opt %s --flashnorm-gpu-kernels --flashnorm-gpu-streams | FileCheck %s
// RUN: flashnorm-opt %s --flashnorm-gpu-kernels --flashnorm-gpu-streams | flashnorm-opt --flashnorm-gpu-streams-to-llvm=format=isa -o /dev/null
// CHECK-LABEL: func.func @f
// The task's buffer, allocated last, then the main stream's kernels on it:
// CHECK-COUNT-4: gpu.alloc async
// CHECK: %{{.*}}, %[[ALLOCATED:.*]] = gpu.alloc async [%{{.*}}] () : memref<4x64xf32>
// CHECK-NOT: gpu.alloc
// CHECK: gpu.launch async [%[[ALLOCATED]]] {{.*}}function(@f_fill_
// The task's stream forks after the allocation:
// CHECK: %[[FORK:.*]] = gpu.wait async [%[[ALLOCATED]]]
// CHECK: gpu.launch async [%[[FORK]]] {{.*}}function(@f_elementwise_0)
func.func @f(%x: memref<4x64xf32>, %w: memref<64x64xf32>) -> memref<4x64xf32> {
  %z = arith.constant 0.0 : f32
  %y = memref.alloc() : memref<4x64xf32>
  %s = memref.alloc() : memref<4x64xf32>
  %t = async.execute {
    %tmp = memref.alloc() : memref<4x64xf32>
    linalg.copy ins(%x : memref<4x64xf32>) outs(%tmp : memref<4x64xf32>)
    linalg.copy ins(%tmp : memref<4x64xf32>) outs(%s : memref<4x64xf32>)
    async.yield
  }
  linalg.fill ins(%z : f32) outs(%y : memref<4x64xf32>)
  linalg.matmul ins(%x, %w : memref<4x64xf32>, memref<64x64xf32>) outs(%y : memref<4x64xf32>)
  async.await %t : !async.token
  linalg.add ins(%y, %s : memref<4x64xf32>, memref<4x64xf32>) outs(%y : memref<4x64xf32>)
  return %y : memref<4x64xf32>
}
