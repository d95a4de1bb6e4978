// LayerNorms that are not GPT-2's, as TOSA writes them: a gain of 1 + w
// (Nemotron's LayerNorm1P, Megatron's zero-centered gamma) and the unbiased
// variance (divided by K - 1: a uniform factor sqrt((K - 1) / K) on the
// normalized row, before its bias). Both are raised whole, gain and bias
// in the op (1 + w formed as a constant; the factor joins the gain), so
// the gain, bias and centering fold and 1/std is deferred. Before, the
// first was raised without its gain and the second without its bias, and
// neither was folded or deferred. Each against the unrewritten function.
// RUN: flashnorm-opt %s --flashnorm --remarks-filter=flashnorm --remark-format=emitRemark -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK
// RUN: flashnorm-run %s -e one_plus --pipeline=flashnorm --compare | FileCheck %s
// RUN: flashnorm-run %s -e unbiased --pipeline=flashnorm --compare | FileCheck %s
// CHECK: MATCH
// REMARK-DAG: Function=one_plus | Remark="raised a LayerNorm (eps 1e-05, 1 + gain, bias)"
// REMARK-DAG: Function=one_plus | Remark="folded the gain and bias (and the mean-centering) into 1 projection weight(s)"
// REMARK-DAG: Function=one_plus | Remark="deferred 1/std past 1 projection(s)"
// REMARK-DAG: Function=unbiased | Remark="raised a LayerNorm (eps 8.75e-06, gain x 0.935414, bias)"
// REMARK-DAG: Function=unbiased | Remark="folded the gain and bias (and the mean-centering) into 1 projection weight(s)"
// REMARK-DAG: Function=unbiased | Remark="deferred 1/std past 1 projection(s)"

func.func @one_plus(%x: tensor<1x4x8xf32>) -> tensor<1x4x6xf32> {
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %sum = tosa.reduce_sum %x {axis = 2 : i32} : (tensor<1x4x8xf32>) -> tensor<1x4x1xf32>
  %invk = "tosa.const"() <{values = dense<0.125> : tensor<1x1x1xf32>}> : () -> tensor<1x1x1xf32>
  %mean = tosa.mul %sum, %invk, %shift : (tensor<1x4x1xf32>, tensor<1x1x1xf32>, tensor<1xi8>) -> tensor<1x4x1xf32>
  %c = tosa.sub %x, %mean : (tensor<1x4x8xf32>, tensor<1x4x1xf32>) -> tensor<1x4x8xf32>
  %sq = tosa.mul %c, %c, %shift : (tensor<1x4x8xf32>, tensor<1x4x8xf32>, tensor<1xi8>) -> tensor<1x4x8xf32>
  %vs = tosa.reduce_sum %sq {axis = 2 : i32} : (tensor<1x4x8xf32>) -> tensor<1x4x1xf32>
  %var = tosa.mul %vs, %invk, %shift : (tensor<1x4x1xf32>, tensor<1x1x1xf32>, tensor<1xi8>) -> tensor<1x4x1xf32>
  %eps = "tosa.const"() <{values = dense<1.0e-05> : tensor<1x1x1xf32>}> : () -> tensor<1x1x1xf32>
  %ve = tosa.add %var, %eps : (tensor<1x4x1xf32>, tensor<1x1x1xf32>) -> tensor<1x4x1xf32>
  %r = tosa.rsqrt %ve : (tensor<1x4x1xf32>) -> tensor<1x4x1xf32>
  %n = tosa.mul %c, %r, %shift : (tensor<1x4x8xf32>, tensor<1x4x1xf32>, tensor<1xi8>) -> tensor<1x4x8xf32>
  %w = "tosa.const"() <{values = dense<[[[0.5, -0.25, 0.0, 1.0, -0.5, 0.125, 2.0, -0.75]]]> : tensor<1x1x8xf32>}> : () -> tensor<1x1x8xf32>
  %one = "tosa.const"() <{values = dense<1.0> : tensor<1x1x1xf32>}> : () -> tensor<1x1x1xf32>
  %g = tosa.add %w, %one : (tensor<1x1x8xf32>, tensor<1x1x1xf32>) -> tensor<1x1x8xf32>
  %b = "tosa.const"() <{values = dense<[[[0.1, -0.2, 0.0, 0.3, 0.5, -0.5, 0.0, 1.0]]]> : tensor<1x1x8xf32>}> : () -> tensor<1x1x8xf32>
  %ng = tosa.mul %n, %g, %shift : (tensor<1x4x8xf32>, tensor<1x1x8xf32>, tensor<1xi8>) -> tensor<1x4x8xf32>
  %y = tosa.add %ng, %b : (tensor<1x4x8xf32>, tensor<1x1x8xf32>) -> tensor<1x4x8xf32>
  %pw = "tosa.const"() <{values = dense<[[[-0.73, 0.69, 0.52, -0.48, -0.01, -0.10], [0.30, 0.57, -0.81, -0.94, 0.67, -0.13],
                                          [0.52, -0.99, -0.10, 0.44, -0.54, 0.89], [0.80, -0.93, -0.94, 0.08, 0.87, -0.23],
                                          [-0.56, -0.15, -0.94, -0.55, -0.12, -0.01], [-0.53, -0.53, -0.56, -0.08, -0.42, -0.95],
                                          [0.67, 0.11, 0.28, -0.62, 0.98, 0.71], [-0.75, -0.33, 0.44, 0.42, 0.87, -0.15]]]> : tensor<1x8x6xf32>}> : () -> tensor<1x8x6xf32>
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %p = tosa.matmul %y, %pw, %zp, %zp : (tensor<1x4x8xf32>, tensor<1x8x6xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x4x6xf32>
  return %p : tensor<1x4x6xf32>
}

func.func @unbiased(%x: tensor<1x4x8xf32>) -> tensor<1x4x6xf32> {
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %sum = tosa.reduce_sum %x {axis = 2 : i32} : (tensor<1x4x8xf32>) -> tensor<1x4x1xf32>
  %invk = "tosa.const"() <{values = dense<0.125> : tensor<1x1x1xf32>}> : () -> tensor<1x1x1xf32>
  %mean = tosa.mul %sum, %invk, %shift : (tensor<1x4x1xf32>, tensor<1x1x1xf32>, tensor<1xi8>) -> tensor<1x4x1xf32>
  %c = tosa.sub %x, %mean : (tensor<1x4x8xf32>, tensor<1x4x1xf32>) -> tensor<1x4x8xf32>
  %sq = tosa.mul %c, %c, %shift : (tensor<1x4x8xf32>, tensor<1x4x8xf32>, tensor<1xi8>) -> tensor<1x4x8xf32>
  %vs = tosa.reduce_sum %sq {axis = 2 : i32} : (tensor<1x4x8xf32>) -> tensor<1x4x1xf32>
  %invk1 = "tosa.const"() <{values = dense<0.142857149> : tensor<1x1x1xf32>}> : () -> tensor<1x1x1xf32>
  %var = tosa.mul %vs, %invk1, %shift : (tensor<1x4x1xf32>, tensor<1x1x1xf32>, tensor<1xi8>) -> tensor<1x4x1xf32>
  %eps = "tosa.const"() <{values = dense<1.0e-05> : tensor<1x1x1xf32>}> : () -> tensor<1x1x1xf32>
  %ve = tosa.add %var, %eps : (tensor<1x4x1xf32>, tensor<1x1x1xf32>) -> tensor<1x4x1xf32>
  %r = tosa.rsqrt %ve : (tensor<1x4x1xf32>) -> tensor<1x4x1xf32>
  %n = tosa.mul %c, %r, %shift : (tensor<1x4x8xf32>, tensor<1x4x1xf32>, tensor<1xi8>) -> tensor<1x4x8xf32>
  %g = "tosa.const"() <{values = dense<[[[1.0, 2.0, 0.5, 1.5, 1.0, 0.25, 3.0, 1.0]]]> : tensor<1x1x8xf32>}> : () -> tensor<1x1x8xf32>
  %b = "tosa.const"() <{values = dense<[[[0.1, -0.2, 0.0, 0.3, 0.5, -0.5, 0.0, 1.0]]]> : tensor<1x1x8xf32>}> : () -> tensor<1x1x8xf32>
  %ng = tosa.mul %n, %g, %shift : (tensor<1x4x8xf32>, tensor<1x1x8xf32>, tensor<1xi8>) -> tensor<1x4x8xf32>
  %y = tosa.add %ng, %b : (tensor<1x4x8xf32>, tensor<1x1x8xf32>) -> tensor<1x4x8xf32>
  %pw = "tosa.const"() <{values = dense<[[[-0.73, 0.69, 0.52, -0.48, -0.01, -0.10], [0.30, 0.57, -0.81, -0.94, 0.67, -0.13],
                                          [0.52, -0.99, -0.10, 0.44, -0.54, 0.89], [0.80, -0.93, -0.94, 0.08, 0.87, -0.23],
                                          [-0.56, -0.15, -0.94, -0.55, -0.12, -0.01], [-0.53, -0.53, -0.56, -0.08, -0.42, -0.95],
                                          [0.67, 0.11, 0.28, -0.62, 0.98, 0.71], [-0.75, -0.33, 0.44, 0.42, 0.87, -0.15]]]> : tensor<1x8x6xf32>}> : () -> tensor<1x8x6xf32>
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %p = tosa.matmul %y, %pw, %zp, %zp : (tensor<1x4x8xf32>, tensor<1x8x6xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x4x6xf32>
  return %p : tensor<1x4x6xf32>
}
