// Bad pipeline options are errors with a non-zero exit, not crashes.
// RUN: not flashnorm-opt %s --flashnorm-gpu-pipeline=defer-mode=bogus 2>&1 | FileCheck %s --check-prefix=MODE
// RUN: not flashnorm-opt %s --flashnorm-gpu-pipeline=format=elf 2>&1 | FileCheck %s --check-prefix=FORMAT
// RUN: not flashnorm-opt %s --flashnorm-gpu-pipeline=gemm=magic 2>&1 | FileCheck %s --check-prefix=GEMM
// RUN: not flashnorm-opt %s --flashnorm-gpu-streams-to-llvm=defer-mode=bogus 2>&1 | FileCheck %s --check-prefix=MODE
// RUN: not flashnorm-opt %s --flashnorm-cpu-pipeline=tile-sizes=1,2 2>&1 | FileCheck %s --check-prefix=TILES
// MODE: error: flashnorm-gpu-pipeline: defer-mode must be streams, fused or serial, not 'bogus'
// FORMAT: error: flashnorm-gpu-pipeline: format must be isa, bin or fatbin, not 'elf'
// GEMM: error: flashnorm-gpu-pipeline: gemm must be codegen or cublaslt, not 'magic'
// TILES: error: flashnorm-cpu-pipeline: tile-sizes needs 3 values (m, n, k), got 2
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
