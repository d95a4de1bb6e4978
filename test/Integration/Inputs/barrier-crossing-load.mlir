// A value loaded before a barrier and used after it: the test lowering of
// GPU kernels to CPU loops cannot run it phase by phase
// (launch-to-loops-barriers.mlir).
func.func @crossing(%in: memref<4xf32>, %out: memref<4xf32>) {
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c4, %sy = %c1, %sz = %c1) {
    %v = memref.load %in[%tx] : memref<4xf32>
    gpu.barrier
    memref.store %v, %out[%tx] : memref<4xf32>
    gpu.terminator
  }
  return
}
