// Fused mode with a weight contiguous in k (N x K): the statistic, the
// projection and the post-scale of one output are one block that loads the
// activation and the weight row in 16-byte vectors, sums the products and
// the squares of the activation it loaded for them, reduces both across the
// block and applies 1/RMS once, in thread 0, to a sum it started from zero:
// the raw product's zero fill goes with the product buffer, no kernel of its
// own before the fused one. (Its numbers are checked on
// the CPU by test/Integration/gpu-kernels-on-cpu.test, with a mutant.)
// RUN: flashnorm-opt %s --flashnorm-gpu-to-kernels="defer-mode=fused gemm=codegen" | FileCheck %s
// A projection of a few rows of bf16 on tensor cores (@rows16, @narrow)
// fuses into the tensor-core kernel: its warps sum the squares of A's rows
// from the fragments they load, on the tensor cores too (A times its own
// halves: the rows' products with one another, the sums of squares on the
// diagonal). Where the projection has a faster kernel whose fused form
// cannot take the statistic, it stays unfused and a remark says why: a
// LayerNorm's on tensor cores (@layer16), and cuBLASLt for any projection
// under gemm=cublaslt (the kernels then are the statistic's, which also
// writes the activation scaled by 1/RMS, and cuBLASLt's).
// RUN: flashnorm-opt %s --flashnorm-gpu-to-kernels="defer-mode=fused gemm=codegen" --remarks-filter=flashnorm --remark-format=emitRemark -o /dev/null 2>&1 | FileCheck %s --check-prefix=MMA
// On each lane (flashnorm-gpu-mma): three mma.sync per step, the halves'
// registers a part of A's, and the products' write by one warp inside its
// condition.
// RUN: flashnorm-opt %s --flashnorm-gpu-to-kernels="defer-mode=fused gemm=codegen" | flashnorm-opt --pass-pipeline='builtin.module(func.func(flashnorm-gpu-mma))' | FileCheck %s --check-prefix=LANES
// RUN: flashnorm-opt %s --flashnorm-gpu-to-kernels="defer-mode=fused gemm=cublaslt" --remarks-filter=flashnorm --remark-format=emitRemark -o /dev/null 2>&1 | FileCheck %s --check-prefix=LT
// RUN: flashnorm-opt %s --flashnorm-gpu-to-kernels="defer-mode=fused gemm=cublaslt" | FileCheck %s --check-prefix=LT-IR
// Auto (the pipeline's default) schedules each statistic on its task and
// then fuses: @f's and @rows16's tasks are left empty and go with their
// awaits (no fork, no join); @layer16's projection runs on tensor cores
// unfused, so its statistic keeps its task, beside the projection.
// RUN: flashnorm-opt %s --flashnorm-gpu-to-kernels=gemm=codegen | FileCheck %s --check-prefix=AUTO
// AUTO-LABEL: func.func @f(
// AUTO-NOT: async.
// AUTO: function(@f_fused_norm_proj_0)
// AUTO-NOT: async.
// AUTO: return
// AUTO-LABEL: func.func @rows16(
// AUTO-NOT: async.
// AUTO: function(@rows16_fused_norm_proj_mma_0)
// AUTO-NOT: async.
// AUTO: return
// AUTO-LABEL: func.func @layer16(
// AUTO: async.execute {
// AUTO: function(@layer16_norm_stat_
// AUTO: async.yield
// AUTO: function(@layer16_proj_mma_
// AUTO: async.await
// AUTO: function(@layer16_post_scale_
// MMA-NOT: not fused
// MMA: remark: [Missed] flashnorm-gpu-kernels {{.*}}Function=layer16 {{.*}}not fused: the projection runs faster on tensor cores, whose fused kernel takes an RMS statistic only
// MMA-NOT: not fused
// MMA: remark: [Missed] flashnorm-gpu-kernels {{.*}}Function=rows32 {{.*}}not fused: the projection runs faster on tensor cores (a prefill: the sums of squares would take their time)
// MMA-NOT: not fused
// LT: remark: [Missed] flashnorm-gpu-kernels {{.*}}not fused: the projection runs faster on cuBLASLt
// LT-IR-LABEL: func.func @f(
// LT-IR-NOT: fused_norm_proj
// LT-IR: function(@f_norm_stat_scale
// LT-IR-NOT: gpu.launch
// LT-IR: flashnorm.gemm_lt
// LT-IR-NOT: function(@f_post_scale

// CHECK-LABEL: func.func @f(
// CHECK-NOT: gpu.launch
// CHECK: gpu.launch blocks({{.*}}) in (%{{.*}} = %c4096, {{.*}} threads({{.*}}) in (%{{.*}} = %c128, {{.*}} function(@f_fused_norm_proj_{{[0-9]+}})
// CHECK: scf.for {{.*}} iter_args(%[[DOT:.*]] = %{{.*}}, %[[SS:.*]] = %{{.*}}) -> (f32, f32)
// CHECK-COUNT-8: vector.load {{.*}} {alignment = 16 : i64} : memref<{{.*}}xbf16>, vector<8xbf16>
// CHECK-NOT: memref.store
// CHECK: scf.yield
// CHECK: gpu.all_reduce add
// CHECK: gpu.all_reduce add
// CHECK: scf.if
// CHECK-NOT: memref.load
// CHECK: math.rsqrt
// CHECK: memref.store
// CHECK: gpu.terminator
// CHECK-NOT: gpu.launch
// CHECK: return
func.func @f(%x: tensor<1x4096xbf16>, %w: tensor<4096x4096xbf16>) -> tensor<1x4096xf32> {
  %s = flashnorm.rms_inv %x eps(1.0e-5) : tensor<1x4096xbf16> -> tensor<1xf32>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x4096xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<1x4096xf32>) -> tensor<1x4096xf32>
  %p = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>] ins(%x, %w : tensor<1x4096xbf16>, tensor<4096x4096xbf16>) outs(%f : tensor<1x4096xf32>) -> tensor<1x4096xf32>
  %y = flashnorm.post_scale %p, %s : tensor<1x4096xf32>, tensor<1xf32> -> tensor<1x4096xf32>
  return %y : tensor<1x4096xf32>
}

// A bias as the product's init: thread 0 adds what was copied in.
// CHECK-LABEL: func.func @bias(
// CHECK: function(@bias_fused_norm_proj_{{[0-9]+}})
// CHECK: scf.if
// CHECK: memref.load
// CHECK: math.rsqrt
func.func @bias(%x: tensor<1x4096xbf16>, %w: tensor<4096x4096xbf16>, %b: tensor<1x4096xf32>) -> tensor<1x4096xf32> {
  %s = flashnorm.rms_inv %x eps(1.0e-5) : tensor<1x4096xbf16> -> tensor<1xf32>
  %p = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>] ins(%x, %w : tensor<1x4096xbf16>, tensor<4096x4096xbf16>) outs(%b : tensor<1x4096xf32>) -> tensor<1x4096xf32>
  %y = flashnorm.post_scale %p, %s : tensor<1x4096xf32>, tensor<1xf32> -> tensor<1x4096xf32>
  return %y : tensor<1x4096xf32>
}

// 16 tokens of bf16: one tensor-core kernel, no statistic's or
// post-scale's. Its k loop carries, beside the tile, A's rows' products
// with rows 0-7 and with rows 8-15 (each A fragment times its halves; four
// steps a group, two fragments two steps wide: twelve mma.sync);
// each slice's partial tile and products go to shared memory, and the
// threads that sum the slices take 1/RMS of the diagonal's sum and apply
// the post-scale.
// CHECK-LABEL: func.func @rows16(
// CHECK-NOT: gpu.launch
// CHECK: gpu.launch {{.*}} threads({{.*}}) in (%{{.*}} = %c32, %{{.*}} = %c1, %{{.*}} = %c8) {{.*}} function(@rows16_fused_norm_proj_mma_0) workgroup(%[[TILES:.*]] : memref<128x8xf32, #gpu.address_space<workgroup>>, %[[PRODUCTS:.*]] : memref<128x16xf32, #gpu.address_space<workgroup>>)
// CHECK: scf.for {{.*}} -> (vector<16x8xf32>, vector<16x8xf32>, vector<16x8xf32>,
// CHECK: vector.contract {{.*}} %[[A:[^,]*]], %{{.*}}, %{{.*}} : vector<16x32xbf16>, vector<8x32xbf16> into vector<16x8xf32>
// CHECK: %[[LO:.*]] = vector.extract_strided_slice %[[A]] {offsets = [0, 0], sizes = [8, 32], strides = [1, 1]}
// CHECK: vector.contract {{.*}} %[[A]], %[[LO]], %{{.*}} : vector<16x32xbf16>, vector<8x32xbf16> into vector<16x8xf32>
// CHECK: %[[HI:.*]] = vector.extract_strided_slice %[[A]] {offsets = [8, 0], sizes = [8, 32], strides = [1, 1]}
// CHECK: vector.contract {{.*}} %[[A]], %[[HI]], %{{.*}} : vector<16x32xbf16>, vector<8x32xbf16> into vector<16x8xf32>
// CHECK: scf.yield
// CHECK: vector.transfer_write %{{.*}}, %[[TILES]]
// CHECK: vector.transfer_write %{{.*}}, %[[PRODUCTS]][%[[ROW:.*]], %c0]
// CHECK: vector.transfer_write %{{.*}}, %[[PRODUCTS]][%[[ROW]], %c8]
// CHECK: gpu.barrier
// CHECK: memref.load %[[PRODUCTS]][%[[D:.*]], %[[D]]]
// CHECK-COUNT-7: memref.load %[[PRODUCTS]][%{{.*}}, %[[D]]]
// CHECK: math.rsqrt
// CHECK: memref.store
// CHECK: gpu.terminator
// CHECK-NOT: gpu.launch
// CHECK: return
// LANES-LABEL: func.func @rows16(
// LANES: scf.for
// LANES-COUNT-12: nvvm.mma.sync
// LANES-NOT: nvvm.mma.sync
// LANES: scf.yield
// LANES: vector.extract_strided_slice %{{.*}} {offsets = [1, 0], sizes = [1, 8], strides = [1, 1]} : vector<2x8xbf16> to vector<1x8xbf16>
func.func @rows16(%x: tensor<16x4096xbf16>, %w: tensor<4096x4096xbf16>) -> tensor<16x4096xf32> {
  %s = flashnorm.rms_inv %x eps(1.0e-5) : tensor<16x4096xbf16> -> tensor<16xf32>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<16x4096xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<16x4096xf32>) -> tensor<16x4096xf32>
  %p = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>] ins(%x, %w : tensor<16x4096xbf16>, tensor<4096x4096xbf16>) outs(%f : tensor<16x4096xf32>) -> tensor<16x4096xf32>
  %y = flashnorm.post_scale %p, %s : tensor<16x4096xf32>, tensor<16xf32> -> tensor<16x4096xf32>
  return %y : tensor<16x4096xf32>
}

// A LayerNorm's statistic fuses too: the k loop sums the products and the
// activation itself; after both block reductions every thread has the
// mean, sums the squared deviations from it over the same activation
// vectors (loaded again, from L1: no weight), reduces that, and thread 0
// takes 1/std of it. Two passes over the row, as the statistic's own
// kernels make them, not E[x^2] - E[x]^2 (the numbers:
// Inputs/layer-norm-fused.mlir in gpu-kernels-on-cpu.test).
// CHECK-LABEL: func.func @layer(
// CHECK-NOT: gpu.launch
// CHECK: gpu.launch {{.*}} function(@layer_fused_norm_proj_{{[0-9]+}})
// CHECK: scf.for {{.*}} -> (f32, f32)
// CHECK-COUNT-8: vector.load {{.*}} : memref<{{.*}}xbf16>, vector<8xbf16>
// CHECK: scf.yield
// CHECK: gpu.all_reduce add
// CHECK: gpu.all_reduce add
// CHECK: arith.divf
// CHECK: scf.for {{.*}} -> (f32)
// CHECK-COUNT-4: vector.load %arg0{{.*}} : memref<1x4096xbf16>, vector<8xbf16>
// CHECK-NOT: vector.load
// CHECK: arith.subf
// CHECK: scf.yield
// CHECK: gpu.all_reduce add
// CHECK: scf.if
// CHECK: math.rsqrt
// CHECK: memref.store
// CHECK: gpu.terminator
// CHECK-NOT: gpu.launch
// CHECK: return
func.func @layer(%x: tensor<1x4096xbf16>, %w: tensor<4096x4096xbf16>) -> tensor<1x4096xf32> {
  %s = flashnorm.layer_inv %x eps(1.0e-5) : tensor<1x4096xbf16> -> tensor<1xf32>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x4096xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<1x4096xf32>) -> tensor<1x4096xf32>
  %p = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>] ins(%x, %w : tensor<1x4096xbf16>, tensor<4096x4096xbf16>) outs(%f : tensor<1x4096xf32>) -> tensor<1x4096xf32>
  %y = flashnorm.post_scale %p, %s : tensor<1x4096xf32>, tensor<1xf32> -> tensor<1x4096xf32>
  return %y : tensor<1x4096xf32>
}

// A narrow LayerNorm's centered post-scale (flashnorm.layer_stats, then
// flashnorm.centered_post_scale) fuses the same way: the epilogue takes the
// mean the kernel computed (no statistic kernel writes it) and subtracts
// it times the weight's column sum from the product before 1/std.
// CHECK-LABEL: func.func @layer_centered(
// CHECK-SAME: %[[COLSUM:[a-z0-9]+]]: memref<4096xf32>
// CHECK-NOT: gpu.launch
// CHECK: gpu.launch {{.*}} function(@layer_centered_fused_norm_proj_{{[0-9]+}})
// CHECK: gpu.all_reduce add
// CHECK: gpu.all_reduce add
// CHECK: %[[MEAN:.*]] = arith.divf
// CHECK: scf.if
// CHECK: %[[INV:.*]] = math.rsqrt
// CHECK: %[[C:.*]] = memref.load %[[COLSUM]][
// CHECK: %[[SHIFT:.*]] = arith.mulf %[[MEAN]], %[[C]] : f32
// CHECK: %[[CENTERED:.*]] = arith.subf %{{.*}}, %[[SHIFT]] : f32
// CHECK: arith.mulf %[[CENTERED]], %[[INV]] : f32
// CHECK: arith.truncf {{.*}} : f32 to bf16
// CHECK: memref.store
// CHECK: gpu.terminator
// CHECK-NOT: gpu.launch
// CHECK: return
func.func @layer_centered(%x: tensor<1x4096xbf16>, %w: tensor<4096x4096xbf16>, %c: tensor<4096xf32>) -> tensor<1x4096xbf16> {
  %m, %s = flashnorm.layer_stats %x eps(1.0e-5) : tensor<1x4096xbf16> -> tensor<1xf32>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x4096xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<1x4096xf32>) -> tensor<1x4096xf32>
  %p = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>] ins(%x, %w : tensor<1x4096xbf16>, tensor<4096x4096xbf16>) outs(%f : tensor<1x4096xf32>) -> tensor<1x4096xf32>
  %y = flashnorm.centered_post_scale %p, %s, %m, %c : tensor<1x4096xf32>, tensor<1xf32>, tensor<4096xf32> -> tensor<1x4096xbf16>
  return %y : tensor<1x4096xbf16>
}

// 16 tokens of 64 outputs: four tiles side by side in a block, each warp
// multiplying the same A by itself; the first writes the products.
// CHECK-LABEL: func.func @narrow(
// CHECK: gpu.launch {{.*}} threads(%{{.*}}, %[[TY:.*]], %{{.*}}) in (%{{.*}} = %c32, %{{.*}} = %c4, %{{.*}} = %c1) {{.*}} function(@narrow_fused_norm_proj_mma_0)
// CHECK: %[[FIRST:.*]] = arith.cmpi eq, %[[TY]], %c0
// CHECK: scf.if %[[FIRST]] {
// CHECK-NEXT: vector.transfer_write {{.*}} : vector<16x8xf32>, memref<16x16xf32, #gpu.address_space<workgroup>>
// CHECK-NEXT: vector.transfer_write {{.*}} : vector<16x8xf32>, memref<16x16xf32, #gpu.address_space<workgroup>>
// CHECK-NEXT: }
// CHECK: gpu.barrier
// LANES-LABEL: func.func @narrow(
// LANES: %[[FIRST:.*]] = arith.cmpi eq
// LANES: scf.if %[[FIRST]] {
// LANES-COUNT-8: memref.store {{.*}} : memref<16x16xf32, #gpu.address_space<workgroup>>
// LANES: }
// LANES: gpu.barrier
func.func @narrow(%x: tensor<16x512xbf16>, %w: tensor<64x512xbf16>) -> tensor<16x64xf32> {
  %s = flashnorm.rms_inv %x eps(1.0e-5) : tensor<16x512xbf16> -> tensor<16xf32>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<16x64xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<16x64xf32>) -> tensor<16x64xf32>
  %p = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>] ins(%x, %w : tensor<16x512xbf16>, tensor<64x512xbf16>) outs(%f : tensor<16x64xf32>) -> tensor<16x64xf32>
  %y = flashnorm.post_scale %p, %s : tensor<16x64xf32>, tensor<16xf32> -> tensor<16x64xf32>
  return %y : tensor<16x64xf32>
}

// 16 tokens of a LayerNorm: tensor cores, unfused (a LayerNorm's second
// pass would need A again), its statistic's two passes kernels of their
// own.
// CHECK-LABEL: func.func @layer16(
// CHECK-NOT: fused_norm_proj
// CHECK: function(@layer16_norm_stat
// CHECK: function(@layer16_proj_mma
func.func @layer16(%x: tensor<16x4096xbf16>, %w: tensor<4096x4096xbf16>) -> tensor<16x4096xf32> {
  %s = flashnorm.layer_inv %x eps(1.0e-5) : tensor<16x4096xbf16> -> tensor<16xf32>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<16x4096xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<16x4096xf32>) -> tensor<16x4096xf32>
  %p = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>] ins(%x, %w : tensor<16x4096xbf16>, tensor<4096x4096xbf16>) outs(%f : tensor<16x4096xf32>) -> tensor<16x4096xf32>
  %y = flashnorm.post_scale %p, %s : tensor<16x4096xf32>, tensor<16xf32> -> tensor<16x4096xf32>
  return %y : tensor<16x4096xf32>
}

// 32 tokens (a prefill by gemm=auto's measure) on the tile kernel: there
// the product keeps the tensor cores busy, and three mma.sync per step
// would cost more than the statistic's own kernel: unfused.
// CHECK-LABEL: func.func @rows32(
// CHECK-NOT: fused_norm_proj
// CHECK: function(@rows32_norm_stat
// CHECK: function(@rows32_proj_mma
func.func @rows32(%x: tensor<32x512xbf16>, %w: tensor<64x512xbf16>) -> tensor<32x64xf32> {
  %s = flashnorm.rms_inv %x eps(1.0e-5) : tensor<32x512xbf16> -> tensor<32xf32>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<32x64xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<32x64xf32>) -> tensor<32x64xf32>
  %p = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>] ins(%x, %w : tensor<32x512xbf16>, tensor<64x512xbf16>) outs(%f : tensor<32x64xf32>) -> tensor<32x64xf32>
  %y = flashnorm.post_scale %p, %s : tensor<32x64xf32>, tensor<32xf32> -> tensor<32x64xf32>
  return %y : tensor<32x64xf32>
}
