//===- RaiseTerms.h - Norms as closed forms in their input ------*- C++ -*-===//
//
// flashnorm-raise recognizes a norm by symbolic interpretation
// (Raise.cpp): every value computed from a candidate input x is described
// by a Term, a closed form in x such as
//
//   c * Y^p * (sq * sum_k Y^2 + lin * sum_k x + add)^pow * G + B,
//   Y = x or x - mean(x),
//
// built by the algebra of RaiseTerms.cpp as RaiseInterpreter.cpp
// interprets arith, math, tosa and linalg ops (linalg through their
// bodies and indexing maps). A Term that is exactly a norm (asNorm) is
// what the pass replaces. Private to flashnorm-raise.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHNORM_LIB_TRANSFORMS_RAISETERMS_H
#define FLASHNORM_LIB_TRANSFORMS_RAISETERMS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>

namespace mlir::flashnorm::raise {

/// sq * sum_k Y^2 + lin * sum_k x + add, per row.
struct Stat {
  double sq = 0, lin = 0, add = 0;
  bool centered = false;
  bool sameSum(const Stat &o) const {
    return sq == o.sq && lin == o.lin && add == o.add && centered == o.centered;
  }
};

/// Whether a cast can change a value: truncf, or a tosa.cast to a type
/// that does not hold every value of the source (bf16 -> f16 loses range
/// though it gains precision; any integer).
bool isNarrowingCast(Operation *op);

/// The closed form of a value in terms of the candidate input x.
struct Term {
  enum class Kind { Unknown, Scalar, Feature, Row, Elem };
  Kind kind = Kind::Unknown;
  /// The value of a Scalar; a multiplier of every other kind.
  double c = 1.0;
  /// Feature: c * (feature + featAdd), `feature` shaped [K] or [1, .., K].
  Value feature;
  double featAdd = 0.0;
  /// Row, and the row factor of an Elem: stat^pow.
  Stat stat;
  double pow = 0.0;
  /// Elem: c * Y^power * [stat^pow] * prod(gains) + bias; power 0 is a
  /// factor of x's shape without x (a row's scale times a gain).
  int power = 0;
  bool centered = false, hasRow = false;
  SmallVector<std::pair<Value, double>, 1> gains;
  Value bias;

  static Term unknown() { return {}; }
  static Term scalar(double v) {
    Term t;
    t.kind = Kind::Scalar;
    t.c = v;
    return t;
  }
  static Term featureOf(Value v) {
    Term t;
    t.kind = Kind::Feature;
    t.feature = v;
    return t;
  }
  static Term input() {
    Term t;
    t.kind = Kind::Elem;
    t.power = 1;
    return t;
  }
  bool is(Kind k) const { return kind == k; }
  bool isPureElem() const {
    return kind == Kind::Elem && !hasRow && gains.empty() && !bias;
  }
};

using Kind = Term::Kind;

inline bool approxEqual(double a, double b, double tol) {
  return std::fabs(a - b) <= tol * std::max(std::fabs(a), std::fabs(b));
}

// The algebra (RaiseTerms.cpp): Unknown wherever the result has no closed
// form of the shape above.
Term scale(Term t, double s);
Term mul(const Term &a, const Term &b);
Term add(const Term &a, const Term &b);
Term recip(const Term &a);
Term power(const Term &a, double p);
/// a - b; x - mean(x) over the k features (1/K as f32 rounds it) starts a
/// centered (LayerNorm) value.
Term sub(const Term &a, const Term &b, int64_t k);
/// The sum of `a` over the last dimension (k features).
Term sumLast(const Term &a, int64_t k);

/// A term that is exactly a norm of x.
struct NormForm {
  bool layer = false;
  double eps = 0;
  Value gain, bias;
  bool onePlus = false;
  /// A uniform factor on the whole norm (a splat gain, a rounded 1/K
  /// outside the tolerance, a constant multiply): it joins the gain.
  double scale = 1.0;
};

/// The norm `t` is, or why it is not one (empty `why` when `t` does not even
/// look like a normalization).
std::optional<NormForm> asNorm(const Term &t, int64_t k, double tol,
                               std::string &why);

// The interpretation (RaiseInterpreter.cpp).

/// Inputs of reductions over the last dimension of `fn`, traced back to
/// candidates (every value on the way to what a norm would normalize).
/// `unsupported` hears of reductions that cannot be a norm raise sees: over
/// a dynamic dimension, or in another block than their input.
SmallVector<Value>
findCandidates(func::FuncOp fn,
               function_ref<void(Operation *, StringRef)> unsupported);

/// The Term of every value after `x` in its block that is derived from x
/// and has one; factors 1/K are matched within `tol`.
DenseMap<Value, Term> interpretFrom(Value x, double tol);

// After raising (RaiseNarrow.cpp).

/// Rewrites each f32 norm of `fn` whose input is widened from bf16 or f16
/// and whose every use rounds back to that type into a norm of the narrow
/// type (the same values: a norm rounds once to its input's type).
void narrowNorms(func::FuncOp fn);

} // namespace mlir::flashnorm::raise

#endif // FLASHNORM_LIB_TRANSFORMS_RAISETERMS_H
