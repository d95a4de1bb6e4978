// Execution: raised norms compute what the frontend IR computed (f32 forms:
// rtol 1e-5), then the whole pipeline on top keeps the numbers too.
// RUN: flashnorm-opt %s %lower-to-llvm | %run > %t.ref
// RUN: flashnorm-opt %s --flashnorm-raise | flashnorm-opt %lower-to-llvm | %run > %t.out
// RUN: %compare %t.ref %t.out --rtol 1e-5 --atol 1e-6 | FileCheck %s --check-prefix=CMP
// RUN: flashnorm-opt %s --flashnorm | flashnorm-opt %lower-to-llvm | %run > %t.all
// RUN: %compare %t.ref %t.all --rtol 1e-5 --atol 1e-6 | FileCheck %s --check-prefix=CMP
// The same on the concurrent CPU pipeline (statistics as async tasks):
// RUN: flashnorm-opt %s --flashnorm | flashnorm-opt --flashnorm-cpu-pipeline | %async-run > %t.async
// RUN: %compare %t.ref %t.async --rtol 1e-5 --atol 1e-6 | FileCheck %s --check-prefix=CMP
// RUN: flashnorm-opt %s --flashnorm-raise | FileCheck %s
// CMP: MATCH
// CHECK-COUNT-4: flashnorm.{{rms|layer}}_norm
func.func @one_over_sqrt(%x: tensor<4x8xf32>, %g: tensor<8xf32>) -> tensor<4x8xf32> {
  %sq = arith.mulf %x, %x : tensor<4x8xf32>
  %zero = arith.constant 0.0 : f32
  %er = tensor.empty() : tensor<4xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%er : tensor<4xf32>) -> tensor<4xf32>
  %sum = linalg.reduce ins(%sq : tensor<4x8xf32>) outs(%acc : tensor<4xf32>) dimensions = [1]
    (%in: f32, %init: f32) {
      %s = arith.addf %in, %init : f32
      linalg.yield %s : f32
    }
  %k = arith.constant dense<8.0> : tensor<4xf32>
  %mean = arith.divf %sum, %k : tensor<4xf32>
  %eps = arith.constant dense<1.0e-06> : tensor<4xf32>
  %v = arith.addf %mean, %eps : tensor<4xf32>
  %sd = math.sqrt %v : tensor<4xf32>
  %one = arith.constant dense<1.0> : tensor<4xf32>
  %r = arith.divf %one, %sd : tensor<4xf32>
  %e = tensor.empty() : tensor<4x8xf32>
  %rb = linalg.broadcast ins(%r : tensor<4xf32>) outs(%e : tensor<4x8xf32>) dimensions = [1]
  %n = arith.mulf %x, %rb : tensor<4x8xf32>
  %g2 = tensor.expand_shape %g [[0, 1]] output_shape [1, 8] : tensor<8xf32> into tensor<1x8xf32>
  %gb = linalg.broadcast ins(%g : tensor<8xf32>) outs(%e : tensor<4x8xf32>) dimensions = [0]
  %y = arith.mulf %n, %gb : tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

func.func @mixed_divide_by_sqrt(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %sq = tosa.mul %x, %x, %shift : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<1xi8>) -> tensor<4x8xf32>
  %sum = tosa.reduce_sum %sq {axis = 1 : i32} : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %invk = "tosa.const"() <{values = dense<0.125> : tensor<1x1xf32>}> : () -> tensor<1x1xf32>
  %mean = tosa.mul %sum, %invk, %shift : (tensor<4x1xf32>, tensor<1x1xf32>, tensor<1xi8>) -> tensor<4x1xf32>
  %eps = "tosa.const"() <{values = dense<1.0e-05> : tensor<1x1xf32>}> : () -> tensor<1x1xf32>
  %v = tosa.add %mean, %eps : (tensor<4x1xf32>, tensor<1x1xf32>) -> tensor<4x1xf32>
  %half = "tosa.const"() <{values = dense<0.5> : tensor<1x1xf32>}> : () -> tensor<1x1xf32>
  %sd = tosa.pow %v, %half : (tensor<4x1xf32>, tensor<1x1xf32>) -> tensor<4x1xf32>
  %e = tensor.empty() : tensor<4x8xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, 0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%x, %sd : tensor<4x8xf32>, tensor<4x1xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %s: f32, %o: f32):
    %q = arith.divf %a, %s : f32
    linalg.yield %q : f32
  } -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

func.func @tosa_rms(%x: tensor<1x4x8xf32>, %g: tensor<8xf32>) -> tensor<1x4x8xf32> {
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %two = "tosa.const"() <{values = dense<2.0> : tensor<1x1x1xf32>}> : () -> tensor<1x1x1xf32>
  %sq = tosa.pow %x, %two : (tensor<1x4x8xf32>, tensor<1x1x1xf32>) -> tensor<1x4x8xf32>
  %sum = tosa.reduce_sum %sq {axis = 2 : i32} : (tensor<1x4x8xf32>) -> tensor<1x4x1xf32>
  %invk = "tosa.const"() <{values = dense<0.125> : tensor<1x1x1xf32>}> : () -> tensor<1x1x1xf32>
  %mean = tosa.mul %sum, %invk, %shift : (tensor<1x4x1xf32>, tensor<1x1x1xf32>, tensor<1xi8>) -> tensor<1x4x1xf32>
  %eps = "tosa.const"() <{values = dense<1.0e-05> : tensor<1x1x1xf32>}> : () -> tensor<1x1x1xf32>
  %v = tosa.add %mean, %eps : (tensor<1x4x1xf32>, tensor<1x1x1xf32>) -> tensor<1x4x1xf32>
  %r = tosa.rsqrt %v : (tensor<1x4x1xf32>) -> tensor<1x4x1xf32>
  %n = tosa.mul %x, %r, %shift : (tensor<1x4x8xf32>, tensor<1x4x1xf32>, tensor<1xi8>) -> tensor<1x4x8xf32>
  %shape = tosa.const_shape {values = dense<[1, 1, 8]> : tensor<3xindex>} : () -> !tosa.shape<3>
  %g3 = tosa.reshape %g, %shape : (tensor<8xf32>, !tosa.shape<3>) -> tensor<1x1x8xf32>
  %y = tosa.mul %n, %g3, %shift : (tensor<1x4x8xf32>, tensor<1x1x8xf32>, tensor<1xi8>) -> tensor<1x4x8xf32>
  return %y : tensor<1x4x8xf32>
}

func.func @gpt2_ln(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %sum = tosa.reduce_sum %x {axis = 1 : i32} : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %invk = "tosa.const"() <{values = dense<0.125> : tensor<1x1xf32>}> : () -> tensor<1x1xf32>
  %mean = tosa.mul %sum, %invk, %shift : (tensor<4x1xf32>, tensor<1x1xf32>, tensor<1xi8>) -> tensor<4x1xf32>
  %c = tosa.sub %x, %mean : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  %sq = tosa.mul %c, %c, %shift : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<1xi8>) -> tensor<4x8xf32>
  %vs = tosa.reduce_sum %sq {axis = 1 : i32} : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %var = tosa.mul %vs, %invk, %shift : (tensor<4x1xf32>, tensor<1x1xf32>, tensor<1xi8>) -> tensor<4x1xf32>
  %eps = "tosa.const"() <{values = dense<1.0e-05> : tensor<1x1xf32>}> : () -> tensor<1x1xf32>
  %ve = tosa.add %var, %eps : (tensor<4x1xf32>, tensor<1x1xf32>) -> tensor<4x1xf32>
  %r = tosa.rsqrt %ve : (tensor<4x1xf32>) -> tensor<4x1xf32>
  %n = tosa.mul %c, %r, %shift : (tensor<4x8xf32>, tensor<4x1xf32>, tensor<1xi8>) -> tensor<4x8xf32>
  %g = "tosa.const"() <{values = dense<[[1.0, 2.0, 0.5, 1.5, 1.0, 0.25, 3.0, 1.0]]> : tensor<1x8xf32>}> : () -> tensor<1x8xf32>
  %b = "tosa.const"() <{values = dense<[[0.1, -0.2, 0.0, 0.3, 0.5, -0.5, 0.0, 1.0]]> : tensor<1x8xf32>}> : () -> tensor<1x8xf32>
  %ng = tosa.mul %n, %g, %shift : (tensor<4x8xf32>, tensor<1x8xf32>, tensor<1xi8>) -> tensor<4x8xf32>
  %y = tosa.add %ng, %b : (tensor<4x8xf32>, tensor<1x8xf32>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

func.func @main() {
  %s = arith.constant 2.0 : f32
  %o = arith.constant 0.3 : f32
  %x16 = call @input(%s, %o) : (f32, f32) -> tensor<4x16xf32>
  %x = tensor.extract_slice %x16[0, 0] [4, 8] [1, 1] : tensor<4x16xf32> to tensor<4x8xf32>
  %g = tensor.extract_slice %x16[1, 8] [1, 8] [1, 1] : tensor<4x16xf32> to tensor<8xf32>
  %a = call @one_over_sqrt(%x, %g) : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %u_a = tensor.cast %a : tensor<4x8xf32> to tensor<*xf32>
  call @printMemrefF32(%u_a) : (tensor<*xf32>) -> ()
  %b = call @mixed_divide_by_sqrt(%x) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %u_b = tensor.cast %b : tensor<4x8xf32> to tensor<*xf32>
  call @printMemrefF32(%u_b) : (tensor<*xf32>) -> ()
  %x3 = tensor.expand_shape %x [[0, 1], [2]] output_shape [1, 4, 8] : tensor<4x8xf32> into tensor<1x4x8xf32>
  %c = call @tosa_rms(%x3, %g) : (tensor<1x4x8xf32>, tensor<8xf32>) -> tensor<1x4x8xf32>
  %u_c = tensor.cast %c : tensor<1x4x8xf32> to tensor<*xf32>
  call @printMemrefF32(%u_c) : (tensor<*xf32>) -> ()
  %d = call @gpt2_ln(%x) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %u_d = tensor.cast %d : tensor<4x8xf32> to tensor<*xf32>
  call @printMemrefF32(%u_d) : (tensor<*xf32>) -> ()
  return
}
// Deterministic input: x[i, j] = scale * sin(1.3 i + 0.7 j + 0.1) + offset.
func.func @input(%scale: f32, %offset: f32) -> tensor<4x16xf32> {
  %e = tensor.empty() : tensor<4x16xf32>
  %x = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>],
                       iterator_types = ["parallel", "parallel"]} outs(%e : tensor<4x16xf32>) {
  ^bb0(%o: f32):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %ii = arith.index_cast %i : index to i32
    %jj = arith.index_cast %j : index to i32
    %fi = arith.sitofp %ii : i32 to f32
    %fj = arith.sitofp %jj : i32 to f32
    %a = arith.constant 1.3 : f32
    %b = arith.constant 0.7 : f32
    %c = arith.constant 0.1 : f32
    %t0 = arith.mulf %fi, %a : f32
    %t1 = arith.mulf %fj, %b : f32
    %t2 = arith.addf %t0, %t1 : f32
    %t3 = arith.addf %t2, %c : f32
    %s = math.sin %t3 : f32
    %v = arith.mulf %s, %scale : f32
    %r = arith.addf %v, %offset : f32
    linalg.yield %r : f32
  } -> tensor<4x16xf32>
  return %x : tensor<4x16xf32>
}
func.func private @printMemrefF32(tensor<*xf32>)
