// A value loaded before a barrier and used after it: the test lowering of
// GPU kernels to CPU loops keeps it in the thread's slot
// (launch-to-loops-barriers.mlir). Thread t stores 2 t + 3.
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

func.func @main() {
  %in = memref.alloc() : memref<4xf32>
  %out = memref.alloc() : memref<4xf32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  scf.for %i = %c0 to %c4 step %c1 {
    %v = affine.apply affine_map<(i) -> (i * 2 + 3)>(%i)
    %vi = arith.index_cast %v : index to i32
    %vf = arith.sitofp %vi : i32 to f32
    memref.store %vf, %in[%i] : memref<4xf32>
  }
  call @crossing(%in, %out) : (memref<4xf32>, memref<4xf32>) -> ()
  %u = memref.cast %out : memref<4xf32> to memref<*xf32>
  call @printMemrefF32(%u) : (memref<*xf32>) -> ()
  memref.dealloc %in : memref<4xf32>
  memref.dealloc %out : memref<4xf32>
  return
}
func.func private @printMemrefF32(memref<*xf32>)
