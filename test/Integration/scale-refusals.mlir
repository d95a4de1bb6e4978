// Scales the math does not let move, executed against the unrewritten
// functions: each was a silent wrong rewrite once.
// move-scale:
// - f16leaf: a post-scale rounding its f32 accumulator to f16; stripped, the
//   generic would round the raw product to f16 itself (inf at 10^4 per row).
// - nonleaf: a post-scale read twice by the chain, by a generic (where it
//   can be stripped) and by a tensor multiply (where it cannot): it stays;
//   the other one, read only by a leaf, still moves.
// - initmask: the logits accumulate into a mask; the query's 1/RMS is not
//   merged into their 0.5 (0.5 s (q k^T + M) scales M too).
// fold-gains (the gain folds; the attention scale 0.5 must not):
// - foldinit: the same mask in the logits' init;
// - foldbias: a generic that adds its init to q, not its constant input;
// - foldlayout: q is only the init of a copy generic (the copy is not q);
// - foldcast: q rounded to integers (tosa.cast through i32) on the way.
// RUN: flashnorm-opt %s --flashnorm-move-scale --remarks-filter=flashnorm --remark-format=emitRemark -o /dev/null 2>&1 | FileCheck %s --check-prefix=MOVE
// RUN: flashnorm-opt %s --flashnorm-fold-gains --remarks-filter=flashnorm --remark-format=emitRemark -o /dev/null 2>&1 | FileCheck %s --check-prefix=FOLD
// RUN: flashnorm-run %s -e f16leaf --pipeline=flashnorm-move-scale --compare | FileCheck %s
// RUN: flashnorm-run %s -e nonleaf --pipeline=flashnorm-move-scale --compare --rtol 3e-2 --atol 3e-2 | FileCheck %s
// RUN: flashnorm-run %s -e initmask --pipeline=flashnorm-move-scale --compare | FileCheck %s
// RUN: flashnorm-run %s -e foldinit --pipeline=flashnorm-fold-gains --compare | FileCheck %s
// RUN: flashnorm-run %s -e foldbias --pipeline=flashnorm-fold-gains --compare | FileCheck %s
// RUN: flashnorm-run %s -e foldlayout --pipeline=flashnorm-fold-gains --compare | FileCheck %s
// RUN: flashnorm-run %s -e foldcast --pipeline=flashnorm-fold-gains --compare --input-range=3 | FileCheck %s
// CHECK: MATCH
// MOVE-DAG: Function=f16leaf | Remark="post-scale not moved past it: the element-wise ops before it compute in f16
// MOVE-DAG: Function=nonleaf | Remark="moved 1 post-scale(s) past 'linalg.matmul', applied after it as 1 post-scale(s)
// MOVE-DAG: Function=initmask | Remark="query post-scale not merged into the logits' scale: its logits accumulate into a non-zero init
// FOLD-DAG: Function=foldinit | Remark="folded the gain into 2 projection weight(s)"
// FOLD-DAG: Function=foldbias | Remark="folded the gain into 2 projection weight(s)"
// FOLD-DAG: Function=foldlayout | Remark="folded the gain into 1 projection weight(s)"
// FOLD-DAG: Function=foldcast | Remark="folded the gain into 1 projection weight(s)"

#id = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (j)>
#qk = [affine_map<(i, j, d) -> (i, d)>, affine_map<(i, j, d) -> (j, d)>, affine_map<(i, j, d) -> (i, j)>]
func.func @f16leaf(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %big = arith.constant 10000.0 : f32
  %c0 = arith.constant 0.0 : f32
  %ex0 = tensor.empty() : tensor<4x8xf32>
  %xb = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<4x8xf32>) outs(%ex0 : tensor<4x8xf32>) {
  ^bb0(%in: f32, %o: f32):
    %v = arith.mulf %in, %big : f32
    %w = arith.addf %v, %big : f32
    linalg.yield %w : f32
  } -> tensor<4x8xf32>
  %wu = arith.constant dense<1.0> : tensor<8x32xf32>
  %wd = arith.constant dense<0.01> : tensor<32x8xf32>
  %s = flashnorm.rms_inv %xb eps(1.0e-05) : tensor<4x8xf32> -> tensor<4xf32>
  %e = tensor.empty() : tensor<4x32xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<4x32xf32>) -> tensor<4x32xf32>
  %u = linalg.matmul ins(%xb, %wu : tensor<4x8xf32>, tensor<8x32xf32>) outs(%z : tensor<4x32xf32>) -> tensor<4x32xf32>
  %us = flashnorm.post_scale %u, %s : tensor<4x32xf32>, tensor<4xf32> -> tensor<4x32xf16>
  %a = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%us : tensor<4x32xf16>) outs(%e : tensor<4x32xf32>) {
  ^bb0(%in: f16, %o: f32):
    %w = arith.extf %in : f16 to f32
    linalg.yield %w : f32
  } -> tensor<4x32xf32>
  %e8 = tensor.empty() : tensor<4x8xf32>
  %z8 = linalg.fill ins(%c0 : f32) outs(%e8 : tensor<4x8xf32>) -> tensor<4x8xf32>
  %d = linalg.matmul ins(%a, %wd : tensor<4x32xf32>, tensor<32x8xf32>) outs(%z8 : tensor<4x8xf32>) -> tensor<4x8xf32>
  return %d : tensor<4x8xf32>
}

func.func @nonleaf(%x: tensor<4x8xf32>, %w1: tensor<8x64xf32>, %w2: tensor<8x64xf32>,
                   %wd: tensor<64x8xf32>) -> tensor<4x8xf32> {
  %c0 = arith.constant 0.0 : f32
  %s = flashnorm.rms_inv %x eps(1.0e-05) : tensor<4x8xf32> -> tensor<4xf32>
  %e = tensor.empty() : tensor<4x64xf32>
  %eb = tensor.empty() : tensor<4x64xbf16>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<4x64xf32>) -> tensor<4x64xf32>
  %r1 = linalg.matmul ins(%x, %w1 : tensor<4x8xf32>, tensor<8x64xf32>) outs(%z : tensor<4x64xf32>) -> tensor<4x64xf32>
  %p1 = flashnorm.post_scale %r1, %s : tensor<4x64xf32>, tensor<4xf32> -> tensor<4x64xf32>
  %r2 = linalg.matmul ins(%x, %w2 : tensor<4x8xf32>, tensor<8x64xf32>) outs(%z : tensor<4x64xf32>) -> tensor<4x64xf32>
  %p2 = flashnorm.post_scale %r2, %s : tensor<4x64xf32>, tensor<4xf32> -> tensor<4x64xbf16>
  %g = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%p2 : tensor<4x64xbf16>) outs(%eb : tensor<4x64xbf16>) {
  ^bb0(%in: bf16, %o: bf16):
    linalg.yield %in : bf16
  } -> tensor<4x64xbf16>
  %m = arith.mulf %g, %p2 : tensor<4x64xbf16>
  %m32 = arith.extf %m : tensor<4x64xbf16> to tensor<4x64xf32>
  %y = arith.mulf %m32, %p1 : tensor<4x64xf32>
  %e8 = tensor.empty() : tensor<4x8xf32>
  %z8 = linalg.fill ins(%c0 : f32) outs(%e8 : tensor<4x8xf32>) -> tensor<4x8xf32>
  %d = linalg.matmul ins(%y, %wd : tensor<4x64xf32>, tensor<64x8xf32>) outs(%z8 : tensor<4x8xf32>) -> tensor<4x8xf32>
  return %d : tensor<4x8xf32>
}

func.func @initmask(%x: tensor<3x8xf32>, %w: tensor<8x8xf32>, %k: tensor<3x8xf32>,
                    %mask: tensor<3x3xf32>) -> tensor<3x3xf32> {
  %s = flashnorm.rms_inv %x eps(1.0e-05) : tensor<3x8xf32> -> tensor<3xf32>
  %c0 = arith.constant 0.0 : f32
  %half = arith.constant 0.5 : f32
  %e = tensor.empty() : tensor<3x8xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<3x8xf32>) -> tensor<3x8xf32>
  %el = tensor.empty() : tensor<3x3xf32>
  %r = linalg.matmul ins(%x, %w : tensor<3x8xf32>, tensor<8x8xf32>) outs(%z : tensor<3x8xf32>) -> tensor<3x8xf32>
  %q = flashnorm.post_scale %r, %s : tensor<3x8xf32>, tensor<3xf32> -> tensor<3x8xf32>
  %l = linalg.generic {indexing_maps = #qk, iterator_types = ["parallel", "parallel", "reduction"]} ins(%q, %k : tensor<3x8xf32>, tensor<3x8xf32>) outs(%mask : tensor<3x3xf32>) {
  ^bb0(%a: f32, %kk: f32, %acc: f32):
    %m = arith.mulf %a, %kk : f32
    %sum = arith.addf %m, %acc : f32
    linalg.yield %sum : f32
  } -> tensor<3x3xf32>
  %sc = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%l : tensor<3x3xf32>) outs(%el : tensor<3x3xf32>) {
  ^bb0(%v: f32, %o: f32):
    %y = arith.mulf %v, %half : f32
    linalg.yield %y : f32
  } -> tensor<3x3xf32>
  return %sc : tensor<3x3xf32>
}

func.func @foldinit(%x: tensor<3x2xf32>, %mask: tensor<3x3xf32>) -> tensor<3x3xf32> {
  %g = arith.constant dense<[2.0, 2.0]> : tensor<2xf32>
  %n = flashnorm.rms_norm %x gain(%g : tensor<2xf32>) eps(1.0e-05) : tensor<3x2xf32>
  %wq = arith.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %wk = arith.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %c0 = arith.constant 0.0 : f32
  %half = arith.constant 0.5 : f32
  %e = tensor.empty() : tensor<3x2xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<3x2xf32>) -> tensor<3x2xf32>
  %q = linalg.matmul ins(%n, %wq : tensor<3x2xf32>, tensor<2x2xf32>) outs(%z : tensor<3x2xf32>) -> tensor<3x2xf32>
  %k = linalg.matmul ins(%n, %wk : tensor<3x2xf32>, tensor<2x2xf32>) outs(%z : tensor<3x2xf32>) -> tensor<3x2xf32>
  %et = tensor.empty() : tensor<2x3xf32>
  %kt = linalg.transpose ins(%k : tensor<3x2xf32>) outs(%et : tensor<2x3xf32>) permutation = [1, 0]
  %e3 = tensor.empty() : tensor<3x3xf32>
  %l = linalg.matmul ins(%q, %kt : tensor<3x2xf32>, tensor<2x3xf32>) outs(%mask : tensor<3x3xf32>) -> tensor<3x3xf32>
  %m = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%l : tensor<3x3xf32>) outs(%e3 : tensor<3x3xf32>) {
  ^bb0(%s: f32, %o: f32):
    %sc = arith.mulf %s, %half : f32
    linalg.yield %sc : f32
  } -> tensor<3x3xf32>
  return %m : tensor<3x3xf32>
}

func.func @foldbias(%x: tensor<3x2xf32>, %t: tensor<3x2xf32>) -> tensor<3x3xf32> {
  %g = arith.constant dense<[2.0, 2.0]> : tensor<2xf32>
  %n = flashnorm.rms_norm %x gain(%g : tensor<2xf32>) eps(1.0e-05) : tensor<3x2xf32>
  %wq = arith.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %wk = arith.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %bq = arith.constant dense<[1.0, -1.0]> : tensor<2xf32>
  %c0 = arith.constant 0.0 : f32
  %half = arith.constant 0.5 : f32
  %e = tensor.empty() : tensor<3x2xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<3x2xf32>) -> tensor<3x2xf32>
  %q = linalg.matmul ins(%n, %wq : tensor<3x2xf32>, tensor<2x2xf32>) outs(%z : tensor<3x2xf32>) -> tensor<3x2xf32>
  %qb = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%q, %bq : tensor<3x2xf32>, tensor<2xf32>) outs(%t : tensor<3x2xf32>) {
  ^bb0(%v: f32, %b: f32, %o: f32):
    %s = arith.addf %v, %o : f32
    linalg.yield %s : f32
  } -> tensor<3x2xf32>
  %k = linalg.matmul ins(%n, %wk : tensor<3x2xf32>, tensor<2x2xf32>) outs(%z : tensor<3x2xf32>) -> tensor<3x2xf32>
  %et = tensor.empty() : tensor<2x3xf32>
  %kt = linalg.transpose ins(%k : tensor<3x2xf32>) outs(%et : tensor<2x3xf32>) permutation = [1, 0]
  %e3 = tensor.empty() : tensor<3x3xf32>
  %z3 = linalg.fill ins(%c0 : f32) outs(%e3 : tensor<3x3xf32>) -> tensor<3x3xf32>
  %l = linalg.matmul ins(%qb, %kt : tensor<3x2xf32>, tensor<2x3xf32>) outs(%z3 : tensor<3x3xf32>) -> tensor<3x3xf32>
  %m = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%l : tensor<3x3xf32>) outs(%e3 : tensor<3x3xf32>) {
  ^bb0(%s: f32, %o: f32):
    %sc = arith.mulf %s, %half : f32
    linalg.yield %sc : f32
  } -> tensor<3x3xf32>
  return %m : tensor<3x3xf32>
}

func.func @foldlayout(%x: tensor<3x2xf32>, %other: tensor<3x2xf32>, %kin: tensor<3x2xf32>) -> tensor<3x3xf32> {
  %g = arith.constant dense<[2.0, 2.0]> : tensor<2xf32>
  %n = flashnorm.rms_norm %x gain(%g : tensor<2xf32>) eps(1.0e-05) : tensor<3x2xf32>
  %wq = arith.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %c0 = arith.constant 0.0 : f32
  %half = arith.constant 0.5 : f32
  %e = tensor.empty() : tensor<3x2xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<3x2xf32>) -> tensor<3x2xf32>
  %q = linalg.matmul ins(%n, %wq : tensor<3x2xf32>, tensor<2x2xf32>) outs(%z : tensor<3x2xf32>) -> tensor<3x2xf32>
  %cp = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%other : tensor<3x2xf32>) outs(%q : tensor<3x2xf32>) {
  ^bb0(%v: f32, %o: f32):
    linalg.yield %v : f32
  } -> tensor<3x2xf32>
  %et = tensor.empty() : tensor<2x3xf32>
  %kt = linalg.transpose ins(%kin : tensor<3x2xf32>) outs(%et : tensor<2x3xf32>) permutation = [1, 0]
  %e3 = tensor.empty() : tensor<3x3xf32>
  %z3 = linalg.fill ins(%c0 : f32) outs(%e3 : tensor<3x3xf32>) -> tensor<3x3xf32>
  %l = linalg.matmul ins(%cp, %kt : tensor<3x2xf32>, tensor<2x3xf32>) outs(%z3 : tensor<3x3xf32>) -> tensor<3x3xf32>
  %m = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%l : tensor<3x3xf32>) outs(%e3 : tensor<3x3xf32>) {
  ^bb0(%s: f32, %o: f32):
    %sc = arith.mulf %s, %half : f32
    linalg.yield %sc : f32
  } -> tensor<3x3xf32>
  return %m : tensor<3x3xf32>
}

func.func @foldcast(%x: tensor<3x2xf32>, %other: tensor<3x2xf32>, %kin: tensor<3x2xf32>) -> tensor<3x3xf32> {
  %g = arith.constant dense<[2.0, 2.0]> : tensor<2xf32>
  %n = flashnorm.rms_norm %x gain(%g : tensor<2xf32>) eps(1.0e-05) : tensor<3x2xf32>
  %wq = arith.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %c0 = arith.constant 0.0 : f32
  %half = arith.constant 0.5 : f32
  %e = tensor.empty() : tensor<3x2xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<3x2xf32>) -> tensor<3x2xf32>
  %q = linalg.matmul ins(%n, %wq : tensor<3x2xf32>, tensor<2x2xf32>) outs(%z : tensor<3x2xf32>) -> tensor<3x2xf32>
  %qi = tosa.cast %q : (tensor<3x2xf32>) -> tensor<3x2xi32>
  %cp = tosa.cast %qi : (tensor<3x2xi32>) -> tensor<3x2xf32>
  %et = tensor.empty() : tensor<2x3xf32>
  %kt = linalg.transpose ins(%kin : tensor<3x2xf32>) outs(%et : tensor<2x3xf32>) permutation = [1, 0]
  %e3 = tensor.empty() : tensor<3x3xf32>
  %z3 = linalg.fill ins(%c0 : f32) outs(%e3 : tensor<3x3xf32>) -> tensor<3x3xf32>
  %l = linalg.matmul ins(%cp, %kt : tensor<3x2xf32>, tensor<2x3xf32>) outs(%z3 : tensor<3x3xf32>) -> tensor<3x3xf32>
  %m = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%l : tensor<3x3xf32>) outs(%e3 : tensor<3x3xf32>) {
  ^bb0(%s: f32, %o: f32):
    %sc = arith.mulf %s, %half : f32
    linalg.yield %sc : f32
  } -> tensor<3x3xf32>
  return %m : tensor<3x3xf32>
}
