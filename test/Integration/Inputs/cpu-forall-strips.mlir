// A user scf.forall (two heads) around a prefill projection on a K x N
// argument weight: each iteration's contraction copies strips of its weight
// into a contiguous buffer.
func.func @f(%x: tensor<2x16x512xf32>, %w: tensor<2x512x256xf32>) -> tensor<2x16x256xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x16x256xf32>
  %r = scf.forall (%h) in (2) shared_outs(%out = %e) -> (tensor<2x16x256xf32>) {
    %xs = tensor.extract_slice %x[%h, 0, 0] [1, 16, 512] [1, 1, 1] : tensor<2x16x512xf32> to tensor<16x512xf32>
    %ws = tensor.extract_slice %w[%h, 0, 0] [1, 512, 256] [1, 1, 1] : tensor<2x512x256xf32> to tensor<512x256xf32>
    %os = tensor.extract_slice %out[%h, 0, 0] [1, 16, 256] [1, 1, 1] : tensor<2x16x256xf32> to tensor<16x256xf32>
    %f = linalg.fill ins(%z : f32) outs(%os : tensor<16x256xf32>) -> tensor<16x256xf32>
    %m = linalg.matmul ins(%xs, %ws : tensor<16x512xf32>, tensor<512x256xf32>) outs(%f : tensor<16x256xf32>) -> tensor<16x256xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %m into %out[%h, 0, 0] [1, 16, 256] [1, 1, 1] : tensor<16x256xf32> into tensor<2x16x256xf32>
    }
  }
  return %r : tensor<2x16x256xf32>
}

func.func @main() {
  %e0 = tensor.empty() : tensor<2x16x512xf32>
  %a0 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} outs(%e0 : tensor<2x16x512xf32>) {
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
    %i2 = linalg.index 2 : index
    %ii2 = arith.index_cast %i2 : index to i32
    %f2 = arith.sitofp %ii2 : i32 to f32
    %c2 = arith.constant 0.950 : f32
    %m2 = arith.mulf %f2, %c2 : f32
    %s2 = arith.addf %s1, %m2 : f32
    %v0 = math.sin %s2 : f32
    linalg.yield %v0 : f32
  } -> tensor<2x16x512xf32>
  %e1 = tensor.empty() : tensor<2x512x256xf32>
  %a1 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} outs(%e1 : tensor<2x512x256xf32>) {
  ^bb0(%o: f32):
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
    %i2 = linalg.index 2 : index
    %ii2 = arith.index_cast %i2 : index to i32
    %f2 = arith.sitofp %ii2 : i32 to f32
    %c2 = arith.constant 1.060 : f32
    %m2 = arith.mulf %f2, %c2 : f32
    %s2 = arith.addf %s1, %m2 : f32
    %v0 = math.sin %s2 : f32
    linalg.yield %v0 : f32
  } -> tensor<2x512x256xf32>
  %r0 = call @f(%a0, %a1) : (tensor<2x16x512xf32>, tensor<2x512x256xf32>) -> (tensor<2x16x256xf32>)
  %u0 = tensor.cast %r0 : tensor<2x16x256xf32> to tensor<*xf32>
  call @printMemrefF32(%u0) : (tensor<*xf32>) -> ()
  return
}
func.func private @printMemrefF32(tensor<*xf32>)
