// Conversions on a norm's way that the raise must see as they are.
// RUN: flashnorm-opt %s --flashnorm-raise | FileCheck %s

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#feat = affine_map<(d0, d1) -> (d1)>

// A linalg.copy into bf16 rounds the normalized value: the raised norm keeps
// that rounding (a copy was taken for an op that only moves values).
// CHECK-LABEL: func.func @copy_rounds
// CHECK: %[[N:.*]] = flashnorm.rms_norm %arg0 gain(%arg1 : tensor<8xf32>)
// CHECK: %[[R:.*]] = arith.truncf %[[N]] : tensor<4x8xf32> to tensor<4x8xbf16>
// CHECK: arith.extf %[[R]]
func.func @copy_rounds(%x: tensor<4x8xf32>, %g: tensor<8xf32>) -> tensor<4x8xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x8xf32>
  %er = tensor.empty() : tensor<4xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%er : tensor<4xf32>) -> tensor<4xf32>
  %sum = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<4x8xf32>) outs(%acc : tensor<4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %p = arith.mulf %a, %a : f32
    %s = arith.addf %o, %p : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  %n = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]} ins(%x, %sum : tensor<4x8xf32>, tensor<4xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %s: f32, %o: f32):
    %k = arith.constant 8.0 : f32
    %m = arith.divf %s, %k : f32
    %eps = arith.constant 1.0e-05 : f32
    %v = arith.addf %m, %eps : f32
    %r = math.rsqrt %v : f32
    %p = arith.mulf %a, %r : f32
    linalg.yield %p : f32
  } -> tensor<4x8xf32>
  %eb = tensor.empty() : tensor<4x8xbf16>
  %nb = linalg.copy ins(%n : tensor<4x8xf32>) outs(%eb : tensor<4x8xbf16>) -> tensor<4x8xbf16>
  %y = linalg.generic {indexing_maps = [#id, #feat, #id], iterator_types = ["parallel", "parallel"]} ins(%nb, %g : tensor<4x8xbf16>, tensor<8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: bf16, %gg: f32, %o: f32):
    %w = arith.extf %a : bf16 to f32
    %q = arith.mulf %w, %gg : f32
    linalg.yield %q : f32
  } -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// An integer count wider than 64 bits converts from all its bits: 2^100 + 8
// is not a count of 8 (its low 64 bits were read). Not 1/K, it is a
// uniform factor: eps 1e-5 x (2^100 + 8) / 8.
// CHECK-LABEL: func.func @wide_count
// CHECK: flashnorm.rms_norm %arg0 gain({{.*}}) eps(1.58456{{[0-9]*}}E+24)
func.func @wide_count(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x8xf32>
  %er = tensor.empty() : tensor<4xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%er : tensor<4xf32>) -> tensor<4xf32>
  %sum = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<4x8xf32>) outs(%acc : tensor<4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %p = arith.mulf %a, %a : f32
    %s = arith.addf %o, %p : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  %n = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]} ins(%x, %sum : tensor<4x8xf32>, tensor<4xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %s: f32, %o: f32):
    %ki = arith.constant 1267650600228229401496703205384 : i128
    %k = arith.sitofp %ki : i128 to f32
    %m = arith.divf %s, %k : f32
    %eps = arith.constant 1.0e-05 : f32
    %v = arith.addf %m, %eps : f32
    %r = math.rsqrt %v : f32
    %p = arith.mulf %a, %r : f32
    linalg.yield %p : f32
  } -> tensor<4x8xf32>
  return %n : tensor<4x8xf32>
}

// uitofp reads the bits unsigned: -8 as i8 is 248.
// CHECK-LABEL: func.func @unsigned_count
// CHECK: flashnorm.rms_norm %arg0 gain({{.*}}) eps(3.09999{{[0-9]*}}E-4)
func.func @unsigned_count(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x8xf32>
  %er = tensor.empty() : tensor<4xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%er : tensor<4xf32>) -> tensor<4xf32>
  %sum = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<4x8xf32>) outs(%acc : tensor<4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %p = arith.mulf %a, %a : f32
    %s = arith.addf %o, %p : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  %n = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]} ins(%x, %sum : tensor<4x8xf32>, tensor<4xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %s: f32, %o: f32):
    %ki = arith.constant -8 : i8
    %k = arith.uitofp %ki : i8 to f32
    %m = arith.divf %s, %k : f32
    %eps = arith.constant 1.0e-05 : f32
    %v = arith.addf %m, %eps : f32
    %r = math.rsqrt %v : f32
    %p = arith.mulf %a, %r : f32
    linalg.yield %p : f32
  } -> tensor<4x8xf32>
  return %n : tensor<4x8xf32>
}
