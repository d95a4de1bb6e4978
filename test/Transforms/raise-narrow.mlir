// A norm between a widening of its bf16 (f16) input and roundings of its
// result back to that type reads the narrow input itself: the norm computes
// in f32 and rounds once to its input's type, so the values are the same.
// RUN: flashnorm-opt %s --split-input-file --flashnorm-raise | FileCheck %s
// Folding needs it: the rounding between the f32 norm and the projection
// is not a projection.
// RUN: flashnorm-opt %s --split-input-file --flashnorm-raise --flashnorm-fold-gains | FileCheck %s --check-prefix=FOLD

// An RMSNorm as torch-mlir lowers a bf16 LlamaRMSNorm: the row widened by
// a casting generic, normalized on [1, T, K], rounded by another, the bf16
// gain applied, then the batch collapsed before the projection.
// CHECK-LABEL: func.func @torch_mlir_rms
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xbf16>
// CHECK: %[[E:.*]] = tensor.expand_shape %[[X]] {{.*}} into tensor<1x4x8xbf16>
// CHECK: %[[N:.*]] = flashnorm.rms_norm %[[E]] gain(%cst{{.*}} : tensor<8xbf16>) {{.*}} : tensor<1x4x8xbf16>
// CHECK: %[[C:.*]] = tensor.collapse_shape %[[N]] {{.*}} into tensor<4x8xbf16>
// CHECK: linalg.matmul ins(%[[C]], %{{.*}} : tensor<4x8xbf16>, tensor<8x8xbf16>)
// CHECK-NOT: arith.extf
// CHECK-NOT: arith.truncf
// CHECK: return
// FOLD-LABEL: func.func @torch_mlir_rms
// FOLD: %[[W:.*]] = arith.constant dense<{{.*}}> : tensor<8x8xbf16>
// FOLD: %[[N:.*]] = flashnorm.rms_norm %{{.*}} eps({{.*}}) : tensor<1x4x8xbf16>
// FOLD: %[[C:.*]] = tensor.collapse_shape %[[N]]
// FOLD: linalg.matmul ins(%[[C]], %[[W]] :
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#b3 = affine_map<(d0, d1, d2) -> (0, d1, d2)>
#r3 = affine_map<(d0, d1, d2) -> (0, d1, 0)>
#kd3 = affine_map<(d0, d1, d2) -> (d0, d1, 0)>
#f3 = affine_map<(d0, d1, d2) -> (d2)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
func.func @torch_mlir_rms(%x: tensor<4x8xbf16>) -> tensor<4x8xf32> {
  %g = arith.constant dense<[1.0, 2.0, 0.5, 1.5, 1.0, 3.0, 0.25, 2.0]> : tensor<8xbf16>
  %w = arith.constant dense<0.5> : tensor<8x8xbf16>
  %zero = arith.constant 0.0 : f32
  %eps = arith.constant 1.0e-05 : f32
  %k = arith.constant 8.0 : f32
  %e2 = tensor.empty() : tensor<4x8xf32>
  %wide = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<4x8xbf16>) outs(%e2 : tensor<4x8xf32>) {
  ^bb0(%a: bf16, %o: f32):
    %c = arith.extf %a : bf16 to f32
    linalg.yield %c : f32
  } -> tensor<4x8xf32>
  %x3 = tensor.expand_shape %wide [[0, 1], [2]] output_shape [1, 4, 8] : tensor<4x8xf32> into tensor<1x4x8xf32>
  %er = tensor.empty() : tensor<1x4x1xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%er : tensor<1x4x1xf32>) -> tensor<1x4x1xf32>
  %sum = linalg.generic {indexing_maps = [#id3, #kd3], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x3 : tensor<1x4x8xf32>) outs(%acc : tensor<1x4x1xf32>) {
  ^bb0(%a: f32, %o: f32):
    %p = arith.mulf %a, %a : f32
    %s = arith.addf %o, %p : f32
    linalg.yield %s : f32
  } -> tensor<1x4x1xf32>
  %e3 = tensor.empty() : tensor<1x4x8xf32>
  %n = linalg.generic {indexing_maps = [#b3, #r3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%x3, %sum : tensor<1x4x8xf32>, tensor<1x4x1xf32>) outs(%e3 : tensor<1x4x8xf32>) {
  ^bb0(%a: f32, %s: f32, %o: f32):
    %m = arith.divf %s, %k : f32
    %v = arith.addf %m, %eps : f32
    %r = math.rsqrt %v : f32
    %p = arith.mulf %a, %r : f32
    linalg.yield %p : f32
  } -> tensor<1x4x8xf32>
  %eb = tensor.empty() : tensor<1x4x8xbf16>
  %nb = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%n : tensor<1x4x8xf32>) outs(%eb : tensor<1x4x8xbf16>) {
  ^bb0(%a: f32, %o: bf16):
    %c = arith.truncf %a : f32 to bf16
    linalg.yield %c : bf16
  } -> tensor<1x4x8xbf16>
  %y = linalg.generic {indexing_maps = [#b3, #f3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%nb, %g : tensor<1x4x8xbf16>, tensor<8xbf16>) outs(%eb : tensor<1x4x8xbf16>) {
  ^bb0(%a: bf16, %gg: bf16, %o: bf16):
    %q = arith.mulf %a, %gg : bf16
    linalg.yield %q : bf16
  } -> tensor<1x4x8xbf16>
  %y2 = tensor.collapse_shape %y [[0, 1], [2]] : tensor<1x4x8xbf16> into tensor<4x8xbf16>
  %fill = linalg.fill ins(%zero : f32) outs(%e2 : tensor<4x8xf32>) -> tensor<4x8xf32>
  %mm = linalg.matmul ins(%y2, %w : tensor<4x8xbf16>, tensor<8x8xbf16>) outs(%fill : tensor<4x8xf32>) -> tensor<4x8xf32>
  return %mm : tensor<4x8xf32>
}

// -----

// A LayerNorm raised already, in f32 between the widening and, after the
// batch is collapsed, a rounding generic; its f32 gain and bias stay (the
// norm applies them in f32 either way).
// CHECK-LABEL: func.func @layer_norm_collapsed
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xbf16>
// CHECK-NEXT: %[[E:.*]] = tensor.expand_shape %[[X]] {{.*}} into tensor<1x4x8xbf16>
// CHECK-NEXT: %[[N:.*]] = flashnorm.layer_norm %[[E]] gain(%{{.*}} : tensor<8xf32>) bias(%{{.*}} : tensor<8xf32>) {{.*}} : tensor<1x4x8xbf16>
// CHECK-NEXT: %[[C:.*]] = tensor.collapse_shape %[[N]] {{.*}} into tensor<4x8xbf16>
// CHECK-NEXT: return %[[C]] : tensor<4x8xbf16>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
func.func @layer_norm_collapsed(%x: tensor<4x8xbf16>, %g: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<4x8xbf16> {
  %wide = arith.extf %x : tensor<4x8xbf16> to tensor<4x8xf32>
  %x3 = tensor.expand_shape %wide [[0, 1], [2]] output_shape [1, 4, 8] : tensor<4x8xf32> into tensor<1x4x8xf32>
  %n = flashnorm.layer_norm %x3 gain(%g : tensor<8xf32>) bias(%b : tensor<8xf32>) eps(1.0e-05) : tensor<1x4x8xf32>
  %n2 = tensor.collapse_shape %n [[0, 1], [2]] : tensor<1x4x8xf32> into tensor<4x8xf32>
  %eb = tensor.empty() : tensor<4x8xbf16>
  %y = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%n2 : tensor<4x8xf32>) outs(%eb : tensor<4x8xbf16>) {
  ^bb0(%a: f32, %o: bf16):
    %c = arith.truncf %a : f32 to bf16
    linalg.yield %c : bf16
  } -> tensor<4x8xbf16>
  return %y : tensor<4x8xbf16>
}

// -----

// One norm's rounded result, widened again, is the next one's input: both
// read bf16, the second the first's result.
// CHECK-LABEL: func.func @chained
// CHECK-NEXT: %[[A:.*]] = flashnorm.rms_norm %arg0 eps({{.*}}) : tensor<4x8xbf16>
// CHECK-NEXT: %[[B:.*]] = flashnorm.rms_norm %[[A]] eps({{.*}}) : tensor<4x8xbf16>
// CHECK-NEXT: return %[[B]]
func.func @chained(%x: tensor<4x8xbf16>) -> tensor<4x8xbf16> {
  %w = arith.extf %x : tensor<4x8xbf16> to tensor<4x8xf32>
  %a = flashnorm.rms_norm %w eps(1.0e-05) : tensor<4x8xf32>
  %ar = arith.truncf %a : tensor<4x8xf32> to tensor<4x8xbf16>
  %aw = arith.extf %ar : tensor<4x8xbf16> to tensor<4x8xf32>
  %b = flashnorm.rms_norm %aw eps(1.0e-05) : tensor<4x8xf32>
  %br = arith.truncf %b : tensor<4x8xf32> to tensor<4x8xbf16>
  return %br : tensor<4x8xbf16>
}

// -----

// Kept in f32: the f32 result is also read as it is.
// CHECK-LABEL: func.func @f32_use
// CHECK: flashnorm.rms_norm %{{.*}} : tensor<4x8xf32>
// CHECK: arith.truncf
func.func @f32_use(%x: tensor<4x8xbf16>) -> (tensor<4x8xbf16>, tensor<4x8xf32>) {
  %w = arith.extf %x : tensor<4x8xbf16> to tensor<4x8xf32>
  %n = flashnorm.rms_norm %w eps(1.0e-05) : tensor<4x8xf32>
  %r = arith.truncf %n : tensor<4x8xf32> to tensor<4x8xbf16>
  return %r, %n : tensor<4x8xbf16>, tensor<4x8xf32>
}

// -----

// Kept in f32: widened from f16, rounded to bf16 (a norm rounds to its
// input's type).
// CHECK-LABEL: func.func @other_type
// CHECK: flashnorm.rms_norm %{{.*}} : tensor<4x8xf32>
func.func @other_type(%x: tensor<4x8xf16>) -> tensor<4x8xbf16> {
  %w = arith.extf %x : tensor<4x8xf16> to tensor<4x8xf32>
  %n = flashnorm.rms_norm %w eps(1.0e-05) : tensor<4x8xf32>
  %r = arith.truncf %n : tensor<4x8xf32> to tensor<4x8xbf16>
  return %r : tensor<4x8xbf16>
}

// -----

// Kept: an f64 norm of a widened f32 row computes in f64; one of f32
// would not.
// CHECK-LABEL: func.func @f64
// CHECK: flashnorm.rms_norm %{{.*}} : tensor<4x8xf64>
func.func @f64(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %w = arith.extf %x : tensor<4x8xf32> to tensor<4x8xf64>
  %n = flashnorm.rms_norm %w eps(1.0e-05) : tensor<4x8xf64>
  %r = arith.truncf %n : tensor<4x8xf64> to tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}

// -----

// Kept: a rounding toward zero is not the norm's own (to nearest even).
// CHECK-LABEL: func.func @toward_zero
// CHECK: flashnorm.rms_norm %{{.*}} : tensor<4x8xf32>
func.func @toward_zero(%x: tensor<4x8xbf16>) -> tensor<4x8xbf16> {
  %w = arith.extf %x : tensor<4x8xbf16> to tensor<4x8xf32>
  %n = flashnorm.rms_norm %w eps(1.0e-05) : tensor<4x8xf32>
  %r = arith.truncf %n toward_zero : tensor<4x8xf32> to tensor<4x8xbf16>
  return %r : tensor<4x8xbf16>
}

// -----

// Kept: the input is an f32 argument; nothing was widened.
// CHECK-LABEL: func.func @not_widened
// CHECK: flashnorm.rms_norm %arg0 eps({{.*}}) : tensor<4x8xf32>
func.func @not_widened(%x: tensor<4x8xf32>) -> tensor<4x8xbf16> {
  %n = flashnorm.rms_norm %x eps(1.0e-05) : tensor<4x8xf32>
  %r = arith.truncf %n : tensor<4x8xf32> to tensor<4x8xbf16>
  return %r : tensor<4x8xbf16>
}

// -----

// Kept: a norm takes no f8 input.
// CHECK-LABEL: func.func @f8
// CHECK: flashnorm.rms_norm %{{.*}} : tensor<4x8xf32>
func.func @f8(%x: tensor<4x8xf8E4M3FN>) -> tensor<4x8xf8E4M3FN> {
  %w = arith.extf %x : tensor<4x8xf8E4M3FN> to tensor<4x8xf32>
  %n = flashnorm.rms_norm %w eps(1.0e-05) : tensor<4x8xf32>
  %r = arith.truncf %n : tensor<4x8xf32> to tensor<4x8xf8E4M3FN>
  return %r : tensor<4x8xf8E4M3FN>
}

// -----

// TOSA's casts, f16: the same.
// CHECK-LABEL: func.func @tosa_f16
// CHECK-NEXT: %[[N:.*]] = flashnorm.rms_norm %arg0 eps({{.*}}) : tensor<1x4x8xf16>
// CHECK-NEXT: return %[[N]]
func.func @tosa_f16(%x: tensor<1x4x8xf16>) -> tensor<1x4x8xf16> {
  %w = tosa.cast %x : (tensor<1x4x8xf16>) -> tensor<1x4x8xf32>
  %n = flashnorm.rms_norm %w eps(1.0e-05) : tensor<1x4x8xf32>
  %r = tosa.cast %n : (tensor<1x4x8xf32>) -> tensor<1x4x8xf16>
  return %r : tensor<1x4x8xf16>
}
