// A LayerNorm without gain whose projection weight is an argument, under
// prepare-function=true: the prepare function folds the mean-centering into
// the weight (as it does with a gain), so 1/std is deferred; numbers
// unchanged (f32, rtol 1e-4). Refused once ("the mean-centering cannot be
// folded").
// RUN: flashnorm-opt %s --flashnorm=prepare-function=true --remarks-filter=flashnorm --remark-format=emitRemark -o %t.fn.mlir 2>&1 | FileCheck %s --check-prefix=REMARK
// RUN: FileCheck %s < %t.fn.mlir
// RUN: flashnorm-opt %s %lower-to-llvm | %run > %t.ref
// RUN: flashnorm-opt %t.fn.mlir %lower-to-llvm | %run > %t.out
// RUN: %compare %t.ref %t.out --rtol 1e-4 --atol 1e-5 | FileCheck %s --check-prefix=CMP
// REMARK: Function=f | Remark="folded the mean-centering into 1 projection weight(s) (1 argument(s), through the prepare function)"
// REMARK: Function=f | Remark="deferred 1/std
// CMP: MATCH
// CHECK-LABEL: func.func @f(
// CHECK: flashnorm.layer_inv
// CHECK: flashnorm.post_scale
// CHECK-LABEL: func.func @f_flashnorm_prepare(
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @f(%x: tensor<4x16xf32>, %w: tensor<16x8xf32>) -> tensor<4x8xf32> {
  %n = flashnorm.layer_norm %x eps(1.0e-05) : tensor<4x16xf32>
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x8xf32>
  %f = linalg.fill ins(%c0 : f32) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  %y = linalg.matmul ins(%n, %w : tensor<4x16xf32>, tensor<16x8xf32>) outs(%f : tensor<4x8xf32>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

func.func @main() {
  %e = tensor.empty() : tensor<4x16xf32>
  %x = linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel"]} outs(%e : tensor<4x16xf32>) {
  ^bb0(%o: f32):
    %i0 = linalg.index 0 : index
    %i1 = linalg.index 1 : index
    %j0 = arith.index_cast %i0 : index to i32
    %j1 = arith.index_cast %i1 : index to i32
    %f0 = arith.sitofp %j0 : i32 to f32
    %f1 = arith.sitofp %j1 : i32 to f32
    %c = arith.constant 0.37 : f32
    %m = arith.mulf %f1, %c : f32
    %s = arith.addf %m, %f0 : f32
    %v = math.sin %s : f32
    linalg.yield %v : f32
  } -> tensor<4x16xf32>
  %ew = tensor.empty() : tensor<16x8xf32>
  %w = linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel"]} outs(%ew : tensor<16x8xf32>) {
  ^bb0(%o: f32):
    %i0 = linalg.index 0 : index
    %i1 = linalg.index 1 : index
    %j0 = arith.index_cast %i0 : index to i32
    %j1 = arith.index_cast %i1 : index to i32
    %f0 = arith.sitofp %j0 : i32 to f32
    %f1 = arith.sitofp %j1 : i32 to f32
    %c = arith.constant 0.23 : f32
    %m = arith.mulf %f0, %c : f32
    %s = arith.subf %m, %f1 : f32
    %v = math.cos %s : f32
    linalg.yield %v : f32
  } -> tensor<16x8xf32>
  %y = call @f(%x, %w) : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
  %u = tensor.cast %y : tensor<4x8xf32> to tensor<*xf32>
  call @printMemrefF32(%u) : (tensor<*xf32>) -> ()
  return
}
func.func private @printMemrefF32(tensor<*xf32>)
