// The host code of flashnorm-gpu-pipeline in its three modes, lowered to
// LLVM: which stream each kernel runs on and how the streams are forked,
// joined and destroyed. format=isa embeds PTX (no toolkit needed).
// RUN: flashnorm-opt %s --flashnorm-gpu-pipeline="defer-mode=streams format=isa" | FileCheck %s --check-prefix=STREAMS
// RUN: flashnorm-opt %s --flashnorm-gpu-pipeline="defer-mode=fused format=isa" | FileCheck %s --check-prefix=FUSED
// Auto, the default, fuses this projection (a SIMT GEMV): as fused.
// RUN: flashnorm-opt %s --flashnorm-gpu-pipeline="format=isa" | FileCheck %s --check-prefix=FUSED
// RUN: flashnorm-opt %s --flashnorm-gpu-pipeline="defer-mode=serial format=isa" | FileCheck %s --check-prefix=SERIAL
// RUN: flashnorm-opt %s --flashnorm-gpu-pipeline="gemm=cublaslt format=isa" | FileCheck %s --check-prefix=CUBLAS
// The §6 bug seeded into the pipeline's own output: the join loses the
// statistic's stream. The race verifier rejects it, naming both kernels.
// RUN: flashnorm-opt %s --flashnorm-gpu-to-streams=defer-mode=streams | flashnorm-opt --flashnorm-test-drop-join | not flashnorm-opt --flashnorm-gpu-streams-to-llvm -o /dev/null 2>&1 | FileCheck %s --check-prefix=MUTANT
// MUTANT: error: 'gpu.launch_func @f_kernels::@f_post_scale_fused_3' reads %{{.*}} while 'gpu.launch_func @f_kernels::@f_norm_stat_0' writes it, with no happens-before order between them
// MUTANT: error: 'gpu.dealloc' deallocates %{{.*}} while 'gpu.launch_func @f_kernels::@f_norm_stat_0' may still write it
// How many streams and joins: the statistic forks where the projection
// runs beside it, not where its GEMM waits for it.
// RUN: flashnorm-opt %s --flashnorm-gpu-pipeline="defer-mode=streams format=isa" --remarks-filter=flashnorm --remark-format=emitRemark -o /dev/null 2>&1 | FileCheck %s --check-prefix=FORKS
// FORKS: remark: [Passed] flashnorm-gpu-streams {{.*}}3 stream(s), 1 join(s), 4 launch(es), 0 constant(s) kept on the device, 0 task(s) on the main stream (nothing to run beside them)
// RUN: flashnorm-opt %s --flashnorm-gpu-pipeline="gemm=cublaslt format=isa" --remarks-filter=flashnorm --remark-format=emitRemark -o /dev/null 2>&1 | FileCheck %s --check-prefix=UNFORKED
// UNFORKED: remark: [Passed] flashnorm-gpu-streams {{.*}}1 stream(s), 0 join(s), 2 launch(es), 0 constant(s) kept on the device, 1 task(s) on the main stream (nothing to run beside them)
// The halves compose to the whole pipeline.
// RUN: flashnorm-opt %s --flashnorm-gpu-to-streams="defer-mode=streams format=isa" | flashnorm-opt --flashnorm-gpu-streams-to-llvm="format=isa" | FileCheck %s --check-prefix=STREAMS
// The kernels in the NVVM dialect, just before they become PTX:
// RUN: flashnorm-opt %s --flashnorm-gpu-pipeline="defer-mode=fused format=isa" --mlir-print-ir-before=gpu-module-to-binary -o /dev/null 2>&1 | FileCheck %s --check-prefix=FUSED-KERNEL
// RUN: flashnorm-opt %s --flashnorm-gpu-pipeline="defer-mode=serial format=isa" --mlir-print-ir-before=gpu-module-to-binary -o /dev/null 2>&1 | FileCheck %s --check-prefix=SERIAL-KERNEL

// A deferred RMSNorm feeding a projection whose post-scale feeds a bias add.
func.func @f(%x: tensor<4x16xf32>, %w: tensor<16x32xf32>, %bias: tensor<4x32xf32>) -> tensor<4x32xf32> {
  %s = flashnorm.rms_inv %x eps(1.0e-5) : tensor<4x16xf32> -> tensor<4xf32>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x32xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<4x32xf32>) -> tensor<4x32xf32>
  %p = linalg.matmul ins(%x, %w : tensor<4x16xf32>, tensor<16x32xf32>) outs(%f : tensor<4x32xf32>) -> tensor<4x32xf32>
  %y = flashnorm.post_scale %p, %s : tensor<4x32xf32>, tensor<4xf32> -> tensor<4x32xf32>
  %r = arith.addf %y, %bias : tensor<4x32xf32>
  return %r : tensor<4x32xf32>
}

// Streams: the statistic runs on a stream forked from the main one, the
// projection on the main stream; the post-scale (fused into the bias add)
// runs on a new stream that waits on events recorded on both. The fork's
// event is recorded where the task was, but the host launches the
// projection before it takes the statistic's stream, waits and launches
// the statistic: the projection does not wait for that host work.
// STREAMS-LABEL: llvm.func @f(
// STREAMS: %[[MAIN:.*]] = llvm.call @mgpuStreamCreate()
// STREAMS: %[[FORK:.*]] = llvm.call @mgpuEventCreate()
// STREAMS-NEXT: llvm.call @mgpuEventRecord(%[[FORK]], %[[MAIN]])
// STREAMS-NOT: mgpuStream
// STREAMS: gpu.launch_func <%[[MAIN]] : !llvm.ptr> @f_kernels::@f_proj_2
// STREAMS: %[[PROJ_DONE:.*]] = llvm.call @mgpuEventCreate()
// STREAMS-NEXT: llvm.call @mgpuEventRecord(%[[PROJ_DONE]], %[[MAIN]])
// STREAMS-NEXT: %[[STAT:.*]] = llvm.call @mgpuStreamCreate()
// STREAMS-NEXT: llvm.call @mgpuStreamWaitEvent(%[[STAT]], %[[FORK]])
// The statistic is one kernel: zero, sum of squares, 1/RMS.
// STREAMS: gpu.launch_func <%[[STAT]] : !llvm.ptr> @f_kernels::@f_norm_stat_0
// STREAMS-NOT: gpu.launch_func <%[[STAT]]
// STREAMS: %[[STAT_DONE:.*]] = llvm.call @mgpuEventCreate()
// STREAMS: llvm.call @mgpuEventRecord(%[[STAT_DONE]], %[[STAT]])
// STREAMS: %[[JOIN:.*]] = llvm.call @mgpuStreamCreate()
// STREAMS-DAG: llvm.call @mgpuStreamWaitEvent(%[[JOIN]], %[[PROJ_DONE]])
// STREAMS-DAG: llvm.call @mgpuStreamWaitEvent(%[[JOIN]], %[[STAT_DONE]])
// STREAMS-DAG: llvm.call @mgpuEventDestroy(%[[PROJ_DONE]])
// STREAMS-DAG: llvm.call @mgpuEventDestroy(%[[STAT_DONE]])
// STREAMS: gpu.launch_func <%[[JOIN]] : !llvm.ptr> @f_kernels::@f_post_scale_fused_3
// STREAMS-NOT: gpu.launch_func
// One synchronize and one destroy per stream, the ones feeding the join too.
// STREAMS: llvm.call @mgpuStreamSynchronize(%[[MAIN]])
// STREAMS-NEXT: llvm.call @mgpuStreamDestroy(%[[MAIN]])
// STREAMS-NEXT: llvm.call @mgpuStreamSynchronize(%[[STAT]])
// STREAMS-NEXT: llvm.call @mgpuStreamDestroy(%[[STAT]])
// STREAMS-NEXT: llvm.call @mgpuStreamSynchronize(%[[JOIN]])
// STREAMS-NEXT: llvm.call @mgpuStreamDestroy(%[[JOIN]])
// STREAMS-NOT: mgpuStream{{Create|Destroy}}(
// STREAMS: llvm.return

// Fused: one stream; the projection kernel computes the statistic, the
// post-scale and the bias add (one op with the post-scale since
// flashnorm-gpu-fuse-post-scales) itself: one launch.
// FUSED-LABEL: llvm.func @f(
// FUSED: %[[S:.*]] = llvm.call @mgpuStreamCreate()
// FUSED-NOT: mgpuEvent
// FUSED-NOT: norm_stat
// FUSED: gpu.launch_func <%[[S]] : !llvm.ptr> @f_kernels::@f_fused_norm_proj_0
// FUSED-NOT: gpu.launch_func
// FUSED: llvm.call @mgpuStreamSynchronize(%[[S]])
// FUSED-NEXT: llvm.call @mgpuStreamDestroy(%[[S]])
// FUSED-NOT: mgpuStreamCreate()
// FUSED: llvm.return
// The fused kernel: the product and the sum of squares in one k loop, 1/RMS
// in the epilogue, then the post-scale and the bias (loaded) added.
// FUSED-KERNEL: llvm.func @f_fused_norm_proj_0(
// FUSED-KERNEL: llvm.fmul
// FUSED-KERNEL: llvm.fadd
// FUSED-KERNEL: llvm.fmul
// FUSED-KERNEL: llvm.fadd
// FUSED-KERNEL: llvm.br
// FUSED-KERNEL: %[[RS:.*]] = llvm.call @__nv_rsqrtf
// FUSED-KERNEL: %[[BIAS:.*]] = llvm.load
// FUSED-KERNEL: %[[SCALED:.*]] = llvm.fmul %{{.*}}, %[[RS]]
// FUSED-KERNEL: %[[POST:.*]] = llvm.select %{{.*}}, %{{.*}}, %[[SCALED]]
// FUSED-KERNEL: llvm.fadd %[[POST]], %[[BIAS]]
// FUSED-KERNEL: llvm.return

// Serial: every kernel on one stream, no events.
// SERIAL-LABEL: llvm.func @f(
// SERIAL: %[[S:.*]] = llvm.call @mgpuStreamCreate()
// SERIAL-NOT: mgpuEvent
// SERIAL: gpu.launch_func <%[[S]] : !llvm.ptr> @f_kernels::@f_norm_stat_0
// SERIAL: gpu.launch_func <%[[S]] : !llvm.ptr> @f_kernels::@f_proj_2
// SERIAL: gpu.launch_func <%[[S]] : !llvm.ptr> @f_kernels::@f_post_scale_fused_3
// SERIAL: llvm.call @mgpuStreamSynchronize(%[[S]])
// SERIAL-NEXT: llvm.call @mgpuStreamDestroy(%[[S]])
// SERIAL-NOT: mgpuStreamCreate()
// SERIAL: llvm.return
// The statistic's row reduction: a block all-reduce, as warp shuffles.
// SERIAL-KERNEL: llvm.func @f_norm_stat_0(
// SERIAL-KERNEL: nvvm.shfl.sync bfly
// SERIAL-KERNEL: llvm.call @__nv_rsqrtf
// SERIAL-KERNEL: llvm.return

// cuBLASLt: the projection is a runtime call on the activation the
// statistic's kernel scaled (test/Conversion/gpu-gemm-epilogue.mlir); the
// bias add reads its result (M=4, N=32, K=16, f32 inputs and result, K x N
// layout). Nothing is left to run beside the statistic, so it is not
// forked: one stream, no events.
// CUBLAS-LABEL: llvm.func @f(
// CUBLAS: %[[MAIN:.*]] = llvm.call @mgpuStreamCreate()
// CUBLAS-NOT: mgpuStreamCreate
// CUBLAS-NOT: mgpuEvent
// CUBLAS: gpu.launch_func <%[[MAIN]] : !llvm.ptr> @f_kernels::@f_norm_stat_scale_
// cuBLASLt overwrites the accumulator: its zero fill is gone.
// CUBLAS-NOT: @f_kernels::@f_fill_
// CUBLAS-NOT: mgpuStreamCreate
// CUBLAS-NOT: mgpuEvent
// CUBLAS-NOT: gpu.launch_func
// CUBLAS: %[[M:.*]] = llvm.extractvalue %{{.*}}[3, 0]
// CUBLAS: llvm.call @mgpuFlashNormGemmLt(%[[MAIN]], %[[M]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) : (!llvm.ptr, i64, i64, i64, !llvm.ptr, !llvm.ptr, !llvm.ptr, i32, i32, i32) -> ()
// CUBLAS-NOT: @f_proj_
// CUBLAS: gpu.launch_func <%[[MAIN]] : !llvm.ptr> @f_kernels::@f_elementwise_
