// The attributes the passes exchange are the dialect's (FlashNormDialect.td:
// discardableAttrs), and it verifies them: a malformed or misspelt mark in
// the input is an error naming the attribute, never a crash or a mark a
// later pass misreads or silently skips.
// RUN: flashnorm-opt %s -split-input-file -verify-diagnostics
// RUN: flashnorm-opt %s -split-input-file -verify-diagnostics --mlir-print-op-generic | FileCheck %s --check-prefix=ROUND

// The well-formed marks round-trip.
// ROUND-LABEL: "func.func"
// ROUND-SAME: arg_attrs = [{}, {flashnorm.folded}]
// ROUND: flashnorm.async_group = 0 : i64, flashnorm.async_role = #flashnorm.async_role<stat>
// ROUND: flashnorm.async_group = 0 : i64, flashnorm.async_pair = 1 : i64, flashnorm.async_role = #flashnorm.async_role<post_fused>
// ROUND: flashnorm.serial_panels
// ROUND: flashnorm.centered_weights
// ROUND: flashnorm.column_sums = @w.flashnorm_colsum
// ROUND: flashnorm.column_sums_argument = 1 : i64
func.func @marks(%x: tensor<4x8xf32>, %w: tensor<8x2xf32> {flashnorm.folded}) -> tensor<4xf32> {
  %s = flashnorm.rms_inv %x eps(1.0e-05) {flashnorm.async_group = 0 : i64, flashnorm.async_role = #flashnorm.async_role<stat>} : tensor<4x8xf32> -> tensor<4xf32>
  %e = tensor.empty() {flashnorm.async_group = 0 : i64, flashnorm.async_pair = 1 : i64, flashnorm.async_role = #flashnorm.async_role<post_fused>} : tensor<4x2xf32>
  %f = tensor.empty() {flashnorm.serial_panels} : tensor<4x2xf32>
  %p = linalg.matmul {flashnorm.centered_weights} ins(%x, %w : tensor<4x8xf32>, tensor<8x2xf32>) outs(%f : tensor<4x2xf32>) -> tensor<4x2xf32>
  %q = linalg.matmul {flashnorm.column_sums = @w.flashnorm_colsum} ins(%x, %w : tensor<4x8xf32>, tensor<8x2xf32>) outs(%f : tensor<4x2xf32>) -> tensor<4x2xf32>
  %r = linalg.matmul {flashnorm.column_sums_argument = 1 : i64} ins(%x, %w : tensor<4x8xf32>, tensor<8x2xf32>) outs(%f : tensor<4x2xf32>) -> tensor<4x2xf32>
  return %s : tensor<4xf32>
}

// -----

func.func @column_sums_argument_negative(%x: tensor<4x8xf32>, %w: tensor<8x2xf32>, %f: tensor<4x2xf32>) -> tensor<4x2xf32> {
  // expected-error @+1 {{attribute 'flashnorm.column_sums_argument' must be a non-negative i64, not -1 : i64}}
  %q = linalg.matmul {flashnorm.column_sums_argument = -1 : i64} ins(%x, %w : tensor<4x8xf32>, tensor<8x2xf32>) outs(%f : tensor<4x2xf32>) -> tensor<4x2xf32>
  return %q : tensor<4x2xf32>
}

// -----

func.func @column_sums_string(%x: tensor<4x8xf32>, %w: tensor<8x2xf32>, %f: tensor<4x2xf32>) -> tensor<4x2xf32> {
  // expected-error @+1 {{attribute 'flashnorm.column_sums' must be a symbol reference (the global of the column sums), not "w.flashnorm_colsum"}}
  %q = linalg.matmul {flashnorm.column_sums = "w.flashnorm_colsum"} ins(%x, %w : tensor<4x8xf32>, tensor<8x2xf32>) outs(%f : tensor<4x2xf32>) -> tensor<4x2xf32>
  return %q : tensor<4x2xf32>
}

// -----

func.func @role_string(%x: tensor<4x8xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{attribute 'flashnorm.async_role' must be #flashnorm.async_role<stat|proj|post|post_fused>, not "stat"}}
  %s = flashnorm.rms_inv %x eps(1.0e-05) {flashnorm.async_group = 0 : i64, flashnorm.async_role = "stat"} : tensor<4x8xf32> -> tensor<4xf32>
  return %s : tensor<4xf32>
}

// -----

func.func @role_unknown(%x: tensor<4x8xf32>) -> tensor<4xf32> {
  // expected-error @+2 {{expected ::mlir::flashnorm::AsyncRole to be one of: stat, proj, post, post_fused}}
  // expected-error @+1 {{failed to parse FlashNorm_AsyncRoleAttr parameter 'value'}}
  %s = flashnorm.rms_inv %x eps(1.0e-05) {flashnorm.async_role = #flashnorm.async_role<scale>} : tensor<4x8xf32> -> tensor<4xf32>
  return %s : tensor<4xf32>
}

// -----

func.func @negative_group(%x: tensor<4x8xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{attribute 'flashnorm.async_group' must be a non-negative i64, not -1 : i64}}
  %s = flashnorm.rms_inv %x eps(1.0e-05) {flashnorm.async_group = -1 : i64} : tensor<4x8xf32> -> tensor<4xf32>
  return %s : tensor<4xf32>
}

// -----

func.func @pair_float(%x: tensor<4x8xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{attribute 'flashnorm.async_pair' must be a non-negative i64, not 1.000000e+00 : f32}}
  %s = flashnorm.rms_inv %x eps(1.0e-05) {flashnorm.async_pair = 1.0 : f32} : tensor<4x8xf32> -> tensor<4xf32>
  return %s : tensor<4xf32>
}

// -----

func.func @serial_panels_value() -> tensor<4xf32> {
  // expected-error @+1 {{attribute 'flashnorm.serial_panels' must be a unit attribute, not true}}
  %e = tensor.empty() {flashnorm.serial_panels = true} : tensor<4xf32>
  return %e : tensor<4xf32>
}

// -----

func.func @misspelt() -> tensor<4xf32> {
  // expected-error @+1 {{attribute 'flashnorm.async_grop' is not one the flashnorm dialect declares}}
  %e = tensor.empty() {flashnorm.async_grop = 0 : i64} : tensor<4xf32>
  return %e : tensor<4xf32>
}

// -----

// expected-error @+1 {{argument attribute 'flashnorm.folded' must be a unit attribute, not 1 : i64}}
func.func @folded_value(%w: tensor<8x2xf32> {flashnorm.folded = 1}) -> tensor<8x2xf32> {
  return %w : tensor<8x2xf32>
}

// -----

// expected-error @+1 {{argument attribute 'flashnorm.fold' is not one the flashnorm dialect declares}}
func.func @folded_misspelt(%w: tensor<8x2xf32> {flashnorm.fold}) -> tensor<8x2xf32> {
  return %w : tensor<8x2xf32>
}
