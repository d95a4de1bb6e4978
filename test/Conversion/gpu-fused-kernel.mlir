// Fused mode with a weight contiguous in k (N x K): the statistic, the
// projection and the post-scale of one output are one block that loads the
// activation and the weight row in 16-byte vectors, sums the products and
// the squares of the activation it loaded for them, reduces both across the
// block and applies 1/RMS once, in thread 0, to a sum it started from zero:
// the raw product's zero fill goes with the product buffer, no kernel of its
// own before the fused one. (Its numbers are checked on
// the CPU by test/Integration/gpu-kernels-on-cpu.test, with a mutant.)
// RUN: flashnorm-opt %s --flashnorm-gpu-to-kernels="defer-mode=fused gemm=codegen" | FileCheck %s
// Where the projection has a faster kernel of its own, it stays unfused and
// a remark says which: tensor cores for 16 rows of bf16 (@rows16), cuBLASLt
// for any projection under gemm=cublaslt (the kernels then are the
// statistic's, which also writes the activation scaled by 1/RMS, and
// cuBLASLt's).
// RUN: flashnorm-opt %s --flashnorm-gpu-to-kernels="defer-mode=fused gemm=codegen" --remarks-filter=flashnorm --remark-format=emitRemark -o /dev/null 2>&1 | FileCheck %s --check-prefix=MMA
// RUN: flashnorm-opt %s --flashnorm-gpu-to-kernels="defer-mode=fused gemm=cublaslt" --remarks-filter=flashnorm --remark-format=emitRemark -o /dev/null 2>&1 | FileCheck %s --check-prefix=LT
// RUN: flashnorm-opt %s --flashnorm-gpu-to-kernels="defer-mode=fused gemm=cublaslt" | FileCheck %s --check-prefix=LT-IR
// Auto (the pipeline's default) schedules each statistic on its task and
// then fuses: @f's task is left empty and goes with its await (no fork, no
// join); @rows16's projection runs on tensor cores, so its statistic keeps
// its task, beside the projection.
// RUN: flashnorm-opt %s --flashnorm-gpu-to-kernels=gemm=codegen | FileCheck %s --check-prefix=AUTO
// AUTO-LABEL: func.func @f(
// AUTO-NOT: async.
// AUTO: function(@f_fused_norm_proj_0)
// AUTO-NOT: async.
// AUTO: return
// AUTO-LABEL: func.func @rows16(
// AUTO: async.execute {
// AUTO: function(@rows16_norm_stat_
// AUTO: async.yield
// AUTO: function(@rows16_proj_mma_
// AUTO: async.await
// AUTO: function(@rows16_post_scale_
// MMA-NOT: not fused
// MMA: remark: [Missed] flashnorm-gpu-kernels {{.*}}not fused: the projection runs faster on tensor cores
// MMA-NOT: not fused
// MMA: remark: [Missed] flashnorm-gpu-kernels {{.*}}Function=layer16 {{.*}}not fused: the projection runs faster on tensor cores
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

// 16 tokens of bf16: the projection runs on tensor cores, unfused.
// CHECK-LABEL: func.func @rows16(
// CHECK-NOT: fused_norm_proj
// CHECK: function(@rows16_norm_stat
// CHECK: function(@rows16_proj_mma
// CHECK: function(@rows16_post_scale
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

// 16 tokens of a LayerNorm: tensor cores, unfused, its statistic's two
// passes kernels of their own.
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
