// Contractions the passes must not take for projections, and projections
// they must rebuild whole, executed against the unrewritten functions; each
// was a silent wrong rewrite, invalid IR or a crash once. Upstream's
// contraction interface accepts any unary op around the product and the
// sum; a scale moves only through `out + c(a) * c(b)` with c a widening
// conversion (docs/MATH.md §2), so each of these is refused:
// - exp_body: out + exp(a) * b; tanh_after_add: tanh(out + a * b);
// - truncf_body: the activation rounded to f16 in the body of an f32
//   projection (the raw row overflows f16 where the normalized one fits);
// - neg_body_f16: out + (-a) * b in f16 (linear, but the f32 rebuild wrote
//   a fresh body without the negation);
// - drop_exp_body: the same exp body between two norms (the cancel);
// - fold_exp_weight: out + a * exp(w) with a constant w (the gain fold).
// Rebuilt whole:
// - int8_weight_f16: an f16 projection of an int8 weight converted in its
//   body (sitofp): the f32 rebuild extended the i8 with extf (invalid IR);
// - both_inputs_f16: an f16 generic reading the norm through both inputs:
//   rebuilt for the first, it was used after its erasure for the second
//   (a crash); the second read now keeps the norm.
// And merge_eps0: rms_norm(rms_norm(x, 1e-6), 0) merged to eps 0: the
// mean square of rows of 1e-22 underflows where the first norm had scaled
// them up (inf); refused like any merged eps below f32's normal range.
// RUN: flashnorm-opt %s --flashnorm-defer-scale --remarks-filter=flashnorm --remark-format=emitRemark -o /dev/null 2>&1 | FileCheck %s --check-prefix=DEFER
// RUN: flashnorm-opt %s --flashnorm-fold-gains --remarks-filter=flashnorm --remark-format=emitRemark -o /dev/null 2>&1 | FileCheck %s --check-prefix=FOLD
// RUN: flashnorm-opt %s --flashnorm-drop-redundant --remarks-filter=flashnorm --remark-format=emitRemark -o /dev/null 2>&1 | FileCheck %s --check-prefix=DROP
// RUN: flashnorm-run %s -e exp_body --pipeline=flashnorm --compare | FileCheck %s
// RUN: flashnorm-run %s -e tanh_after_add --pipeline=flashnorm --compare | FileCheck %s
// RUN: flashnorm-run %s -e truncf_body --pipeline=flashnorm --compare --input-range=1e5 --arg=1=0.5 | FileCheck %s
// RUN: flashnorm-run %s -e neg_body_f16 --pipeline=flashnorm --compare --rtol 1e-2 --atol 1e-2 | FileCheck %s
// RUN: flashnorm-run %s -e drop_exp_body --pipeline=flashnorm --compare | FileCheck %s
// RUN: flashnorm-run %s -e fold_exp_weight --pipeline=flashnorm --compare | FileCheck %s
// RUN: flashnorm-run %s -e int8_weight_f16 --pipeline=flashnorm --compare --rtol 1e-2 --atol 1e-2 --int-max=100 | FileCheck %s
// RUN: flashnorm-run %s -e both_inputs_f16 --pipeline=flashnorm --compare --rtol 1e-2 --atol 1e-2 | FileCheck %s
// RUN: flashnorm-run %s -e merge_eps0 --pipeline=flashnorm --compare --input-range=1e-22 | FileCheck %s
// CHECK: MATCH
// DEFER-DAG: Function=exp_body | Remark="not deferred; user 'linalg.generic' at {{.*}}: its body is not out + a * b (widening conversions only): not linear in the activation"
// DEFER-DAG: Function=tanh_after_add | Remark="not deferred; user 'linalg.generic' at {{.*}}: its body is not out + a * b
// DEFER-DAG: Function=truncf_body | Remark="not deferred; user 'linalg.generic' at {{.*}}: its body is not out + a * b
// DEFER-DAG: Function=neg_body_f16 | Remark="not deferred; user 'linalg.generic' at {{.*}}: its body is not out + a * b
// DEFER-DAG: Function=int8_weight_f16 | Remark="deferred 1/RMS past 1 projection(s)"
// DEFER-DAG: Function=both_inputs_f16 | Remark="deferred 1/RMS past 1 projection(s); kept the norm for the others; user 'linalg.generic' at {{.*}}: it reads the norm through both inputs, and its result is narrower than f32"
// FOLD-DAG: Function=fold_exp_weight | Remark="not folded: user 'linalg.generic' at {{.*}}: its body is not out + a * b
// DROP-DAG: Function=merge_eps0 | Remark="not merged: the merged epsilon 0 is below f32's normal range"
#act = affine_map<(m, n, k) -> (m, k)>
#wt = affine_map<(m, n, k) -> (k, n)>
#out = affine_map<(m, n, k) -> (m, n)>
#a = affine_map<(m, j, k) -> (m, k)>
#o = affine_map<(m, j, k) -> (m, j)>

func.func @exp_body(%x: tensor<4x8xf32>, %w: tensor<8x6xf32>) -> tensor<4x6xf32> {
  %n = flashnorm.rms_norm %x eps(1.0e-06) : tensor<4x8xf32>
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x6xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<4x6xf32>) -> tensor<4x6xf32>
  %y = linalg.generic {indexing_maps = [#act, #wt, #out], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%n, %w : tensor<4x8xf32>, tensor<8x6xf32>) outs(%z : tensor<4x6xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %ea = math.exp %a : f32
    %p = arith.mulf %ea, %b : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<4x6xf32>
  return %y : tensor<4x6xf32>
}

func.func @truncf_body(%x: tensor<4x8xf32>, %w: tensor<8x6xf16>) -> tensor<4x6xf32> {
  %n = flashnorm.rms_norm %x eps(1.0e-06) : tensor<4x8xf32>
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x6xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<4x6xf32>) -> tensor<4x6xf32>
  %y = linalg.generic {indexing_maps = [#act, #wt, #out], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%n, %w : tensor<4x8xf32>, tensor<8x6xf16>) outs(%z : tensor<4x6xf32>) {
  ^bb0(%a: f32, %b: f16, %acc: f32):
    %ah = arith.truncf %a : f32 to f16
    %p = arith.mulf %ah, %b : f16
    %pe = arith.extf %p : f16 to f32
    %s = arith.addf %acc, %pe : f32
    linalg.yield %s : f32
  } -> tensor<4x6xf32>
  return %y : tensor<4x6xf32>
}

func.func @neg_body_f16(%x: tensor<4x8xf16>, %w: tensor<8x6xf16>) -> tensor<4x6xf16> {
  %n = flashnorm.rms_norm %x eps(1.0e-06) : tensor<4x8xf16>
  %c0 = arith.constant 0.0 : f16
  %e = tensor.empty() : tensor<4x6xf16>
  %z = linalg.fill ins(%c0 : f16) outs(%e : tensor<4x6xf16>) -> tensor<4x6xf16>
  %y = linalg.generic {indexing_maps = [#act, #wt, #out], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%n, %w : tensor<4x8xf16>, tensor<8x6xf16>) outs(%z : tensor<4x6xf16>) {
  ^bb0(%a: f16, %b: f16, %acc: f16):
    %na = arith.negf %a : f16
    %p = arith.mulf %na, %b : f16
    %s = arith.addf %acc, %p : f16
    linalg.yield %s : f16
  } -> tensor<4x6xf16>
  return %y : tensor<4x6xf16>
}

func.func @int8_weight_f16(%x: tensor<4x8xf16>, %w: tensor<8x6xi8>) -> tensor<4x6xf16> {
  %n = flashnorm.rms_norm %x eps(1.0e-06) : tensor<4x8xf16>
  %c0 = arith.constant 0.0 : f16
  %e = tensor.empty() : tensor<4x6xf16>
  %z = linalg.fill ins(%c0 : f16) outs(%e : tensor<4x6xf16>) -> tensor<4x6xf16>
  %y = linalg.generic {indexing_maps = [#act, #wt, #out], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%n, %w : tensor<4x8xf16>, tensor<8x6xi8>) outs(%z : tensor<4x6xf16>) {
  ^bb0(%a: f16, %b: i8, %acc: f16):
    %bf = arith.sitofp %b : i8 to f16
    %p = arith.mulf %a, %bf : f16
    %s = arith.addf %acc, %p : f16
    linalg.yield %s : f16
  } -> tensor<4x6xf16>
  return %y : tensor<4x6xf16>
}

func.func @both_inputs_f16(%x: tensor<4x8xf16>) -> tensor<4x3xf16> {
  %n = flashnorm.rms_norm %x eps(1.0e-06) : tensor<4x8xf16>
  %c0 = arith.constant 0.0 : f16
  %e = tensor.empty() : tensor<4x3xf16>
  %z = linalg.fill ins(%c0 : f16) outs(%e : tensor<4x3xf16>) -> tensor<4x3xf16>
  %y = linalg.generic {indexing_maps = [#a, #a, #o], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%n, %n : tensor<4x8xf16>, tensor<4x8xf16>) outs(%z : tensor<4x3xf16>) {
  ^bb0(%p: f16, %q: f16, %acc: f16):
    %m = arith.mulf %p, %q : f16
    %s = arith.addf %acc, %m : f16
    linalg.yield %s : f16
  } -> tensor<4x3xf16>
  return %y : tensor<4x3xf16>
}

func.func @drop_exp_body(%x: tensor<4x8xf32>, %w: tensor<8x6xf32>) -> tensor<4x6xf32> {
  %n = flashnorm.rms_norm %x eps(1.0e-06) : tensor<4x8xf32>
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x6xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<4x6xf32>) -> tensor<4x6xf32>
  %y = linalg.generic {indexing_maps = [#act, #wt, #out], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%n, %w : tensor<4x8xf32>, tensor<8x6xf32>) outs(%z : tensor<4x6xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %ea = math.exp %a : f32
    %p = arith.mulf %ea, %b : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<4x6xf32>
  %r = flashnorm.rms_norm %y eps(0.0) : tensor<4x6xf32>
  return %r : tensor<4x6xf32>
}

func.func @fold_exp_weight(%x: tensor<4x8xf32>) -> tensor<4x6xf32> {
  %g = arith.constant dense<[0.5, 1.5, 2.0, 0.25, 1.0, 3.0, 0.75, 1.25]> : tensor<8xf32>
  %w = arith.constant dense<0.3> : tensor<8x6xf32>
  %n = flashnorm.rms_norm %x gain(%g : tensor<8xf32>) eps(1.0e-06) : tensor<4x8xf32>
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x6xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<4x6xf32>) -> tensor<4x6xf32>
  %y = linalg.generic {indexing_maps = [#act, #wt, #out], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%n, %w : tensor<4x8xf32>, tensor<8x6xf32>) outs(%z : tensor<4x6xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %eb = math.exp %b : f32
    %p = arith.mulf %a, %eb : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<4x6xf32>
  return %y : tensor<4x6xf32>
}

func.func @merge_eps0(%x: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %a = flashnorm.rms_norm %x eps(1.0e-06) : tensor<4x16xf32>
  %b = flashnorm.rms_norm %a eps(0.0) : tensor<4x16xf32>
  return %b : tensor<4x16xf32>
}

func.func @tanh_after_add(%x: tensor<4x8xf32>, %w: tensor<8x6xf32>) -> tensor<4x6xf32> {
  %n = flashnorm.rms_norm %x eps(1.0e-06) : tensor<4x8xf32>
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x6xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<4x6xf32>) -> tensor<4x6xf32>
  %y = linalg.generic {indexing_maps = [#act, #wt, #out], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%n, %w : tensor<4x8xf32>, tensor<8x6xf32>) outs(%z : tensor<4x6xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    %t = math.tanh %s : f32
    linalg.yield %t : f32
  } -> tensor<4x6xf32>
  return %y : tensor<4x6xf32>
}
