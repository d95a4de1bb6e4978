//===- RaiseTerms.cpp - The algebra of flashnorm-raise's Terms -----------===//
//
// Products, sums, powers and row sums of Terms (RaiseTerms.h), each exact
// or Unknown, and the test of whether a Term is a norm: its epsilon, its
// gain (g or 1 + g), its bias, and a uniform factor within the tolerance
// that rounded constants of 1/K need.
//
//===----------------------------------------------------------------------===//

#include "RaiseTerms.h"

#include "flashnorm/Utils/Remarks.h"

using namespace mlir;
using namespace mlir::flashnorm;

namespace mlir::flashnorm::raise {

//===----------------------------------------------------------------------===//
// Term algebra
//===----------------------------------------------------------------------===//

Term scale(Term t, double s) {
  if (t.is(Kind::Unknown) || (t.is(Kind::Elem) && t.bias))
    return Term::unknown();
  t.c *= s;
  return t;
}

/// t * stat^pow: false where t already holds another statistic.
static bool multiplyRow(Term &t, const Stat &stat, double pow) {
  if (!t.hasRow) {
    t.hasRow = true;
    t.stat = stat;
    t.pow = pow;
    return true;
  }
  if (!t.stat.sameSum(stat))
    return false;
  t.pow += pow;
  return true;
}

Term mul(const Term &a, const Term &b) {
  if (a.is(Kind::Unknown) || b.is(Kind::Unknown))
    return Term::unknown();
  if (a.is(Kind::Scalar))
    return scale(b, a.c);
  if (b.is(Kind::Scalar))
    return scale(a, b.c);
  if (b.is(Kind::Elem) && !a.is(Kind::Elem))
    return mul(b, a);
  if (a.is(Kind::Feature) && b.is(Kind::Row))
    return mul(b, a);
  if (a.is(Kind::Row) && b.is(Kind::Row)) {
    if (!a.stat.sameSum(b.stat))
      return Term::unknown();
    Term t = a;
    t.pow += b.pow;
    t.c *= b.c;
    return t;
  }
  // A row's scale times a gain, before x (x * (rsqrt(ms + eps) * g)): a
  // factor of x's shape without x in it (an Elem of power 0).
  if (a.is(Kind::Row) && b.is(Kind::Feature)) {
    Term t;
    t.kind = Kind::Elem;
    t.c = a.c;
    multiplyRow(t, a.stat, a.pow);
    return mul(t, b);
  }
  if (!a.is(Kind::Elem) || a.bias)
    return Term::unknown();
  Term t = a;
  t.c *= b.c;
  switch (b.kind) {
  case Kind::Feature:
    t.gains.push_back({b.feature, b.featAdd});
    return t;
  case Kind::Row:
    return multiplyRow(t, b.stat, b.pow) ? t : Term::unknown();
  case Kind::Elem:
    if (b.bias)
      return Term::unknown();
    // x times x (a square), or anything times a factor without x.
    if (a.power && b.power &&
        (!a.isPureElem() || !b.isPureElem() || a.centered != b.centered ||
         a.power + b.power > 2))
      return Term::unknown();
    t.power += b.power;
    t.centered = a.power ? a.centered : b.centered;
    if (b.hasRow && !multiplyRow(t, b.stat, b.pow))
      return Term::unknown();
    t.gains.append(b.gains.begin(), b.gains.end());
    return t;
  default:
    return Term::unknown();
  }
}

Term add(const Term &a, const Term &b) {
  if (a.is(Kind::Unknown) || b.is(Kind::Unknown))
    return Term::unknown();
  if (a.is(Kind::Scalar) && b.is(Kind::Scalar))
    return Term::scalar(a.c + b.c);
  if (a.is(Kind::Scalar) || (b.is(Kind::Elem) && !a.is(Kind::Elem)))
    return add(b, a);
  Term t = a;
  if (a.is(Kind::Row) && b.is(Kind::Scalar) && a.pow == 1 && a.c != 0) {
    t.stat.add += b.c / a.c;
    return t;
  }
  if (a.is(Kind::Feature) && b.is(Kind::Scalar) && a.c != 0) {
    t.featAdd += b.c / a.c;
    return t;
  }
  if (a.is(Kind::Row) && b.is(Kind::Row) && a.pow == 1 && b.pow == 1 &&
      a.stat.centered == b.stat.centered) {
    t.stat.sq = a.c * a.stat.sq + b.c * b.stat.sq;
    t.stat.lin = a.c * a.stat.lin + b.c * b.stat.lin;
    t.stat.add = a.c * a.stat.add + b.c * b.stat.add;
    t.c = 1.0;
    return t;
  }
  if (a.is(Kind::Elem) && b.is(Kind::Feature) && !a.bias && b.c == 1.0 &&
      b.featAdd == 0.0) {
    t.bias = b.feature;
    return t;
  }
  return Term::unknown();
}

Term recip(const Term &a) {
  if (a.is(Kind::Scalar) && a.c != 0)
    return Term::scalar(1.0 / a.c);
  if (a.is(Kind::Row) && a.c != 0) {
    Term t = a;
    t.c = 1.0 / a.c;
    t.pow = -a.pow;
    return t;
  }
  return Term::unknown();
}

/// Whether a statistic is never negative: a (centered) sum of squares plus
/// a non-negative constant. Only then is (stat^a)^b = stat^(ab) for every
/// a and b (sqrt((m - 1)^2) is |m - 1|, not m - 1).
static bool isNonNegative(const Stat &s) {
  return s.sq >= 0 && s.lin == 0 && s.add >= 0;
}

Term power(const Term &a, double p) {
  if (a.is(Kind::Scalar))
    return Term::scalar(std::pow(a.c, p));
  bool integral = p == std::round(p);
  if (a.is(Kind::Row) && (a.c > 0 || integral) &&
      (integral || a.pow == 1 || isNonNegative(a.stat))) {
    Term t = a;
    t.c = std::pow(a.c, p);
    t.pow *= p;
    return t;
  }
  if (p == 2.0 && a.isPureElem() && a.power == 1) {
    Term t = a;
    t.power = 2;
    t.c *= a.c;
    return t;
  }
  return Term::unknown();
}

/// a - b; x - mean(x) starts a centered (LayerNorm) value. The mean's
/// factor must be 1/K as f32 rounds it, not within the scale tolerance: a
/// factor 1 + d leaves d * mean / std in every output, unbounded where the
/// mean is large against the spread.
Term sub(const Term &a, const Term &b, int64_t k) {
  constexpr double kCenteringTolerance = 0x1p-23; // f32's epsilon.
  if (a.isPureElem() && a.power == 1 && !a.centered && a.c == 1.0 &&
      b.is(Kind::Row) && b.pow == 1 && b.stat.sq == 0 && b.stat.add == 0 &&
      !b.stat.centered &&
      approxEqual(b.c * b.stat.lin * k, 1.0, kCenteringTolerance)) {
    Term t = a;
    t.centered = true;
    return t;
  }
  return add(a, scale(b, -1.0));
}

/// sum over the last (normalized) dimension.
Term sumLast(const Term &a, int64_t k) {
  if (a.is(Kind::Scalar))
    return Term::scalar(a.c * k);
  if (!a.isPureElem())
    return Term::unknown();
  Term t;
  t.kind = Kind::Row;
  t.pow = 1;
  if (a.power == 2) {
    t.stat.sq = a.c;
    t.stat.centered = a.centered;
    return t;
  }
  if (a.power == 1 && !a.centered) {
    t.stat.lin = a.c;
    return t;
  }
  return Term::unknown();
}

std::optional<NormForm> asNorm(const Term &t, int64_t k, double tol,
                               std::string &why) {
  why.clear();
  if (!t.is(Kind::Elem) || t.power != 1 || !t.hasRow || t.pow != -0.5 ||
      t.stat.lin != 0 || t.stat.sq <= 0 || t.stat.centered != t.centered)
    return std::nullopt;
  double gamma = t.c / std::sqrt(t.stat.sq * k);
  double eps = t.stat.add / (t.stat.sq * k);
  if (!std::isfinite(gamma)) {
    why = "it is a normalization scaled by " + formatNumber(gamma);
    return std::nullopt;
  }
  // Without eps a zero row divides by 0, and where the original multiplies
  // that NaN away (TOSA folds x * 0 to 0) the norm would not.
  if (!(eps > 0)) {
    why = (eps < 0 ? "its epsilon is negative (eps = "
                   : "it has no epsilon (eps = ") +
          formatNumber(eps) + ")";
    return std::nullopt;
  }
  if (t.gains.size() > 1 || (!t.gains.empty() && t.gains[0].second != 0.0 &&
                             t.gains[0].second != 1.0)) {
    why = "its gain is not g or 1 + g";
    return std::nullopt;
  }
  if (t.bias && !t.centered) {
    why = "it adds a bias to an RMS norm";
    return std::nullopt;
  }
  NormForm form;
  form.layer = t.centered;
  form.eps = eps;
  form.bias = t.bias;
  // (c n g + b: the factor joins the gain, the bias stays, as the unbiased
  // variance's sqrt(K / (K - 1)) does.)
  if (!approxEqual(gamma, 1.0, tol))
    form.scale = gamma;
  if (!t.gains.empty()) {
    form.gain = t.gains[0].first;
    form.onePlus = t.gains[0].second == 1.0;
  }
  return form;
}

} // namespace mlir::flashnorm::raise
