// A norm whose input goes through a truncf -> extf round trip (f32 -> bf16
// -> f32) before the statistic and the scale: the rounding is part of what
// the norm reads. The raise normalizes the rounded value, not the f32 one
// before it (0.34% off once, and the leftover truncf then blocked folding
// and deferral); the gain folds and 1/RMS is deferred; the numbers stay
// (f32, rtol 1e-5).
// RUN: flashnorm-opt %s --flashnorm -o %t.fn.mlir
// RUN: FileCheck %s < %t.fn.mlir
// RUN: flashnorm-opt %s %lower-to-llvm | %run > %t.ref
// RUN: flashnorm-opt %t.fn.mlir %lower-to-llvm | %run > %t.out
// RUN: %compare %t.ref %t.out --rtol 1e-5 --atol 1e-6 | FileCheck %s --check-prefix=CMP
// CMP: MATCH
// CHECK-LABEL: func.func @forward
// CHECK-SAME: (%[[X:.*]]: tensor<4x16xf32>)
// CHECK: %[[T:.*]] = arith.truncf %[[X]] : tensor<4x16xf32> to tensor<4x16xbf16>
// CHECK: %[[E:.*]] = arith.extf %[[T]] : tensor<4x16xbf16> to tensor<4x16xf32>
// CHECK: flashnorm.rms_inv %[[E]]
// CHECK: linalg.matmul ins(%[[E]],
// CHECK: flashnorm.post_scale

#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @forward(%x: tensor<4x16xf32>) -> tensor<4x8xf32> {
  %g = arith.constant dense<[0.5, 1.25, 0.75, 1.0, 1.5, 0.875, 1.125, 0.625, 1.0, 1.375, 0.5, 1.0, 0.75, 1.25, 1.0, 0.875]> : tensor<16xf32>
  %w = arith.constant dense<0.125> : tensor<16x8xf32>
  %t = arith.truncf %x : tensor<4x16xf32> to tensor<4x16xbf16>
  %xe = arith.extf %t : tensor<4x16xbf16> to tensor<4x16xf32>
  %sq = arith.mulf %xe, %xe : tensor<4x16xf32>
  %z = arith.constant 0.0 : f32
  %e4 = tensor.empty() : tensor<4xf32>
  %acc = linalg.fill ins(%z : f32) outs(%e4 : tensor<4xf32>) -> tensor<4xf32>
  %sum = linalg.reduce ins(%sq : tensor<4x16xf32>) outs(%acc : tensor<4xf32>) dimensions = [1]
    (%in: f32, %out: f32) {
      %a = arith.addf %in, %out : f32
      linalg.yield %a : f32
    }
  %k = arith.constant dense<0.0625> : tensor<4xf32>
  %mean = arith.mulf %sum, %k : tensor<4xf32>
  %eps = arith.constant dense<1.0e-05> : tensor<4xf32>
  %me = arith.addf %mean, %eps : tensor<4xf32>
  %r = math.rsqrt %me : tensor<4xf32>
  %e2 = tensor.empty() : tensor<4x16xf32>
  %rb = linalg.broadcast ins(%r : tensor<4xf32>) outs(%e2 : tensor<4x16xf32>) dimensions = [1]
  %n = arith.mulf %xe, %rb : tensor<4x16xf32>
  %gb = linalg.broadcast ins(%g : tensor<16xf32>) outs(%e2 : tensor<4x16xf32>) dimensions = [0]
  %ng = arith.mulf %n, %gb : tensor<4x16xf32>
  %e8 = tensor.empty() : tensor<4x8xf32>
  %f = linalg.fill ins(%z : f32) outs(%e8 : tensor<4x8xf32>) -> tensor<4x8xf32>
  %y = linalg.matmul ins(%ng, %w : tensor<4x16xf32>, tensor<16x8xf32>) outs(%f : tensor<4x8xf32>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

func.func @main() {
  %e = tensor.empty() : tensor<4x16xf32>
  %x = linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel"]} outs(%e : tensor<4x16xf32>) {
  ^bb0(%o: f32):
    %i0 = linalg.index 0 : index
    %i1 = linalg.index 1 : index
    %j0 = arith.index_cast %i0 : index to i32
    %j1 = arith.index_cast %i1 : index to i32
    %f0 = arith.sitofp %j0 : i32 to f32
    %f1 = arith.sitofp %j1 : i32 to f32
    %c = arith.constant 0.37 : f32
    %m = arith.mulf %f1, %c : f32
    %s = arith.addf %m, %f0 : f32
    %v = math.sin %s : f32
    linalg.yield %v : f32
  } -> tensor<4x16xf32>
  %y = call @forward(%x) : (tensor<4x16xf32>) -> tensor<4x8xf32>
  %u = tensor.cast %y : tensor<4x8xf32> to tensor<*xf32>
  call @printMemrefF32(%u) : (tensor<*xf32>) -> ()
  return
}
func.func private @printMemrefF32(tensor<*xf32>)
