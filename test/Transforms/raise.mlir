// RUN: flashnorm-opt %s --flashnorm-raise --split-input-file | FileCheck %s
// RUN: flashnorm-opt %s --flashnorm-raise --split-input-file \
// RUN:   --remarks-filter=flashnorm --remark-format=emitRemark 2>&1 >/dev/null \
// RUN:   | FileCheck %s --check-prefix=REMARK

// torch-mlir style Llama RMSNorm in linalg: f16 input upcast for the
// statistics, math.fpowi, linalg.reduce, a divide by K, rsqrt, downcast
// before the gain (Llama order).
// CHECK-LABEL: func.func @llama
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf16>, %[[G:.*]]: tensor<8xf16>)
// CHECK-NEXT: %[[N:.*]] = flashnorm.rms_norm %[[X]] gain(%[[G]] : tensor<8xf16>) eps(9.9999999747524271E-7) : tensor<4x8xf16>
// CHECK-NEXT: return %[[N]]
// REMARK: Function=llama | Remark="raised a RMSNorm (eps 1e-06, gain)"
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#feat = affine_map<(d0, d1) -> (d1)>
func.func @llama(%x: tensor<4x8xf16>, %g: tensor<8xf16>) -> tensor<4x8xf16> {
  %e32 = tensor.empty() : tensor<4x8xf32>
  %xf = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<4x8xf16>) outs(%e32 : tensor<4x8xf32>) {
  ^bb0(%a: f16, %o: f32):
    %c = arith.extf %a : f16 to f32
    linalg.yield %c : f32
  } -> tensor<4x8xf32>
  %sq = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%xf : tensor<4x8xf32>) outs(%e32 : tensor<4x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %two = arith.constant 2 : i64
    %p = math.fpowi %a, %two : f32, i64
    linalg.yield %p : f32
  } -> tensor<4x8xf32>
  %zero = arith.constant 0.0 : f32
  %er = tensor.empty() : tensor<4xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%er : tensor<4xf32>) -> tensor<4xf32>
  %sum = linalg.reduce ins(%sq : tensor<4x8xf32>) outs(%acc : tensor<4xf32>) dimensions = [1]
    (%in: f32, %init: f32) {
      %s = arith.addf %in, %init : f32
      linalg.yield %s : f32
    }
  %ms = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%sum : tensor<4xf32>) outs(%er : tensor<4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %k = arith.constant 8.0 : f32
    %m = arith.divf %a, %k : f32
    %eps = arith.constant 1.0e-06 : f32
    %v = arith.addf %m, %eps : f32
    %r = math.rsqrt %v : f32
    linalg.yield %r : f32
  } -> tensor<4xf32>
  %e16 = tensor.empty() : tensor<4x8xf16>
  %n = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]} ins(%xf, %ms : tensor<4x8xf32>, tensor<4xf32>) outs(%e16 : tensor<4x8xf16>) {
  ^bb0(%a: f32, %r: f32, %o: f16):
    %p = arith.mulf %a, %r : f32
    %t = arith.truncf %p : f32 to f16
    linalg.yield %t : f16
  } -> tensor<4x8xf16>
  %y = linalg.generic {indexing_maps = [#id, #feat, #id], iterator_types = ["parallel", "parallel"]} ins(%n, %g : tensor<4x8xf16>, tensor<8xf16>) outs(%e16 : tensor<4x8xf16>) {
  ^bb0(%a: f16, %b: f16, %o: f16):
    %p = arith.mulf %a, %b : f16
    linalg.yield %p : f16
  } -> tensor<4x8xf16>
  return %y : tensor<4x8xf16>
}

// -----

// One reducing generic (cast and square in its body) and one fused
// normalize generic: x * rsqrt(sum / K + eps) * g.
// CHECK-LABEL: func.func @fused_generics
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x8xbf16>, %[[G:.*]]: tensor<8xf32>)
// CHECK: %[[E:.*]] = arith.extf %[[X]] : tensor<2x3x8xbf16> to tensor<2x3x8xf32>
// CHECK-NEXT: %[[N:.*]] = flashnorm.rms_norm %[[E]] gain(%[[G]] : tensor<8xf32>) eps(9.9999997473787516E-6) : tensor<2x3x8xf32>
// CHECK-NEXT: return %[[N]]
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#row3 = affine_map<(d0, d1, d2) -> (d0, d1)>
#feat3 = affine_map<(d0, d1, d2) -> (d2)>
func.func @fused_generics(%x: tensor<2x3x8xbf16>, %g: tensor<8xf32>) -> tensor<2x3x8xf32> {
  %zero = arith.constant 0.0 : f32
  %er = tensor.empty() : tensor<2x3xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%er : tensor<2x3xf32>) -> tensor<2x3xf32>
  %ss = linalg.generic {indexing_maps = [#id3, #row3], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x : tensor<2x3x8xbf16>) outs(%acc : tensor<2x3xf32>) {
  ^bb0(%a: bf16, %o: f32):
    %f = arith.extf %a : bf16 to f32
    %sq = arith.mulf %f, %f : f32
    %s = arith.addf %o, %sq : f32
    linalg.yield %s : f32
  } -> tensor<2x3xf32>
  %e = tensor.empty() : tensor<2x3x8xf32>
  %y = linalg.generic {indexing_maps = [#id3, #row3, #feat3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x, %ss, %g : tensor<2x3x8xbf16>, tensor<2x3xf32>, tensor<8xf32>) outs(%e : tensor<2x3x8xf32>) {
  ^bb0(%a: bf16, %s: f32, %gg: f32, %o: f32):
    %invk = arith.constant 0.125 : f32
    %eps = arith.constant 1.0e-05 : f32
    %m = arith.mulf %s, %invk : f32
    %v = arith.addf %m, %eps : f32
    %r = math.rsqrt %v : f32
    %f = arith.extf %a : bf16 to f32
    %n = arith.mulf %f, %r : f32
    %out = arith.mulf %n, %gg : f32
    linalg.yield %out : f32
  } -> tensor<2x3x8xf32>
  return %y : tensor<2x3x8xf32>
}

// -----

// arith and math on tensors with a 1 / sqrt form; the row statistic is
// broadcast by linalg.broadcast and the gain, a 1-D argument, through
// tensor.expand_shape.
// CHECK-LABEL: func.func @one_over_sqrt
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>, %[[G:.*]]: tensor<8xf32>)
// The input's own dead code (%g2) stays; only what the raise cut off goes.
// CHECK-NEXT: tensor.expand_shape %[[G]]
// CHECK-NEXT: %[[N:.*]] = flashnorm.rms_norm %[[X]] gain(%[[G]] : tensor<8xf32>) eps(9.9999999747524271E-7) : tensor<4x8xf32>
// CHECK-NEXT: return %[[N]]
func.func @one_over_sqrt(%x: tensor<4x8xf32>, %g: tensor<8xf32>) -> tensor<4x8xf32> {
  %sq = arith.mulf %x, %x : tensor<4x8xf32>
  %zero = arith.constant 0.0 : f32
  %er = tensor.empty() : tensor<4xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%er : tensor<4xf32>) -> tensor<4xf32>
  %sum = linalg.reduce ins(%sq : tensor<4x8xf32>) outs(%acc : tensor<4xf32>) dimensions = [1]
    (%in: f32, %init: f32) {
      %s = arith.addf %in, %init : f32
      linalg.yield %s : f32
    }
  %k = arith.constant dense<8.0> : tensor<4xf32>
  %mean = arith.divf %sum, %k : tensor<4xf32>
  %eps = arith.constant dense<1.0e-06> : tensor<4xf32>
  %v = arith.addf %mean, %eps : tensor<4xf32>
  %sd = math.sqrt %v : tensor<4xf32>
  %one = arith.constant dense<1.0> : tensor<4xf32>
  %r = arith.divf %one, %sd : tensor<4xf32>
  %e = tensor.empty() : tensor<4x8xf32>
  %rb = linalg.broadcast ins(%r : tensor<4xf32>) outs(%e : tensor<4x8xf32>) dimensions = [1]
  %n = arith.mulf %x, %rb : tensor<4x8xf32>
  %g2 = tensor.expand_shape %g [[0, 1]] output_shape [1, 8] : tensor<8xf32> into tensor<1x8xf32>
  %gb = linalg.broadcast ins(%g : tensor<8xf32>) outs(%e : tensor<4x8xf32>) dimensions = [0]
  %y = arith.mulf %n, %gb : tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// Divide by sqrt, with TOSA statistics and a linalg epilogue (a mix).
// CHECK-LABEL: func.func @mixed_divide_by_sqrt
// CHECK: flashnorm.rms_norm %{{.*}} eps(9.9999997473787516E-6) : tensor<4x8xf32>
// CHECK-NOT: tosa.reduce_sum
func.func @mixed_divide_by_sqrt(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %sq = tosa.mul %x, %x, %shift : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<1xi8>) -> tensor<4x8xf32>
  %sum = tosa.reduce_sum %sq {axis = 1 : i32} : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %invk = "tosa.const"() <{values = dense<0.125> : tensor<1x1xf32>}> : () -> tensor<1x1xf32>
  %mean = tosa.mul %sum, %invk, %shift : (tensor<4x1xf32>, tensor<1x1xf32>, tensor<1xi8>) -> tensor<4x1xf32>
  %eps = "tosa.const"() <{values = dense<1.0e-05> : tensor<1x1xf32>}> : () -> tensor<1x1xf32>
  %v = tosa.add %mean, %eps : (tensor<4x1xf32>, tensor<1x1xf32>) -> tensor<4x1xf32>
  %half = "tosa.const"() <{values = dense<0.5> : tensor<1x1xf32>}> : () -> tensor<1x1xf32>
  %sd = tosa.pow %v, %half : (tensor<4x1xf32>, tensor<1x1xf32>) -> tensor<4x1xf32>
  %e = tensor.empty() : tensor<4x8xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, 0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%x, %sd : tensor<4x8xf32>, tensor<4x1xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %s: f32, %o: f32):
    %q = arith.divf %a, %s : f32
    linalg.yield %q : f32
  } -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// CHECK-LABEL: func.func @tosa_rms
// CHECK-SAME: (%[[X:.*]]: tensor<1x4x8xf32>, %[[G:.*]]: tensor<8xf32>)
// CHECK-NEXT: %[[N:.*]] = flashnorm.rms_norm %[[X]] gain(%[[G]] : tensor<8xf32>) eps(9.9999997473787516E-6) : tensor<1x4x8xf32>
// CHECK-NEXT: return %[[N]]
func.func @tosa_rms(%x: tensor<1x4x8xf32>, %g: tensor<8xf32>) -> tensor<1x4x8xf32> {
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %two = "tosa.const"() <{values = dense<2.0> : tensor<1x1x1xf32>}> : () -> tensor<1x1x1xf32>
  %sq = tosa.pow %x, %two : (tensor<1x4x8xf32>, tensor<1x1x1xf32>) -> tensor<1x4x8xf32>
  %sum = tosa.reduce_sum %sq {axis = 2 : i32} : (tensor<1x4x8xf32>) -> tensor<1x4x1xf32>
  %invk = "tosa.const"() <{values = dense<0.125> : tensor<1x1x1xf32>}> : () -> tensor<1x1x1xf32>
  %mean = tosa.mul %sum, %invk, %shift : (tensor<1x4x1xf32>, tensor<1x1x1xf32>, tensor<1xi8>) -> tensor<1x4x1xf32>
  %eps = "tosa.const"() <{values = dense<1.0e-05> : tensor<1x1x1xf32>}> : () -> tensor<1x1x1xf32>
  %v = tosa.add %mean, %eps : (tensor<1x4x1xf32>, tensor<1x1x1xf32>) -> tensor<1x4x1xf32>
  %r = tosa.rsqrt %v : (tensor<1x4x1xf32>) -> tensor<1x4x1xf32>
  %n = tosa.mul %x, %r, %shift : (tensor<1x4x8xf32>, tensor<1x4x1xf32>, tensor<1xi8>) -> tensor<1x4x8xf32>
  %shape = tosa.const_shape {values = dense<[1, 1, 8]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %g3 = tosa.reshape %g, %shape : (tensor<8xf32>, !tosa.shape<3>) -> tensor<1x1x8xf32>
  %y = tosa.mul %n, %g3, %shift : (tensor<1x4x8xf32>, tensor<1x1x8xf32>, tensor<1xi8>) -> tensor<1x4x8xf32>
  return %y : tensor<1x4x8xf32>
}

// -----

// Gemma order: bf16 input, statistics in f32, (1 + g) formed in f32 and
// applied before the cast back: a one_plus gain on the bf16 gain itself.
// CHECK-LABEL: func.func @gemma
// CHECK-SAME: (%[[X:.*]]: tensor<1x4x8xbf16>, %[[G:.*]]: tensor<8xbf16>)
// CHECK-NEXT: %[[N:.*]] = flashnorm.rms_norm %[[X]] gain(%[[G]] : tensor<8xbf16>) eps(9.9999999747524271E-7) convention one_plus : tensor<1x4x8xbf16>
// CHECK-NEXT: return %[[N]]
// REMARK: Function=gemma | Remark="raised a RMSNorm (eps 1e-06, 1 + gain)"
func.func @gemma(%x: tensor<1x4x8xbf16>, %g: tensor<8xbf16>) -> tensor<1x4x8xbf16> {
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %xf = tosa.cast %x : (tensor<1x4x8xbf16>) -> tensor<1x4x8xf32>
  %sq = tosa.mul %xf, %xf, %shift : (tensor<1x4x8xf32>, tensor<1x4x8xf32>, tensor<1xi8>) -> tensor<1x4x8xf32>
  %sum = tosa.reduce_sum %sq {axis = 2 : i32} : (tensor<1x4x8xf32>) -> tensor<1x4x1xf32>
  %invk = "tosa.const"() <{values = dense<0.125> : tensor<1x1x1xf32>}> : () -> tensor<1x1x1xf32>
  %mean = tosa.mul %sum, %invk, %shift : (tensor<1x4x1xf32>, tensor<1x1x1xf32>, tensor<1xi8>) -> tensor<1x4x1xf32>
  %eps = "tosa.const"() <{values = dense<1.0e-06> : tensor<1x1x1xf32>}> : () -> tensor<1x1x1xf32>
  %v = tosa.add %mean, %eps : (tensor<1x4x1xf32>, tensor<1x1x1xf32>) -> tensor<1x4x1xf32>
  %r = tosa.rsqrt %v : (tensor<1x4x1xf32>) -> tensor<1x4x1xf32>
  %n = tosa.mul %xf, %r, %shift : (tensor<1x4x8xf32>, tensor<1x4x1xf32>, tensor<1xi8>) -> tensor<1x4x8xf32>
  %shape = tosa.const_shape {values = dense<[1, 1, 8]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %g3 = tosa.reshape %g, %shape : (tensor<8xbf16>, !tosa.shape<3>) -> tensor<1x1x8xbf16>
  %gf = tosa.cast %g3 : (tensor<1x1x8xbf16>) -> tensor<1x1x8xf32>
  %one = "tosa.const"() <{values = dense<1.0> : tensor<1x1x1xf32>}> : () -> tensor<1x1x1xf32>
  %g1 = tosa.add %gf, %one : (tensor<1x1x8xf32>, tensor<1x1x1xf32>) -> tensor<1x1x8xf32>
  %y = tosa.mul %n, %g1, %shift : (tensor<1x4x8xf32>, tensor<1x1x8xf32>, tensor<1xi8>) -> tensor<1x4x8xf32>
  %yb = tosa.cast %y : (tensor<1x4x8xf32>) -> tensor<1x4x8xbf16>
  return %yb : tensor<1x4x8xbf16>
}

// -----

// GPT-2 LayerNorm in TOSA (two-pass variance) with constant gain and bias.
// CHECK-LABEL: func.func @gpt2_ln
// CHECK: %[[G:.*]] = tensor.collapse_shape %{{.*}} {{\[}}[0, 1]] : tensor<1x8xf32> into tensor<8xf32>
// CHECK: %[[B:.*]] = tensor.collapse_shape %{{.*}} {{\[}}[0, 1]] : tensor<1x8xf32> into tensor<8xf32>
// CHECK: flashnorm.layer_norm %arg0 gain(%[[G]] : tensor<8xf32>) bias(%[[B]] : tensor<8xf32>) eps(9.9999997473787516E-6) : tensor<4x8xf32>
// REMARK: Function=gpt2_ln | Remark="raised a LayerNorm (eps 1e-05, gain, bias)"
func.func @gpt2_ln(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %sum = tosa.reduce_sum %x {axis = 1 : i32} : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %invk = "tosa.const"() <{values = dense<0.125> : tensor<1x1xf32>}> : () -> tensor<1x1xf32>
  %mean = tosa.mul %sum, %invk, %shift : (tensor<4x1xf32>, tensor<1x1xf32>, tensor<1xi8>) -> tensor<4x1xf32>
  %c = tosa.sub %x, %mean : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  %sq = tosa.mul %c, %c, %shift : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<1xi8>) -> tensor<4x8xf32>
  %vs = tosa.reduce_sum %sq {axis = 1 : i32} : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %var = tosa.mul %vs, %invk, %shift : (tensor<4x1xf32>, tensor<1x1xf32>, tensor<1xi8>) -> tensor<4x1xf32>
  %eps = "tosa.const"() <{values = dense<1.0e-05> : tensor<1x1xf32>}> : () -> tensor<1x1xf32>
  %ve = tosa.add %var, %eps : (tensor<4x1xf32>, tensor<1x1xf32>) -> tensor<4x1xf32>
  %r = tosa.rsqrt %ve : (tensor<4x1xf32>) -> tensor<4x1xf32>
  %n = tosa.mul %c, %r, %shift : (tensor<4x8xf32>, tensor<4x1xf32>, tensor<1xi8>) -> tensor<4x8xf32>
  %g = "tosa.const"() <{values = dense<[[1.0, 2.0, 0.5, 1.5, 1.0, 0.25, 3.0, 1.0]]> : tensor<1x8xf32>}> : () -> tensor<1x8xf32>
  %b = "tosa.const"() <{values = dense<[[0.1, -0.2, 0.0, 0.3, 0.5, -0.5, 0.0, 1.0]]> : tensor<1x8xf32>}> : () -> tensor<1x8xf32>
  %ng = tosa.mul %n, %g, %shift : (tensor<4x8xf32>, tensor<1x8xf32>, tensor<1xi8>) -> tensor<4x8xf32>
  %y = tosa.add %ng, %b : (tensor<4x8xf32>, tensor<1x8xf32>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// Not norms: left alone. Softmax reduces over the last dimension too.
// CHECK-LABEL: func.func @softmax
// CHECK-NOT: flashnorm
// REMARK-NOT: Function=softmax | Remark="not raised
func.func @softmax(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %ex = tosa.exp %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %s = tosa.reduce_sum %ex {axis = 1 : i32} : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %r = tosa.reciprocal %s : (tensor<4x1xf32>) -> tensor<4x1xf32>
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %y = tosa.mul %ex, %r, %shift : (tensor<4x8xf32>, tensor<4x1xf32>, tensor<1xi8>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// The mean of squares is taken over the rows (axis 0), not the features.
// CHECK-LABEL: func.func @other_axis
// CHECK-NOT: flashnorm
func.func @other_axis(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %sq = tosa.mul %x, %x, %shift : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<1xi8>) -> tensor<4x8xf32>
  %sum = tosa.reduce_sum %sq {axis = 0 : i32} : (tensor<4x8xf32>) -> tensor<1x8xf32>
  %invk = "tosa.const"() <{values = dense<0.25> : tensor<1x1xf32>}> : () -> tensor<1x1xf32>
  %mean = tosa.mul %sum, %invk, %shift : (tensor<1x8xf32>, tensor<1x1xf32>, tensor<1xi8>) -> tensor<1x8xf32>
  %eps = "tosa.const"() <{values = dense<1.0e-05> : tensor<1x1xf32>}> : () -> tensor<1x1xf32>
  %v = tosa.add %mean, %eps : (tensor<1x8xf32>, tensor<1x1xf32>) -> tensor<1x8xf32>
  %r = tosa.rsqrt %v : (tensor<1x8xf32>) -> tensor<1x8xf32>
  %y = tosa.mul %x, %r, %shift : (tensor<4x8xf32>, tensor<1x8xf32>, tensor<1xi8>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// No epsilon: x / sqrt(mean(x^2)) is not the norm (a zero row divides by 0).
// CHECK-LABEL: func.func @no_eps
// CHECK-NOT: flashnorm
// REMARK: Function=no_eps | Remark="not raised: it has no epsilon (eps = 0)"
func.func @no_eps(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %sq = tosa.mul %x, %x, %shift : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<1xi8>) -> tensor<4x8xf32>
  %sum = tosa.reduce_sum %sq {axis = 1 : i32} : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %invk = "tosa.const"() <{values = dense<0.125> : tensor<1x1xf32>}> : () -> tensor<1x1xf32>
  %mean = tosa.mul %sum, %invk, %shift : (tensor<4x1xf32>, tensor<1x1xf32>, tensor<1xi8>) -> tensor<4x1xf32>
  %r = tosa.rsqrt %mean : (tensor<4x1xf32>) -> tensor<4x1xf32>
  %y = tosa.mul %x, %r, %shift : (tensor<4x8xf32>, tensor<4x1xf32>, tensor<1xi8>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// A negative epsilon: x / sqrt(mean(x^2) - 1e-5) is NaN for rows of small
// RMS, which no norm is.
// CHECK-LABEL: func.func @negative_eps
// CHECK-NOT: flashnorm
// REMARK: Function=negative_eps | Remark="not raised: its epsilon is negative (eps = -1e-05)"
func.func @negative_eps(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %sq = tosa.mul %x, %x, %shift : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<1xi8>) -> tensor<4x8xf32>
  %sum = tosa.reduce_sum %sq {axis = 1 : i32} : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %invk = "tosa.const"() <{values = dense<0.125> : tensor<1x1xf32>}> : () -> tensor<1x1xf32>
  %mean = tosa.mul %sum, %invk, %shift : (tensor<4x1xf32>, tensor<1x1xf32>, tensor<1xi8>) -> tensor<4x1xf32>
  %eps = "tosa.const"() <{values = dense<-1.0e-05> : tensor<1x1xf32>}> : () -> tensor<1x1xf32>
  %v = tosa.add %mean, %eps : (tensor<4x1xf32>, tensor<1x1xf32>) -> tensor<4x1xf32>
  %r = tosa.rsqrt %v : (tensor<4x1xf32>) -> tensor<4x1xf32>
  %y = tosa.mul %x, %r, %shift : (tensor<4x8xf32>, tensor<4x1xf32>, tensor<1xi8>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// A sum instead of a mean (missing 1/K): a norm scaled by 1/sqrt(K), whose
// scale becomes a uniform gain (and eps / K its epsilon).
// CHECK-LABEL: func.func @sum_not_mean
// CHECK: %[[G:.*]] = arith.constant dense<0.353553385> : tensor<8xf32>
// CHECK: flashnorm.rms_norm %{{.*}} gain(%[[G]] : tensor<8xf32>) eps(1.2499999{{[0-9]*}}E-6)
// REMARK: Function=sum_not_mean | Remark="raised a RMSNorm (eps 1.25e-06, gain 0.353553)"
func.func @sum_not_mean(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %sq = tosa.mul %x, %x, %shift : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<1xi8>) -> tensor<4x8xf32>
  %sum = tosa.reduce_sum %sq {axis = 1 : i32} : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %eps = "tosa.const"() <{values = dense<1.0e-05> : tensor<1x1xf32>}> : () -> tensor<1x1xf32>
  %v = tosa.add %sum, %eps : (tensor<4x1xf32>, tensor<1x1xf32>) -> tensor<4x1xf32>
  %r = tosa.rsqrt %v : (tensor<4x1xf32>) -> tensor<4x1xf32>
  %y = tosa.mul %x, %r, %shift : (tensor<4x8xf32>, tensor<4x1xf32>, tensor<1xi8>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// Variance as E[x^2] - E[x]^2 (numerically unstable) is not recognized.
// CHECK-LABEL: func.func @naive_variance
// CHECK-NOT: flashnorm.layer_norm
func.func @naive_variance(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %invk = "tosa.const"() <{values = dense<0.125> : tensor<1x1xf32>}> : () -> tensor<1x1xf32>
  %s1 = tosa.reduce_sum %x {axis = 1 : i32} : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %m = tosa.mul %s1, %invk, %shift : (tensor<4x1xf32>, tensor<1x1xf32>, tensor<1xi8>) -> tensor<4x1xf32>
  %sq = tosa.mul %x, %x, %shift : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<1xi8>) -> tensor<4x8xf32>
  %s2 = tosa.reduce_sum %sq {axis = 1 : i32} : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %m2 = tosa.mul %s2, %invk, %shift : (tensor<4x1xf32>, tensor<1x1xf32>, tensor<1xi8>) -> tensor<4x1xf32>
  %mm = tosa.mul %m, %m, %shift : (tensor<4x1xf32>, tensor<4x1xf32>, tensor<1xi8>) -> tensor<4x1xf32>
  %var = tosa.sub %m2, %mm : (tensor<4x1xf32>, tensor<4x1xf32>) -> tensor<4x1xf32>
  %eps = "tosa.const"() <{values = dense<1.0e-05> : tensor<1x1xf32>}> : () -> tensor<1x1xf32>
  %v = tosa.add %var, %eps : (tensor<4x1xf32>, tensor<1x1xf32>) -> tensor<4x1xf32>
  %r = tosa.rsqrt %v : (tensor<4x1xf32>) -> tensor<4x1xf32>
  %c = tosa.sub %x, %m : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  %y = tosa.mul %c, %r, %shift : (tensor<4x8xf32>, tensor<4x1xf32>, tensor<1xi8>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// A per-row statistic reshaped into a per-column one ([8, 1] -> [1, 8] on a
// square x) is no longer per row: not a norm.
// CHECK-LABEL: func.func @row_stat_reshaped_across
// CHECK-NOT: flashnorm
func.func @row_stat_reshaped_across(%x: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %sq = tosa.mul %x, %x, %shift : (tensor<8x8xf32>, tensor<8x8xf32>, tensor<1xi8>) -> tensor<8x8xf32>
  %sum = tosa.reduce_sum %sq {axis = 1 : i32} : (tensor<8x8xf32>) -> tensor<8x1xf32>
  %invk = "tosa.const"() <{values = dense<0.125> : tensor<1x1xf32>}> : () -> tensor<1x1xf32>
  %mean = tosa.mul %sum, %invk, %shift : (tensor<8x1xf32>, tensor<1x1xf32>, tensor<1xi8>) -> tensor<8x1xf32>
  %eps = "tosa.const"() <{values = dense<1.0e-05> : tensor<1x1xf32>}> : () -> tensor<1x1xf32>
  %v = tosa.add %mean, %eps : (tensor<8x1xf32>, tensor<1x1xf32>) -> tensor<8x1xf32>
  %r = tosa.rsqrt %v : (tensor<8x1xf32>) -> tensor<8x1xf32>
  %shape = tosa.const_shape {values = dense<[1, 8]> : tensor<2xindex>} : () -> !tosa.shape<2>
  %rt = tosa.reshape %r, %shape : (tensor<8x1xf32>, !tosa.shape<2>) -> tensor<1x8xf32>
  %n = tosa.mul %x, %rt, %shift : (tensor<8x8xf32>, tensor<1x8xf32>, tensor<1xi8>) -> tensor<8x8xf32>
  return %n : tensor<8x8xf32>
}

// -----

// A statistic of the transposed input (the output map of the copy is not
// the identity) normalizes columns, not rows: not a norm.
// CHECK-LABEL: func.func @transposed_statistic
// CHECK-NOT: flashnorm
#tid = affine_map<(d0, d1) -> (d0, d1)>
#ttr = affine_map<(d0, d1) -> (d1, d0)>
#trow = affine_map<(d0, d1) -> (d0)>
func.func @transposed_statistic(%x: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %e0 = tensor.empty() : tensor<8x8xf32>
  %xt = linalg.generic {indexing_maps = [#tid, #ttr], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<8x8xf32>) outs(%e0 : tensor<8x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  } -> tensor<8x8xf32>
  %zero = arith.constant 0.0 : f32
  %er = tensor.empty() : tensor<8xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%er : tensor<8xf32>) -> tensor<8xf32>
  %sum = linalg.generic {indexing_maps = [#tid, #trow], iterator_types = ["parallel", "reduction"]}
      ins(%xt : tensor<8x8xf32>) outs(%acc : tensor<8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %q = arith.mulf %a, %a : f32
    %s = arith.addf %o, %q : f32
    linalg.yield %s : f32
  } -> tensor<8xf32>
  %e = tensor.empty() : tensor<8x8xf32>
  %n = linalg.generic {indexing_maps = [#tid, #trow, #tid], iterator_types = ["parallel", "parallel"]}
      ins(%x, %sum : tensor<8x8xf32>, tensor<8xf32>) outs(%e : tensor<8x8xf32>) {
  ^bb0(%a: f32, %s: f32, %o: f32):
    %k = arith.constant 0.125 : f32
    %m = arith.mulf %s, %k : f32
    %ep = arith.constant 1.0e-6 : f32
    %v = arith.addf %m, %ep : f32
    %r = math.rsqrt %v : f32
    %y = arith.mulf %a, %r : f32
    linalg.yield %y : f32
  } -> tensor<8x8xf32>
  return %n : tensor<8x8xf32>
}

// -----

// bf16 in, f16 out: normalized in f32, then rounded once to f16.
// CHECK-LABEL: func.func @bf16_in_f16_out
// CHECK: %[[E:.*]] = arith.extf %arg0 : tensor<4x8xbf16> to tensor<4x8xf32>
// CHECK: %[[N:.*]] = flashnorm.rms_norm %[[E]]
// CHECK: arith.truncf %[[N]] : tensor<4x8xf32> to tensor<4x8xf16>
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func @bf16_in_f16_out(%xb: tensor<4x8xbf16>) -> tensor<4x8xf16> {
  %x = arith.extf %xb : tensor<4x8xbf16> to tensor<4x8xf32>
  %zero = arith.constant 0.0 : f32
  %er = tensor.empty() : tensor<4xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%er : tensor<4xf32>) -> tensor<4xf32>
  %sum = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<4x8xf32>) outs(%acc : tensor<4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %q = arith.mulf %a, %a : f32
    %s = arith.addf %o, %q : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  %e = tensor.empty() : tensor<4x8xf32>
  %n = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %sum : tensor<4x8xf32>, tensor<4xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %s: f32, %o: f32):
    %k = arith.constant 0.125 : f32
    %m = arith.mulf %s, %k : f32
    %ep = arith.constant 1.0e-6 : f32
    %v = arith.addf %m, %ep : f32
    %r = math.rsqrt %v : f32
    %y = arith.mulf %a, %r : f32
    linalg.yield %y : f32
  } -> tensor<4x8xf32>
  %h = arith.truncf %n : tensor<4x8xf32> to tensor<4x8xf16>
  return %h : tensor<4x8xf16>
}

// -----

// Named element-wise linalg ops for the square and the normalize step
// (linalg.mul %x, %x: the same input twice is a square, not a residual).
// CHECK-LABEL: func.func @named_elementwise
// CHECK: flashnorm.rms_norm %arg0 eps(9.99999974{{[0-9]*}}E-6) : tensor<4x8xf32>
// CHECK-NOT: linalg.mul
// REMARK: Function=named_elementwise | Remark="raised a RMSNorm (eps 1e-05)"
func.func @named_elementwise(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %e1 = tensor.empty() : tensor<4x8xf32>
  %sq = linalg.mul ins(%x, %x : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e1 : tensor<4x8xf32>) -> tensor<4x8xf32>
  %z = arith.constant 0.0 : f32
  %e4 = tensor.empty() : tensor<4xf32>
  %acc = linalg.fill ins(%z : f32) outs(%e4 : tensor<4xf32>) -> tensor<4xf32>
  %sum = linalg.reduce ins(%sq : tensor<4x8xf32>) outs(%acc : tensor<4xf32>) dimensions = [1]
    (%in: f32, %out: f32) {
      %s0 = arith.addf %in, %out : f32
      linalg.yield %s0 : f32
    }
  %e5 = tensor.empty() : tensor<4xf32>
  %k = arith.constant dense<8.0> : tensor<4xf32>
  %mean = linalg.div ins(%sum, %k : tensor<4xf32>, tensor<4xf32>) outs(%e5 : tensor<4xf32>) -> tensor<4xf32>
  %eps = arith.constant dense<1.0e-05> : tensor<4xf32>
  %e6 = tensor.empty() : tensor<4xf32>
  %v = linalg.add ins(%mean, %eps : tensor<4xf32>, tensor<4xf32>) outs(%e6 : tensor<4xf32>) -> tensor<4xf32>
  %r = math.rsqrt %v : tensor<4xf32>
  %e2 = tensor.empty() : tensor<4x8xf32>
  %b = linalg.broadcast ins(%r : tensor<4xf32>) outs(%e2 : tensor<4x8xf32>) dimensions = [1]
  %e3 = tensor.empty() : tensor<4x8xf32>
  %n = linalg.mul ins(%x, %b : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e3 : tensor<4x8xf32>) -> tensor<4x8xf32>
  return %n : tensor<4x8xf32>
}

// -----

// Bufferized linalg is not read; the remark says so instead of nothing.
// CHECK-LABEL: func.func @on_buffers
// CHECK-NOT: flashnorm
// REMARK: Function=on_buffers | Remark="not raised: 1 row reduction(s) in this function work on buffers (memref); the flashnorm passes read linalg on tensors, before bufferization"
func.func @on_buffers(%x: memref<4x8xf32>, %sum: memref<4xf32>) {
  linalg.reduce ins(%x : memref<4x8xf32>) outs(%sum : memref<4xf32>) dimensions = [1]
    (%in: f32, %init: f32) {
      %m = arith.mulf %in, %in : f32
      %a = arith.addf %m, %init : f32
      linalg.yield %a : f32
    }
  return
}

// -----

// torch-mlir's batch-1 forms with K = 1: the reduced loop and the row
// loops all run over one element; literal 0 results stand for the parallel
// ones only (the reduction's result still does not index K).
// CHECK-LABEL: func.func @batch1_k1
// CHECK: flashnorm.rms_norm %{{.*}} eps(9.9999997473787516E-6) : tensor<1x3x1xf32>
#full = affine_map<(d0, d1, d2) -> (0, d1, d2)>
#row = affine_map<(d0, d1, d2) -> (0, d1, 0)>
#id = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#keep = affine_map<(d0, d1, d2) -> (d0, d1, 0)>
func.func @batch1_k1(%x: tensor<1x3x1xf32>) -> tensor<1x3x1xf32> {
  %e = tensor.empty() : tensor<1x3x1xf32>
  %sq = linalg.generic {indexing_maps = [#full, #full, #id], iterator_types = ["parallel", "parallel", "parallel"]} ins(%x, %x : tensor<1x3x1xf32>, tensor<1x3x1xf32>) outs(%e : tensor<1x3x1xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    linalg.yield %m : f32
  } -> tensor<1x3x1xf32>
  %zero = arith.constant 0.0 : f32
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<1x3x1xf32>) -> tensor<1x3x1xf32>
  %sum = linalg.generic {indexing_maps = [#id, #keep], iterator_types = ["parallel", "parallel", "reduction"]} ins(%sq : tensor<1x3x1xf32>) outs(%acc : tensor<1x3x1xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.addf %a, %o : f32
    linalg.yield %s : f32
  } -> tensor<1x3x1xf32>
  %eps = arith.constant 1.0e-05 : f64
  %inv = linalg.generic {indexing_maps = [#row, #id], iterator_types = ["parallel", "parallel", "parallel"]} ins(%sum : tensor<1x3x1xf32>) outs(%e : tensor<1x3x1xf32>) {
  ^bb0(%a: f32, %o: f32):
    %t = arith.truncf %eps : f64 to f32
    %v = arith.addf %a, %t : f32
    %r = math.rsqrt %v : f32
    linalg.yield %r : f32
  } -> tensor<1x3x1xf32>
  %y = linalg.generic {indexing_maps = [#full, #row, #id], iterator_types = ["parallel", "parallel", "parallel"]} ins(%x, %inv : tensor<1x3x1xf32>, tensor<1x3x1xf32>) outs(%e : tensor<1x3x1xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    linalg.yield %m : f32
  } -> tensor<1x3x1xf32>
  return %y : tensor<1x3x1xf32>
}
