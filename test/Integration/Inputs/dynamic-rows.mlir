// A token count known only at run time: the kernels' blocks of rows cannot
// go on the grid's y (at most 65535), so every dimension of blocks is taken
// along x, linearized. 1000 outputs: four blocks of 256 threads per row,
// the last one guarded.
func.func @f(%x: tensor<?x64xf32>, %w: tensor<64x1000xf32>) -> tensor<?x1000xf32> {
  %n = flashnorm.rms_norm %x eps(1.0e-5) : tensor<?x64xf32>
  %c0 = arith.constant 0 : index
  %m = tensor.dim %x, %c0 : tensor<?x64xf32>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty(%m) : tensor<?x1000xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<?x1000xf32>) -> tensor<?x1000xf32>
  %y = linalg.matmul ins(%n, %w : tensor<?x64xf32>, tensor<64x1000xf32>) outs(%f : tensor<?x1000xf32>) -> tensor<?x1000xf32>
  return %y : tensor<?x1000xf32>
}

#id = affine_map<(i, j) -> (i, j)>
func.func @main() {
  %ex = tensor.empty() : tensor<5x64xf32>
  %x = linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel"]} outs(%ex : tensor<5x64xf32>) {
  ^bb0(%o: f32):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %k = arith.muli %i, %j : index
    %kk = arith.addi %k, %i : index
    %n = arith.index_cast %kk : index to i32
    %v = arith.sitofp %n : i32 to f32
    %s = math.sin %v : f32
    linalg.yield %s : f32
  } -> tensor<5x64xf32>
  %ew = tensor.empty() : tensor<64x1000xf32>
  %w = linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel"]} outs(%ew : tensor<64x1000xf32>) {
  ^bb0(%o: f32):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %k = arith.addi %i, %j : index
    %n = arith.index_cast %k : index to i32
    %v = arith.sitofp %n : i32 to f32
    %s = math.cos %v : f32
    linalg.yield %s : f32
  } -> tensor<64x1000xf32>
  %xd = tensor.cast %x : tensor<5x64xf32> to tensor<?x64xf32>
  %y = call @f(%xd, %w) : (tensor<?x64xf32>, tensor<64x1000xf32>) -> tensor<?x1000xf32>
  %u = tensor.cast %y : tensor<?x1000xf32> to tensor<*xf32>
  call @printMemrefF32(%u) : (tensor<*xf32>) -> ()
  return
}
func.func private @printMemrefF32(tensor<*xf32>)
