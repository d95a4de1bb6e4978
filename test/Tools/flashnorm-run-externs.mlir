// flashnorm-run asks for a checkpoint only for the extern globals the
// function it runs loads: another function's weights need none.
// RUN: flashnorm-run %s -e plain | FileCheck %s --check-prefix=PLAIN
// RUN: not flashnorm-run %s -e loads 2>&1 | FileCheck %s --check-prefix=NOPARAMS
// PLAIN: output #0 2x4xf32
// NOPARAMS: error: the input loads 1 extern global(s) (@w, ...): give their checkpoint with --params

ml_program.global private @w(#ml_program.extern : tensor<4x4xf32>) : tensor<4x4xf32>

func.func @plain(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  return %x : tensor<2x4xf32>
}

func.func @loads(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %w = ml_program.global_load_const @w : tensor<4x4xf32>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x4xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<2x4xf32>) -> tensor<2x4xf32>
  %y = linalg.matmul ins(%x, %w : tensor<2x4xf32>, tensor<4x4xf32>) outs(%f : tensor<2x4xf32>) -> tensor<2x4xf32>
  return %y : tensor<2x4xf32>
}
