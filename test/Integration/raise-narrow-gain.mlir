// A bf16 gain in an f32 program (a bf16 checkpoint run in f32): the gain is
// loaded, or reshaped, in bf16 and widened exactly before it multiplies.
// Nothing rounds the normalized value to bf16, so the raised norm does not
// either (ops that only load or move the gain were taken for roundings: a
// bf16 cast after the norm gave errors of 2%, and it kept the gain from
// being folded and 1/RMS from being deferred). Executed at f32's tolerance.
// RUN: flashnorm-opt %s --flashnorm-raise | FileCheck %s
// RUN: flashnorm-run %s -e checkpoint_gain --pipeline=flashnorm --compare --rtol 1e-5 | FileCheck %s --check-prefix=CMP
// RUN: flashnorm-run %s -e tosa_gain --pipeline=flashnorm --compare --rtol 1e-5 | FileCheck %s --check-prefix=CMP
// RUN: flashnorm-opt %s --flashnorm --remarks-filter=flashnorm --remark-format=emitRemark -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK
// CMP: MATCH
// CHECK-LABEL: func.func @checkpoint_gain
// CHECK: flashnorm.rms_norm {{.*}} : tensor<4x8xf32>
// CHECK-NOT: truncf
// CHECK: linalg.matmul
// CHECK-LABEL: func.func @tosa_gain
// CHECK: flashnorm.rms_norm {{.*}} : tensor<1x4x8xf32>
// CHECK-NOT: truncf
// CHECK: return
// REMARK: Function=checkpoint_gain | Remark="folded the gain into 1 projection weight(s)"
// REMARK: Function=checkpoint_gain | Remark="deferred 1/RMS past 1 projection(s)

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#feat = affine_map<(d0, d1) -> (d1)>
module {
  ml_program.global private @norm_weight(dense<[-1.7928, 0.6871, 0.2610, 0.7673, -1.7547, 1.6530, -1.6513, -1.2611]> : tensor<8xbf16>) : tensor<8xbf16>
  ml_program.global private @proj_weight(dense<[[-0.4301, -0.8731, 0.7079, 0.9796, -0.8230, 0.6012], [-0.1791, -0.6985, -0.4122, 0.5376, 0.7455, -0.9116], [0.2291, -0.9101, 0.4369, -0.3381, 0.7618, 0.9613], [0.0108, 0.9970, -0.3807, -0.8461, 0.1995, -0.9372], [-0.6052, -0.1841, 0.2209, -0.6876, -0.9151, 0.7356], [-0.3723, 0.9173, 0.7933, -0.2444, -0.0792, 0.0401], [0.2878, 0.1913, 0.1185, 0.2403, 0.8812, 0.0141], [-0.1376, 0.4406, -0.5247, -0.3978, 0.9556, 0.0423]]> : tensor<8x6xf32>) : tensor<8x6xf32>
  func.func @checkpoint_gain(%x: tensor<4x8xf32>) -> tensor<4x6xf32> {
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
    %gb = ml_program.global_load_const @norm_weight : tensor<8xbf16>
    %g = arith.extf %gb : tensor<8xbf16> to tensor<8xf32>
    %n = linalg.generic {indexing_maps = [#id, #row, #feat, #id], iterator_types = ["parallel", "parallel"]} ins(%x, %sum, %g : tensor<4x8xf32>, tensor<4xf32>, tensor<8xf32>) outs(%e : tensor<4x8xf32>) {
    ^bb0(%a: f32, %s: f32, %gg: f32, %o: f32):
      %k = arith.constant 8.0 : f32
      %m = arith.divf %s, %k : f32
      %eps = arith.constant 1.0e-05 : f32
      %v = arith.addf %m, %eps : f32
      %r = math.rsqrt %v : f32
      %p = arith.mulf %a, %r : f32
      %q = arith.mulf %p, %gg : f32
      linalg.yield %q : f32
    } -> tensor<4x8xf32>
    %w = ml_program.global_load_const @proj_weight : tensor<8x6xf32>
    %eo = tensor.empty() : tensor<4x6xf32>
    %z = linalg.fill ins(%zero : f32) outs(%eo : tensor<4x6xf32>) -> tensor<4x6xf32>
    %y = linalg.matmul ins(%n, %w : tensor<4x8xf32>, tensor<8x6xf32>) outs(%z : tensor<4x6xf32>) -> tensor<4x6xf32>
    return %y : tensor<4x6xf32>
  }

  func.func @tosa_gain(%x: tensor<1x4x8xf32>, %g: tensor<8xbf16>) -> tensor<1x4x8xf32> {
    %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
    %sq = tosa.mul %x, %x, %shift : (tensor<1x4x8xf32>, tensor<1x4x8xf32>, tensor<1xi8>) -> tensor<1x4x8xf32>
    %sum = tosa.reduce_sum %sq {axis = 2 : i32} : (tensor<1x4x8xf32>) -> tensor<1x4x1xf32>
    %invk = "tosa.const"() <{values = dense<0.125> : tensor<1x1x1xf32>}> : () -> tensor<1x1x1xf32>
    %mean = tosa.mul %sum, %invk, %shift : (tensor<1x4x1xf32>, tensor<1x1x1xf32>, tensor<1xi8>) -> tensor<1x4x1xf32>
    %eps = "tosa.const"() <{values = dense<1.0e-05> : tensor<1x1x1xf32>}> : () -> tensor<1x1x1xf32>
    %v = tosa.add %mean, %eps : (tensor<1x4x1xf32>, tensor<1x1x1xf32>) -> tensor<1x4x1xf32>
    %r = tosa.rsqrt %v : (tensor<1x4x1xf32>) -> tensor<1x4x1xf32>
    %n = tosa.mul %x, %r, %shift : (tensor<1x4x8xf32>, tensor<1x4x1xf32>, tensor<1xi8>) -> tensor<1x4x8xf32>
    %shape = tosa.const_shape {values = dense<[1, 1, 8]> : tensor<3xindex>} : () -> !tosa.shape<3>
    %g3 = tosa.reshape %g, %shape : (tensor<8xbf16>, !tosa.shape<3>) -> tensor<1x1x8xbf16>
    %gf = tosa.cast %g3 : (tensor<1x1x8xbf16>) -> tensor<1x1x8xf32>
    %y = tosa.mul %n, %gf, %shift : (tensor<1x4x8xf32>, tensor<1x1x8xf32>, tensor<1xi8>) -> tensor<1x4x8xf32>
    return %y : tensor<1x4x8xf32>
  }
}
