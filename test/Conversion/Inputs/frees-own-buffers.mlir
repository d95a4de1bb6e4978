// Memref code that frees its own buffers, as a frontend that bufferized
// itself writes it.
func.func @owns(%x: memref<4xf32>) -> f32 {
  %t = memref.alloc() : memref<4xf32>
  memref.copy %x, %t : memref<4xf32> to memref<4xf32>
  %c0 = arith.constant 0 : index
  %v = memref.load %t[%c0] : memref<4xf32>
  memref.dealloc %t : memref<4xf32>
  %u = memref.alloc() : memref<8xf32>
  return %v : f32
}
