// A LayerNorm right after an RMSNorm, feeding a projection: after
// --flashnorm, the RMSNorm's post-scale feeds the LayerNorm's statistics and
// its post-scale, two post-scales in a chain (fusing the first erases the
// second's kernel candidate).
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @forward(%x: tensor<4x64xf32>) -> tensor<4x32xf32> {
  %w = arith.constant dense<0.25> : tensor<64x32xf32>
  %a = flashnorm.rms_norm %x eps(1.0e-05) : tensor<4x64xf32>
  %b = flashnorm.layer_norm %a eps(1.0e-05) : tensor<4x64xf32>
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x32xf32>
  %f = linalg.fill ins(%c0 : f32) outs(%e : tensor<4x32xf32>) -> tensor<4x32xf32>
  %z = linalg.matmul ins(%b, %w : tensor<4x64xf32>, tensor<64x32xf32>) outs(%f : tensor<4x32xf32>) -> tensor<4x32xf32>
  return %z : tensor<4x32xf32>
}

func.func @main() {
  %e = tensor.empty() : tensor<4x64xf32>
  %x = linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel"]} outs(%e : tensor<4x64xf32>) {
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
  } -> tensor<4x64xf32>
  %y = call @forward(%x) : (tensor<4x64xf32>) -> tensor<4x32xf32>
  %u = tensor.cast %y : tensor<4x32xf32> to tensor<*xf32>
  call @printMemrefF32(%u) : (tensor<*xf32>) -> ()
  return
}
func.func private @printMemrefF32(tensor<*xf32>)
