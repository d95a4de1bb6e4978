//===- Raise.cpp - Recognize RMSNorm and LayerNorm in frontend IR
//----------===//
//
// Recognition by symbolic interpretation. A candidate input x is found behind
// each reduction over the last dimension. Every value computed from x is then
// described by a Term, a closed form in x such as
//
//   c * Y^p * (sq * sum_k Y^2 + lin * sum_k x + add)^pow * G + B,
//   Y = x or x - mean(x),
//
// by interpreting arith, math, tosa and linalg ops (linalg through their
// bodies and indexing maps). A value whose Term is exactly a norm
// (FLASHNORM.md §7 lists the shapes real frontends produce) is replaced by a
// flashnorm op; the old computation is left to die.
//
//===----------------------------------------------------------------------===//

#include "flashnorm/Dialect/FlashNorm/IR/FlashNormOps.h"
#include "flashnorm/Transforms/Passes.h"
#include "flashnorm/Utils/Cleanup.h"
#include "flashnorm/Utils/Remarks.h"
#include "flashnorm/Utils/WeightFolder.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tosa/IR/TosaOps.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>
#include <functional>

namespace mlir::flashnorm {
#define GEN_PASS_DEF_RAISE
#include "flashnorm/Transforms/Passes.h.inc"
} // namespace mlir::flashnorm

using namespace mlir;
using namespace mlir::flashnorm;

namespace {
constexpr StringLiteral kPass = "flashnorm-raise";
// Constants of 1/K rounded to bf16 are off by up to 2^-9 (0.2%); above 1%
// a factor that is not 1/K could pass for it.
constexpr double kMaxScaleTolerance = 1e-2;

/// sq * sum_k Y^2 + lin * sum_k x + add, per row.
struct Stat {
  double sq = 0, lin = 0, add = 0;
  bool centered = false;
  bool sameSum(const Stat &o) const {
    return sq == o.sq && lin == o.lin && add == o.add && centered == o.centered;
  }
};

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
  /// Elem: c * Y^power * [stat^pow] * prod(gains) + bias.
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

bool approxEqual(double a, double b, double tol) {
  return std::fabs(a - b) <= tol * std::max(std::fabs(a), std::fabs(b));
}

//===----------------------------------------------------------------------===//
// Term algebra
//===----------------------------------------------------------------------===//

Term scale(Term t, double s) {
  if (t.is(Kind::Unknown) || (t.is(Kind::Elem) && t.bias))
    return Term::unknown();
  t.c *= s;
  return t;
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
  if (a.is(Kind::Row) && b.is(Kind::Row)) {
    if (!a.stat.sameSum(b.stat))
      return Term::unknown();
    Term t = a;
    t.pow += b.pow;
    t.c *= b.c;
    return t;
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
    if (!t.hasRow) {
      t.hasRow = true;
      t.stat = b.stat;
      t.pow = b.pow;
    } else if (t.stat.sameSum(b.stat)) {
      t.pow += b.pow;
    } else {
      return Term::unknown();
    }
    return t;
  case Kind::Elem:
    if (!a.isPureElem() || !b.isPureElem() || a.centered != b.centered ||
        a.power + b.power > 2)
      return Term::unknown();
    t.power += b.power;
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

Term power(const Term &a, double p) {
  if (a.is(Kind::Scalar))
    return Term::scalar(std::pow(a.c, p));
  if (a.is(Kind::Row) && (a.c > 0 || p == std::round(p))) {
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

/// a - b; x - mean(x) starts a centered (LayerNorm) value.
Term sub(const Term &a, const Term &b, int64_t k, double tol) {
  if (a.isPureElem() && a.power == 1 && !a.centered && a.c == 1.0 &&
      b.is(Kind::Row) && b.pow == 1 && b.stat.sq == 0 && b.stat.add == 0 &&
      !b.stat.centered && approxEqual(b.c * b.stat.lin * k, 1.0, tol)) {
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
    why = "it has no epsilon (eps = " + formatNumber(eps) + ")";
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
  if (!approxEqual(gamma, 1.0, tol)) {
    if (t.bias) {
      why = "it is a normalization scaled by " + formatNumber(gamma) +
            " before its bias";
      return std::nullopt;
    }
    form.scale = gamma;
  }
  if (!t.gains.empty()) {
    form.gain = t.gains[0].first;
    form.onePlus = t.gains[0].second == 1.0;
  }
  if (form.layer && form.onePlus) {
    why = "a LayerNorm with a 1 + g gain is not supported";
    return std::nullopt;
  }
  return form;
}

//===----------------------------------------------------------------------===//
// Interpretation
//===----------------------------------------------------------------------===//

/// Whether a cast can change a value: truncf, or a tosa.cast to a type
/// that does not hold every value of the source (bf16 -> f16 loses range
/// though it gains precision; any integer).
bool isNarrowingCast(Operation *op) {
  if (isa<arith::TruncFOp>(op))
    return true;
  if (!isa<tosa::CastOp>(op))
    return false;
  auto from = dyn_cast<FloatType>(getElementTypeOrSelf(op->getOperand(0)));
  auto to = dyn_cast<FloatType>(getElementTypeOrSelf(op->getResult(0)));
  return !from || !to ||
         !llvm::APFloatBase::isRepresentableBy(from.getFloatSemantics(),
                                               to.getFloatSemantics());
}

/// `map` with each literal 0 result at position j replaced by d_j where
/// parallel loop j runs over one element: both read index 0 there, so it is
/// the same access. torch-mlir writes batch-1 maps that way (`(0, d1, d2)`,
/// `(0, d1, 0)` over a [1, rows, K] space). A reduced loop keeps its 0: a
/// reduction's result does not index it (K = 1 included).
AffineMap withUnitDims(AffineMap map, ArrayRef<int64_t> ranges,
                       ArrayRef<utils::IteratorType> iters) {
  SmallVector<AffineExpr> results;
  for (auto [j, e] : llvm::enumerate(map.getResults())) {
    auto c = dyn_cast<AffineConstantExpr>(e);
    if (c && c.getValue() == 0 && j < map.getNumDims() && j < ranges.size() &&
        ranges[j] == 1 && j < iters.size() &&
        iters[j] == utils::IteratorType::parallel)
      results.push_back(getAffineDimExpr(j, map.getContext()));
    else
      results.push_back(e);
  }
  return AffineMap::get(map.getNumDims(), map.getNumSymbols(), results,
                        map.getContext());
}

/// Whether `l` reads `in` element for element along its iteration space.
bool readsInOrder(linalg::LinalgOp l, OpOperand *in) {
  return withUnitDims(l.getMatchingIndexingMap(in), l.getStaticLoopRanges(),
                      l.getIteratorTypesArray())
      .isIdentity();
}

/// The map through which a linalg body's `tensor.extract` of a value from
/// above reads it, when every index is a loop index (`linalg.index`) or 0:
/// the gather form of a broadcast (torch-mlir's expand of a row statistic).
std::optional<AffineMap> getGatherMap(tensor::ExtractOp extract, Block &body,
                                      unsigned loops) {
  if (extract.getTensor().getParentBlock() == &body)
    return std::nullopt;
  SmallVector<AffineExpr> exprs;
  MLIRContext *ctx = extract.getContext();
  for (Value index : extract.getIndices()) {
    if (auto loop = index.getDefiningOp<linalg::IndexOp>();
        loop && loop->getBlock() == &body && loop.getDim() < loops)
      exprs.push_back(getAffineDimExpr(loop.getDim(), ctx));
    else if (matchPattern(index, m_Zero()))
      exprs.push_back(getAffineConstantExpr(0, ctx));
    else
      return std::nullopt;
  }
  return AffineMap::get(loops, 0, exprs, ctx);
}

/// Interprets ops as Terms relative to one candidate input.
class Interpreter {
public:
  Interpreter(Value x, double tol)
      : x(x), type(cast<RankedTensorType>(x.getType())),
        k(type.getShape().back()), tol(tol) {
    terms[x] = Term::input();
  }

  /// Walks the ops after x in its block and records a Term for every value
  /// derived from x that can be described.
  void run() {
    Block *block = x.getParentBlock();
    auto it = block->begin();
    if (Operation *def = x.getDefiningOp())
      it = std::next(def->getIterator());
    for (Operation &op : llvm::make_range(it, block->end())) {
      if (!readsATerm(op))
        continue;
      if (op.getNumResults() != 1)
        continue;
      Term t = interpret(&op);
      if (!t.is(Kind::Unknown))
        terms[op.getResult(0)] = t;
    }
  }

  const DenseMap<Value, Term> &getTerms() const { return terms; }
  int64_t getFeatureSize() const { return k; }

private:
  /// Whether `op` reads a described value: as an operand, or from inside
  /// its regions (a gather in a linalg body).
  bool readsATerm(Operation &op) const {
    if (llvm::any_of(op.getOperands(), [&](Value v) { return terms.count(v); }))
      return true;
    bool reads = false;
    if (op.getNumRegions())
      visitUsedValuesDefinedAbove(op.getRegions(), [&](OpOperand *use) {
        reads |= terms.count(use->get()) != 0;
      });
    return reads;
  }

  bool isFeatureShaped(Type t) const {
    auto rt = dyn_cast<RankedTensorType>(t);
    if (!rt || !rt.hasStaticShape() || rt.getRank() == 0 ||
        rt.getShape().back() != k)
      return false;
    return llvm::all_of(rt.getShape().drop_back(),
                        [](int64_t d) { return d == 1; });
  }

  /// [rows...] or [rows..., 1]: one value per row of x.
  bool isRowShaped(Type t) const {
    auto rt = dyn_cast<RankedTensorType>(t);
    if (!rt)
      return false;
    ArrayRef<int64_t> rows = type.getShape().drop_back();
    ArrayRef<int64_t> shape = rt.getShape();
    if (shape.size() == rows.size() + 1 && shape.back() == 1)
      shape = shape.drop_back();
    return shape == rows;
  }

  /// The Term of a value not derived from x: a constant, a gain-like vector,
  /// or something computed from those.
  Term external(Value v, unsigned depth = 0) {
    if (auto it = terms.find(v); it != terms.end())
      return it->second;
    Attribute attr;
    if (matchPattern(v, m_Constant(&attr))) {
      if (auto f = dyn_cast<FloatAttr>(attr))
        return Term::scalar(f.getValueAsDouble());
      if (auto i = dyn_cast<IntegerAttr>(attr))
        return Term::scalar(static_cast<double>(i.getInt()));
      if (auto splat = dyn_cast<SplatElementsAttr>(attr)) {
        if (isa<FloatType>(splat.getElementType()))
          return Term::scalar(splat.getSplatValue<APFloat>().convertToDouble());
        if (splat.getElementType().isInteger())
          return Term::scalar(
              static_cast<double>(splat.getSplatValue<APInt>().getSExtValue()));
      }
    }
    // Look through reshapes, casts and `+ 1` of a gain first, so that the
    // norm refers to the 1-D gain itself; otherwise a [1, .., K] value is a
    // gain as it stands.
    Operation *def = v.getDefiningOp();
    if (def && depth <= 6 && def->getNumResults() == 1) {
      Term t = interpret(def, depth + 1);
      if (t.is(Kind::Scalar) || t.is(Kind::Feature))
        return t;
    }
    if (isFeatureShaped(v.getType()))
      return Term::featureOf(v);
    return Term::unknown();
  }

  /// The Term of `op`'s single result, with operands described by `lookup`
  /// (the recorded terms, or a linalg body's scalar terms).
  Term interpret(Operation *op, unsigned depth = 0) {
    return interpret(op, depth,
                     [&](Value v) { return interpretOperand(v, depth); });
  }

  Term interpret(Operation *op, unsigned depth,
                 function_ref<Term(Value)> lookup) {
    auto operand = [&](unsigned i) { return lookup(op->getOperand(i)); };
    return TypeSwitch<Operation *, Term>(op)
        .Case<arith::MulFOp, tosa::MulOp>(
            [&](auto) { return mul(operand(0), operand(1)); })
        .Case<arith::AddFOp, tosa::AddOp>(
            [&](auto) { return add(operand(0), operand(1)); })
        .Case<arith::SubFOp, tosa::SubOp>(
            [&](auto) { return sub(operand(0), operand(1), k, tol); })
        .Case<arith::DivFOp>(
            [&](auto) { return mul(operand(0), recip(operand(1))); })
        .Case<arith::NegFOp, tosa::NegateOp>(
            [&](auto) { return scale(operand(0), -1.0); })
        .Case<arith::ExtFOp, arith::TruncFOp, tosa::CastOp>([&](auto) {
          // A rounding of values not yet normalized (the input, its
          // square, its centered form) is part of what the norm reads: not
          // an identity. Roundings after the scale are the norm's output
          // type (the Llama and Gemma cast orders).
          Term t = operand(0);
          if (isNarrowingCast(op) && t.is(Kind::Elem) && !t.hasRow)
            return Term::unknown();
          // A constant takes the value it has in the new type (an f64
          // epsilon truncated to f32 in a body).
          auto to = dyn_cast<FloatType>(getElementTypeOrSelf(op->getResult(0)));
          if (t.is(Kind::Scalar) && to) {
            APFloat v(t.c);
            bool lost;
            v.convert(to.getFloatSemantics(), APFloat::rmNearestTiesToEven,
                      &lost);
            return Term::scalar(v.convertToDouble());
          }
          return t;
        })
        .Case<tosa::ReciprocalOp>([&](auto) { return recip(operand(0)); })
        .Case<math::RsqrtOp, tosa::RsqrtOp>(
            [&](auto) { return power(operand(0), -0.5); })
        .Case<math::SqrtOp>([&](auto) { return power(operand(0), 0.5); })
        .Case<math::PowFOp, math::FPowIOp, tosa::PowOp>([&](auto) {
          Term e = operand(1);
          return e.is(Kind::Scalar) ? power(operand(0), e.c) : Term::unknown();
        })
        .Case<tosa::ReduceSumOp>([&](tosa::ReduceSumOp r) {
          if (r.getAxis() != static_cast<uint32_t>(type.getRank() - 1))
            return Term::unknown();
          return sumLast(operand(0), k);
        })
        .Case<tensor::ExpandShapeOp, tensor::CollapseShapeOp, tosa::ReshapeOp>(
            [&](Operation *o) {
              // Only per-row and per-feature values change shape here, and
              // only into shapes that keep them per row or per feature.
              Term t = operand(0);
              Type result = o->getResult(0).getType();
              if ((t.is(Kind::Row) && !isRowShaped(result)) ||
                  (t.is(Kind::Feature) && !isFeatureShaped(result)) ||
                  t.is(Kind::Elem))
                return Term::unknown();
              return t;
            })
        .Case<linalg::LinalgOp>(
            [&](linalg::LinalgOp l) { return interpretLinalg(l, depth); })
        .Default([](Operation *) { return Term::unknown(); });
  }

  /// Linalg ops through their bodies: the iteration space is either x's
  /// ([rows..., K], possibly reducing K) or its rows ([rows...]).
  Term interpretOperand(Value v, unsigned depth) {
    auto it = terms.find(v);
    return it != terms.end() ? it->second : external(v, depth);
  }

  Term interpretLinalg(linalg::LinalgOp op, unsigned depth) {
    if (!op.hasPureTensorSemantics() || op.getNumDpsInits() != 1 ||
        op->getNumRegions() != 1 || op->getRegion(0).empty())
      return Term::unknown();
    unsigned rank = type.getRank();
    unsigned loops = op.getNumLoops();
    SmallVector<utils::IteratorType> iters = op.getIteratorTypesArray();
    bool reduces =
        !iters.empty() && iters.back() == utils::IteratorType::reduction;
    if (llvm::count(iters, utils::IteratorType::reduction) != (reduces ? 1 : 0))
      return Term::unknown();
    // The iteration space is x's ([rows..., K], possibly reducing K), its
    // rows ([rows...], or [rows..., 1] where frontends keep the reduced
    // dimension), or its features ([K], e.g. 1 + gain).
    enum class Space { Full, Rows, Features };
    SmallVector<int64_t> ranges = op.getStaticLoopRanges();
    // A one-loop op over K elements is a feature op when it reads features
    // (for a rank-2 x it could also be a row op).
    bool readsFeatures = llvm::any_of(op.getDpsInputs(), [&](Value v) {
      return interpretOperand(v, depth).is(Kind::Feature);
    });
    Space space;
    if (loops == rank && !reduces && ranges.back() == 1 && k != 1)
      space = Space::Rows;
    else if (loops == rank)
      space = Space::Full;
    else if (loops == 1 && !reduces && ranges[0] == k &&
             (readsFeatures || rank != 2))
      space = Space::Features;
    else if (loops + 1 == rank && !reduces)
      space = Space::Rows;
    else
      return Term::unknown();

    MLIRContext *ctx = op.getContext();
    auto dim = [&](unsigned d) { return getAffineDimExpr(d, ctx); };
    // Which part of the iteration space a map reads: all of it, all but the
    // last dimension, the last dimension, or nothing (a scalar); constant 0
    // results (kept unit dimensions) do not count.
    enum class Reads { All, Rows, Last, Nothing, Other };
    auto classify = [&](AffineMap map) {
      map = withUnitDims(map, ranges, iters);
      SmallVector<AffineExpr> dims;
      for (AffineExpr e : map.getResults()) {
        auto c = dyn_cast<AffineConstantExpr>(e);
        if (!c || c.getValue() != 0)
          dims.push_back(e);
      }
      bool prefix = true;
      for (auto [i, e] : llvm::enumerate(dims))
        prefix &= e == dim(i);
      // (With one row, as for a rank-1 x, the rows are a 0-d tensor.)
      if (prefix && dims.size() == loops)
        return Reads::All;
      if (prefix && dims.size() + 1 == loops)
        return Reads::Rows;
      if (dims.empty())
        return Reads::Nothing;
      if (dims.size() == 1 && dims[0] == dim(loops - 1))
        return Reads::Last;
      return Reads::Other;
    };
    // Whether an operand of term `t` read through `r` fits the space.
    auto fits = [&](Reads r, const Term &t) {
      if (t.is(Kind::Scalar))
        return r != Reads::Other;
      switch (space) {
      case Space::Full:
        // (A per-row or per-feature term read at full shape is one already
        // broadcast, e.g. by linalg.broadcast before a linalg.mul.)
        return r == Reads::All || (r == Reads::Rows && t.is(Kind::Row)) ||
               (r == Reads::Last && t.is(Kind::Feature));
      case Space::Rows:
        return (r == Reads::All || r == Reads::Rows) && t.is(Kind::Row);
      case Space::Features:
        return r == Reads::All && t.is(Kind::Feature);
      }
      return false;
    };

    Block &body = op->getRegion(0).front();
    DenseMap<Value, Term> local;
    for (OpOperand *in : op.getDpsInputOperands()) {
      Term t = interpretOperand(in->get(), depth);
      bool ok = fits(classify(op.getMatchingIndexingMap(in)), t);
      if (!ok && !t.is(Kind::Unknown))
        return Term::unknown();
      local[body.getArgument(in->getOperandNumber())] =
          ok ? t : Term::unknown();
    }
    // The result is written in iteration order (a reduction: one value per
    // row), and a full iteration space is x's own.
    OpOperand *init = op.getDpsInitOperand(0);
    Value acc = body.getArgument(init->getOperandNumber());
    Reads written = classify(op.getMatchingIndexingMap(init));
    if (written != (reduces ? Reads::Rows : Reads::All))
      return Term::unknown();
    if (space == Space::Full && ArrayRef<int64_t>(ranges) != type.getShape())
      return Term::unknown();
    if (reduces && !matchPattern(init->get(), m_AnyZeroFloat())) {
      auto fill = init->get().getDefiningOp<linalg::FillOp>();
      if (!fill || !matchPattern(fill.value(), m_AnyZeroFloat()))
        return Term::unknown();
    }

    // Scalar ops of the body, in order.
    std::function<Term(Value)> valueTerm = [&](Value v) -> Term {
      if (auto it = local.find(v); it != local.end())
        return it->second;
      if (v == acc)
        return Term::unknown();
      if (v.getParentBlock() == &body)
        return Term::unknown();
      return external(v, depth + 1);
    };
    Operation *yield = body.getTerminator();
    for (Operation &inner : body.without_terminator()) {
      if (inner.getNumResults() != 1)
        return Term::unknown();
      if (reduces && llvm::is_contained(inner.getOperands(), acc))
        continue; // The accumulation itself, checked below.
      // A gather from a value above reads it like an input through a map.
      if (auto extract = dyn_cast<tensor::ExtractOp>(inner)) {
        std::optional<AffineMap> map = getGatherMap(extract, body, loops);
        Term t = map ? interpretOperand(extract.getTensor(), depth)
                     : Term::unknown();
        if (map && !fits(classify(*map), t))
          return Term::unknown();
        local[extract.getResult()] = t;
        continue;
      }
      // Scalar ops follow the same rules as their tensor forms.
      local[inner.getResult(0)] = isa<arith::ConstantOp>(inner)
                                      ? external(inner.getResult(0), depth + 1)
                                      : interpret(&inner, depth + 1, valueTerm);
    }
    Value yielded = yield->getOperand(0);
    if (!reduces)
      return valueTerm(yielded);
    // The body must yield acc + e (either order) with e free of acc.
    auto addOp = yielded.getDefiningOp<arith::AddFOp>();
    if (!addOp || addOp->getBlock() != &body)
      return Term::unknown();
    Value e = addOp.getLhs() == acc   ? addOp.getRhs()
              : addOp.getRhs() == acc ? addOp.getLhs()
                                      : Value();
    if (!e)
      return Term::unknown();
    return sumLast(valueTerm(e), k);
  }

  Value x;
  RankedTensorType type;
  int64_t k;
  double tol;
  DenseMap<Value, Term> terms;
};

//===----------------------------------------------------------------------===//
// Candidates and rewriting
//===----------------------------------------------------------------------===//

/// Walks back from a reduction's input towards the value a norm would
/// normalize, through casts, squares, the subtraction of a mean and
/// element-wise linalg ops with one full-size input. Returns every value on
/// the way, the furthest first (each is a candidate).
SmallVector<Value> stripToCandidates(Value v) {
  SmallVector<Value> chain{v};
  for (unsigned steps = 0; steps < 8; ++steps) {
    Operation *def = v.getDefiningOp();
    if (!def)
      break;
    Value next =
        TypeSwitch<Operation *, Value>(def)
            .Case<arith::ExtFOp, arith::TruncFOp, tosa::CastOp>(
                [](Operation *o) {
                  // Not back through a rounding: its result is the input.
                  return isNarrowingCast(o) ? Value() : o->getOperand(0);
                })
            .Case<arith::MulFOp, tosa::MulOp>([](Operation *o) {
              return o->getOperand(0) == o->getOperand(1) ? o->getOperand(0)
                                                          : Value();
            })
            .Case<math::FPowIOp, math::PowFOp, tosa::PowOp, arith::SubFOp,
                  tosa::SubOp>([](Operation *o) { return o->getOperand(0); })
            .Case<linalg::LinalgOp>([](linalg::LinalgOp l) -> Value {
              if (l.getNumParallelLoops() != l.getNumLoops())
                return Value();
              Value full;
              for (OpOperand *in : l.getDpsInputOperands()) {
                if (!readsInOrder(l, in))
                  continue;
                // Two different full inputs: e.g. a residual add. The same
                // one twice: a square (linalg.mul %x, %x).
                if (full && full != in->get())
                  return Value();
                full = in->get();
              }
              return full;
            })
            .Default([](Operation *) { return Value(); });
    if (!next)
      break;
    v = next;
    chain.push_back(v);
  }
  return {chain.rbegin(), chain.rend()};
}

/// Inputs of reductions over the last dimension, traced back to candidates.
SmallVector<Value> findCandidates(func::FuncOp fn) {
  llvm::SetVector<Value> candidates;
  fn.walk([&](Operation *op) {
    Value in;
    if (auto r = dyn_cast<tosa::ReduceSumOp>(op)) {
      auto t = dyn_cast<RankedTensorType>(r.getInput().getType());
      if (t && r.getAxis() == static_cast<uint32_t>(t.getRank() - 1))
        in = r.getInput();
    } else if (auto l = dyn_cast<linalg::LinalgOp>(op)) {
      SmallVector<utils::IteratorType> iters = l.getIteratorTypesArray();
      if (l.hasPureTensorSemantics() && !iters.empty() &&
          iters.back() == utils::IteratorType::reduction &&
          l.getNumDpsInputs() >= 1 && readsInOrder(l, l.getDpsInputOperand(0)))
        in = l.getDpsInputOperand(0)->get();
    }
    if (!in)
      return;
    for (Value c : stripToCandidates(in)) {
      auto type = dyn_cast<RankedTensorType>(c.getType());
      if (type && type.getRank() >= 1 &&
          isa<FloatType>(type.getElementType()) &&
          !type.isDynamicDim(type.getRank() - 1))
        candidates.insert(c);
    }
  });
  return candidates.takeVector();
}

/// `v` as a 1-D [K] tensor (collapsing leading unit dimensions).
Value asVector(OpBuilder &b, Location loc, Value v) {
  if (!v)
    return v;
  auto type = cast<RankedTensorType>(v.getType());
  if (type.getRank() == 1)
    return v;
  SmallVector<ReassociationIndices> all(1);
  for (int64_t i = 0; i < type.getRank(); ++i)
    all[0].push_back(i);
  return tensor::CollapseShapeOp::create(b, loc, v, all);
}

/// Casts a tensor to `eltType` (no-op when equal).
Value castTensor(OpBuilder &b, Location loc, Value v, Type eltType) {
  auto type = cast<RankedTensorType>(v.getType());
  Type from = type.getElementType();
  if (from == eltType)
    return v;
  unsigned fromWidth = from.getIntOrFloatBitWidth(),
           toWidth = eltType.getIntOrFloatBitWidth();
  if (fromWidth == toWidth) // bf16 <-> f16: through f32.
    return castTensor(b, loc, castTensor(b, loc, v, b.getF32Type()), eltType);
  Type to = type.clone(eltType);
  if (fromWidth < toWidth)
    return arith::ExtFOp::create(b, loc, to, v);
  return arith::TruncFOp::create(b, loc, to, v);
}

struct RaisePass : flashnorm::impl::RaiseBase<RaisePass> {
  using RaiseBase::RaiseBase;

  void runOnOperation() override {
    func::FuncOp fn = getOperation();
    // NaN and negative values would refuse everything, 0 even an exactly
    // rounded 1/K, and a large one accepts factors of other functions.
    if (!(scaleTolerance > 0 && scaleTolerance <= kMaxScaleTolerance)) {
      fn.emitError() << kPass << ": scale-tolerance must be in (0, "
                     << kMaxScaleTolerance << "], not " << scaleTolerance;
      return signalPassFailure();
    }
    if (fn.isExternal())
      return;
    PassReporter reporter(fn, kPass);
    RewriteCleanup cleanup(fn);
    // A raised value replaces the old one; later candidates may be it.
    DenseMap<Value, Value> replaced;
    // The steps of a raised norm before its statistic (x - mean(x), its
    // square): no candidates of their own. (x - mean(x)) * rsqrt(...) is
    // also an RMSNorm of x - mean(x), and raising that would only feed the
    // LayerNorm's dead remains.
    DenseSet<Value> consumed;
    for (Value candidate : findCandidates(fn)) {
      while (replaced.count(candidate))
        candidate = replaced.lookup(candidate);
      if (!consumed.contains(candidate))
        raiseFrom(candidate, reporter, replaced, consumed);
    }
    // The old computations, now dead.
    cleanup.eraseNewlyDead();
    reportBufferReductions(fn, reporter);
  }

  /// Bufferized linalg is not read at all: says so once per function
  /// that reduces rows of buffers, rather than staying silent.
  static void reportBufferReductions(func::FuncOp fn, PassReporter &reporter) {
    unsigned count = 0;
    Operation *first = nullptr;
    fn.walk([&](linalg::LinalgOp op) {
      SmallVector<utils::IteratorType> iters = op.getIteratorTypesArray();
      if (!op.hasPureBufferSemantics() || iters.empty() ||
          iters.back() != utils::IteratorType::reduction)
        return;
      if (!first)
        first = op;
      ++count;
    });
    if (first)
      reporter.refused(first, "not raised: " + Twine(count) +
                                  " row reduction(s) in this function work "
                                  "on buffers (memref); the flashnorm "
                                  "passes read linalg on tensors, before "
                                  "bufferization");
  }

  /// The gain `scale * gain` (or `scale * (1 + gain)`), as an f32 [K]
  /// tensor (f64 for f64 norms or gains): a new constant when the gain is
  /// one (fold-gains folds constants), else arith ops on the widened gain.
  static Value scaledGain(OpBuilder &b, Location loc, Value gain, bool onePlus,
                          double scale, int64_t k, Type normElement) {
    bool wide = normElement.isF64() ||
                (gain && getElementTypeOrSelf(gain.getType()).isF64());
    Type element = wide ? Type(b.getF64Type()) : Type(b.getF32Type());
    auto type = RankedTensorType::get({k}, element);
    std::string unused;
    SmallVector<double> values(k, 1.0);
    if (gain) {
      FailureOr<SmallVector<double>> constant =
          readConstantAsDoubles(gain, &unused);
      if (failed(constant) || static_cast<int64_t>(constant->size()) != k) {
        // A runtime gain: widened, 1 added, scaled, all in f32.
        Value widened = castTensor(b, loc, gain, element);
        auto splat = [&](double v) -> Value {
          return arith::ConstantOp::create(
              b, loc, DenseElementsAttr::get(type, b.getFloatAttr(element, v)));
        };
        if (onePlus)
          widened = arith::AddFOp::create(b, loc, widened, splat(1.0));
        return arith::MulFOp::create(b, loc, widened, splat(scale));
      }
      values = *constant;
    }
    SmallVector<Attribute> scaled;
    for (double v : values)
      scaled.push_back(
          b.getFloatAttr(element, (onePlus ? 1.0 + v : v) * scale));
    return arith::ConstantOp::create(b, loc,
                                     DenseElementsAttr::get(type, scaled));
  }

  void raiseFrom(Value x, PassReporter &reporter,
                 DenseMap<Value, Value> &replaced, DenseSet<Value> &consumed) {
    Interpreter interp(x, scaleTolerance);
    interp.run();
    int64_t k = interp.getFeatureSize();
    const DenseMap<Value, Term> &terms = interp.getTerms();
    auto isNorm = [&](Value v) {
      auto it = terms.find(v);
      std::string why;
      return it != terms.end() && asNorm(it->second, k, scaleTolerance, why);
    };

    // Values that are norms of x and are used by something that is not.
    SmallVector<std::pair<Value, NormForm>> outputs;
    std::pair<Value, std::string> lastRefusal;
    for (Operation &op : *x.getParentBlock()) {
      if (op.getNumResults() != 1 || !terms.count(op.getResult(0)))
        continue;
      Value v = op.getResult(0);
      std::string why;
      std::optional<NormForm> form =
          asNorm(terms.lookup(v), k, scaleTolerance, why);
      if (!form) {
        if (!why.empty() && !isOpTriviallyDead(&op))
          lastRefusal = {v, why};
        continue;
      }
      // Users already cut off by an earlier raise do not count.
      bool escapes = llvm::any_of(v.getUsers(), [&](Operation *user) {
        return !isOpTriviallyDead(user) &&
               llvm::none_of(user->getResults(), isNorm);
      });
      if (escapes && cast<RankedTensorType>(v.getType()).getShape() ==
                         cast<RankedTensorType>(x.getType()).getShape())
        outputs.push_back({v, *form});
    }
    if (outputs.empty()) {
      if (lastRefusal.first)
        reporter.refused(lastRefusal.first.getDefiningOp(),
                         "not raised: " + lastRefusal.second);
      return;
    }
    for (const auto &[v, t] : terms)
      if (v != x && t.isPureElem())
        consumed.insert(v);

    for (auto &[v, form] : outputs) {
      Operation *def = v.getDefiningOp();
      OpBuilder b(def);
      Location loc = def->getLoc();
      auto outType = cast<RankedTensorType>(v.getType());
      auto inType = cast<RankedTensorType>(x.getType());
      // Normalize in the wider of the two types (f32 for bf16 vs f16);
      // round once at the end.
      Value input = x;
      Type inElt = inType.getElementType(), outElt = outType.getElementType();
      unsigned inWidth = inElt.getIntOrFloatBitWidth(),
               outWidth = outElt.getIntOrFloatBitWidth();
      if (outWidth > inWidth)
        input = castTensor(b, loc, x, outElt);
      else if (outWidth == inWidth && inElt != outElt)
        input = castTensor(b, loc, x, b.getF32Type());
      Value gain = asVector(b, loc, form.gain);
      bool onePlus = form.onePlus;
      if (form.scale != 1.0) {
        gain = scaledGain(b, loc, gain, onePlus, form.scale, k,
                          getElementTypeOrSelf(input.getType()));
        onePlus = false;
      }
      Value raised;
      if (form.layer) {
        raised = LayerNormOp::create(b, loc, input, gain,
                                     asVector(b, loc, form.bias), form.eps);
      } else {
        raised = RMSNormOp::create(b, loc, input, gain, form.eps,
                                   onePlus ? GainConvention::one_plus
                                           : GainConvention::plain);
      }
      raised = castTensor(b, loc, raised, outType.getElementType());
      v.replaceAllUsesWith(raised);
      replaced[v] = raised;
      reporter.applied(
          raised.getDefiningOp(),
          "raised a " + Twine(form.layer ? "LayerNorm" : "RMSNorm") + " (eps " +
              formatNumber(form.eps) +
              (form.gain ? (form.onePlus ? ", 1 + gain" : ", gain") : "") +
              (form.scale != 1.0
                   ? (form.gain ? " x " : ", gain ") + formatNumber(form.scale)
                   : "") +
              (form.bias ? ", bias" : "") + ")");
      ++numRaised;
    }
  }
};
} // namespace
