// A barrier under an scf.if: the test lowering of GPU kernels to CPU loops
// refuses it (launch-to-loops-barriers.mlir).
func.func @nested(%out: memref<4xf32>, %c: i1) {
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c4, %sy = %c1, %sz = %c1) {
    scf.if %c {
      gpu.barrier
    }
    gpu.terminator
  }
  return
}
