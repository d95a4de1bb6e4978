// What the lowering pipelines take. A nested module: their passes nest into
// the given module's functions while the conversions to LLVM run on all of
// it, so its functions came out half lowered (tensors around LLVM ops, exit
// 0) or failed deep in a conversion ("expected add/mul op in the body").
// RUN: not flashnorm-opt %s --flashnorm-cpu-pipeline 2>&1 | FileCheck %s --check-prefix=NESTED
// RUN: not flashnorm-opt %s --flashnorm-lower-to-llvm 2>&1 | FileCheck %s --check-prefix=NESTED
// RUN: not flashnorm-opt %s --flashnorm-cpu-buffers-to-llvm 2>&1 | FileCheck %s --check-prefix=NESTED
// RUN: not flashnorm-opt %s --flashnorm-gpu-pipeline 2>&1 | FileCheck %s --check-prefix=NESTED
// NESTED: check-lowering-input.mlir:{{[0-9]+}}:3: error: a nested module @inner: the lowering pipelines compile the functions of the module they are given, and would leave this one's half lowered (run the pipeline on it alone)
// NESTED-NOT: error
//
// A GPU stage's output given to a lowering of frontend IR: the CPU second
// half left its 'gpu.launch' ops in place (exit 0), the others failed
// inside a conversion ("failed to legalize operation 'flashnorm.gemm_lt'",
// or 'flashnorm.resident').
// RUN: flashnorm-opt %S/../Integration/Inputs/nk-projection.mlir --flashnorm | flashnorm-opt --flashnorm-gpu-to-kernels -o %t.kernels.mlir
// RUN: not flashnorm-opt %t.kernels.mlir --flashnorm-cpu-buffers-to-llvm 2>&1 | FileCheck %s --check-prefix=CPU
// RUN: not flashnorm-opt %t.kernels.mlir --flashnorm-lower-to-llvm 2>&1 | FileCheck %s --check-prefix=CPU
// RUN: flashnorm-opt %S/../Integration/Inputs/nk-projection.mlir --flashnorm | flashnorm-opt --flashnorm-gpu-to-streams -o %t.streams.mlir
// RUN: not flashnorm-opt %t.streams.mlir --flashnorm-gpu-pipeline 2>&1 | FileCheck %s --check-prefix=GPU
// RUN: not flashnorm-opt %t.streams.mlir --flashnorm-gpu-to-kernels 2>&1 | FileCheck %s --check-prefix=GPU
// RUN: not flashnorm-opt %t.streams.mlir --flashnorm-cpu-pipeline 2>&1 | FileCheck %s --check-prefix=HOST
// Constant weights are resident on the device after the streams.
// RUN: flashnorm-opt %S/../Integration/Inputs/chained-post-scales.mlir --flashnorm | flashnorm-opt --flashnorm-gpu-to-streams -o %t.resident.mlir
// RUN: not flashnorm-opt %t.resident.mlir --flashnorm-gpu-pipeline 2>&1 | FileCheck %s --check-prefix=RESIDENT
// CPU: error: 'gpu.launch' is GPU code (a GPU stage's output, or a kernel), which the CPU lowerings do not lower: the GPU pipeline does
// GPU: error: 'flashnorm.gemm_lt' is the output of flashnorm-gpu-to-kernels; the GPU pipeline and its first stages take frontend IR
// RESIDENT: error: 'flashnorm.resident' is the output of flashnorm-gpu-to-streams, which flashnorm-gpu-streams-to-llvm lowers further; the GPU pipeline and its first stages take frontend IR
// HOST: error: '{{gpu\..*|flashnorm.resident}}' is {{GPU code|the output of flashnorm-gpu-to-streams}}
// A kernel of the user's own stays the GPU pipeline's input
// (Conversion/gpu-wrong-stage.mlir builds streams around one).
//
// A module it takes comes out as it went in.
// RUN: flashnorm-opt %S/../Integration/Inputs/nk-projection.mlir --flashnorm-check-lowering-input=lowering=gpu -o %t.checked.mlir
// RUN: flashnorm-opt %S/../Integration/Inputs/nk-projection.mlir -o %t.plain.mlir
// RUN: diff %t.plain.mlir %t.checked.mlir
module {
  module @inner {
    func.func @f(%x: tensor<4x16xf32>) -> tensor<4x16xf32> {
      %n = flashnorm.rms_norm %x eps(1.0e-05) : tensor<4x16xf32>
      return %n : tensor<4x16xf32>
    }
  }
}
