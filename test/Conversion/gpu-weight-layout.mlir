// Projection weights in the layout the GPU kernels read, N x K: stored N x K
// behind layout ops, the weight is read directly; a K x N constant is
// written as N x K at compile time; a K x N argument stays, with a remark.
// RUN: flashnorm-opt %s --pass-pipeline='builtin.module(func.func(flashnorm-gpu-weight-layout))' --remarks-filter=flashnorm --remark-format=emitRemark 2>%t.remarks | FileCheck %s
// RUN: FileCheck %s --check-prefix=REMARK < %t.remarks

// CHECK-DAG: #[[MK:.*]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-DAG: #[[NK:.*]] = affine_map<(d0, d1, d2) -> (d1, d2)>
// CHECK-DAG: #[[MN:.*]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-DAG: #[[B_NK:.*]] = affine_map<(d0, d1, d2, d3) -> (d2, d3)>

// PyTorch's nn.Linear: the N x K constant is read as stored, the transpose
// is gone, the mark is kept.
// CHECK-LABEL: func.func @torch_linear(
// CHECK: %[[W:.*]] = arith.constant dense<{{\[}}[1.000000e+00, 2.000000e+00], [3.000000e+00, 4.000000e+00], [5.000000e+00, 6.000000e+00]]> : tensor<3x2xf32>
// CHECK-NOT: linalg.transpose
// CHECK-NOT: tensor<2x3xf32>
// CHECK: linalg.generic {indexing_maps = [#[[MK]], #[[NK]], #[[MN]]], iterator_types = ["parallel", "parallel", "reduction"]} ins(%{{.*}}, %[[W]] : tensor<4x2xf32>, tensor<3x2xf32>)
// CHECK-SAME: flashnorm.async_role = #flashnorm.async_role<proj>
// REMARK: remark: [Passed] flashnorm-gpu-weight-layout | {{.*}} Function=torch_linear | Remark="weight read as stored, N x K (1 layout op(s) dropped)"
func.func @torch_linear(%x: tensor<4x2xf32>) -> tensor<4x3xf32> {
  %w = arith.constant dense<[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]> : tensor<3x2xf32>
  %e = tensor.empty() : tensor<2x3xf32>
  %t = linalg.transpose ins(%w : tensor<3x2xf32>) outs(%e : tensor<2x3xf32>) permutation = [1, 0]
  %z = arith.constant 0.0 : f32
  %o = tensor.empty() : tensor<4x3xf32>
  %f = linalg.fill ins(%z : f32) outs(%o : tensor<4x3xf32>) -> tensor<4x3xf32>
  %y = linalg.matmul {flashnorm.async_role = #flashnorm.async_role<proj>} ins(%x, %t : tensor<4x2xf32>, tensor<2x3xf32>) outs(%f : tensor<4x3xf32>) -> tensor<4x3xf32>
  return %y : tensor<4x3xf32>
}

// A K x N constant shared by two projections: one N x K copy, written at
// compile time (values transposed), the K x N one erased.
// CHECK-LABEL: func.func @k_by_n_shared(
// CHECK: %[[NKW:.*]] = arith.constant dense<{{\[}}[1.000000e+00, 4.000000e+00], [2.000000e+00, 5.000000e+00], [3.000000e+00, 6.000000e+00]]> : tensor<3x2xf32>
// CHECK-NOT: tensor<2x3xf32>
// CHECK: linalg.generic {indexing_maps = [#[[MK]], #[[NK]], #[[MN]]], {{.*}} ins(%{{.*}}, %[[NKW]] :
// CHECK: linalg.generic {indexing_maps = [#[[MK]], #[[NK]], #[[MN]]], {{.*}} ins(%{{.*}}, %[[NKW]] :
// REMARK-COUNT-2: Function=k_by_n_shared | Remark="weight relaid at compile time from K x N to N x K"
func.func @k_by_n_shared(%x: tensor<4x2xf32>, %o: tensor<4x3xf32>) -> (tensor<4x3xf32>, tensor<4x3xf32>) {
  %w = arith.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  %a = linalg.matmul ins(%x, %w : tensor<4x2xf32>, tensor<2x3xf32>) outs(%o : tensor<4x3xf32>) -> tensor<4x3xf32>
  %b = linalg.matmul ins(%x, %w : tensor<4x2xf32>, tensor<2x3xf32>) outs(%o : tensor<4x3xf32>) -> tensor<4x3xf32>
  return %a, %b : tensor<4x3xf32>, tensor<4x3xf32>
}

// An N x K argument behind a yield-only transpose (torch-mlir's form) is
// read directly; a K x N argument keeps its layout.
// CHECK-LABEL: func.func @arguments(
// CHECK-SAME: %[[NKARG:[^:]*]]: tensor<3x2xf32>, %[[KNARG:[^:]*]]: tensor<2x3xf32>
// CHECK-NOT: linalg.generic {{.*}}iterator_types = ["parallel", "parallel"]}
// CHECK-NOT: tensor.empty
// CHECK: linalg.generic {indexing_maps = [#[[MK]], #[[NK]], #[[MN]]], {{.*}} ins(%{{.*}}, %[[NKARG]] :
// CHECK: linalg.matmul ins(%{{.*}}, %[[KNARG]] :
// REMARK-DAG: Function=arguments | Remark="weight read as stored, N x K (1 layout op(s) dropped)"
// REMARK-DAG: Function=arguments | Remark="weight read as stored: the weight is an argument stored K x N; only constants are relaid"
func.func @arguments(%x: tensor<4x2xf32>, %wnk: tensor<3x2xf32>, %wkn: tensor<2x3xf32>, %o: tensor<4x3xf32>) -> (tensor<4x3xf32>, tensor<4x3xf32>) {
  %e = tensor.empty() : tensor<2x3xf32>
  %t = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1, d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%wnk : tensor<3x2xf32>) outs(%e : tensor<2x3xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<2x3xf32>
  %a = linalg.matmul ins(%x, %t : tensor<4x2xf32>, tensor<2x3xf32>) outs(%o : tensor<4x3xf32>) -> tensor<4x3xf32>
  %b = linalg.matmul ins(%x, %wkn : tensor<4x2xf32>, tensor<2x3xf32>) outs(%o : tensor<4x3xf32>) -> tensor<4x3xf32>
  return %a, %b : tensor<4x3xf32>, tensor<4x3xf32>
}

// TOSA's batched-by-one matmul on a reshaped K x N constant: the copy is
// 2-D and the weight no longer names the batch dimension.
// CHECK-LABEL: func.func @tosa_batched(
// CHECK: %[[TW:.*]] = arith.constant dense<{{\[}}[1.000000e+00, 4.000000e+00], [2.000000e+00, 5.000000e+00], [3.000000e+00, 6.000000e+00]]> : tensor<3x2xf32>
// CHECK-NOT: tensor.expand_shape
// CHECK: linalg.generic {indexing_maps = [#{{.*}}, #[[B_NK]], #{{.*}}], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%{{.*}}, %[[TW]] : tensor<1x4x2xf32>, tensor<3x2xf32>)
func.func @tosa_batched(%x: tensor<1x4x2xf32>, %o: tensor<1x4x3xf32>) -> tensor<1x4x3xf32> {
  %w = arith.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  %w3 = tensor.expand_shape %w [[0, 1], [2]] output_shape [1, 2, 3] : tensor<2x3xf32> into tensor<1x2x3xf32>
  %y = linalg.batch_matmul ins(%x, %w3 : tensor<1x4x2xf32>, tensor<1x2x3xf32>) outs(%o : tensor<1x4x3xf32>) -> tensor<1x4x3xf32>
  return %y : tensor<1x4x3xf32>
}

// Left alone, silently: a weight already read as stored N x K, and a
// contraction of two activations (attention).
// CHECK-LABEL: func.func @untouched(
// CHECK: linalg.matmul indexing_maps
// CHECK: linalg.batch_matmul ins(
// REMARK-NOT: Function=untouched | Remark="weight
func.func @untouched(%x: tensor<4x2xf32>, %o: tensor<4x3xf32>, %q: tensor<2x4x8xf32>, %k: tensor<2x8x4xf32>, %s: tensor<2x4x4xf32>) -> (tensor<4x3xf32>, tensor<2x4x4xf32>) {
  %w = arith.constant dense<1.0> : tensor<3x2xf32>
  %a = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>] ins(%x, %w : tensor<4x2xf32>, tensor<3x2xf32>) outs(%o : tensor<4x3xf32>) -> tensor<4x3xf32>
  %b = linalg.batch_matmul ins(%q, %k : tensor<2x4x8xf32>, tensor<2x8x4xf32>) outs(%s : tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  return %a, %b : tensor<4x3xf32>, tensor<2x4x4xf32>
}

// A weight broadcast from one row is not a stored N x K weight: left as it
// is, with a remark.
// CHECK-LABEL: func.func @broadcast_row(
// CHECK: linalg.matmul
// REMARK: Function=broadcast_row | Remark="weight read as stored: the stored weight is not the N x K or K x N weight itself (a broadcast or a dynamic size between)"
func.func @broadcast_row(%x: tensor<4x2xf32>, %o: tensor<4x3xf32>) -> tensor<4x3xf32> {
  %w = arith.constant dense<[[1.0, 2.0]]> : tensor<1x2xf32>
  %e = tensor.empty() : tensor<2x3xf32>
  %t = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (0, d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%w : tensor<1x2xf32>) outs(%e : tensor<2x3xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<2x3xf32>
  %y = linalg.matmul ins(%x, %t : tensor<4x2xf32>, tensor<2x3xf32>) outs(%o : tensor<4x3xf32>) -> tensor<4x3xf32>
  return %y : tensor<4x3xf32>
}

// Nor is a weight of full shape that a layout generic reads one column of
// for every output: what the stored tensor holds is not what is read.
// CHECK-LABEL: func.func @broadcast_column(
// CHECK: linalg.generic
// CHECK: linalg.matmul
// REMARK: Function=broadcast_column | Remark="weight read as stored: the stored weight is not the N x K or K x N weight itself (a broadcast or a dynamic size between)"
func.func @broadcast_column(%x: tensor<4x2xf32>, %o: tensor<4x3xf32>) -> tensor<4x3xf32> {
  %w = arith.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  %e = tensor.empty() : tensor<2x3xf32>
  %t = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, 0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%w : tensor<2x3xf32>) outs(%e : tensor<2x3xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<2x3xf32>
  %y = linalg.matmul ins(%x, %t : tensor<4x2xf32>, tensor<2x3xf32>) outs(%o : tensor<4x3xf32>) -> tensor<4x3xf32>
  return %y : tensor<4x3xf32>
}
