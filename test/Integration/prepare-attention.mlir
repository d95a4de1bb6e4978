// The attention scale through the prepare function: a query projection
// whose weight is an argument takes the scale that multiplies its logits
// with the gain, as a constant weight does, and the multiply goes. A
// constant gain takes it in f64 (g * 0.5 as one constant), a runtime gain
// in the fold (g times 0.5 beside W), a LayerNorm's bias folded through the
// weight too (0.5 b), and a constant bias on the way to the logits becomes
// 0.5 b. A LayerNorm without gain keeps the scale where it is. The key
// projection's weight takes the gain only. Numbers unchanged.
// RUN: flashnorm-opt %s --flashnorm-fold-gains=prepare-function=true | FileCheck %s
// RUN: flashnorm-opt %s --flashnorm-fold-gains=prepare-function=true \
// RUN:   --remarks-filter=flashnorm --remark-format=emitRemark 2>&1 >/dev/null \
// RUN:   | FileCheck %s --check-prefix=REMARK
// RUN: flashnorm-run %s -e runtime_gain --prepare --compare --rtol 1e-5 | FileCheck %s --check-prefix=CMP
// RUN: flashnorm-run %s -e layer_constant --prepare --compare --rtol 1e-5 | FileCheck %s --check-prefix=CMP
// RUN: flashnorm-run %s -e weightless --prepare --compare --rtol 1e-5 | FileCheck %s --check-prefix=CMP
// CMP: MATCH

// CHECK-LABEL: func.func @runtime_gain(
// CHECK-DAG: %[[BQ:.*]] = arith.constant dense<[5.000000e-01, -5.000000e-01]> : tensor<2xf32>
// CHECK: ins(%[[BQ]], %{{.*}} : tensor<2xf32>, tensor<3x2xf32>)
// CHECK: linalg.generic
// CHECK-NEXT: ^bb0(%[[S:.*]]: f32, %{{.*}}: f32, %{{.*}}: f32):
// CHECK-NEXT: %[[A:.*]] = arith.addf %[[S]], %{{.*}} : f32
// CHECK-NEXT: linalg.yield %[[A]]
// REMARK: Function=runtime_gain | Remark="folded the gain into 2 projection weight(s) (2 argument(s), through the prepare function) (with the attention scale of 1 query projection(s))"
#id = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (j)>
func.func @runtime_gain(%x: tensor<3x2xf32>, %g: tensor<2xf32>, %wq: tensor<2x2xf32>,
                        %wk: tensor<2x2xf32>, %mask: tensor<3x3xf32>) -> tensor<3x3xf32> {
  %n = flashnorm.rms_norm %x gain(%g : tensor<2xf32>) eps(1.0e-05) : tensor<3x2xf32>
  %bq = arith.constant dense<[1.0, -1.0]> : tensor<2xf32>
  %c0 = arith.constant 0.0 : f32
  %half = arith.constant 0.5 : f32
  %e = tensor.empty() : tensor<3x2xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<3x2xf32>) -> tensor<3x2xf32>
  %q = linalg.matmul ins(%n, %wq : tensor<3x2xf32>, tensor<2x2xf32>) outs(%z : tensor<3x2xf32>) -> tensor<3x2xf32>
  %qb = linalg.generic {indexing_maps = [#row, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%bq, %q : tensor<2xf32>, tensor<3x2xf32>) outs(%e : tensor<3x2xf32>) {
  ^bb0(%b: f32, %v: f32, %o: f32):
    %s = arith.addf %b, %v : f32
    linalg.yield %s : f32
  } -> tensor<3x2xf32>
  %k = linalg.matmul ins(%n, %wk : tensor<3x2xf32>, tensor<2x2xf32>) outs(%z : tensor<3x2xf32>) -> tensor<3x2xf32>
  %et = tensor.empty() : tensor<2x3xf32>
  %kt = linalg.transpose ins(%k : tensor<3x2xf32>) outs(%et : tensor<2x3xf32>) permutation = [1, 0]
  %e3 = tensor.empty() : tensor<3x3xf32>
  %z3 = linalg.fill ins(%c0 : f32) outs(%e3 : tensor<3x3xf32>) -> tensor<3x3xf32>
  %l = linalg.matmul ins(%qb, %kt : tensor<3x2xf32>, tensor<2x3xf32>) outs(%z3 : tensor<3x3xf32>) -> tensor<3x3xf32>
  %m = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%l, %mask : tensor<3x3xf32>, tensor<3x3xf32>) outs(%e3 : tensor<3x3xf32>) {
  ^bb0(%s: f32, %mk: f32, %o: f32):
    %sc = arith.mulf %s, %half : f32
    %a = arith.addf %sc, %mk : f32
    linalg.yield %a : f32
  } -> tensor<3x3xf32>
  return %m : tensor<3x3xf32>
}

// CHECK-LABEL: func.func @runtime_gain_flashnorm_prepare(
// CHECK-SAME: %{{.*}}: tensor<3x2xf32>, %[[G:.*]]: tensor<2xf32>, %[[WQ:.*]]: tensor<2x2xf32>, %[[WK:.*]]: tensor<2x2xf32>
// CHECK: linalg.generic {{.*}} ins(%[[WQ]], %[[G]] :
// CHECK-NEXT: ^bb0(%[[W:.*]]: f32, %[[GV:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT: %[[HALF:.*]] = arith.constant 5.000000e-01 : f32
// CHECK-NEXT: %[[GS:.*]] = arith.mulf %[[GV]], %[[HALF]] : f32
// CHECK-NEXT: arith.mulf %[[W]], %[[GS]] : f32
// CHECK: linalg.generic {{.*}} ins(%[[WK]], %[[G]] :
// CHECK-NEXT: ^bb0(%[[W2:.*]]: f32, %[[GV2:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT: arith.mulf %[[W2]], %[[GV2]] : f32

// A LayerNorm with constant gain and bias: the query weight's prepared
// gain is g * 0.5 = [1, 1.5], the bias it folds 0.5 b = [0.5, -1]; the key's
// are g and b as they are.
// CHECK-LABEL: func.func @layer_constant(
// CHECK-NOT: 5.000000e-01
// CHECK: return
// REMARK: Function=layer_constant | Remark="folded the gain and bias (and the mean-centering) into 2 projection weight(s) (2 argument(s), through the prepare function) (with the attention scale of 1 query projection(s))"
func.func @layer_constant(%x: tensor<3x2xf32>, %wq: tensor<2x2xf32>,
                          %wk: tensor<2x2xf32>) -> tensor<3x3xf32> {
  %g = arith.constant dense<[2.0, 3.0]> : tensor<2xf32>
  %b = arith.constant dense<[1.0, -2.0]> : tensor<2xf32>
  %n = flashnorm.layer_norm %x gain(%g : tensor<2xf32>) bias(%b : tensor<2xf32>) eps(1.0e-05) : tensor<3x2xf32>
  %c0 = arith.constant 0.0 : f32
  %half = arith.constant 0.5 : f32
  %e = tensor.empty() : tensor<3x2xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<3x2xf32>) -> tensor<3x2xf32>
  %q = linalg.matmul ins(%n, %wq : tensor<3x2xf32>, tensor<2x2xf32>) outs(%z : tensor<3x2xf32>) -> tensor<3x2xf32>
  %k = linalg.matmul ins(%n, %wk : tensor<3x2xf32>, tensor<2x2xf32>) outs(%z : tensor<3x2xf32>) -> tensor<3x2xf32>
  %et = tensor.empty() : tensor<2x3xf32>
  %kt = linalg.transpose ins(%k : tensor<3x2xf32>) outs(%et : tensor<2x3xf32>) permutation = [1, 0]
  %e3 = tensor.empty() : tensor<3x3xf32>
  %z3 = linalg.fill ins(%c0 : f32) outs(%e3 : tensor<3x3xf32>) -> tensor<3x3xf32>
  %l = linalg.matmul ins(%q, %kt : tensor<3x2xf32>, tensor<2x3xf32>) outs(%z3 : tensor<3x3xf32>) -> tensor<3x3xf32>
  %m = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%l : tensor<3x3xf32>) outs(%e3 : tensor<3x3xf32>) {
  ^bb0(%s: f32, %o: f32):
    %sc = arith.mulf %s, %half : f32
    linalg.yield %sc : f32
  } -> tensor<3x3xf32>
  return %m : tensor<3x3xf32>
}

// CHECK-LABEL: func.func @layer_constant_flashnorm_prepare(
// CHECK-DAG: arith.constant dense<[1.000000e+00, 1.500000e+00]> : tensor<2xf32>
// CHECK-DAG: arith.constant dense<[5.000000e-01, -1.000000e+00]> : tensor<2xf32>
// CHECK-DAG: arith.constant dense<[2.000000e+00, 3.000000e+00]> : tensor<2xf32>
// CHECK-DAG: arith.constant dense<[1.000000e+00, -2.000000e+00]> : tensor<2xf32>

// A LayerNorm without gain or bias: only its centering goes into the
// weights, the logits keep their multiply.
// CHECK-LABEL: func.func @weightless(
// CHECK: arith.mulf %{{.*}}, %{{.*}} : f32
// CHECK: return
// REMARK: Function=weightless | Remark="folded the mean-centering into 2 projection weight(s) (2 argument(s), through the prepare function)"
func.func @weightless(%x: tensor<3x2xf32>, %wq: tensor<2x2xf32>,
                      %wk: tensor<2x2xf32>) -> tensor<3x3xf32> {
  %n = flashnorm.layer_norm %x eps(1.0e-05) : tensor<3x2xf32>
  %c0 = arith.constant 0.0 : f32
  %half = arith.constant 0.5 : f32
  %e = tensor.empty() : tensor<3x2xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<3x2xf32>) -> tensor<3x2xf32>
  %q = linalg.matmul ins(%n, %wq : tensor<3x2xf32>, tensor<2x2xf32>) outs(%z : tensor<3x2xf32>) -> tensor<3x2xf32>
  %k = linalg.matmul ins(%n, %wk : tensor<3x2xf32>, tensor<2x2xf32>) outs(%z : tensor<3x2xf32>) -> tensor<3x2xf32>
  %et = tensor.empty() : tensor<2x3xf32>
  %kt = linalg.transpose ins(%k : tensor<3x2xf32>) outs(%et : tensor<2x3xf32>) permutation = [1, 0]
  %e3 = tensor.empty() : tensor<3x3xf32>
  %z3 = linalg.fill ins(%c0 : f32) outs(%e3 : tensor<3x3xf32>) -> tensor<3x3xf32>
  %l = linalg.matmul ins(%q, %kt : tensor<3x2xf32>, tensor<2x3xf32>) outs(%z3 : tensor<3x3xf32>) -> tensor<3x3xf32>
  %m = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%l : tensor<3x3xf32>) outs(%e3 : tensor<3x3xf32>) {
  ^bb0(%s: f32, %o: f32):
    %sc = arith.mulf %s, %half : f32
    linalg.yield %sc : f32
  } -> tensor<3x3xf32>
  return %m : tensor<3x3xf32>
}
