// Decode (1 to 3 rows) on a bf16 K x N weight, N = 33: LLVM aborted on a
// vector of 33 bf16 lanes.
func.func @f(%x: tensor<3x17xf32>, %w: tensor<17x33xbf16>) -> tensor<3x33xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<3x33xf32>
  %o = linalg.fill ins(%z : f32) outs(%e : tensor<3x33xf32>) -> tensor<3x33xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : tensor<3x17xf32>, tensor<17x33xbf16>) outs(%o : tensor<3x33xf32>) {
  ^bb0(%a: f32, %b: bf16, %c: f32):
    %bw = arith.extf %b : bf16 to f32
    %p = arith.mulf %a, %bw : f32
    %s = arith.addf %c, %p : f32
    linalg.yield %s : f32
  } -> tensor<3x33xf32>
  return %r : tensor<3x33xf32>
}

func.func @main() {
  %e0 = tensor.empty() : tensor<3x17xf32>
  %a0 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} outs(%e0 : tensor<3x17xf32>) {
  ^bb0(%o: f32):
    %acc0 = arith.constant 0.0 : f32
    %i0 = linalg.index 0 : index
    %ii0 = arith.index_cast %i0 : index to i32
    %f0 = arith.sitofp %ii0 : i32 to f32
    %c0 = arith.constant 0.370 : f32
    %m0 = arith.mulf %f0, %c0 : f32
    %s0 = arith.addf %acc0, %m0 : f32
    %i1 = linalg.index 1 : index
    %ii1 = arith.index_cast %i1 : index to i32
    %f1 = arith.sitofp %ii1 : i32 to f32
    %c1 = arith.constant 0.660 : f32
    %m1 = arith.mulf %f1, %c1 : f32
    %s1 = arith.addf %s0, %m1 : f32
    %v0 = math.sin %s1 : f32
    linalg.yield %v0 : f32
  } -> tensor<3x17xf32>
  %e1 = tensor.empty() : tensor<17x33xbf16>
  %a1 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} outs(%e1 : tensor<17x33xbf16>) {
  ^bb0(%o: bf16):
    %acc0 = arith.constant 0.0 : f32
    %i0 = linalg.index 0 : index
    %ii0 = arith.index_cast %i0 : index to i32
    %f0 = arith.sitofp %ii0 : i32 to f32
    %c0 = arith.constant 0.480 : f32
    %m0 = arith.mulf %f0, %c0 : f32
    %s0 = arith.addf %acc0, %m0 : f32
    %i1 = linalg.index 1 : index
    %ii1 = arith.index_cast %i1 : index to i32
    %f1 = arith.sitofp %ii1 : i32 to f32
    %c1 = arith.constant 0.770 : f32
    %m1 = arith.mulf %f1, %c1 : f32
    %s1 = arith.addf %s0, %m1 : f32
    %v0 = math.sin %s1 : f32
    %v1 = arith.truncf %v0 : f32 to bf16
    linalg.yield %v1 : bf16
  } -> tensor<17x33xbf16>
  %r0 = call @f(%a0, %a1) : (tensor<3x17xf32>, tensor<17x33xbf16>) -> (tensor<3x33xf32>)
  %u0 = tensor.cast %r0 : tensor<3x33xf32> to tensor<*xf32>
  call @printMemrefF32(%u0) : (tensor<*xf32>) -> ()
  return
}
func.func private @printMemrefF32(tensor<*xf32>)
