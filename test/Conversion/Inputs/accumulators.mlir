func.func @partial(%a: memref<4x16xf32>, %b: memref<16x32xf32>) -> memref<4x32xf32> {
  %one = arith.constant 1.0 : f32
  %zero = arith.constant 0.0 : f32
  %c = memref.alloc() : memref<4x32xf32>
  linalg.fill ins(%one : f32) outs(%c : memref<4x32xf32>)
  %sv = memref.subview %c[0, 0] [2, 32] [1, 1] : memref<4x32xf32> to memref<2x32xf32, strided<[32, 1]>>
  linalg.fill ins(%zero : f32) outs(%sv : memref<2x32xf32, strided<[32, 1]>>)
  linalg.matmul ins(%a, %b : memref<4x16xf32>, memref<16x32xf32>) outs(%c : memref<4x32xf32>)
  return %c : memref<4x32xf32>
}
func.func @loop(%a: memref<4x16xf32>, %b: memref<16x32xf32>, %n: index) -> memref<4x32xf32> {
  %one = arith.constant 1.0 : f32
  %zero = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c = memref.alloc() : memref<4x32xf32>
  linalg.fill ins(%zero : f32) outs(%c : memref<4x32xf32>)
  scf.for %i = %c0 to %n step %c1 {
    linalg.fill ins(%one : f32) outs(%c : memref<4x32xf32>)
  }
  linalg.matmul ins(%a, %b : memref<4x16xf32>, memref<16x32xf32>) outs(%c : memref<4x32xf32>)
  return %c : memref<4x32xf32>
}
