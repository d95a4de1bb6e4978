// Where no prepare function can fold argument weights, the norm keeps its
// gain (with a warning saying why), and the module stays valid:
// RUN: flashnorm-opt %s --flashnorm-fold-gains=prepare-function=true --split-input-file -verify-diagnostics | FileCheck %s
// RUN: flashnorm-opt %s --flashnorm-fold-gains="prepare-function=true fold-plan=%t.plan.json" --split-input-file --remarks-filter=flashnorm --remark-format=emitRemark 2>&1 >/dev/null | FileCheck %s --check-prefix=REMARK

// The name is taken: the pass made a second @f_flashnorm_prepare (invalid
// IR), or, with the user's function first, renamed its own while the
// runner and pack-prepared-weights called the user's.
// CHECK-LABEL: func.func @f(
// CHECK: flashnorm.rms_norm %{{.*}} gain(
// CHECK-NOT: flashnorm.folded
// expected-warning @+1 {{flashnorm-fold-gains: 1 norm(s) of @f not folded because their gains or projection weights are function arguments, and no prepare function can fold them: the module already has a symbol @f_flashnorm_prepare}}
func.func @f(%x: tensor<4x8xf32>, %g: tensor<8xf32>, %w: tensor<8x16xf32>) -> tensor<4x16xf32> {
  %n = flashnorm.rms_norm %x gain(%g : tensor<8xf32>) eps(1.0e-05) : tensor<4x8xf32>
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x16xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<4x16xf32>) -> tensor<4x16xf32>
  %q = linalg.matmul ins(%n, %w : tensor<4x8xf32>, tensor<8x16xf32>) outs(%z : tensor<4x16xf32>) -> tensor<4x16xf32>
  return %q : tensor<4x16xf32>
}
func.func @f_flashnorm_prepare(%a: tensor<4x16xf32>) -> tensor<4x16xf32> {
  return %a : tensor<4x16xf32>
}

// -----

// A func.constant of @f: a call_indirect would still pass unprepared weights.
// CHECK-LABEL: func.func @f(
// CHECK: flashnorm.rms_norm %{{.*}} gain(
// expected-warning @+1 {{no prepare function can fold them: 'func.constant' uses @f other than by a call, with unprepared weights}}
func.func @f(%x: tensor<4x8xf32>, %g: tensor<8xf32>, %w: tensor<8x16xf32>) -> tensor<4x16xf32> {
  %n = flashnorm.rms_norm %x gain(%g : tensor<8xf32>) eps(1.0e-05) : tensor<4x8xf32>
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x16xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<4x16xf32>) -> tensor<4x16xf32>
  %q = linalg.matmul ins(%n, %w : tensor<4x8xf32>, tensor<8x16xf32>) outs(%z : tensor<4x16xf32>) -> tensor<4x16xf32>
  return %q : tensor<4x16xf32>
}
func.func @caller(%x: tensor<4x8xf32>, %g: tensor<8xf32>, %w: tensor<8x16xf32>) -> tensor<4x16xf32> {
  %f = func.constant @f : (tensor<4x8xf32>, tensor<8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %r = func.call_indirect %f(%x, %g, %w) : (tensor<4x8xf32>, tensor<8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  return %r : tensor<4x16xf32>
}

// -----

// A nested module's own @f is another function: its call is left alone
// (it was sent to the outer prepare function: invalid IR).
// CHECK-LABEL: func.func @f(
// CHECK-SAME: {flashnorm.folded}
// CHECK: func.func @f_flashnorm_prepare
// CHECK: module @inner
// CHECK: call @f(
// CHECK-NOT: _flashnorm_prepare
func.func @f(%x: tensor<4x8xf32>, %g: tensor<8xf32>, %w: tensor<8x16xf32>) -> tensor<4x16xf32> {
  %n = flashnorm.rms_norm %x gain(%g : tensor<8xf32>) eps(1.0e-05) : tensor<4x8xf32>
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x16xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<4x16xf32>) -> tensor<4x16xf32>
  %q = linalg.matmul ins(%n, %w : tensor<4x8xf32>, tensor<8x16xf32>) outs(%z : tensor<4x16xf32>) -> tensor<4x16xf32>
  return %q : tensor<4x16xf32>
}
module @inner {
  func.func private @f(%a: tensor<4x8xf32>, %b: tensor<8xf32>, %c: tensor<8x16xf32>) -> tensor<4x16xf32>
  func.func @g(%a: tensor<4x8xf32>, %b: tensor<8xf32>, %c: tensor<8x16xf32>) -> tensor<4x16xf32> {
    %r = func.call @f(%a, %b, %c) : (tensor<4x8xf32>, tensor<8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
    return %r : tensor<4x16xf32>
  }
}

// -----

// The gain is an argument, the weight in a checkpoint: the plan holds
// values, not a gain the function receives (it folded ones).
// CHECK-LABEL: func.func @f(
// CHECK: flashnorm.rms_norm %{{.*}} gain(
// REMARK: Function=f | Remark="not folded: the gain is an argument but the weight of 'linalg.matmul' is in the checkpoint (the extern global @w)"
ml_program.global private @w(#ml_program.extern : tensor<8x16xf32>) : tensor<8x16xf32>
func.func @f(%x: tensor<4x8xf32>, %g: tensor<8xf32>) -> tensor<4x16xf32> {
  %n = flashnorm.rms_norm %x gain(%g : tensor<8xf32>) eps(1.0e-05) : tensor<4x8xf32>
  %w = ml_program.global_load_const @w : tensor<8x16xf32>
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x16xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<4x16xf32>) -> tensor<4x16xf32>
  %q = linalg.matmul ins(%n, %w : tensor<4x8xf32>, tensor<8x16xf32>) outs(%z : tensor<4x16xf32>) -> tensor<4x16xf32>
  return %q : tensor<4x16xf32>
}
