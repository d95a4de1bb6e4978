//===- ScaleDegree.h - How values depend on per-row scales ------*- C++ -*-===//
//
// Moving a scale through ops is exact where what it moves through is
// homogeneous in it: `f(s x) = s^n f(x)`. The passes that move scales
// (move-scale past the FFN's down projection, the query's post-scale into
// the logits' scale, the attention constant into the query weight) derive
// that degree symbolically, op by op, with one algebra: x * y adds degrees;
// x + y, max, select and comparisons need equal ones; a literal 0 is a
// multiple of anything; x^2 (a constant exponent 2) doubles them; exp, tanh,
// sigmoid or + 1 of a scaled value is no multiple at all.
// Scales are >= 0 (statistics, 1/sqrt(d)), so max, min, comparisons and
// ReLU commute with them.
//
//===----------------------------------------------------------------------===//
#ifndef FLASHNORM_ANALYSIS_SCALEDEGREE_H
#define FLASHNORM_ANALYSIS_SCALEDEGREE_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "llvm/ADT/MapVector.h"

namespace mlir::flashnorm {

/// How a value depends on some scales, each named by the op that applies
/// it: a multiple of the product of their powers (the degree of each), the
/// literal 0 (a multiple of anything), or no such multiple.
struct Degree {
  enum Kind { Multiple, Zero, None } kind = Multiple;
  llvm::SmallMapVector<Operation *, int, 2> of;

  static Degree none() { return {None, {}}; }
  static Degree zero() { return {Zero, {}}; }
  static Degree unscaled() { return {}; }
  static Degree scaledBy(Operation *scale) {
    Degree d;
    d.of[scale] = 1;
    return d;
  }
  bool isUnscaled() const { return kind == Multiple && of.empty(); }
  /// Degree one in `scale` and independent of any other.
  bool isLinearIn(Operation *scale) const {
    return kind == Multiple && of.size() == 1 && of.lookup(scale) == 1;
  }
  bool operator==(const Degree &o) const;
};

/// x * y.
Degree product(const Degree &a, const Degree &b);
/// x^p: each degree times p.
Degree power(const Degree &a, int64_t p);
/// x + y, max(x, y), select(c, x, y), x < y: one degree for both.
Degree unify(const Degree &a, const Degree &b);

/// Whether `v` is a zero float constant (scalar or splat).
bool isZeroConstant(Value v);

/// The largest power a scale moves through: squared ReLU's. The power is
/// then taken of the raw (unnormalized) value, whose rows are the size of
/// the raw input: its square overflows f32 only where x * x, which moves
/// alike, does; a cube or a fourth power would overflow f32 from rows of
/// 7e12 or 1.4e9, and underflow from rows of 1e-11, where the original's
/// normalized values do not.
constexpr int64_t kMaxMovableExponent = 2;

/// The exponent `v` is, if it is a constant integer (an integer, or a
/// float with an integer value; scalar or splat) in [1,
/// kMaxMovableExponent].
std::optional<int64_t> getMovableExponent(Value v);

/// Element types whose unscaled values cannot overflow where the scaled
/// ones did not (f16's range is too small for a raw activation).
bool isWideEnough(Type t);

/// The degree of the result of an element-wise op (a tensor op of arith or
/// TOSA, or a scalar op of a generic's body) from its operands' degrees.
Degree degreeOfElementwise(Operation *op, function_ref<Degree(Value)> operand);

/// The degree of an all-parallel generic's result from its operands'
/// degrees (inputs and init alike: a body may read its init). A scaled
/// operand read through a map that is not the identity (up to unit
/// dimensions: IndexingMaps.h) gives none, unless
/// `allowPermuted` and the map is a permutation (the caller tracks where
/// the scale's rows go).
Degree degreeOfGeneric(linalg::GenericOp generic,
                       function_ref<Degree(OpOperand &)> operand,
                       bool allowPermuted = false);

} // namespace mlir::flashnorm

#endif
