// The projection kernel of a decode step (weights N x K, contiguous in k):
// one block per output, threads reading 16 bytes of the activation and of
// the weight row per load, all of a step's loads issued before the first
// multiply, the sum in registers across k (no store inside the loop), a
// block all-reduce, one store; the blocks of one weight row adjacent.
// One row, or f32, runs this kernel; 2-15 f16/bf16 rows run on tensor
// cores by default (gpu-tensor-cores.mlir), so they are checked here with
// tensor-cores=false.
// RUN: flashnorm-opt %s --flashnorm-gpu-to-kernels=tensor-cores=false | FileCheck %s
// The PTX has four 16-byte loads of each operand, before any multiply, and
// FMAs (the accumulation is contracted, as cuBLAS computes it).
// RUN: flashnorm-opt %s --flashnorm-gpu-pipeline="format=isa gemm=codegen tensor-cores=false" | FileCheck %s --check-prefix=PTX

#nk = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]

// K = 4096 bf16: 512 vectors of 8, 128 threads, 4 vectors each in one step.
// CHECK-LABEL: func.func @decode_bf16(
// CHECK: gpu.launch blocks({{.*}}) in (%{{.*}} = %c8192, %{{.*}} = %c1, %{{.*}} = %c1) threads({{.*}}) in (%{{.*}} = %c128,
// Two rows: the row index is the block index's remainder, the weight row
// its quotient.
// CHECK: %[[N:.*]] = arith.divui %{{.*}}, %c2
// CHECK: scf.for %{{.*}} = %{{.*}} to %c512 step %c512 iter_args
// CHECK-COUNT-8: vector.load {{.*}} {alignment = 16 : i64} : memref<{{.*}}xbf16>, vector<8xbf16>
// CHECK-NOT: vector.load
// CHECK-NOT: memref.store
// CHECK: scf.yield
// CHECK: gpu.all_reduce add
// CHECK: memref.store
// CHECK: gpu.terminator
// PTX-COUNT-8: ld.global.v4.b32
// PTX-NOT: ld.global.v4
// PTX: fma.rn.f32
func.func @decode_bf16(%x: tensor<2x4096xbf16>, %w: tensor<4096x4096xbf16>) -> tensor<2x4096xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x4096xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<2x4096xf32>) -> tensor<2x4096xf32>
  %y = linalg.matmul indexing_maps = #nk ins(%x, %w : tensor<2x4096xbf16>, tensor<4096x4096xbf16>) outs(%f : tensor<2x4096xf32>) -> tensor<2x4096xf32>
  return %y : tensor<2x4096xf32>
}

// K = 576 f32: 144 vectors of 4, a warp per output, one vector per step.
// CHECK-LABEL: func.func @short_f32(
// CHECK: threads({{.*}}) in (%{{.*}} = %c32,
// CHECK: scf.for %{{.*}} = %{{.*}} to %c144 step %c32 iter_args
// CHECK-COUNT-2: vector.load {{.*}} {alignment = 16 : i64} : memref<{{.*}}xf32>, vector<4xf32>
// CHECK-NOT: vector.load
// CHECK: scf.yield
func.func @short_f32(%x: tensor<1x576xf32>, %w: tensor<1536x576xf32>) -> tensor<1x1536xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x1536xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<1x1536xf32>) -> tensor<1x1536xf32>
  %y = linalg.matmul indexing_maps = #nk ins(%x, %w : tensor<1x576xf32>, tensor<1536x576xf32>) outs(%f : tensor<1x1536xf32>) -> tensor<1x1536xf32>
  return %y : tensor<1x1536xf32>
}

// K = 100 bf16 is no multiple of 8: element loads.
// CHECK-LABEL: func.func @odd_k(
// CHECK: scf.for
// CHECK-NOT: vector.load
// CHECK: memref.load
// CHECK: gpu.all_reduce add
func.func @odd_k(%x: tensor<1x100xbf16>, %w: tensor<64x100xbf16>) -> tensor<1x64xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x64xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<1x64xf32>) -> tensor<1x64xf32>
  %y = linalg.matmul indexing_maps = #nk ins(%x, %w : tensor<1x100xbf16>, tensor<64x100xbf16>) outs(%f : tensor<1x64xf32>) -> tensor<1x64xf32>
  return %y : tensor<1x64xf32>
}

// gemm=auto (the default): more than 16 rows, or rows known only at run
// time, go to cuBLASLt; the decode steps above keep the generated kernel.
// CHECK-LABEL: func.func @prefill(
// CHECK-NOT: gpu.launch {{.*}}function(@prefill_proj
// CHECK: flashnorm.gemm_lt {{.*}} transpose_b : memref<17x4096xbf16>, memref<4096x4096xbf16>, memref<17x4096xf32>
func.func @prefill(%x: tensor<17x4096xbf16>, %w: tensor<4096x4096xbf16>) -> tensor<17x4096xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<17x4096xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<17x4096xf32>) -> tensor<17x4096xf32>
  %y = linalg.matmul indexing_maps = #nk ins(%x, %w : tensor<17x4096xbf16>, tensor<4096x4096xbf16>) outs(%f : tensor<17x4096xf32>) -> tensor<17x4096xf32>
  return %y : tensor<17x4096xf32>
}

// CHECK-LABEL: func.func @dynamic_rows(
// CHECK: flashnorm.gemm_lt {{.*}} : memref<?x64xf32>, memref<64x32xf32>, memref<?x32xf32>
func.func @dynamic_rows(%x: tensor<?x64xf32>, %w: tensor<64x32xf32>) -> tensor<?x32xf32> {
  %c0 = arith.constant 0 : index
  %m = tensor.dim %x, %c0 : tensor<?x64xf32>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty(%m) : tensor<?x32xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<?x32xf32>) -> tensor<?x32xf32>
  %y = linalg.matmul ins(%x, %w : tensor<?x64xf32>, tensor<64x32xf32>) outs(%f : tensor<?x32xf32>) -> tensor<?x32xf32>
  return %y : tensor<?x32xf32>
}
