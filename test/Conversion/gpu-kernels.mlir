// flashnorm-gpu-kernels decisions, through remarks.
// RUN: flashnorm-opt %S/Inputs/accumulators.mlir --flashnorm-gpu-kernels=gemm=cublaslt --remarks-filter=flashnorm --remark-format=emitRemark -o /dev/null 2>&1 | FileCheck %s --check-prefix=ZERO
// cuBLASLt overwrites the accumulator: a zero fill of part of it, or one a
// loop then overwrites, does not make it zero.
// ZERO: remark: [Missed] flashnorm-gpu-kernels {{.*}} Function=partial {{.*}}projection kept as a generated kernel: the accumulator does not start at zero
// ZERO: remark: [Missed] flashnorm-gpu-kernels {{.*}} Function=loop {{.*}}projection kept as a generated kernel: the accumulator does not start at zero
// A plain projection (no flashnorm op in the input) through cuBLASLt.
// RUN: flashnorm-opt %s --flashnorm-gpu-kernels=gemm=cublaslt | FileCheck %s --check-prefix=PLAIN
// PLAIN: flashnorm.gemm_lt %{{.*}}, %{{.*}}, %{{.*}} : memref<4x16xf32>, memref<16x32xf32>, memref<4x32xf32>
// The statistic's input updated in place before the post-scale: no fusion.
// RUN: flashnorm-opt %S/../Integration/Inputs/inplace-update.mlir --flashnorm-gpu-pipeline="defer-mode=fused format=isa" --remarks-filter=flashnorm --remark-format=emitRemark -o /dev/null 2>&1 | FileCheck %s --check-prefix=INPLACE
// INPLACE: not fused: the projection's inputs are written before its post-scale
// ...and reported on a live op: the checks read the named projection as it
// is, nothing is generalized before the plan is accepted (a use-after-free
// once).
// Two post-scales in a chain (a LayerNorm after an RMSNorm): the earlier
// one's reader is the later one, which waits for another norm's join, so
// neither fuses (flashnorm-gpu-fuse-post-scales) and each is a kernel.
// RUN: flashnorm-opt %S/../Integration/Inputs/chained-post-scales.mlir --flashnorm | flashnorm-opt --flashnorm-gpu-to-kernels=defer-mode=serial | FileCheck %s --check-prefix=CHAIN
// RUN: flashnorm-opt %S/../Integration/Inputs/chained-post-scales.mlir --flashnorm | flashnorm-opt --flashnorm-gpu-to-kernels=defer-mode=streams | FileCheck %s --check-prefix=CHAIN
// CHAIN: gpu.launch {{.*}} function(@forward_proj_{{[0-9]+}})
// CHAIN: gpu.launch {{.*}} function(@forward_post_scale_{{[0-9]+}})
// CHAIN: gpu.launch {{.*}} function(@forward_post_scale_{{[0-9]+}})
// The prepare function of a LayerNorm with argument weights runs on the GPU:
// its centering (a reduction over k outside the loop over n) becomes a
// kernel with a thread per output, not a host loop over device memory.
// RUN: flashnorm-opt %S/Inputs/layer-norm-args.mlir --flashnorm=prepare-function=true | flashnorm-opt --flashnorm-gpu-pipeline=format=isa | FileCheck %s --check-prefix=PREPARE
// PREPARE-LABEL: llvm.func @f_flashnorm_prepare
// PREPARE-NOT: llvm.func
// PREPARE: gpu.launch_func
func.func @f(%x: memref<4x16xf32>, %w: memref<16x32xf32>) -> memref<4x32xf32> {
  %z = arith.constant 0.0 : f32
  %c = memref.alloc() : memref<4x32xf32>
  linalg.fill ins(%z : f32) outs(%c : memref<4x32xf32>)
  linalg.matmul ins(%x, %w : memref<4x16xf32>, memref<16x32xf32>) outs(%c : memref<4x32xf32>)
  return %c : memref<4x32xf32>
}
