// Host loops over buffers, as importers write in-place updates: rows of a
// cache shifted up in place (each iteration reads what the next one
// overwrites: one GPU thread, in order), then the new row written at the
// end (independent iterations: a parallel kernel), then a norm and a
// projection of the cache (gpu-kernels-on-cpu.test).
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @forward(%cache: tensor<4x16xf32>, %row: tensor<1x16xf32>, %w: tensor<16x8xf32>) -> (tensor<4x8xf32>, tensor<4x16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c16 = arith.constant 16 : index
  %buf = bufferization.to_buffer %cache : tensor<4x16xf32> to memref<4x16xf32>
  scf.for %i = %c0 to %c3 step %c1 {
    %next = arith.addi %i, %c1 : index
    scf.for %j = %c0 to %c16 step %c1 {
      %v = memref.load %buf[%next, %j] : memref<4x16xf32>
      memref.store %v, %buf[%i, %j] : memref<4x16xf32>
    }
  }
  scf.for %j = %c0 to %c16 step %c1 {
    %v = tensor.extract %row[%c0, %j] : tensor<1x16xf32>
    memref.store %v, %buf[%c3, %j] : memref<4x16xf32>
  }
  %x = bufferization.to_tensor %buf restrict : memref<4x16xf32> to tensor<4x16xf32>
  %e = tensor.empty() : tensor<4x16xf32>
  %sq = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<4x16xf32>) outs(%e : tensor<4x16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.mulf %a, %a : f32
    linalg.yield %m : f32
  } -> tensor<4x16xf32>
  %z = arith.constant 0.0 : f32
  %er = tensor.empty() : tensor<4xf32>
  %fr = linalg.fill ins(%z : f32) outs(%er : tensor<4xf32>) -> tensor<4xf32>
  %sum = linalg.reduce ins(%sq : tensor<4x16xf32>) outs(%fr : tensor<4xf32>) dimensions = [1]
    (%in: f32, %acc: f32) {
      %s = arith.addf %in, %acc : f32
      linalg.yield %s : f32
    }
  %n = arith.constant 0.0625 : f32
  %eps = arith.constant 1.0e-5 : f32
  %en = tensor.empty() : tensor<4x16xf32>
  %norm = linalg.generic {indexing_maps = [#id, affine_map<(d0, d1) -> (d0)>, #id], iterator_types = ["parallel", "parallel"]} ins(%x, %sum : tensor<4x16xf32>, tensor<4xf32>) outs(%en : tensor<4x16xf32>) {
  ^bb0(%a: f32, %s: f32, %o: f32):
    %ms = arith.mulf %s, %n : f32
    %me = arith.addf %ms, %eps : f32
    %r = math.rsqrt %me : f32
    %y = arith.mulf %a, %r : f32
    linalg.yield %y : f32
  } -> tensor<4x16xf32>
  %ep = tensor.empty() : tensor<4x8xf32>
  %fp = linalg.fill ins(%z : f32) outs(%ep : tensor<4x8xf32>) -> tensor<4x8xf32>
  %p = linalg.matmul ins(%norm, %w : tensor<4x16xf32>, tensor<16x8xf32>) outs(%fp : tensor<4x8xf32>) -> tensor<4x8xf32>
  return %p, %x : tensor<4x8xf32>, tensor<4x16xf32>
}
func.func @main() {
  %e = tensor.empty() : tensor<4x16xf32>
  %cache = linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel"]} outs(%e : tensor<4x16xf32>) {
  ^bb0(%o: f32):
    %i0 = linalg.index 0 : index
    %i1 = linalg.index 1 : index
    %j0 = arith.index_cast %i0 : index to i32
    %j1 = arith.index_cast %i1 : index to i32
    %f0 = arith.sitofp %j0 : i32 to f32
    %f1 = arith.sitofp %j1 : i32 to f32
    %c = arith.constant 0.37 : f32
    %m = arith.mulf %f0, %c : f32
    %s = arith.addf %m, %f1 : f32
    %v = math.sin %s : f32
    linalg.yield %v : f32
  } -> tensor<4x16xf32>
  %er = tensor.empty() : tensor<1x16xf32>
  %row = linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel"]} outs(%er : tensor<1x16xf32>) {
  ^bb0(%o: f32):
    %i1 = linalg.index 1 : index
    %j1 = arith.index_cast %i1 : index to i32
    %f1 = arith.sitofp %j1 : i32 to f32
    %v = math.cos %f1 : f32
    linalg.yield %v : f32
  } -> tensor<1x16xf32>
  %ew = tensor.empty() : tensor<16x8xf32>
  %w = linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel"]} outs(%ew : tensor<16x8xf32>) {
  ^bb0(%o: f32):
    %i0 = linalg.index 0 : index
    %i1 = linalg.index 1 : index
    %j0 = arith.index_cast %i0 : index to i32
    %j1 = arith.index_cast %i1 : index to i32
    %f0 = arith.sitofp %j0 : i32 to f32
    %f1 = arith.sitofp %j1 : i32 to f32
    %c = arith.constant 0.21 : f32
    %m = arith.mulf %f1, %c : f32
    %s = arith.addf %m, %f0 : f32
    %v = math.cos %s : f32
    linalg.yield %v : f32
  } -> tensor<16x8xf32>
  %y, %x = func.call @forward(%cache, %row, %w) : (tensor<4x16xf32>, tensor<1x16xf32>, tensor<16x8xf32>) -> (tensor<4x8xf32>, tensor<4x16xf32>)
  %u = tensor.cast %y : tensor<4x8xf32> to tensor<*xf32>
  func.call @printMemrefF32(%u) : (tensor<*xf32>) -> ()
  %u2 = tensor.cast %x : tensor<4x16xf32> to tensor<*xf32>
  func.call @printMemrefF32(%u2) : (tensor<*xf32>) -> ()
  return
}
func.func private @printMemrefF32(tensor<*xf32>)
