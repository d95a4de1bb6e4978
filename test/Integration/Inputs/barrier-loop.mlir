// A loop with barriers in its body, run on the CPU by the test lowering of
// GPU kernels (launch-to-loops-barriers.mlir): each iteration, thread t of
// a block of 4 publishes its value in shared memory, reads its own back
// (a value the phase after the barrier takes), and after the barrier adds
// its right neighbour's; the second barrier ends the iteration.
func.func @rotate(%out: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c2, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c4, %sy = %c1, %sz = %c1)
             workgroup(%slots : memref<4xf32, #gpu.address_space<workgroup>>) {
    %v = affine.apply affine_map<(b, t) -> (b * 10 + t)>(%bx, %tx)
    %vi = arith.index_cast %v : index to i32
    %vf = arith.sitofp %vi : i32 to f32
    %r = scf.for %i = %c0 to %c3 step %c1 iter_args(%acc = %vf) -> f32 {
      memref.store %acc, %slots[%tx] : memref<4xf32, #gpu.address_space<workgroup>>
      %mine = memref.load %slots[%tx] : memref<4xf32, #gpu.address_space<workgroup>>
      gpu.barrier
      %next = affine.apply affine_map<(t) -> ((t + 1) mod 4)>(%tx)
      %n = memref.load %slots[%next] : memref<4xf32, #gpu.address_space<workgroup>>
      %s = arith.addf %mine, %n : f32
      gpu.barrier
      scf.yield %s : f32
    }
    %at = affine.apply affine_map<(b, t) -> (b * 4 + t)>(%bx, %tx)
    memref.store %r, %out[%at] : memref<8xf32>
    gpu.terminator
  }
  return
}

func.func @main() {
  %out = memref.alloc() : memref<8xf32>
  call @rotate(%out) : (memref<8xf32>) -> ()
  %u = memref.cast %out : memref<8xf32> to memref<*xf32>
  call @printMemrefF32(%u) : (memref<*xf32>) -> ()
  memref.dealloc %out : memref<8xf32>
  return
}
func.func private @printMemrefF32(memref<*xf32>)
