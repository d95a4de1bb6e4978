// RUN: flashnorm-opt %s -split-input-file -verify-diagnostics

func.func @gain_size(%x: tensor<4x8xf32>, %g: tensor<7xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{gain has 7 elements but the normalized dimension has 8}}
  %y = flashnorm.rms_norm %x gain(%g : tensor<7xf32>) eps(1.0e-06) : tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

func.func @negative_eps(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{epsilon must be finite and >= 0, got -1.000000e-06}}
  %y = flashnorm.rms_norm %x eps(-1.0e-06) : tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

func.func @one_plus_without_gain(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{gain_convention one_plus requires a gain}}
  %y = flashnorm.rms_norm %x eps(1.0e-06) convention one_plus : tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

func.func @scalar_input(%x: tensor<f32>) -> tensor<f32> {
  // expected-error @+1 {{input must have rank >= 1 (its last dimension is normalized)}}
  %y = flashnorm.rms_norm %x eps(1.0e-06) : tensor<f32>
  return %y : tensor<f32>
}

// -----

func.func @integer_input(%x: tensor<4x8xi32>) -> tensor<4x8xi32> {
  // expected-error @+1 {{must be ranked tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float values}}
  %y = flashnorm.rms_norm %x eps(1.0e-06) : tensor<4x8xi32>
  return %y : tensor<4x8xi32>
}

// -----

func.func @gain_rank(%x: tensor<4x8xf32>, %g: tensor<1x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{must be 1D tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float values}}
  %y = flashnorm.rms_norm %x gain(%g : tensor<1x8xf32>) eps(1.0e-06) : tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

func.func @inv_rank(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{result must have rank 1 (the rank of input without its normalized dimension), got 'tensor<4x8xf32>'}}
  %s = flashnorm.rms_inv %x eps(1.0e-06) : tensor<4x8xf32> -> tensor<4x8xf32>
  return %s : tensor<4x8xf32>
}

// -----

func.func @inv_rows(%x: tensor<4x8xf32>) -> tensor<5xf32> {
  // expected-error @+1 {{result dimension 0 is 5 but input has 4 rows there}}
  %s = flashnorm.rms_inv %x eps(1.0e-06) : tensor<4x8xf32> -> tensor<5xf32>
  return %s : tensor<5xf32>
}

// -----

func.func @inv_type(%x: tensor<4x8xf32>) -> tensor<4xf16> {
  // expected-error @+1 {{must be ranked tensor of 32-bit float or 64-bit float values}}
  %s = flashnorm.rms_inv %x eps(1.0e-06) : tensor<4x8xf32> -> tensor<4xf16>
  return %s : tensor<4xf16>
}

// -----

func.func @scale_rows(%y: tensor<4x16xf32>, %s: tensor<3xf32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{scale dimension 0 is 3 but input has 4 rows there}}
  %z = flashnorm.post_scale %y, %s : tensor<4x16xf32>, tensor<3xf32> -> tensor<4x16xf32>
  return %z : tensor<4x16xf32>
}

// -----

func.func @scale_result_shape(%y: tensor<4x16xf32>, %s: tensor<4xf32>) -> tensor<4x8xf16> {
  // expected-error @+1 {{result shape 'tensor<4x8xf16>' differs from the input shape 'tensor<4x16xf32>'}}
  %z = flashnorm.post_scale %y, %s : tensor<4x16xf32>, tensor<4xf32> -> tensor<4x8xf16>
  return %z : tensor<4x8xf16>
}

// -----

func.func @gemm_lt_types(%x: memref<16x576xf16>, %w: memref<576x1536xbf16>, %y: memref<16x1536xf32>) {
  // expected-error @below {{'flashnorm.gemm_lt' op a and b must have one element type, not 'f16' and 'bf16'}}
  %t = flashnorm.gemm_lt %x, %w, %y : memref<16x576xf16>, memref<576x1536xbf16>, memref<16x1536xf32>
  return
}

// -----

func.func @gemm_lt_narrowing(%x: memref<16x576xf32>, %w: memref<576x1536xf32>, %y: memref<16x1536xf16>) {
  // expected-error @below {{'flashnorm.gemm_lt' op writes f32 or its inputs' type, not 'f16' from 'f32'}}
  %t = flashnorm.gemm_lt %x, %w, %y : memref<16x576xf32>, memref<576x1536xf32>, memref<16x1536xf16>
  return
}

// -----

func.func @gemm_lt_shapes(%x: memref<16x576xf16>, %w: memref<576x1536xf16>, %y: memref<16x1536xf32>) {
  // expected-error @below {{'flashnorm.gemm_lt' op shapes do not multiply: 'memref<16x576xf16>' x 'memref<576x1536xf16>'^T -> 'memref<16x1536xf32>'}}
  %t = flashnorm.gemm_lt %x, %w, %y transpose_b : memref<16x576xf16>, memref<576x1536xf16>, memref<16x1536xf32>
  return
}

// -----

func.func @gemm_lt_join_first(%x: memref<16x576xf16>, %w: memref<576x1536xf16>, %y: memref<16x1536xf32>) {
  %a = gpu.wait async
  %b = gpu.wait async
  // expected-error @below {{'flashnorm.gemm_lt' op takes at most one async dependency (join first)}}
  %t = flashnorm.gemm_lt [%a, %b] %x, %w, %y : memref<16x576xf16>, memref<576x1536xf16>, memref<16x1536xf32>
  return
}

// -----

func.func @gemm_lt_result(%x: memref<16x576xf16>, %w: memref<576x1536xf16>, %y: memref<16x1536xf64>) {
  // expected-error @below {{operand #2 must be 2D memref of 32-bit float or 16-bit float or bfloat16 type values}}
  %t = flashnorm.gemm_lt %x, %w, %y : memref<16x576xf16>, memref<576x1536xf16>, memref<16x1536xf64>
  return
}

// -----

func.func @resident_strided(%w: memref<4x4xf32, strided<[8, 1]>>) {
  %a = gpu.wait async
  // expected-error @below {{'flashnorm.resident' op needs a buffer with the identity layout, not 'memref<4x4xf32, strided<[8, 1]>>'}}
  %d, %t = flashnorm.resident [%a] %w : memref<4x4xf32, strided<[8, 1]>>
  return
}

// -----

func.func @resident_dynamic(%w: memref<?x4xf32>) {
  // expected-error @below {{operand #0 must be statically shaped memref of any type values}}
  %d, %t = flashnorm.resident %w : memref<?x4xf32>
  return
}

// -----

func.func @resident_join_first(%w: memref<4xf32>) {
  %a = gpu.wait async
  %b = gpu.wait async
  // expected-error @below {{'flashnorm.resident' op takes at most one async dependency (join first)}}
  %d, %t = flashnorm.resident [%a, %b] %w : memref<4xf32>
  return
}

// -----

func.func @resident_bits(%w: memref<4xi4>) {
  // expected-error @below {{'flashnorm.resident' op needs integer or float elements of 8, 16, 32 or 64 bits, not 'i4'}}
  %d, %t = flashnorm.resident %w : memref<4xi4>
  return
}

// -----

func.func @check_alignment_power_of_two(%x: memref<6xbf16>) {
  // expected-error @below {{'flashnorm.check_alignment' op needs a power of two alignment, not 12}}
  flashnorm.check_alignment %x, 12, "argument #0" : memref<6xbf16>
  return
}

// -----

func.func @check_alignment_positive(%x: memref<6xbf16>) {
  // expected-error @below {{'flashnorm.check_alignment' op attribute 'alignment' failed to satisfy constraint: 64-bit signless integer attribute whose value is positive}}
  flashnorm.check_alignment %x, 0, "argument #0" : memref<6xbf16>
  return
}

// -----

// The runtime reads dense row-major buffers: no strides are passed.
func.func @gemm_lt_strided(%x: memref<16x576xf16, strided<[1024, 1]>>, %w: memref<576x1536xf16>, %y: memref<16x1536xf32>) {
  %a = gpu.wait async
  // expected-error @below {{'flashnorm.gemm_lt' op needs a buffer with the identity layout, not 'memref<16x576xf16, strided<[1024, 1]>>'}}
  %t = flashnorm.gemm_lt [%a] %x, %w, %y : memref<16x576xf16, strided<[1024, 1]>>, memref<576x1536xf16>, memref<16x1536xf32>
  return
}

// -----

func.func @resident_memory_space(%w: memref<4xf32, 1>) {
  %a = gpu.wait async
  // expected-error @below {{'flashnorm.resident' op needs a buffer in the default memory space, not 'memref<4xf32, 1>'}}
  %d, %t = flashnorm.resident [%a] %w : memref<4xf32, 1>
  return
}

// -----

func.func @check_alignment_memory_space(%x: memref<6xbf16, 1>) {
  // expected-error @below {{'flashnorm.check_alignment' op needs a buffer in the default memory space, not 'memref<6xbf16, 1>'}}
  flashnorm.check_alignment %x, 16, "x" : memref<6xbf16, 1>
  return
}

// -----

// A result's shape is its input's, dynamic sizes too (the lowering builds
// it from the input).
func.func @post_scale_static_dynamic(%y: tensor<4x16xf32>, %s: tensor<4xf32>) -> tensor<?x16xf16> {
  // expected-error @below {{'flashnorm.post_scale' op result shape 'tensor<?x16xf16>' differs from the input shape 'tensor<4x16xf32>'}}
  %z = flashnorm.post_scale %y, %s : tensor<4x16xf32>, tensor<4xf32> -> tensor<?x16xf16>
  return %z : tensor<?x16xf16>
}

// -----

func.func @rms_inv_dynamic_result(%x: tensor<4x16xf32>) -> tensor<?xf32> {
  // expected-error @below {{'flashnorm.rms_inv' op result dimension 0 is ? but input has 4 rows there}}
  %s = flashnorm.rms_inv %x eps(1.0e-05) : tensor<4x16xf32> -> tensor<?xf32>
  return %s : tensor<?xf32>
}

// -----

// Epsilon is added in f32 for a non-f64 input: 1e-50 would be 0 there.
func.func @eps_below_f32(%x: tensor<4x16xf32>) -> tensor<4x16xf32> {
  // expected-error @below {{'flashnorm.rms_norm' op epsilon must be 0 or a normal f32 (the statistic adds it in f32 for a non-f64 input), got 1.000000e-50}}
  %y = flashnorm.rms_norm %x eps(1.0e-50) : tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}

// -----

func.func @eps_past_f32(%x: tensor<4x16xbf16>) -> tensor<4xf32> {
  // expected-error @below {{'flashnorm.layer_inv' op epsilon must be 0 or a normal f32 (the statistic adds it in f32 for a non-f64 input), got 1.000000e+39}}
  %s = flashnorm.layer_inv %x eps(1.0e39) : tensor<4x16xbf16> -> tensor<4xf32>
  return %s : tensor<4xf32>
}

// -----

// No K fits both (the normalized dimension is dynamic).
func.func @gain_bias_sizes(%x: tensor<4x?xf32>, %g: tensor<64xf32>, %b: tensor<32xf32>) -> tensor<4x?xf32> {
  // expected-error @below {{'flashnorm.layer_norm' op bias has 32 elements but the gain has 64}}
  %y = flashnorm.layer_norm %x gain(%g : tensor<64xf32>) bias(%b : tensor<32xf32>) eps(1.0e-05) : tensor<4x?xf32>
  return %y : tensor<4x?xf32>
}

// -----

// Norms take the float types every pipeline compiles.
func.func @f8_gain(%x: tensor<4x8xbf16>, %g: tensor<8xf8E4M3FN>) -> tensor<4x8xbf16> {
  // expected-error @below {{operand #1 must be 1D tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float values}}
  %y = flashnorm.rms_norm %x gain(%g : tensor<8xf8E4M3FN>) eps(1.0e-05) : tensor<4x8xbf16>
  return %y : tensor<4x8xbf16>
}

// -----

// A statistic is f32, or f64 for an f64 input: not rounded to f32 there.
func.func @f64_statistic_in_f32(%x: tensor<4x8xf64>) -> tensor<4xf32> {
  // expected-error @below {{'flashnorm.rms_inv' op result must be of 'f64' for an input of 'f64', got 'f32'}}
  %s = flashnorm.rms_inv %x eps(1.0e-06) : tensor<4x8xf64> -> tensor<4xf32>
  return %s : tensor<4xf32>
}

// -----

func.func @f32_statistic_in_f64(%x: tensor<4x8xbf16>) -> tensor<4xf64> {
  // expected-error @below {{'flashnorm.layer_inv' op result must be of 'f32' for an input of 'bf16', got 'f64'}}
  %s = flashnorm.layer_inv %x eps(1.0e-06) : tensor<4x8xbf16> -> tensor<4xf64>
  return %s : tensor<4xf64>
}

// -----

func.func @layer_stats_type(%x: tensor<4x8xf64>) -> tensor<4xf32> {
  // expected-error @below {{'flashnorm.layer_stats' op result must be of 'f64' for an input of 'f64', got 'f32'}}
  %m, %s = flashnorm.layer_stats %x eps(1.0e-06) : tensor<4x8xf64> -> tensor<4xf32>
  return %s : tensor<4xf32>
}

// -----

func.func @layer_stats_rows(%x: tensor<4x8xbf16>) -> tensor<3xf32> {
  // expected-error @below {{'flashnorm.layer_stats' op result dimension 0 is 3 but input has 4 rows there}}
  %m, %s = flashnorm.layer_stats %x eps(1.0e-06) : tensor<4x8xbf16> -> tensor<3xf32>
  return %s : tensor<3xf32>
}

// -----

func.func @colsum_size(%y: tensor<4x16xf32>, %s: tensor<4xf32>, %c: tensor<8xf32>) -> tensor<4x16xbf16> {
  // expected-error @below {{'flashnorm.centered_post_scale' op colsum has 8 elements but the input's last dimension has 16}}
  %z = flashnorm.centered_post_scale %y, %s, %s, %c : tensor<4x16xf32>, tensor<4xf32>, tensor<8xf32> -> tensor<4x16xbf16>
  return %z : tensor<4x16xbf16>
}

// -----

func.func @colsum_type(%y: tensor<4x16xf32>, %s: tensor<4xf32>, %c: tensor<16xf64>) -> tensor<4x16xbf16> {
  // expected-error @below {{'flashnorm.centered_post_scale' op colsum must be of the scale's type 'f32', got 'tensor<16xf64>'}}
  %z = flashnorm.centered_post_scale %y, %s, %s, %c : tensor<4x16xf32>, tensor<4xf32>, tensor<16xf64> -> tensor<4x16xbf16>
  return %z : tensor<4x16xbf16>
}

// -----

func.func @centered_rows(%y: tensor<4x16xf32>, %s: tensor<3xf32>, %c: tensor<16xf32>) -> tensor<4x16xbf16> {
  // expected-error @below {{'flashnorm.centered_post_scale' op scale dimension 0 is 3 but input has 4 rows there}}
  %z = flashnorm.centered_post_scale %y, %s, %s, %c : tensor<4x16xf32>, tensor<3xf32>, tensor<16xf32> -> tensor<4x16xbf16>
  return %z : tensor<4x16xbf16>
}

// -----

func.func @centered_shape(%y: tensor<4x16xf32>, %s: tensor<4xf32>, %c: tensor<16xf32>) -> tensor<4x8xbf16> {
  // expected-error @below {{'flashnorm.centered_post_scale' op result shape 'tensor<4x8xbf16>' differs from the input shape 'tensor<4x16xf32>'}}
  %z = flashnorm.centered_post_scale %y, %s, %s, %c : tensor<4x16xf32>, tensor<4xf32>, tensor<16xf32> -> tensor<4x8xbf16>
  return %z : tensor<4x8xbf16>
}
