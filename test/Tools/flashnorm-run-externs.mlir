// flashnorm-run asks for a checkpoint only for the extern globals the
// function it runs loads: another function's weights need none.
// RUN: flashnorm-run %s -e plain | FileCheck %s --check-prefix=PLAIN
// RUN: not flashnorm-run %s -e loads 2>&1 | FileCheck %s --check-prefix=NOPARAMS
// PLAIN: output #0 2x4xf32
// NOPARAMS: error: the input loads 1 extern global(s) (@w, ...): give their checkpoint with --params
// With its checkpoint it runs; a --pipeline that lowers the global itself
// leaves nothing to bind it to: an error that says so (the JIT said
// "Symbols not found: [ w ]").
// RUN: %python -c "import json,struct; h=json.dumps({'w': {'dtype': 'F32', 'shape': [4, 4], 'data_offsets': [0, 64]}}).encode(); open('%t.safetensors', 'wb').write(struct.pack('<Q', len(h)) + h + struct.pack('<16f', *range(16)))"
// RUN: flashnorm-run %s -e loads --params %t.safetensors | FileCheck %s --check-prefix=BOUND
// RUN: not flashnorm-run %s -e loads --params %t.safetensors --pipeline=flashnorm-cpu-pipeline 2>&1 | FileCheck %s --check-prefix=LOWERED
// BOUND: output #0 2x4xf32
// LOWERED: error: --pipeline lowered the extern global @w before flashnorm-run could bind it to the checkpoint: give --pipeline the rewrite only (flashnorm-run lowers the result itself)

ml_program.global private @w(#ml_program.extern : tensor<4x4xf32>) : tensor<4x4xf32>

// Another module's state, declared and not read: no extern global of the
// checkpoint, and nothing --pipeline lowered.
memref.global @ext_state : memref<4xf32>

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
