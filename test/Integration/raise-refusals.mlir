// Values raise must not take for the norm they resemble, executed against
// the unrewritten functions; each was a silent wrong rewrite, a crash or
// invalid IR once:
// - row0_map, row0_map_rank3, row0_gather: every row divided by row 0's
//   statistic (a map or a tensor.extract reading index 0 of the rows);
// - int_output, int_statistic, int_gain: the normalized value, the
//   statistic or the gain rounded through i32 (tosa.cast is no identity
//   there); i32_result, i8_result: the norm's output cast to integers (a
//   segfault, and an arith.truncf to i8): the norm before the cast is
//   raised, the cast stays;
// - count_of_constant: the mean divides by the sum of a constant over 16,
//   not by x's 8;
// - mean_factor_off: x - 0.125001 sum(x): no LayerNorm (within the scale
//   tolerance, the shift 1e-5 mean / std is 0.02 at a mean of 1000);
// - sqrt_of_square: rsqrt(sqrt((ms - 1)^2) + 2) is rsqrt(|ms - 1| + 2);
// - bf16_statistic, bf16_one_plus_gain: the statistic or 1 + g rounded to
//   bf16 before an f32 output: the raised norm rounds its result to bf16
//   too, and agrees to within a bf16 ulp (it agreed to none before);
// - dynamic_k, in_loop: refusals that now say why.
// RUN: flashnorm-opt %s --flashnorm-raise --remarks-filter=flashnorm --remark-format=emitRemark -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK
// RUN: flashnorm-opt %s --flashnorm-raise | FileCheck %s --check-prefix=IR
// RUN: flashnorm-run %s -e row0_map --pipeline=flashnorm-raise --compare | FileCheck %s
// RUN: flashnorm-run %s -e row0_map_rank3 --pipeline=flashnorm-raise --compare | FileCheck %s
// RUN: flashnorm-run %s -e row0_gather --pipeline=flashnorm-raise --compare | FileCheck %s
// RUN: flashnorm-run %s -e int_output --pipeline=flashnorm-raise --compare | FileCheck %s
// RUN: flashnorm-run %s -e int_statistic --pipeline=flashnorm-raise --compare | FileCheck %s
// RUN: flashnorm-run %s -e int_gain --pipeline=flashnorm-raise --compare --input-range=3 | FileCheck %s
// RUN: flashnorm-run %s -e i32_result --pipeline=flashnorm-raise --compare | FileCheck %s
// RUN: flashnorm-run %s -e count_of_constant --pipeline=flashnorm-raise --compare | FileCheck %s
// RUN: flashnorm-run %s -e mean_factor_off --pipeline=flashnorm --compare | FileCheck %s
// RUN: flashnorm-run %s -e sqrt_of_square --pipeline=flashnorm-raise --compare | FileCheck %s
// RUN: flashnorm-run %s -e bf16_statistic --pipeline=flashnorm-raise --compare --rtol 8e-3 | FileCheck %s
// RUN: flashnorm-run %s -e bf16_one_plus_gain --pipeline=flashnorm-raise --compare --rtol 8e-3 --arg=1=15.8125 | FileCheck %s
// CHECK: MATCH
// REMARK-DAG: Function=row0_map | Remark="0 rewritten (0 approximate), 0 refused"
// REMARK-DAG: Function=row0_map_rank3 | Remark="0 rewritten (0 approximate), 0 refused"
// REMARK-DAG: Function=row0_gather | Remark="0 rewritten (0 approximate), 0 refused"
// REMARK-DAG: Function=int_statistic | Remark="0 rewritten (0 approximate), 0 refused"
// REMARK-DAG: Function=count_of_constant | Remark="0 rewritten (0 approximate), 0 refused"
// REMARK-DAG: Function=sqrt_of_square | Remark="0 rewritten (0 approximate), 0 refused"
// REMARK-DAG: Function=dynamic_k | Remark="not raised: its reduced dimension is dynamic (raise needs K)"
// REMARK-DAG: Function=in_loop | Remark="not raised: what it reduces comes from outside its block (the interpretation follows one block)"
// The norm before an integer cast (which stays), and no LayerNorm:
// IR-LABEL: func.func @int_output
// IR: %[[N:.*]] = flashnorm.rms_norm
// IR: tosa.cast %[[N]] : (tensor<4x8xf32>) -> tensor<4x8xi32>
// IR-LABEL: func.func @i8_result
// IR: %[[N:.*]] = flashnorm.rms_norm
// IR: tosa.cast %[[N]] : (tensor<4x8xf32>) -> tensor<4x8xi8>
// IR-LABEL: func.func @mean_factor_off
// IR-NOT: flashnorm.layer_norm
// IR-LABEL: func.func @bf16_statistic
// IR: %[[N:.*]] = flashnorm.rms_norm
// IR: arith.truncf %[[N]] : tensor<4x8xf32> to tensor<4x8xbf16>
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>

func.func @row0_map(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %sq = arith.mulf %x, %x : tensor<4x8xf32>
  %zero = arith.constant 0.0 : f32
  %er = tensor.empty() : tensor<4xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%er : tensor<4xf32>) -> tensor<4xf32>
  %sum = linalg.reduce ins(%sq : tensor<4x8xf32>) outs(%acc : tensor<4xf32>) dimensions = [1]
    (%in: f32, %init: f32) {
      %s = arith.addf %in, %init : f32
      linalg.yield %s : f32
    }
  %inv = linalg.generic {indexing_maps = [affine_map<(d0) -> (0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%sum : tensor<4xf32>) outs(%er : tensor<4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %k = arith.constant 0.125 : f32
    %m = arith.mulf %a, %k : f32
    %eps = arith.constant 1.0e-05 : f32
    %v = arith.addf %m, %eps : f32
    %r = math.rsqrt %v : f32
    linalg.yield %r : f32
  } -> tensor<4xf32>
  %e = tensor.empty() : tensor<4x8xf32>
  %y = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]} ins(%x, %inv : tensor<4x8xf32>, tensor<4xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    linalg.yield %m : f32
  } -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

func.func @row0_map_rank3(%x: tensor<2x4x8xf32>) -> tensor<2x4x8xf32> {
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %sq = tosa.mul %x, %x, %shift : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<1xi8>) -> tensor<2x4x8xf32>
  %sum = tosa.reduce_sum %sq {axis = 2 : i32} : (tensor<2x4x8xf32>) -> tensor<2x4x1xf32>
  %er = tensor.empty() : tensor<2x4xf32>
  %inv = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, 0, 0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%sum : tensor<2x4x1xf32>) outs(%er : tensor<2x4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %k = arith.constant 0.125 : f32
    %m = arith.mulf %a, %k : f32
    %eps = arith.constant 1.0e-05 : f32
    %v = arith.addf %m, %eps : f32
    %r = math.rsqrt %v : f32
    linalg.yield %r : f32
  } -> tensor<2x4xf32>
  %r3 = tensor.expand_shape %inv [[0], [1, 2]] output_shape [2, 4, 1] : tensor<2x4xf32> into tensor<2x4x1xf32>
  %n = tosa.mul %x, %r3, %shift : (tensor<2x4x8xf32>, tensor<2x4x1xf32>, tensor<1xi8>) -> tensor<2x4x8xf32>
  return %n : tensor<2x4x8xf32>
}

func.func @row0_gather(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %sq = arith.mulf %x, %x : tensor<4x8xf32>
  %zero = arith.constant 0.0 : f32
  %er = tensor.empty() : tensor<4xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%er : tensor<4xf32>) -> tensor<4xf32>
  %sum = linalg.reduce ins(%sq : tensor<4x8xf32>) outs(%acc : tensor<4xf32>) dimensions = [1]
    (%in: f32, %init: f32) {
      %s = arith.addf %in, %init : f32
      linalg.yield %s : f32
    }
  %inv = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} outs(%er : tensor<4xf32>) {
  ^bb0(%o: f32):
    %c0 = arith.constant 0 : index
    %a = tensor.extract %sum[%c0] : tensor<4xf32>
    %k = arith.constant 0.125 : f32
    %m = arith.mulf %a, %k : f32
    %eps = arith.constant 1.0e-05 : f32
    %v = arith.addf %m, %eps : f32
    %r = math.rsqrt %v : f32
    linalg.yield %r : f32
  } -> tensor<4xf32>
  %e = tensor.empty() : tensor<4x8xf32>
  %y = linalg.generic {indexing_maps = [#id, affine_map<(d0, d1) -> (d0)>, #id], iterator_types = ["parallel", "parallel"]} ins(%x, %inv : tensor<4x8xf32>, tensor<4xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    linalg.yield %m : f32
  } -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

func.func @int_output(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %sq = tosa.mul %x, %x, %shift : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<1xi8>) -> tensor<4x8xf32>
  %sum = tosa.reduce_sum %sq {axis = 1 : i32} : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %invk = "tosa.const"() <{values = dense<0.125> : tensor<1x1xf32>}> : () -> tensor<1x1xf32>
  %mean = tosa.mul %sum, %invk, %shift : (tensor<4x1xf32>, tensor<1x1xf32>, tensor<1xi8>) -> tensor<4x1xf32>
  %eps = "tosa.const"() <{values = dense<1.0e-05> : tensor<1x1xf32>}> : () -> tensor<1x1xf32>
  %v = tosa.add %mean, %eps : (tensor<4x1xf32>, tensor<1x1xf32>) -> tensor<4x1xf32>
  %r = tosa.rsqrt %v : (tensor<4x1xf32>) -> tensor<4x1xf32>
  %n = tosa.mul %x, %r, %shift : (tensor<4x8xf32>, tensor<4x1xf32>, tensor<1xi8>) -> tensor<4x8xf32>
  %ni = tosa.cast %n : (tensor<4x8xf32>) -> tensor<4x8xi32>
  %nf = tosa.cast %ni : (tensor<4x8xi32>) -> tensor<4x8xf32>
  return %nf : tensor<4x8xf32>
}

func.func @int_statistic(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %sq = tosa.mul %x, %x, %shift : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<1xi8>) -> tensor<4x8xf32>
  %sum = tosa.reduce_sum %sq {axis = 1 : i32} : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %invk = "tosa.const"() <{values = dense<0.125> : tensor<1x1xf32>}> : () -> tensor<1x1xf32>
  %mean = tosa.mul %sum, %invk, %shift : (tensor<4x1xf32>, tensor<1x1xf32>, tensor<1xi8>) -> tensor<4x1xf32>
  %eps = "tosa.const"() <{values = dense<1.0e-05> : tensor<1x1xf32>}> : () -> tensor<1x1xf32>
  %v = tosa.add %mean, %eps : (tensor<4x1xf32>, tensor<1x1xf32>) -> tensor<4x1xf32>
  %r = tosa.rsqrt %v : (tensor<4x1xf32>) -> tensor<4x1xf32>
  %ri = tosa.cast %r : (tensor<4x1xf32>) -> tensor<4x1xi32>
  %rf = tosa.cast %ri : (tensor<4x1xi32>) -> tensor<4x1xf32>
  %n = tosa.mul %x, %rf, %shift : (tensor<4x8xf32>, tensor<4x1xf32>, tensor<1xi8>) -> tensor<4x8xf32>
  return %n : tensor<4x8xf32>
}

func.func @int_gain(%x: tensor<4x8xf32>, %g: tensor<8xf32>) -> tensor<4x8xf32> {
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %sq = tosa.mul %x, %x, %shift : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<1xi8>) -> tensor<4x8xf32>
  %sum = tosa.reduce_sum %sq {axis = 1 : i32} : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %invk = "tosa.const"() <{values = dense<0.125> : tensor<1x1xf32>}> : () -> tensor<1x1xf32>
  %mean = tosa.mul %sum, %invk, %shift : (tensor<4x1xf32>, tensor<1x1xf32>, tensor<1xi8>) -> tensor<4x1xf32>
  %eps = "tosa.const"() <{values = dense<1.0e-05> : tensor<1x1xf32>}> : () -> tensor<1x1xf32>
  %v = tosa.add %mean, %eps : (tensor<4x1xf32>, tensor<1x1xf32>) -> tensor<4x1xf32>
  %r = tosa.rsqrt %v : (tensor<4x1xf32>) -> tensor<4x1xf32>
  %n = tosa.mul %x, %r, %shift : (tensor<4x8xf32>, tensor<4x1xf32>, tensor<1xi8>) -> tensor<4x8xf32>
  %shape = tosa.const_shape {values = dense<[1, 8]> : tensor<2xindex>} : () -> !tosa.shape<2>
  %g2 = tosa.reshape %g, %shape : (tensor<8xf32>, !tosa.shape<2>) -> tensor<1x8xf32>
  %gi = tosa.cast %g2 : (tensor<1x8xf32>) -> tensor<1x8xi32>
  %gf = tosa.cast %gi : (tensor<1x8xi32>) -> tensor<1x8xf32>
  %y = tosa.mul %n, %gf, %shift : (tensor<4x8xf32>, tensor<1x8xf32>, tensor<1xi8>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

func.func @i32_result(%x: tensor<4x8xf32>) -> tensor<4x8xi32> {
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %sq = tosa.mul %x, %x, %shift : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<1xi8>) -> tensor<4x8xf32>
  %sum = tosa.reduce_sum %sq {axis = 1 : i32} : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %invk = "tosa.const"() <{values = dense<0.125> : tensor<1x1xf32>}> : () -> tensor<1x1xf32>
  %mean = tosa.mul %sum, %invk, %shift : (tensor<4x1xf32>, tensor<1x1xf32>, tensor<1xi8>) -> tensor<4x1xf32>
  %eps = "tosa.const"() <{values = dense<1.0e-05> : tensor<1x1xf32>}> : () -> tensor<1x1xf32>
  %v = tosa.add %mean, %eps : (tensor<4x1xf32>, tensor<1x1xf32>) -> tensor<4x1xf32>
  %r = tosa.rsqrt %v : (tensor<4x1xf32>) -> tensor<4x1xf32>
  %n = tosa.mul %x, %r, %shift : (tensor<4x8xf32>, tensor<4x1xf32>, tensor<1xi8>) -> tensor<4x8xf32>
  %ni = tosa.cast %n : (tensor<4x8xf32>) -> tensor<4x8xi32>
  
  return %ni : tensor<4x8xi32>
}

func.func @i8_result(%x: tensor<4x8xf32>) -> tensor<4x8xi8> {
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %sq = tosa.mul %x, %x, %shift : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<1xi8>) -> tensor<4x8xf32>
  %sum = tosa.reduce_sum %sq {axis = 1 : i32} : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %invk = "tosa.const"() <{values = dense<0.125> : tensor<1x1xf32>}> : () -> tensor<1x1xf32>
  %mean = tosa.mul %sum, %invk, %shift : (tensor<4x1xf32>, tensor<1x1xf32>, tensor<1xi8>) -> tensor<4x1xf32>
  %eps = "tosa.const"() <{values = dense<1.0e-05> : tensor<1x1xf32>}> : () -> tensor<1x1xf32>
  %v = tosa.add %mean, %eps : (tensor<4x1xf32>, tensor<1x1xf32>) -> tensor<4x1xf32>
  %r = tosa.rsqrt %v : (tensor<4x1xf32>) -> tensor<4x1xf32>
  %n = tosa.mul %x, %r, %shift : (tensor<4x8xf32>, tensor<4x1xf32>, tensor<1xi8>) -> tensor<4x8xf32>
  %q = tosa.cast %n : (tensor<4x8xf32>) -> tensor<4x8xi8>
  return %q : tensor<4x8xi8>
}

func.func @count_of_constant(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %sq = tosa.mul %x, %x, %shift : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<1xi8>) -> tensor<4x8xf32>
  %sum = tosa.reduce_sum %sq {axis = 1 : i32} : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %ones = "tosa.const"() <{values = dense<1.0> : tensor<1x16xf32>}> : () -> tensor<1x16xf32>
  %cnt = tosa.reduce_sum %ones {axis = 1 : i32} : (tensor<1x16xf32>) -> tensor<1x1xf32>
  %invk = tosa.reciprocal %cnt : (tensor<1x1xf32>) -> tensor<1x1xf32>
  %mean = tosa.mul %sum, %invk, %shift : (tensor<4x1xf32>, tensor<1x1xf32>, tensor<1xi8>) -> tensor<4x1xf32>
  %eps = "tosa.const"() <{values = dense<1.0e-05> : tensor<1x1xf32>}> : () -> tensor<1x1xf32>
  %v = tosa.add %mean, %eps : (tensor<4x1xf32>, tensor<1x1xf32>) -> tensor<4x1xf32>
  %r = tosa.rsqrt %v : (tensor<4x1xf32>) -> tensor<4x1xf32>
  %n = tosa.mul %x, %r, %shift : (tensor<4x8xf32>, tensor<4x1xf32>, tensor<1xi8>) -> tensor<4x8xf32>
  return %n : tensor<4x8xf32>
}

func.func @mean_factor_off(%x0: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %off = "tosa.const"() <{values = dense<1000.0> : tensor<1x1xf32>}> : () -> tensor<1x1xf32>
  %x = tosa.add %x0, %off : (tensor<4x8xf32>, tensor<1x1xf32>) -> tensor<4x8xf32>
  %sum = tosa.reduce_sum %x {axis = 1 : i32} : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %invk1 = "tosa.const"() <{values = dense<0.125001> : tensor<1x1xf32>}> : () -> tensor<1x1xf32>
  %mean = tosa.mul %sum, %invk1, %shift : (tensor<4x1xf32>, tensor<1x1xf32>, tensor<1xi8>) -> tensor<4x1xf32>
  %c = tosa.sub %x, %mean : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  %sq = tosa.mul %c, %c, %shift : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<1xi8>) -> tensor<4x8xf32>
  %vs = tosa.reduce_sum %sq {axis = 1 : i32} : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %invk = "tosa.const"() <{values = dense<0.125> : tensor<1x1xf32>}> : () -> tensor<1x1xf32>
  %var = tosa.mul %vs, %invk, %shift : (tensor<4x1xf32>, tensor<1x1xf32>, tensor<1xi8>) -> tensor<4x1xf32>
  %eps = "tosa.const"() <{values = dense<1.0e-05> : tensor<1x1xf32>}> : () -> tensor<1x1xf32>
  %ve = tosa.add %var, %eps : (tensor<4x1xf32>, tensor<1x1xf32>) -> tensor<4x1xf32>
  %r = tosa.rsqrt %ve : (tensor<4x1xf32>) -> tensor<4x1xf32>
  %n = tosa.mul %c, %r, %shift : (tensor<4x8xf32>, tensor<4x1xf32>, tensor<1xi8>) -> tensor<4x8xf32>
  return %n : tensor<4x8xf32>
}

func.func @sqrt_of_square(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %sq = arith.mulf %x, %x : tensor<4x8xf32>
  %sum = tosa.reduce_sum %sq {axis = 1 : i32} : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %invk = arith.constant dense<0.125> : tensor<4x1xf32>
  %mean = arith.mulf %sum, %invk : tensor<4x1xf32>
  %one = arith.constant dense<1.0> : tensor<4x1xf32>
  %d = arith.subf %mean, %one : tensor<4x1xf32>
  %d2 = arith.mulf %d, %d : tensor<4x1xf32>
  %ad = math.sqrt %d2 : tensor<4x1xf32>
  %two = arith.constant dense<2.0> : tensor<4x1xf32>
  %v = arith.addf %ad, %two : tensor<4x1xf32>
  %r = math.rsqrt %v : tensor<4x1xf32>
  %s = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %rb = tosa.mul %x, %r, %s : (tensor<4x8xf32>, tensor<4x1xf32>, tensor<1xi8>) -> tensor<4x8xf32>
  return %rb : tensor<4x8xf32>
}

func.func @bf16_statistic(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %sq = tosa.mul %x, %x, %shift : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<1xi8>) -> tensor<4x8xf32>
  %sum = tosa.reduce_sum %sq {axis = 1 : i32} : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %invk = "tosa.const"() <{values = dense<0.125> : tensor<1x1xf32>}> : () -> tensor<1x1xf32>
  %mean = tosa.mul %sum, %invk, %shift : (tensor<4x1xf32>, tensor<1x1xf32>, tensor<1xi8>) -> tensor<4x1xf32>
  %eps = "tosa.const"() <{values = dense<1.0e-05> : tensor<1x1xf32>}> : () -> tensor<1x1xf32>
  %v = tosa.add %mean, %eps : (tensor<4x1xf32>, tensor<1x1xf32>) -> tensor<4x1xf32>
  %r = tosa.rsqrt %v : (tensor<4x1xf32>) -> tensor<4x1xf32>
  %ri = tosa.cast %r : (tensor<4x1xf32>) -> tensor<4x1xbf16>
  %rf = tosa.cast %ri : (tensor<4x1xbf16>) -> tensor<4x1xf32>
  %n = tosa.mul %x, %rf, %shift : (tensor<4x8xf32>, tensor<4x1xf32>, tensor<1xi8>) -> tensor<4x8xf32>
  return %n : tensor<4x8xf32>
}

func.func @bf16_one_plus_gain(%x: tensor<4x8xf32>, %g: tensor<8xbf16>) -> tensor<4x8xf32> {
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %sq = tosa.mul %x, %x, %shift : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<1xi8>) -> tensor<4x8xf32>
  %sum = tosa.reduce_sum %sq {axis = 1 : i32} : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %invk = "tosa.const"() <{values = dense<0.125> : tensor<1x1xf32>}> : () -> tensor<1x1xf32>
  %mean = tosa.mul %sum, %invk, %shift : (tensor<4x1xf32>, tensor<1x1xf32>, tensor<1xi8>) -> tensor<4x1xf32>
  %eps = "tosa.const"() <{values = dense<1.0e-05> : tensor<1x1xf32>}> : () -> tensor<1x1xf32>
  %v = tosa.add %mean, %eps : (tensor<4x1xf32>, tensor<1x1xf32>) -> tensor<4x1xf32>
  %r = tosa.rsqrt %v : (tensor<4x1xf32>) -> tensor<4x1xf32>
  %n = tosa.mul %x, %r, %shift : (tensor<4x8xf32>, tensor<4x1xf32>, tensor<1xi8>) -> tensor<4x8xf32>
  %shape = tosa.const_shape {values = dense<[1, 8]> : tensor<2xindex>} : () -> !tosa.shape<2>
  %g2 = tosa.reshape %g, %shape : (tensor<8xbf16>, !tosa.shape<2>) -> tensor<1x8xbf16>
  %one = "tosa.const"() <{values = dense<1.0> : tensor<1x1xbf16>}> : () -> tensor<1x1xbf16>
  %g1 = tosa.add %g2, %one : (tensor<1x8xbf16>, tensor<1x1xbf16>) -> tensor<1x8xbf16>
  %gf = tosa.cast %g1 : (tensor<1x8xbf16>) -> tensor<1x8xf32>
  %y = tosa.mul %n, %gf, %shift : (tensor<4x8xf32>, tensor<1x8xf32>, tensor<1xi8>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

func.func @dynamic_k(%x: tensor<4x?xf32>) -> tensor<4x?xf32> {
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %sq = tosa.mul %x, %x, %shift : (tensor<4x?xf32>, tensor<4x?xf32>, tensor<1xi8>) -> tensor<4x?xf32>
  %sum = tosa.reduce_sum %sq {axis = 1 : i32} : (tensor<4x?xf32>) -> tensor<4x1xf32>
  %invk = "tosa.const"() <{values = dense<0.125> : tensor<1x1xf32>}> : () -> tensor<1x1xf32>
  %mean = tosa.mul %sum, %invk, %shift : (tensor<4x1xf32>, tensor<1x1xf32>, tensor<1xi8>) -> tensor<4x1xf32>
  %eps = "tosa.const"() <{values = dense<1.0e-05> : tensor<1x1xf32>}> : () -> tensor<1x1xf32>
  %v = tosa.add %mean, %eps : (tensor<4x1xf32>, tensor<1x1xf32>) -> tensor<4x1xf32>
  %r = tosa.rsqrt %v : (tensor<4x1xf32>) -> tensor<4x1xf32>
  %n = tosa.mul %x, %r, %shift : (tensor<4x?xf32>, tensor<4x1xf32>, tensor<1xi8>) -> tensor<4x?xf32>
  return %n : tensor<4x?xf32>
}

func.func @in_loop(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %res = scf.for %i = %c0 to %c2 step %c1 iter_args(%acc = %x) -> (tensor<4x8xf32>) {
    %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
    %sq = tosa.mul %x, %x, %shift : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<1xi8>) -> tensor<4x8xf32>
    %sum = tosa.reduce_sum %sq {axis = 1 : i32} : (tensor<4x8xf32>) -> tensor<4x1xf32>
    %invk = "tosa.const"() <{values = dense<0.125> : tensor<1x1xf32>}> : () -> tensor<1x1xf32>
    %mean = tosa.mul %sum, %invk, %shift : (tensor<4x1xf32>, tensor<1x1xf32>, tensor<1xi8>) -> tensor<4x1xf32>
    %eps = "tosa.const"() <{values = dense<1.0e-05> : tensor<1x1xf32>}> : () -> tensor<1x1xf32>
    %v = tosa.add %mean, %eps : (tensor<4x1xf32>, tensor<1x1xf32>) -> tensor<4x1xf32>
    %r = tosa.rsqrt %v : (tensor<4x1xf32>) -> tensor<4x1xf32>
    %n = tosa.mul %x, %r, %shift : (tensor<4x8xf32>, tensor<4x1xf32>, tensor<1xi8>) -> tensor<4x8xf32>
    %o = tosa.add %acc, %n : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    scf.yield %o : tensor<4x8xf32>
  }
  return %res : tensor<4x8xf32>
}
