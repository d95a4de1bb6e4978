// flashnorm-cpu-fold-transposes: a contraction reads a transposed input in
// its stored layout where flashnorm-cpu-codegen's split-k kernel then takes
// it (both inputs indexed by k last, static, k a multiple of two or more
// vectors); elsewhere the transpose stays. A function with nothing to fold
// comes out as it went in.
// The lanes are a vector register of f32 by default (16 on AVX-512, 8 on
// AVX2): the checks pin them.
// RUN: flashnorm-opt %s --pass-pipeline='builtin.module(func.func(flashnorm-cpu-fold-transposes{vector-width=16}))' | FileCheck %s
// RUN: flashnorm-opt %s --pass-pipeline='builtin.module(func.func(flashnorm-cpu-fold-transposes{vector-width=64}))' | FileCheck %s --check-prefix=WIDE
// RUN: flashnorm-opt %s --pass-pipeline='builtin.module(func.func(flashnorm-cpu-fold-transposes{vector-width=8}))' | FileCheck %s --check-prefix=AVX2
// RUN: flashnorm-opt %s --pass-pipeline='builtin.module(func.func(flashnorm-cpu-fold-transposes))' -o /dev/null
// RUN: not flashnorm-opt %s --pass-pipeline='builtin.module(func.func(flashnorm-cpu-fold-transposes{vector-width=-1}))' 2>&1 | FileCheck %s --check-prefix=BADWIDTH
// BADWIDTH: flashnorm-cpu-fold-transposes: vector-width must not be negative

// CHECK-DAG: #[[MK:.*]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-DAG: #[[NK:.*]] = affine_map<(d0, d1, d2) -> (d1, d2)>
// CHECK-DAG: #[[MN:.*]] = affine_map<(d0, d1, d2) -> (d0, d1)>

// PyTorch's N x K weight transposed for x @ W.T: read in place, the
// matmul's attributes kept.
// CHECK-LABEL: func.func @linear
// CHECK-SAME: (%[[X:.*]]: tensor<4x64xf32>, %[[W:.*]]: tensor<48x64xf32>)
// CHECK-NOT: linalg.transpose
// CHECK-NOT: tensor.empty() : tensor<64x48xf32>
// CHECK: linalg.generic {indexing_maps = [#[[MK]], #[[NK]], #[[MN]]], iterator_types = ["parallel", "parallel", "reduction"]} ins(%[[X]], %[[W]] : tensor<4x64xf32>, tensor<48x64xf32>)
// CHECK-SAME: user.mark = 3
// WIDE-LABEL: func.func @linear
// WIDE: linalg.transpose
func.func @linear(%x: tensor<4x64xf32>, %w: tensor<48x64xf32>) -> tensor<4x48xf32> {
  %c0 = arith.constant 0.0 : f32
  %et = tensor.empty() : tensor<64x48xf32>
  %wt = linalg.transpose ins(%w : tensor<48x64xf32>) outs(%et : tensor<64x48xf32>) permutation = [1, 0]
  %e = tensor.empty() : tensor<4x48xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<4x48xf32>) -> tensor<4x48xf32>
  %y = linalg.matmul {user.mark = 3} ins(%x, %wt : tensor<4x64xf32>, tensor<64x48xf32>) outs(%z : tensor<4x48xf32>) -> tensor<4x48xf32>
  return %y : tensor<4x48xf32>
}

// torch-mlir's yield-only generic; the transpose has a second user, so it
// stays for that one.
// CHECK-LABEL: func.func @torch_generic
// CHECK-SAME: (%[[X:.*]]: tensor<1x64xbf16>, %[[W:.*]]: tensor<48x64xbf16>)
// CHECK: %[[T:.*]] = linalg.generic {{.*}} ins(%[[W]] : tensor<48x64xbf16>)
// CHECK: linalg.generic {{.*}} ins(%[[X]], %[[W]] : tensor<1x64xbf16>, tensor<48x64xbf16>)
// CHECK: return {{.*}}, %[[T]]
#tr = affine_map<(d0, d1) -> (d1, d0)>
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @torch_generic(%x: tensor<1x64xbf16>, %w: tensor<48x64xbf16>) -> (tensor<1x48xf32>, tensor<64x48xbf16>) {
  %c0 = arith.constant 0.0 : f32
  %et = tensor.empty() : tensor<64x48xbf16>
  %wt = linalg.generic {indexing_maps = [#tr, #id], iterator_types = ["parallel", "parallel"]} ins(%w : tensor<48x64xbf16>) outs(%et : tensor<64x48xbf16>) {
  ^bb0(%in: bf16, %out: bf16):
    linalg.yield %in : bf16
  } -> tensor<64x48xbf16>
  %e = tensor.empty() : tensor<1x48xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<1x48xf32>) -> tensor<1x48xf32>
  %y = linalg.matmul ins(%x, %wt : tensor<1x64xbf16>, tensor<64x48xbf16>) outs(%z : tensor<1x48xf32>) -> tensor<1x48xf32>
  return %y, %wt : tensor<1x48xf32>, tensor<64x48xbf16>
}

// q k^T: the batch matmul reads k [H, S, D] in place.
// CHECK-LABEL: func.func @logits
// CHECK-SAME: (%[[Q:.*]]: tensor<2x4x32xf32>, %[[K:.*]]: tensor<2x6x32xf32>)
// CHECK-NOT: linalg.transpose
// CHECK: linalg.generic {{.*}} ins(%[[Q]], %[[K]] : tensor<2x4x32xf32>, tensor<2x6x32xf32>)
func.func @logits(%q: tensor<2x4x32xf32>, %k: tensor<2x6x32xf32>) -> tensor<2x4x6xf32> {
  %c0 = arith.constant 0.0 : f32
  %et = tensor.empty() : tensor<2x32x6xf32>
  %kt = linalg.transpose ins(%k : tensor<2x6x32xf32>) outs(%et : tensor<2x32x6xf32>) permutation = [0, 2, 1]
  %e = tensor.empty() : tensor<2x4x6xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<2x4x6xf32>) -> tensor<2x4x6xf32>
  %s = linalg.batch_matmul ins(%q, %kt : tensor<2x4x32xf32>, tensor<2x32x6xf32>) outs(%z : tensor<2x4x6xf32>) -> tensor<2x4x6xf32>
  return %s : tensor<2x4x6xf32>
}

// Refused: k = 24 (not two vectors); a K x N weight transposed from N x K
// storage's transpose (the stored tensor would be read across k); an
// activation transposed so that k would not be its last index; dynamic
// rows. All four functions come out unchanged.
// CHECK-LABEL: func.func @short_k
// CHECK: linalg.transpose
// CHECK: linalg.matmul ins
// With 8 lanes, 24 is three vectors: folded.
// AVX2-LABEL: func.func @short_k
// AVX2-NOT: linalg.transpose
// AVX2: linalg.generic
// CHECK-LABEL: func.func @stored_k_by_n
// CHECK: linalg.transpose
// CHECK: linalg.matmul indexing_maps
// CHECK-LABEL: func.func @activation_across_k
// CHECK: linalg.transpose
// CHECK: linalg.matmul indexing_maps
// CHECK-LABEL: func.func @dynamic_rows
// CHECK: linalg.transpose
// CHECK: linalg.matmul ins
func.func @short_k(%x: tensor<4x24xf32>, %w: tensor<48x24xf32>) -> tensor<4x48xf32> {
  %c0 = arith.constant 0.0 : f32
  %et = tensor.empty() : tensor<24x48xf32>
  %wt = linalg.transpose ins(%w : tensor<48x24xf32>) outs(%et : tensor<24x48xf32>) permutation = [1, 0]
  %e = tensor.empty() : tensor<4x48xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<4x48xf32>) -> tensor<4x48xf32>
  %y = linalg.matmul ins(%x, %wt : tensor<4x24xf32>, tensor<24x48xf32>) outs(%z : tensor<4x48xf32>) -> tensor<4x48xf32>
  return %y : tensor<4x48xf32>
}
func.func @stored_k_by_n(%x: tensor<4x64xf32>, %w: tensor<64x48xf32>) -> tensor<4x48xf32> {
  %c0 = arith.constant 0.0 : f32
  %et = tensor.empty() : tensor<48x64xf32>
  %wt = linalg.transpose ins(%w : tensor<64x48xf32>) outs(%et : tensor<48x64xf32>) permutation = [1, 0]
  %e = tensor.empty() : tensor<4x48xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<4x48xf32>) -> tensor<4x48xf32>
  %y = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
      ins(%x, %wt : tensor<4x64xf32>, tensor<48x64xf32>) outs(%z : tensor<4x48xf32>) -> tensor<4x48xf32>
  return %y : tensor<4x48xf32>
}
func.func @activation_across_k(%xt: tensor<64x4xf32>, %w: tensor<48x64xf32>) -> tensor<4x48xf32> {
  %c0 = arith.constant 0.0 : f32
  %ex = tensor.empty() : tensor<4x64xf32>
  %x = linalg.transpose ins(%xt : tensor<64x4xf32>) outs(%ex : tensor<4x64xf32>) permutation = [1, 0]
  %e = tensor.empty() : tensor<4x48xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<4x48xf32>) -> tensor<4x48xf32>
  %y = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
      ins(%x, %w : tensor<4x64xf32>, tensor<48x64xf32>) outs(%z : tensor<4x48xf32>) -> tensor<4x48xf32>
  return %y : tensor<4x48xf32>
}
func.func @dynamic_rows(%x: tensor<?x64xf32>, %w: tensor<48x64xf32>, %z: tensor<?x48xf32>) -> tensor<?x48xf32> {
  %et = tensor.empty() : tensor<64x48xf32>
  %wt = linalg.transpose ins(%w : tensor<48x64xf32>) outs(%et : tensor<64x48xf32>) permutation = [1, 0]
  %y = linalg.matmul ins(%x, %wt : tensor<?x64xf32>, tensor<64x48xf32>) outs(%z : tensor<?x48xf32>) -> tensor<?x48xf32>
  return %y : tensor<?x48xf32>
}
