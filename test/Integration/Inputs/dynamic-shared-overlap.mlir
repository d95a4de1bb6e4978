// Two views of a kernel's dynamic shared memory that overlap (bytes 0-15
// and 8-23): the test lowering of GPU kernels to CPU loops gives each view
// a buffer of its own, which would not alias, so it refuses them
// (launch-to-loops-barriers.mlir).
func.func @overlap(%out: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %bytes = arith.constant 24 : i32
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c4, %sy = %c1, %sz = %c1)
             dynamic_shared_memory_size %bytes {
    %raw = gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
    %a = memref.view %raw[%c0][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<4xf32, #gpu.address_space<workgroup>>
    %b = memref.view %raw[%c8][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<4xf32, #gpu.address_space<workgroup>>
    %v = memref.load %a[%tx] : memref<4xf32, #gpu.address_space<workgroup>>
    memref.store %v, %b[%tx] : memref<4xf32, #gpu.address_space<workgroup>>
    gpu.terminator
  }
  return
}
