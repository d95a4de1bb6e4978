// A caller of functions that return buffers, as bufferization leaves a test
// driver: MLIR 22's buffer-deallocation-simplification alone reads freed
// ops on this module (llvm-project#205228) and crashes.
#id = affine_map<(d0, d1) -> (d0, d1)>
module {
  func.func private @ramp(index, index, f32) -> memref<?x?xf32>
  func.func @main() {
    %c1 = arith.constant 1 : index
    %c48 = arith.constant 48 : index
    %c64 = arith.constant 64 : index
    %c32 = arith.constant 32 : index
    %cst = arith.constant 0.000000e+00 : f32
    %cst_1 = arith.constant 2.000000e+00 : f32
    %cst_2 = arith.constant 3.000000e+00 : f32
    %0 = call @ramp(%c1, %c64, %cst) : (index, index, f32) -> memref<?x?xf32>
    %cast = memref.cast %0 : memref<?x?xf32> to memref<1x64xf32>
    %2 = call @ramp(%c48, %c64, %cst_1) : (index, index, f32) -> memref<?x?xf32>
    %cast_4 = memref.cast %2 : memref<?x?xf32> to memref<48x64xf32>
    %c32_7 = arith.constant 32 : index
    %5 = call @ramp(%c32_7, %c64, %cst_2) : (index, index, f32) -> memref<?x?xf32>
    %alloc = memref.alloc() {alignment = 64 : i64} : memref<1x64xbf16>
    linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%cast : memref<1x64xf32>) outs(%alloc : memref<1x64xbf16>) {
    ^bb0(%in: f32, %out: bf16):
      %t = arith.truncf %in : f32 to bf16
      linalg.yield %t : bf16
    }
    %alloc_11 = memref.alloc() {alignment = 64 : i64} : memref<48x64xbf16>
    linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%cast_4 : memref<48x64xf32>) outs(%alloc_11 : memref<48x64xbf16>) {
    ^bb0(%in: f32, %out: bf16):
      %t = arith.truncf %in : f32 to bf16
      linalg.yield %t : bf16
    }
    return
  }
}
