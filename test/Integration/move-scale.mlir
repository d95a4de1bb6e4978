// Execution: post-scales moved past the down projection keep the numbers
// (SwiGLU, ReGLU as torch-mlir writes relu, a ReLU MLP in TOSA bf16, squared
// ReLU as powf, fpowi and tosa.pow), against the unrewritten functions on
// the same random inputs, through the CPU pipeline. `flashnorm` defers
// 1/RMS, then moves it.
// RUN: flashnorm-opt %s --flashnorm --remarks-filter=flashnorm --remark-format=emitRemark -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK
// RUN: flashnorm-run %s -e swiglu --pipeline=flashnorm --compare --rtol 1e-4 --atol 1e-5 | FileCheck %s
// RUN: flashnorm-run %s -e reglu --pipeline=flashnorm --compare --rtol 1e-4 --atol 1e-5 | FileCheck %s
// RUN: flashnorm-run %s -e reads_init --pipeline=flashnorm --compare --rtol 1e-4 --atol 1e-5 | FileCheck %s
// RUN: flashnorm-run %s -e relu_tosa_bf16 --pipeline=flashnorm --compare --rtol 3e-2 --atol 3e-2 | FileCheck %s
// RUN: flashnorm-run %s -e squared_relu_powf --pipeline=flashnorm --compare --rtol 1e-4 --atol 1e-5 | FileCheck %s
// RUN: flashnorm-run %s -e squared_relu_fpowi --pipeline=flashnorm --compare --rtol 1e-4 --atol 1e-5 | FileCheck %s
// RUN: flashnorm-run %s -e squared_relu_tosa --pipeline=flashnorm --compare --rtol 1e-4 --atol 1e-5 | FileCheck %s
// A wrong move is caught: the rewritten swiglu with the gate's post-scale
// (its only [6, 48] one) dropped, as if moved through silu.
// RUN: flashnorm-opt %s --flashnorm -o %t.moved.mlir
// RUN: sed -E 's/flashnorm.post_scale (%%[0-9]+), %%[0-9]+ : tensor<6x48xf32>, tensor<6xf32> -> tensor<6x48xf32>/tensor.cast \1 : tensor<6x48xf32> to tensor<6x48xf32>/' %t.moved.mlir > %t.mutant.mlir
// RUN: not flashnorm-run %t.mutant.mlir -e swiglu --compare --compare-with=%s --rtol 1e-4 --atol 1e-5 | FileCheck %s --check-prefix=MUTANT
// CHECK: MATCH
// MUTANT: MISMATCH
// REMARK-DAG: Function=swiglu | Remark="moved 1 post-scale(s) past 'linalg.matmul', applied after it as 1 post-scale(s)
// REMARK-DAG: Function=reglu | Remark="moved 2 post-scale(s) past 'linalg.matmul', applied after it as 2 post-scale(s)
// REMARK-DAG: Function=reads_init | Remark="moved 1 post-scale(s) past 'linalg.matmul', applied after it as 2 post-scale(s)
// REMARK-DAG: Function=relu_tosa_bf16 | Remark="moved 1 post-scale(s) past 'tosa.matmul', applied after it as 1 post-scale(s)
// REMARK-DAG: Function=squared_relu_powf | Remark="moved 1 post-scale(s) past 'linalg.matmul', applied after it as 2 post-scale(s)
// REMARK-DAG: Function=squared_relu_fpowi | Remark="moved 1 post-scale(s) past 'linalg.matmul', applied after it as 2 post-scale(s)
// REMARK-DAG: Function=squared_relu_tosa | Remark="moved 1 post-scale(s) past 'tosa.matmul', applied after it as 2 post-scale(s)

#id = affine_map<(i, j) -> (i, j)>
func.func @swiglu(%x: tensor<6x32xf32>, %wg: tensor<32x48xf32>, %wu: tensor<32x48xf32>,
                  %wd: tensor<48x32xf32>) -> tensor<6x32xf32> {
  %n = flashnorm.rms_norm %x eps(1.0e-05) : tensor<6x32xf32>
  %c0 = arith.constant 0.0 : f32
  %c1 = arith.constant 1.0 : f32
  %e = tensor.empty() : tensor<6x48xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<6x48xf32>) -> tensor<6x48xf32>
  %g = linalg.matmul ins(%n, %wg : tensor<6x32xf32>, tensor<32x48xf32>) outs(%z : tensor<6x48xf32>) -> tensor<6x48xf32>
  %u = linalg.matmul ins(%n, %wu : tensor<6x32xf32>, tensor<32x48xf32>) outs(%z : tensor<6x48xf32>) -> tensor<6x48xf32>
  %a = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%g, %u : tensor<6x48xf32>, tensor<6x48xf32>) outs(%e : tensor<6x48xf32>) {
  ^bb0(%gv: f32, %uv: f32, %o: f32):
    %ng = arith.negf %gv : f32
    %ex = math.exp %ng : f32
    %den = arith.addf %c1, %ex : f32
    %silu = arith.divf %gv, %den : f32
    %m = arith.mulf %silu, %uv : f32
    linalg.yield %m : f32
  } -> tensor<6x48xf32>
  %e2 = tensor.empty() : tensor<6x32xf32>
  %z2 = linalg.fill ins(%c0 : f32) outs(%e2 : tensor<6x32xf32>) -> tensor<6x32xf32>
  %d = linalg.matmul ins(%a, %wd : tensor<6x48xf32>, tensor<48x32xf32>) outs(%z2 : tensor<6x32xf32>) -> tensor<6x32xf32>
  %r = arith.addf %x, %d : tensor<6x32xf32>
  return %r : tensor<6x32xf32>
}

func.func @reglu(%x: tensor<6x32xf32>, %wg: tensor<32x48xf32>, %wu: tensor<32x48xf32>,
                 %wd: tensor<48x32xf32>) -> tensor<6x32xf32> {
  %n = flashnorm.rms_norm %x eps(1.0e-05) : tensor<6x32xf32>
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<6x48xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<6x48xf32>) -> tensor<6x48xf32>
  %g = linalg.matmul ins(%n, %wg : tensor<6x32xf32>, tensor<32x48xf32>) outs(%z : tensor<6x48xf32>) -> tensor<6x48xf32>
  %u = linalg.matmul ins(%n, %wu : tensor<6x32xf32>, tensor<32x48xf32>) outs(%z : tensor<6x48xf32>) -> tensor<6x48xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%g : tensor<6x48xf32>) outs(%e : tensor<6x48xf32>) {
  ^bb0(%in: f32, %o: f32):
    %p = arith.cmpf ugt, %in, %c0 : f32
    %v = arith.select %p, %in, %c0 : f32
    linalg.yield %v : f32
  } -> tensor<6x48xf32>
  %m = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%r, %u : tensor<6x48xf32>, tensor<6x48xf32>) outs(%e : tensor<6x48xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %v = arith.mulf %a, %b : f32
    linalg.yield %v : f32
  } -> tensor<6x48xf32>
  %e2 = tensor.empty() : tensor<6x32xf32>
  %z2 = linalg.fill ins(%c0 : f32) outs(%e2 : tensor<6x32xf32>) -> tensor<6x32xf32>
  %d = linalg.matmul ins(%m, %wd : tensor<6x48xf32>, tensor<48x32xf32>) outs(%z2 : tensor<6x32xf32>) -> tensor<6x32xf32>
  return %d : tensor<6x32xf32>
}

// (u * u through the generic's input and its init: s^2.)
func.func @reads_init(%x: tensor<6x32xf32>, %wu: tensor<32x96xf32>,
                      %wd: tensor<96x32xf32>) -> tensor<6x32xf32> {
  %n = flashnorm.rms_norm %x eps(1.0e-05) : tensor<6x32xf32>
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<6x96xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<6x96xf32>) -> tensor<6x96xf32>
  %u = linalg.matmul ins(%n, %wu : tensor<6x32xf32>, tensor<32x96xf32>) outs(%z : tensor<6x96xf32>) -> tensor<6x96xf32>
  %m = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%u : tensor<6x96xf32>) outs(%u : tensor<6x96xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = arith.mulf %a, %o : f32
    linalg.yield %v : f32
  } -> tensor<6x96xf32>
  %e2 = tensor.empty() : tensor<6x32xf32>
  %z2 = linalg.fill ins(%c0 : f32) outs(%e2 : tensor<6x32xf32>) -> tensor<6x32xf32>
  %d = linalg.matmul ins(%m, %wd : tensor<6x96xf32>, tensor<96x32xf32>) outs(%z2 : tensor<6x32xf32>) -> tensor<6x32xf32>
  return %d : tensor<6x32xf32>
}

func.func @relu_tosa_bf16(%x: tensor<1x6x32xbf16>, %wu: tensor<1x32x48xbf16>,
                          %wd: tensor<1x48x32xbf16>) -> tensor<1x6x32xbf16> {
  %n = flashnorm.rms_norm %x eps(1.0e-05) : tensor<1x6x32xbf16>
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xbf16>}> : () -> tensor<1xbf16>
  %u = tosa.matmul %n, %wu, %zp, %zp : (tensor<1x6x32xbf16>, tensor<1x32x48xbf16>, tensor<1xbf16>, tensor<1xbf16>) -> tensor<1x6x48xf32>
  %ub = tosa.cast %u : (tensor<1x6x48xf32>) -> tensor<1x6x48xbf16>
  %r = tosa.clamp %ub {min_val = 0.0 : bf16, max_val = 3.38953139e38 : bf16} : (tensor<1x6x48xbf16>) -> tensor<1x6x48xbf16>
  %d = tosa.matmul %r, %wd, %zp, %zp : (tensor<1x6x48xbf16>, tensor<1x48x32xbf16>, tensor<1xbf16>, tensor<1xbf16>) -> tensor<1x6x32xf32>
  %db = tosa.cast %d : (tensor<1x6x32xf32>) -> tensor<1x6x32xbf16>
  return %db : tensor<1x6x32xbf16>
}

// Squared ReLU as importers write its square (relu(x) ** 2): math.powf of
// 2.0 and math.fpowi of 2 in a generic (torch-mlir's aten.pow.Tensor_Scalar
// with a float or an int exponent), tosa.pow of a 2.0 constant; the scale
// moves as s^2.
func.func @squared_relu_powf(%x: tensor<6x32xf32>, %wu: tensor<32x96xf32>,
                             %wd: tensor<96x32xf32>) -> tensor<6x32xf32> {
  %n = flashnorm.rms_norm %x eps(1.0e-05) : tensor<6x32xf32>
  %c0 = arith.constant 0.0 : f32
  %c2 = arith.constant 2.0 : f32
  %e = tensor.empty() : tensor<6x96xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<6x96xf32>) -> tensor<6x96xf32>
  %u = linalg.matmul ins(%n, %wu : tensor<6x32xf32>, tensor<32x96xf32>) outs(%z : tensor<6x96xf32>) -> tensor<6x96xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%u : tensor<6x96xf32>) outs(%e : tensor<6x96xf32>) {
  ^bb0(%in: f32, %o: f32):
    %p = arith.cmpf ugt, %in, %c0 : f32
    %v = arith.select %p, %in, %c0 : f32
    linalg.yield %v : f32
  } -> tensor<6x96xf32>
  %q = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%r : tensor<6x96xf32>) outs(%e : tensor<6x96xf32>) {
  ^bb0(%in: f32, %o: f32):
    %v = math.powf %in, %c2 : f32
    linalg.yield %v : f32
  } -> tensor<6x96xf32>
  %e2 = tensor.empty() : tensor<6x32xf32>
  %z2 = linalg.fill ins(%c0 : f32) outs(%e2 : tensor<6x32xf32>) -> tensor<6x32xf32>
  %d = linalg.matmul ins(%q, %wd : tensor<6x96xf32>, tensor<96x32xf32>) outs(%z2 : tensor<6x32xf32>) -> tensor<6x32xf32>
  return %d : tensor<6x32xf32>
}

func.func @squared_relu_fpowi(%x: tensor<6x32xf32>, %wu: tensor<32x96xf32>,
                              %wd: tensor<96x32xf32>) -> tensor<6x32xf32> {
  %n = flashnorm.rms_norm %x eps(1.0e-05) : tensor<6x32xf32>
  %c0 = arith.constant 0.0 : f32
  %c2 = arith.constant 2 : i64
  %e = tensor.empty() : tensor<6x96xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<6x96xf32>) -> tensor<6x96xf32>
  %u = linalg.matmul ins(%n, %wu : tensor<6x32xf32>, tensor<32x96xf32>) outs(%z : tensor<6x96xf32>) -> tensor<6x96xf32>
  %q = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%u : tensor<6x96xf32>) outs(%e : tensor<6x96xf32>) {
  ^bb0(%in: f32, %o: f32):
    %v = arith.maximumf %in, %c0 : f32
    %sq = math.fpowi %v, %c2 : f32, i64
    linalg.yield %sq : f32
  } -> tensor<6x96xf32>
  %e2 = tensor.empty() : tensor<6x32xf32>
  %z2 = linalg.fill ins(%c0 : f32) outs(%e2 : tensor<6x32xf32>) -> tensor<6x32xf32>
  %d = linalg.matmul ins(%q, %wd : tensor<6x96xf32>, tensor<96x32xf32>) outs(%z2 : tensor<6x32xf32>) -> tensor<6x32xf32>
  return %d : tensor<6x32xf32>
}

func.func @squared_relu_tosa(%x: tensor<1x6x32xf32>, %wu: tensor<1x32x96xf32>,
                             %wd: tensor<1x96x32xf32>) -> tensor<1x6x32xf32> {
  %n = flashnorm.rms_norm %x eps(1.0e-05) : tensor<1x6x32xf32>
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %u = tosa.matmul %n, %wu, %zp, %zp : (tensor<1x6x32xf32>, tensor<1x32x96xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x6x96xf32>
  %r = tosa.clamp %u {min_val = 0.0 : f32, max_val = 3.40282347e+38 : f32} : (tensor<1x6x96xf32>) -> tensor<1x6x96xf32>
  %two = "tosa.const"() <{values = dense<2.0> : tensor<1x1x1xf32>}> : () -> tensor<1x1x1xf32>
  %q = tosa.pow %r, %two : (tensor<1x6x96xf32>, tensor<1x1x1xf32>) -> tensor<1x6x96xf32>
  %d = tosa.matmul %q, %wd, %zp, %zp : (tensor<1x6x96xf32>, tensor<1x96x32xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x6x32xf32>
  return %d : tensor<1x6x32xf32>
}
