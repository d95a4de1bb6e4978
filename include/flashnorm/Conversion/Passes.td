#ifndef FLASHNORM_CONVERSION_PASSES_TD
#define FLASHNORM_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def LowerToLinalg : Pass<"flashnorm-lower-to-linalg"> {
  let summary = "Lower flashnorm ops to linalg, arith, math and tensor";
  let description = [{
    Every `flashnorm` op becomes `linalg.generic`s on tensors: a reduction
    for the sum of squares, an element-wise 1/RMS, and an element-wise
    normalize (or post-scale), honouring each op's precision contract, so
    that any upstream bufferization and lowering pipeline runs the result.
    Dynamic row dimensions are supported.
  }];
  let dependentDialects = [
    "::mlir::linalg::LinalgDialect",
    "::mlir::tensor::TensorDialect",
    "::mlir::arith::ArithDialect",
    "::mlir::math::MathDialect"
  ];
  let options = [
    Option<"statsF64", "stats-f64", "bool", /*default=*/"false",
           "Accumulate the statistics in f64 instead of f32 (f64 inputs "
           "always use f64)">,
  ];
}

#endif
