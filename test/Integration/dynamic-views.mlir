// Batch and tokens known only at run time, the norm's output viewed as
// [B*T, K] for the projection and its result back as [B, T, N] (aten.view
// around aten.mm): every lowering took the view back through upstream's
// expand-strided-metadata, which crashed on it (two dynamic sizes in one
// group). Now the original and the rewritten program run and agree, and the
// GPU pipeline's host code (the driver @main) lowers too.
// RUN: flashnorm-opt %s --flashnorm | flashnorm-opt --flashnorm-gpu-pipeline=format=isa -o /dev/null
// RUN: flashnorm-run %s -e main --pipeline=flashnorm --compare --rtol 1e-5 | FileCheck %s
// RUN: flashnorm-run %s -e main --pipeline=flashnorm --concurrent --compare --rtol 1e-5 | FileCheck %s
// CHECK: MATCH
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#row3 = affine_map<(d0, d1, d2) -> (d0, d1)>
#feat3 = affine_map<(d0, d1, d2) -> (d2)>
func.func @f(%x: tensor<?x?x8xf32>) -> tensor<?x?x6xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %b = tensor.dim %x, %c0 : tensor<?x?x8xf32>
  %t = tensor.dim %x, %c1 : tensor<?x?x8xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty(%b, %t) : tensor<?x?x8xf32>
  %er = tensor.empty(%b, %t) : tensor<?x?xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%er : tensor<?x?xf32>) -> tensor<?x?xf32>
  %sum = linalg.generic {indexing_maps = [#id3, #row3], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x : tensor<?x?x8xf32>) outs(%acc : tensor<?x?xf32>) {
  ^bb0(%a: f32, %o: f32):
    %p = arith.mulf %a, %a : f32
    %s = arith.addf %o, %p : f32
    linalg.yield %s : f32
  } -> tensor<?x?xf32>
  %g = arith.constant dense<[-1.7928, 0.6871, 0.2610, 0.7673, -1.7547, 1.6530, -1.6513, -1.2611]> : tensor<8xf32>
  %n = linalg.generic {indexing_maps = [#id3, #row3, #feat3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%x, %sum, %g : tensor<?x?x8xf32>, tensor<?x?xf32>, tensor<8xf32>) outs(%e : tensor<?x?x8xf32>) {
  ^bb0(%a: f32, %s: f32, %gg: f32, %o: f32):
    %k = arith.constant 8.0 : f32
    %m = arith.divf %s, %k : f32
    %eps = arith.constant 1.0e-05 : f32
    %v = arith.addf %m, %eps : f32
    %r = math.rsqrt %v : f32
    %p = arith.mulf %a, %r : f32
    %q = arith.mulf %p, %gg : f32
    linalg.yield %q : f32
  } -> tensor<?x?x8xf32>
  %n2 = tensor.collapse_shape %n [[0, 1], [2]] : tensor<?x?x8xf32> into tensor<?x8xf32>
  %bt = arith.muli %b, %t : index
  %w = arith.constant dense<[[-0.4301, -0.8731, 0.7079, 0.9796, -0.8230, 0.6012], [-0.1791, -0.6985, -0.4122, 0.5376, 0.7455, -0.9116], [0.2291, -0.9101, 0.4369, -0.3381, 0.7618, 0.9613], [0.0108, 0.9970, -0.3807, -0.8461, 0.1995, -0.9372], [-0.6052, -0.1841, 0.2209, -0.6876, -0.9151, 0.7356], [-0.3723, 0.9173, 0.7933, -0.2444, -0.0792, 0.0401], [0.2878, 0.1913, 0.1185, 0.2403, 0.8812, 0.0141], [-0.1376, 0.4406, -0.5247, -0.3978, 0.9556, 0.0423]]> : tensor<8x6xf32>
  %eo = tensor.empty(%bt) : tensor<?x6xf32>
  %z = linalg.fill ins(%zero : f32) outs(%eo : tensor<?x6xf32>) -> tensor<?x6xf32>
  %y = linalg.matmul ins(%n2, %w : tensor<?x8xf32>, tensor<8x6xf32>) outs(%z : tensor<?x6xf32>) -> tensor<?x6xf32>
  %y3 = tensor.expand_shape %y [[0, 1], [2]] output_shape [%b, %t, 6] : tensor<?x6xf32> into tensor<?x?x6xf32>
  return %y3 : tensor<?x?x6xf32>
}
func.func @main(%x: tensor<2x3x8xf32>) -> tensor<2x3x6xf32> {
  %d = tensor.cast %x : tensor<2x3x8xf32> to tensor<?x?x8xf32>
  %y = call @f(%d) : (tensor<?x?x8xf32>) -> tensor<?x?x6xf32>
  %s = tensor.cast %y : tensor<?x?x6xf32> to tensor<2x3x6xf32>
  return %s : tensor<2x3x6xf32>
}
