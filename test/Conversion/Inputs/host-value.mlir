// A host value read from a buffer of a device function (gpu-host-loops.mlir).
func.func @host_value(%n: memref<1xindex>, %x: memref<16xf32>) {
  %c0 = arith.constant 0 : index
  %size = memref.load %n[%c0] : memref<1xindex>
  %sub = memref.subview %x[0] [%size] [1] : memref<16xf32> to memref<?xf32, strided<[1]>>
  %z = arith.constant 0.0 : f32
  linalg.fill ins(%z : f32) outs(%sub : memref<?xf32, strided<[1]>>)
  return
}
