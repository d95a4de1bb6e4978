//===- LogitScale.h - The attention scale a query projection can absorb ---===//
//
// Attention multiplies its logits by a constant (1/sqrt(d_head)), on the
// logits or on q. Where the query projection's result reaches the logits
// only through ops linear in it (reshapes, transposes, casts, a constant
// bias add, a rotary embedding) and is the contraction's query operand (its
// m dimensions, by inferContractionDims), that constant can live in the
// projection's weight (and bias) instead: one multiply less per logit, and,
// folded together with the norm's gain, still one rounding per weight. The key
// path is never touched, so what a KV cache stores does not change.
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

/// The ops from a query value to the contraction that reads it as its query
/// operand, where every op between reads q's values only through each
/// other and is linear in q (homogeneous of degree one: f(c q) = c f(q)):
/// reshapes, transposes, slices, concatenations and element-wise ops such
/// as a rotary embedding, q cos + rotate_half(q) sin. A per-row scale of q
/// then scales the logits' rows: `logitRows` says where q's leading row
/// dimensions are among the logits' dimensions.
struct QueryPath {
  /// The ops between, in block order.
  SmallVector<Operation *> ops;
  /// The contraction's query operand.
  OpOperand *query = nullptr;
  /// The logits as what follows reads them: the contraction's result, past
  /// the reshapes it alone feeds (torch-mlir expands a 4-D matmul's result
  /// from the [batch * heads, ...] of its batch_matmul).
  Value logits;
  /// For each of q's `rowDims` leading dimensions, its dimension in
  /// `logits`, or kUnitRow.
  SmallVector<int64_t> logitRows;
};

/// A row dimension of one element (torch-mlir's batch 1) is not followed:
/// its index is 0 wherever it goes, so collapsing it with the heads around
/// a batch_matmul moves no row.
constexpr int64_t kUnitRow = -1;

/// Traces `q` (its `rowDims` leading dimensions being rows, 0 for none) to
/// its logits, or says why not.
FailureOr<QueryPath> traceQueryToLogits(Value q, unsigned rowDims,
                                        std::string *whyNot = nullptr);

/// The multiply by a constant of the logits `query`'s contraction computes
/// (past reshapes: QueryPath::logits), where that is their only use.
FailureOr<LogitScale> findScaleOfLogits(OpOperand &query,
                                        std::string *whyNot = nullptr);

} // namespace mlir::flashnorm

#endif
