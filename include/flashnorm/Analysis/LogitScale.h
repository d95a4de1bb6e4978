//===- LogitScale.h - The attention scale a query projection can absorb ---===//
//
// Attention multiplies its logits by a constant (1/sqrt(d_head)), on the
// logits or on q. Where the query projection's result reaches the logits
// only through ops linear in it (reshapes, transposes, casts, a constant
// bias add) and is the contraction's query operand (its m dimensions, by
// inferContractionDims), that constant can live in the projection's weight
// (and bias) instead: one multiply less per logit, and, folded together
// with the norm's gain, still one rounding per weight. The key path is
// never touched, so what a KV cache stores does not change.
//
//===----------------------------------------------------------------------===//
#ifndef FLASHNORM_ANALYSIS_LOGITSCALE_H
#define FLASHNORM_ANALYSIS_LOGITSCALE_H

#include "flashnorm/Analysis/Projection.h"

namespace mlir::flashnorm {

/// Where a query projection's attention scale is, and what else scales.
struct LogitScale {
  double factor = 1.0;
  /// The multiply (or divide) by the constant: a scalar op in the body of
  /// an element-wise generic (its other operand the constant), or a whole
  /// tensor op (`tosa.mul`, `arith.mulf`/`divf` by a splat) to bypass.
  Operation *site = nullptr;
  /// Operand number (in `site`) of the value that is scaled.
  unsigned scaledOperand = 0;
  /// Constant biases added on the way: they scale too. Each is the add, as
  /// a Projection-like use (`op`, `weightIndex`: the bias operand), and the
  /// constant the bias is read from (along its feature axis).
  SmallVector<std::pair<Projection, WeightSource>, 1> biases;
};

/// The attention scale `projection`'s result can absorb, or why not.
FailureOr<LogitScale> findLogitScale(const Projection &projection,
                                     std::string *whyNot = nullptr);

} // namespace mlir::flashnorm

#endif
