// A deferred projection through cuBLASLt (gemm=auto: 64 rows is prefill)
// takes its post-scale into the GEMM's epilogue: 1/RMS of each row is
// cuBLASLt's alpha vector, the f32 sum is rounded once to the post-scale's
// bf16 output, and neither the f32 product nor the post-scale kernel is
// left. The GEMM runs where the post-scale ran, after the statistic, in
// every mode. (Under gemm=codegen the post-scale stays a kernel: the
// tensor-core and GEMV kernels apply it in their own way.)
// RUN: flashnorm-opt %s --flashnorm-gpu-to-kernels=defer-mode=serial | FileCheck %s
// RUN: flashnorm-opt %s --flashnorm-gpu-to-kernels=defer-mode=streams | FileCheck %s --check-prefixes=CHECK,STREAMS
// RUN: flashnorm-opt %s --flashnorm-gpu-to-kernels=defer-mode=fused | FileCheck %s
// RUN: flashnorm-opt %s --flashnorm-gpu-to-kernels=defer-mode=serial --remarks-filter=flashnorm --remark-format=emitRemark -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK
// The call passes the inputs' and the result's types (2: bf16), the
// layout (1: N x K) and the scale (its f32 buffer; null without one).
// RUN: flashnorm-opt %s --flashnorm-gpu-pipeline=format=isa | FileCheck %s --check-prefix=CALL

// REMARK-DAG: remark: [Passed] flashnorm-gpu-kernels {{.*}}projection at {{.*}} through cuBLASLt, its post-scale in the GEMM's epilogue (rounded once to bf16)

// CHECK-LABEL: func.func @prefill(
// CHECK: function(@prefill_norm_stat_
// STREAMS: async.await
// CHECK-NOT: gpu.launch
// CHECK: %[[S:.*]] = memref.collapse_shape %{{.*}} {{\[\[}}0, 1]] : memref<1x64xf32> into memref<64xf32>
// CHECK: flashnorm.gemm_lt %{{.*}}, %[[W:.*]], %[[OUT:.*]] row_scale(%[[S]] : memref<64xf32>) transpose_b : memref<64x256xbf16>, memref<512x256xbf16>, memref<64x512xbf16>
// The post-scale's contract, a row whose scale is 0 is 0 (where the raw
// product overflowed, the alpha vector would make inf * 0 = NaN): a thread
// per row reads its scale and writes its row only then.
// CHECK-NEXT: gpu.launch {{.*}} function(@prefill_zero_rows_
// CHECK: %[[SI:.*]] = memref.load %[[S]][%{{.*}}] : memref<64xf32>
// CHECK: %[[Z:.*]] = arith.cmpf oeq, %[[SI]], %{{.*}} : f32
// CHECK: scf.if %[[Z]] {
// CHECK: scf.for
// CHECK: memref.store %{{.*}}, %[[OUT]][%{{.*}}, %{{.*}}] : memref<64x512xbf16>
// CHECK-NOT: gpu.launch
// CHECK: return
// CALL-LABEL: llvm.func @prefill(
// The statistic's fork, then the join the GEMM runs after.
// CALL-COUNT-3: llvm.call @mgpuStreamWaitEvent
// CALL: %[[SCALE:.*]] = llvm.getelementptr %{{.*}}[%{{.*}}] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CALL: %[[AB:.*]] = llvm.mlir.constant(2 : i32) : i32
// CALL: %[[C:.*]] = llvm.mlir.constant(2 : i32) : i32
// CALL: %[[T:.*]] = llvm.mlir.constant(1 : i32) : i32
// CALL: llvm.call @mgpuFlashNormGemmLt(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[AB]], %[[C]], %[[T]], %[[SCALE]]) : (!llvm.ptr, i64, i64, i64, !llvm.ptr, !llvm.ptr, !llvm.ptr, i32, i32, i32, !llvm.ptr) -> ()
func.func @prefill(%x: tensor<1x64x256xbf16>, %w: tensor<1x512x256xbf16>) -> tensor<1x64x512xbf16> {
  %s = flashnorm.rms_inv %x eps(1.0e-5) : tensor<1x64x256xbf16> -> tensor<1x64xf32>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x64x512xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<1x64x512xf32>) -> tensor<1x64x512xf32>
  %p = linalg.batch_matmul indexing_maps = [affine_map<(b, m, n, k) -> (b, m, k)>, affine_map<(b, m, n, k) -> (b, n, k)>, affine_map<(b, m, n, k) -> (b, m, n)>] ins(%x, %w : tensor<1x64x256xbf16>, tensor<1x512x256xbf16>) outs(%f : tensor<1x64x512xf32>) -> tensor<1x64x512xf32>
  %y = flashnorm.post_scale %p, %s : tensor<1x64x512xf32>, tensor<1x64xf32> -> tensor<1x64x512xbf16>
  return %y : tensor<1x64x512xbf16>
}

// The raw product is returned too: the GEMM writes it (f32) and the
// post-scale stays a kernel.
// CHECK-LABEL: func.func @product_escapes(
// CHECK: flashnorm.gemm_lt {{.*}} : memref<64x256xbf16>, memref<256x512xbf16>, memref<64x512xf32>
// CHECK: function(@product_escapes_post_scale_
func.func @product_escapes(%x: tensor<64x256xbf16>, %w: tensor<256x512xbf16>) -> (tensor<64x512xbf16>, tensor<64x512xf32>) {
  %s = flashnorm.rms_inv %x eps(1.0e-5) : tensor<64x256xbf16> -> tensor<64xf32>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x512xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<64x512xf32>) -> tensor<64x512xf32>
  %p = linalg.matmul ins(%x, %w : tensor<64x256xbf16>, tensor<256x512xbf16>) outs(%f : tensor<64x512xf32>) -> tensor<64x512xf32>
  %y = flashnorm.post_scale %p, %s : tensor<64x512xf32>, tensor<64xf32> -> tensor<64x512xbf16>
  return %y, %p : tensor<64x512xbf16>, tensor<64x512xf32>
}

// A post-scale read by a residual add: flashnorm-gpu-fuse-post-scales
// leaves the two apart (REMARK), the GEMM writes the scaled bf16 product
// and the add reads it, rather than one kernel reading an f32 product.
// REMARK-DAG: remark: [Missed] flashnorm-gpu-fuse-post-scales {{.*}}post-scale kept as its own kernel: its projection runs on cuBLASLt, which applies it in the GEMM's epilogue
// CHECK-LABEL: func.func @residual(
// CHECK: flashnorm.gemm_lt {{.*}} row_scale(%{{.*}} : memref<64xf32>) : memref<64x256xbf16>, memref<256x512xbf16>, memref<64x512xbf16>
// CHECK: function(@residual_elementwise_
func.func @residual(%x: tensor<64x256xbf16>, %w: tensor<256x512xbf16>, %h: tensor<64x512xbf16>) -> tensor<64x512xbf16> {
  %s = flashnorm.rms_inv %x eps(1.0e-5) : tensor<64x256xbf16> -> tensor<64xf32>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x512xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<64x512xf32>) -> tensor<64x512xf32>
  %p = linalg.matmul ins(%x, %w : tensor<64x256xbf16>, tensor<256x512xbf16>) outs(%f : tensor<64x512xf32>) -> tensor<64x512xf32>
  %y = flashnorm.post_scale %p, %s : tensor<64x512xf32>, tensor<64xf32> -> tensor<64x512xbf16>
  %r = arith.addf %y, %h : tensor<64x512xbf16>
  return %r : tensor<64x512xbf16>
}

// The projection's input is updated in place before the post-scale: a GEMM
// in the post-scale's place would read the new values, so it keeps its own
// and the post-scale its kernel.
// RUN: flashnorm-opt %S/../Integration/Inputs/inplace-update.mlir --flashnorm-gpu-to-kernels="defer-mode=serial gemm=cublaslt" | FileCheck %s --check-prefix=INPLACE
// INPLACE-LABEL: func.func @forward(
// INPLACE: flashnorm.gemm_lt {{.*}} : memref<4x16xf32>, memref<16x32xf32>, memref<4x32xf32>
// INPLACE: function(@forward_post_scale_
