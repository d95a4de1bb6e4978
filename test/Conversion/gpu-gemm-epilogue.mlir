// A deferred projection through cuBLASLt (gemm=auto: 64 rows is prefill)
// takes its post-scale with it: a kernel scales the activation by 1/RMS of
// each row (rounded once to bf16, a zero row where the scale is 0, as the
// post-scale's contract says), then the GEMM sums in f32 and rounds once to
// the post-scale's bf16 output. Neither the f32 product nor the post-scale
// kernel is left. Both run where the post-scale ran, after the statistic,
// in every mode; in streams mode the statistic is not forked, since nothing
// would run beside it. (Under gemm=codegen the post-scale stays a kernel:
// the tensor-core and GEMV kernels apply it in their own way.)
// RUN: flashnorm-opt %s --flashnorm-gpu-to-kernels=defer-mode=serial | FileCheck %s
// RUN: flashnorm-opt %s --flashnorm-gpu-to-kernels=defer-mode=streams | FileCheck %s --check-prefixes=CHECK,STREAMS
// RUN: flashnorm-opt %s --flashnorm-gpu-to-kernels=defer-mode=fused | FileCheck %s
// RUN: flashnorm-opt %s --flashnorm-gpu-to-kernels=defer-mode=serial --remarks-filter=flashnorm --remark-format=emitRemark -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK
// The call passes the inputs' and the result's types (2: bf16) and the
// layout (1: N x K); the pre-scaled activation is freed after it.
// RUN: flashnorm-opt %s --flashnorm-gpu-pipeline=format=isa | FileCheck %s --check-prefix=CALL

// REMARK-DAG: remark: [Passed] flashnorm-gpu-kernels {{.*}} Function=prefill {{.*}}projection at {{.*}} through cuBLASLt, its post-scale before it as a scale of the activation (written by the statistic's kernel; the GEMM rounding once to bf16)
// REMARK-DAG: remark: [Passed] flashnorm-gpu-kernels {{.*}} Function=shared {{.*}}projection at {{.*}} through cuBLASLt, its post-scale before it as a scale of the activation (shared with an earlier GEMM; the GEMM rounding once to bf16)
// REMARK-DAG: remark: [Passed] flashnorm-gpu-kernels {{.*}} Function=given_scale {{.*}}projection at {{.*}} through cuBLASLt, its post-scale before it as a scale of the activation (a kernel of its own; the GEMM rounding once to bf16)

// CHECK-LABEL: func.func @prefill(
// The statistic's kernel writes the scaled activation too: a block per row
// loads the row in 16-byte vectors (8 bf16: the row's 32 vectors at once)
// and sums their squares; then every thread scales the vectors it loaded
// (read again, from L1) by 1/RMS, rounded once to bf16, a zero row where
// the scale is 0.
// CHECK: %[[XS:.*]] = memref.alloc() : memref<1x64x256xbf16>
// CHECK: gpu.launch {{.*}} function(@prefill_norm_stat_scale_
// CHECK: scf.for %{{.*}} = %{{.*}} to %c32 step %c256
// CHECK: vector.load %arg0[%{{.*}}, %{{.*}}, %{{.*}}] {alignment = 16 : i64} : memref<1x64x256xbf16>, vector<8xbf16>
// CHECK: gpu.all_reduce
// CHECK: %[[SI:.*]] = math.rsqrt
// CHECK: scf.for %[[J:.*]] = %{{.*}} to %c32 step %c256 {
// CHECK: %[[K:.*]] = arith.muli %[[J]], %c8 : index
// CHECK: %[[XI:.*]] = vector.load %arg0[%[[B:.*]], %[[I:.*]], %[[K]]] {alignment = 16 : i64} : memref<1x64x256xbf16>, vector<8xbf16>
// CHECK: %[[XF:.*]] = arith.extf %[[XI]] : vector<8xbf16> to vector<8xf32>
// CHECK: %[[SV:.*]] = vector.broadcast %[[SI]] : f32 to vector<8xf32>
// CHECK: %[[P:.*]] = arith.mulf %[[XF]], %[[SV]] : vector<8xf32>
// CHECK: %[[Z:.*]] = arith.cmpf oeq, %[[SI]], %{{.*}} : f32
// CHECK: %[[V:.*]] = arith.select %[[Z]], %{{.*}}, %[[P]] : vector<8xf32>
// CHECK: %[[R:.*]] = arith.truncf %[[V]] : vector<8xf32> to vector<8xbf16>
// CHECK: vector.store %[[R]], %[[XS]][%[[B]], %[[I]], %[[K]]] {alignment = 16 : i64} : memref<1x64x256xbf16>, vector<8xbf16>
// CHECK-NOT: gpu.launch
// STREAMS: async.await
// CHECK: %[[X2:.*]] = memref.collapse_shape %[[XS]] {{\[\[}}0, 1], [2]] : memref<1x64x256xbf16> into memref<64x256xbf16>
// CHECK-NOT: gpu.launch
// CHECK: flashnorm.gemm_lt %[[X2]], %{{.*}}, %{{.*}} transpose_b : memref<64x256xbf16>, memref<512x256xbf16>, memref<64x512xbf16>
// CHECK-NEXT: memref.dealloc %[[XS]]
// CHECK-NOT: gpu.launch
// CHECK: return
// CALL-LABEL: llvm.func @prefill(
// The statistic is not forked (flashnorm-gpu-streams): the GEMM waits for
// it, nothing would run beside it. One stream, no events, two launches.
// CALL: %[[ST:.*]] = llvm.call @mgpuStreamCreate()
// CALL-NOT: mgpuStreamCreate
// CALL-NOT: mgpuStreamWaitEvent
// CALL: gpu.launch_func <%[[ST]] : !llvm.ptr> @prefill_kernels::@prefill_norm_stat_scale_
// CALL-NOT: mgpuStreamCreate
// CALL-NOT: mgpuStreamWaitEvent
// CALL-NOT: gpu.launch_func
// CALL: %[[AB:.*]] = llvm.mlir.constant(2 : i32) : i32
// CALL: %[[C:.*]] = llvm.mlir.constant(2 : i32) : i32
// CALL: %[[T:.*]] = llvm.mlir.constant(1 : i32) : i32
// CALL: llvm.call @mgpuFlashNormGemmLt(%[[ST]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[AB]], %[[C]], %[[T]]) : (!llvm.ptr, i64, i64, i64, !llvm.ptr, !llvm.ptr, !llvm.ptr, i32, i32, i32) -> ()
func.func @prefill(%x: tensor<1x64x256xbf16>, %w: tensor<1x512x256xbf16>) -> tensor<1x64x512xbf16> {
  %s = flashnorm.rms_inv %x eps(1.0e-5) : tensor<1x64x256xbf16> -> tensor<1x64xf32>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x64x512xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<1x64x512xf32>) -> tensor<1x64x512xf32>
  %p = linalg.batch_matmul indexing_maps = [affine_map<(b, m, n, k) -> (b, m, k)>, affine_map<(b, m, n, k) -> (b, n, k)>, affine_map<(b, m, n, k) -> (b, m, n)>] ins(%x, %w : tensor<1x64x256xbf16>, tensor<1x512x256xbf16>) outs(%f : tensor<1x64x512xf32>) -> tensor<1x64x512xf32>
  %y = flashnorm.post_scale %p, %s : tensor<1x64x512xf32>, tensor<1x64xf32> -> tensor<1x64x512xbf16>
  return %y : tensor<1x64x512xbf16>
}

// A scale that no statistic of the activation computes (an argument): a
// kernel of its own scales the activation, a thread per 16 bytes (8 bf16)
// over one loop of all 2048 vectors, right before the GEMM.
// CHECK-LABEL: func.func @given_scale(
// CHECK-NOT: gpu.launch
// CHECK: %[[XS:.*]] = memref.alloc() : memref<64x256xbf16>
// CHECK-NEXT: gpu.launch {{.*}} function(@given_scale_pre_scale_
// CHECK: arith.cmpi ult, %{{.*}}, %c2048
// CHECK: %[[E:.*]] = arith.muli %{{.*}}, %c8 : index
// CHECK: %[[I:.*]] = arith.divui %[[E]], %c256 : index
// CHECK: %[[K:.*]] = arith.remui %[[E]], %c256 : index
// CHECK: %[[SI:.*]] = memref.load %arg2[%[[I]]] : memref<64xf32>
// CHECK: %[[XI:.*]] = vector.load %arg0[%[[I]], %[[K]]] {alignment = 16 : i64} : memref<64x256xbf16>, vector<8xbf16>
// CHECK: %[[XF:.*]] = arith.extf %[[XI]] : vector<8xbf16> to vector<8xf32>
// CHECK: %[[SV:.*]] = vector.broadcast %[[SI]] : f32 to vector<8xf32>
// CHECK: %[[P:.*]] = arith.mulf %[[XF]], %[[SV]] : vector<8xf32>
// CHECK: %[[Z:.*]] = arith.cmpf oeq, %[[SI]], %{{.*}} : f32
// CHECK: %[[V:.*]] = arith.select %[[Z]], %{{.*}}, %[[P]] : vector<8xf32>
// CHECK: %[[R:.*]] = arith.truncf %[[V]] : vector<8xf32> to vector<8xbf16>
// CHECK: vector.store %[[R]], %[[XS]][%[[I]], %[[K]]] {alignment = 16 : i64} : memref<64x256xbf16>, vector<8xbf16>
// CHECK-NOT: gpu.launch
// CHECK: flashnorm.gemm_lt %[[XS]], %{{.*}}, %{{.*}} : memref<64x256xbf16>, memref<256x512xbf16>, memref<64x512xbf16>
// CHECK-NEXT: memref.dealloc %[[XS]]
// CHECK: return
func.func @given_scale(%x: tensor<64x256xbf16>, %w: tensor<256x512xbf16>, %s: tensor<64xf32>) -> tensor<64x512xbf16> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x512xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<64x512xf32>) -> tensor<64x512xf32>
  %p = linalg.matmul ins(%x, %w : tensor<64x256xbf16>, tensor<256x512xbf16>) outs(%f : tensor<64x512xf32>) -> tensor<64x512xf32>
  %y = flashnorm.post_scale %p, %s : tensor<64x512xf32>, tensor<64xf32> -> tensor<64x512xbf16>
  return %y : tensor<64x512xbf16>
}

// Rows of 12 bytes are not whole 16-byte vectors: an element per thread,
// in the statistic and in its scaled row.
// CHECK-LABEL: func.func @narrow_rows(
// CHECK: function(@narrow_rows_norm_stat_scale_
// CHECK-NOT: vector.load
// CHECK: memref.load %{{.*}} : memref<64x6xbf16>
// CHECK: gpu.all_reduce
// CHECK-NOT: vector.load
// CHECK: memref.load %{{.*}} : memref<64x6xbf16>
// CHECK-NOT: vector.store
// CHECK: memref.store %{{.*}} : memref<64x6xbf16>
// CHECK-NOT: gpu.launch
// CHECK: flashnorm.gemm_lt {{.*}} : memref<64x6xbf16>, memref<6x512xbf16>, memref<64x512xbf16>
func.func @narrow_rows(%x: tensor<64x6xbf16>, %w: tensor<6x512xbf16>) -> tensor<64x512xbf16> {
  %s = flashnorm.rms_inv %x eps(1.0e-5) : tensor<64x6xbf16> -> tensor<64xf32>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x512xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<64x512xf32>) -> tensor<64x512xf32>
  %p = linalg.matmul ins(%x, %w : tensor<64x6xbf16>, tensor<6x512xbf16>) outs(%f : tensor<64x512xf32>) -> tensor<64x512xf32>
  %y = flashnorm.post_scale %p, %s : tensor<64x512xf32>, tensor<64xf32> -> tensor<64x512xbf16>
  return %y : tensor<64x512xbf16>
}

// Two projections of one normalized activation (Q and K behind one norm):
// one kernel (the statistic's) and one scaled buffer for both GEMMs, freed
// after the second.
// CHECK-LABEL: func.func @shared(
// CHECK: %[[XS:.*]] = memref.alloc() : memref<64x256xbf16>
// CHECK: gpu.launch {{.*}} function(@shared_norm_stat_scale_
// CHECK-NOT: gpu.launch
// CHECK: flashnorm.gemm_lt %[[XS]], %{{.*}}, %{{.*}} : memref<64x256xbf16>, memref<256x512xbf16>, memref<64x512xbf16>
// CHECK-NOT: gpu.launch
// CHECK-NOT: memref.dealloc %[[XS]]
// CHECK: flashnorm.gemm_lt %[[XS]], %{{.*}}, %{{.*}} : memref<64x256xbf16>, memref<256x128xbf16>, memref<64x128xbf16>
// CHECK-NEXT: memref.dealloc %[[XS]]
// CHECK-NOT: gpu.launch
// CHECK: return
func.func @shared(%x: tensor<64x256xbf16>, %wq: tensor<256x512xbf16>, %wk: tensor<256x128xbf16>) -> (tensor<64x512xbf16>, tensor<64x128xbf16>) {
  %s = flashnorm.rms_inv %x eps(1.0e-5) : tensor<64x256xbf16> -> tensor<64xf32>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x512xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<64x512xf32>) -> tensor<64x512xf32>
  %p = linalg.matmul ins(%x, %wq : tensor<64x256xbf16>, tensor<256x512xbf16>) outs(%f : tensor<64x512xf32>) -> tensor<64x512xf32>
  %q = flashnorm.post_scale %p, %s : tensor<64x512xf32>, tensor<64xf32> -> tensor<64x512xbf16>
  %e2 = tensor.empty() : tensor<64x128xf32>
  %f2 = linalg.fill ins(%z : f32) outs(%e2 : tensor<64x128xf32>) -> tensor<64x128xf32>
  %p2 = linalg.matmul ins(%x, %wk : tensor<64x256xbf16>, tensor<256x128xbf16>) outs(%f2 : tensor<64x128xf32>) -> tensor<64x128xf32>
  %k = flashnorm.post_scale %p2, %s : tensor<64x128xf32>, tensor<64xf32> -> tensor<64x128xbf16>
  return %q, %k : tensor<64x512xbf16>, tensor<64x128xbf16>
}

// The same with tokens in a batch of one: the scaled buffer has the
// activation's shape, one 2-D view of it for both GEMMs.
// CHECK-LABEL: func.func @shared_batch(
// CHECK: %[[XS:.*]] = memref.alloc() : memref<1x64x256xbf16>
// CHECK: gpu.launch {{.*}} function(@shared_batch_norm_stat_scale_
// CHECK-NOT: gpu.launch
// CHECK: %[[X2:.*]] = memref.collapse_shape %[[XS]]
// CHECK-NOT: gpu.launch
// CHECK: flashnorm.gemm_lt %[[X2]], %{{.*}}, %{{.*}} transpose_b : memref<64x256xbf16>, memref<512x256xbf16>, memref<64x512xbf16>
// CHECK-NOT: gpu.launch
// CHECK: flashnorm.gemm_lt %[[X2]], %{{.*}}, %{{.*}} transpose_b : memref<64x256xbf16>, memref<128x256xbf16>, memref<64x128xbf16>
// CHECK-NEXT: memref.dealloc %[[XS]]
// CHECK: return
func.func @shared_batch(%x: tensor<1x64x256xbf16>, %wq: tensor<1x512x256xbf16>, %wk: tensor<1x128x256xbf16>) -> (tensor<1x64x512xbf16>, tensor<1x64x128xbf16>) {
  %s = flashnorm.rms_inv %x eps(1.0e-5) : tensor<1x64x256xbf16> -> tensor<1x64xf32>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x64x512xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<1x64x512xf32>) -> tensor<1x64x512xf32>
  %p = linalg.batch_matmul indexing_maps = [affine_map<(b, m, n, k) -> (b, m, k)>, affine_map<(b, m, n, k) -> (b, n, k)>, affine_map<(b, m, n, k) -> (b, m, n)>] ins(%x, %wq : tensor<1x64x256xbf16>, tensor<1x512x256xbf16>) outs(%f : tensor<1x64x512xf32>) -> tensor<1x64x512xf32>
  %q = flashnorm.post_scale %p, %s : tensor<1x64x512xf32>, tensor<1x64xf32> -> tensor<1x64x512xbf16>
  %e2 = tensor.empty() : tensor<1x64x128xf32>
  %f2 = linalg.fill ins(%z : f32) outs(%e2 : tensor<1x64x128xf32>) -> tensor<1x64x128xf32>
  %p2 = linalg.batch_matmul indexing_maps = [affine_map<(b, m, n, k) -> (b, m, k)>, affine_map<(b, m, n, k) -> (b, n, k)>, affine_map<(b, m, n, k) -> (b, m, n)>] ins(%x, %wk : tensor<1x64x256xbf16>, tensor<1x128x256xbf16>) outs(%f2 : tensor<1x64x128xf32>) -> tensor<1x64x128xf32>
  %k = flashnorm.post_scale %p2, %s : tensor<1x64x128xf32>, tensor<1x64xf32> -> tensor<1x64x128xbf16>
  return %q, %k : tensor<1x64x512xbf16>, tensor<1x64x128xbf16>
}

// The projection alone, its f32 sum rounded to bf16 by its only reader: the
// GEMM writes the reader's bf16 output (no pre-scale, no f32 product).
// REMARK-DAG: remark: [Passed] flashnorm-gpu-kernels {{.*}}projection at {{.*}} through cuBLASLt, writing its reader's bf16
// CHECK-LABEL: func.func @rounding(
// CHECK-NOT: gpu.launch
// CHECK: flashnorm.gemm_lt %{{.*}}, %{{.*}}, %{{.*}} : memref<64x256xbf16>, memref<256x512xbf16>, memref<64x512xbf16>
// CHECK-NOT: gpu.launch
// CHECK: return
// A function whose only device work is the GEMM still gets its stream.
// CALL-LABEL: llvm.func @rounding(
// CALL: %[[ST:.*]] = llvm.call @mgpuStreamCreate()
// CALL: llvm.call @mgpuFlashNormGemmLt(%[[ST]],
// CALL: llvm.call @mgpuStreamSynchronize(%[[ST]])
func.func @rounding(%x: tensor<64x256xbf16>, %w: tensor<256x512xbf16>) -> tensor<64x512xbf16> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x512xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<64x512xf32>) -> tensor<64x512xf32>
  %p = linalg.matmul ins(%x, %w : tensor<64x256xbf16>, tensor<256x512xbf16>) outs(%f : tensor<64x512xf32>) -> tensor<64x512xf32>
  %o = tensor.empty() : tensor<64x512xbf16>
  %y = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%p : tensor<64x512xf32>) outs(%o : tensor<64x512xbf16>) {
  ^bb0(%a: f32, %b: bf16):
    %r = arith.truncf %a : f32 to bf16
    linalg.yield %r : bf16
  } -> tensor<64x512xbf16>
  return %y : tensor<64x512xbf16>
}

// A reader that computes more than a rounding stays a kernel after a GEMM
// that writes the f32 product.
// CHECK-LABEL: func.func @squared(
// CHECK: flashnorm.gemm_lt {{.*}} : memref<64x256xbf16>, memref<256x512xbf16>, memref<64x512xf32>
// CHECK: gpu.launch
// CHECK: arith.mulf
// CHECK: arith.truncf
func.func @squared(%x: tensor<64x256xbf16>, %w: tensor<256x512xbf16>) -> tensor<64x512xbf16> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x512xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<64x512xf32>) -> tensor<64x512xf32>
  %p = linalg.matmul ins(%x, %w : tensor<64x256xbf16>, tensor<256x512xbf16>) outs(%f : tensor<64x512xf32>) -> tensor<64x512xf32>
  %o = tensor.empty() : tensor<64x512xbf16>
  %y = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%p : tensor<64x512xf32>) outs(%o : tensor<64x512xbf16>) {
  ^bb0(%a: f32, %b: bf16):
    %q = arith.mulf %a, %a : f32
    %r = arith.truncf %q : f32 to bf16
    linalg.yield %r : bf16
  } -> tensor<64x512xbf16>
  return %y : tensor<64x512xbf16>
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
// REMARK-DAG: remark: [Missed] flashnorm-gpu-fuse-post-scales {{.*}}post-scale kept as its own kernel: its projection runs on cuBLASLt, which writes it scaled from a pre-scaled activation
// CHECK-LABEL: func.func @residual(
// CHECK: function(@residual_norm_stat_scale_
// CHECK: flashnorm.gemm_lt {{.*}} : memref<64x256xbf16>, memref<256x512xbf16>, memref<64x512xbf16>
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
