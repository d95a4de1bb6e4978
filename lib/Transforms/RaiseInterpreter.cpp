//===- RaiseInterpreter.cpp - Ops as Terms of a candidate input ----------===//
//
// Finds the candidate inputs of flashnorm-raise behind each reduction over
// the last dimension, and describes every value computed from one as a
// Term (RaiseTerms.h) by interpreting arith, math, tosa and linalg ops
// (linalg through their bodies and indexing maps).
//
//===----------------------------------------------------------------------===//

#include "RaiseTerms.h"

#include "flashnorm/Dialect/FlashNorm/IR/FlashNormDialect.h"
#include "flashnorm/Utils/IndexingMaps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tosa/IR/TosaOps.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/TypeSwitch.h"

#include <functional>

using namespace mlir;
using namespace mlir::flashnorm;
using namespace mlir::flashnorm::raise;

bool mlir::flashnorm::raise::isNarrowingCast(Operation *op) {
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

namespace {
/// The value `op` (an integer-to-float conversion) gives its operand where
/// that is an integer constant (a splat included), in `to`; none otherwise.
std::optional<APFloat> convertedInteger(Operation *op, FloatType to) {
  Attribute attr;
  if (!matchPattern(op->getOperand(0), m_Constant(&attr)))
    return std::nullopt;
  std::optional<APInt> bits;
  if (auto i = dyn_cast<IntegerAttr>(attr))
    bits = i.getValue();
  else if (auto splat = dyn_cast<SplatElementsAttr>(attr);
           splat && splat.getElementType().isInteger())
    bits = splat.getSplatValue<APInt>();
  if (!bits)
    return std::nullopt;
  APFloat v(to.getFloatSemantics());
  v.convertFromAPInt(*bits, /*IsSigned=*/!isa<arith::UIToFPOp>(op),
                     APFloat::rmNearestTiesToEven);
  return v;
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

  DenseMap<Value, Term> takeTerms() { return std::move(terms); }

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
    Term t = interpretExactly(op, depth, lookup);
    // Arithmetic on constants in a narrow type (1/12 in bf16) rounds as the
    // op does: the raise counts no rounding of constants beside their Terms.
    if (t.is(Kind::Scalar) && op->getNumResults() == 1)
      if (auto f = dyn_cast<FloatType>(getElementTypeOrSelf(op->getResult(0))))
        t.c = FloatAttr::get(f, t.c).getValueAsDouble();
    return t;
  }

  /// The Term of `op`, computed in f64 (interpret rounds constants).
  Term interpretExactly(Operation *op, unsigned depth,
                        function_ref<Term(Value)> lookup) {
    auto operand = [&](unsigned i) { return lookup(op->getOperand(i)); };
    return TypeSwitch<Operation *, Term>(op)
        .Case<arith::MulFOp, tosa::MulOp>(
            [&](auto) { return mul(operand(0), operand(1)); })
        .Case<arith::AddFOp, tosa::AddOp>(
            [&](auto) { return add(operand(0), operand(1)); })
        .Case<arith::SubFOp, tosa::SubOp>(
            [&](auto) { return sub(operand(0), operand(1), k); })
        .Case<arith::DivFOp>(
            [&](auto) { return mul(operand(0), recip(operand(1))); })
        .Case<arith::NegFOp, tosa::NegateOp>(
            [&](auto) { return scale(operand(0), -1.0); })
        .Case<arith::ExtFOp, arith::TruncFOp, tosa::CastOp, arith::SIToFPOp,
              arith::UIToFPOp>([&](auto) {
          // A rounding of values not yet normalized (the input, its
          // square, its centered form) is part of what the norm reads: not
          // an identity. Roundings after the scale are the norm's output
          // type (the Llama and Gemma cast orders).
          Term t = operand(0);
          if (isNarrowingCast(op) && t.is(Kind::Elem) && !t.hasRow)
            return Term::unknown();
          // Through integers, a value is rounded to a whole number (the
          // normalized value, the statistic, the gain): not an identity. A
          // constant count converted to float keeps its value.
          auto to = dyn_cast<FloatType>(getElementTypeOrSelf(op->getResult(0)));
          bool fromFloat =
              isa<FloatType>(getElementTypeOrSelf(op->getOperand(0)));
          if (!to || (!fromFloat && !t.is(Kind::Scalar)))
            return Term::unknown();
          // A constant takes the value it has in the new type (an f64
          // epsilon truncated to f32 in a body, torch-mlir's i64 count or
          // alpha converted in one). An integer constant converts from its
          // bits, as the op reads them (uitofp unsigned, any width).
          if (!fromFloat) {
            if (std::optional<APFloat> v = convertedInteger(op, to))
              return Term::scalar(v->convertToDouble());
            // (A constant reached through a body's block argument: its
            // Term holds the signed value of at most 64 bits.)
            unsigned width =
                getElementTypeOrSelf(op->getOperand(0)).getIntOrFloatBitWidth();
            if (width > 64 || (isa<arith::UIToFPOp>(op) && t.c < 0))
              return Term::unknown();
          }
          if (t.is(Kind::Scalar)) {
            // (Rounded another way than to nearest, it is not read here.)
            if (auto trunc = dyn_cast<arith::TruncFOp>(op);
                trunc && trunc.getRoundingmodeAttr())
              return Term::unknown();
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
          // It sums K values where it sums x's last dimension (a constant
          // summed over 16 is no count of 8).
          auto in = dyn_cast<RankedTensorType>(r.getInput().getType());
          if (!in || in.getRank() != type.getRank() ||
              in.getShape().back() != k ||
              r.getAxis() != static_cast<uint32_t>(type.getRank() - 1))
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
    // Which part of the iteration space a map reads of `operand`: all of
    // it, all but the last dimension, the last dimension, or nothing (a
    // scalar); constant 0 results on the operand's unit dimensions (kept
    // reduced dimensions) do not count. A 0 on a longer one reads its first
    // element only (row 0's statistic for every row): Other.
    enum class Reads { All, Rows, Last, Nothing, Other };
    auto classify = [&](AffineMap map, Value operand) {
      map = withUnitDims(map, ranges, iters);
      ArrayRef<int64_t> shape = cast<ShapedType>(operand.getType()).getShape();
      SmallVector<AffineExpr> dims;
      for (auto [j, e] : llvm::enumerate(map.getResults())) {
        auto c = dyn_cast<AffineConstantExpr>(e);
        if (!c || c.getValue() != 0 || j >= shape.size() || shape[j] != 1)
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
        // All but the last loop are the rows only where the last is the
        // kept unit K ([rows..., 1]); over [rows...] that is fewer rows.
        return (r == Reads::All || (r == Reads::Rows && loops == rank)) &&
               t.is(Kind::Row);
      case Space::Features:
        return r == Reads::All && t.is(Kind::Feature);
      }
      return false;
    };

    Block &body = op->getRegion(0).front();
    DenseMap<Value, Term> local;
    for (OpOperand *in : op.getDpsInputOperands()) {
      Term t = interpretOperand(in->get(), depth);
      bool ok = fits(classify(op.getMatchingIndexingMap(in), in->get()), t);
      if (!ok && !t.is(Kind::Unknown))
        return Term::unknown();
      local[body.getArgument(in->getOperandNumber())] =
          ok ? t : Term::unknown();
    }
    // The result is written in iteration order (a reduction: one value per
    // row), and a full iteration space is x's own.
    OpOperand *init = op.getDpsInitOperand(0);
    Value acc = body.getArgument(init->getOperandNumber());
    Reads written = classify(op.getMatchingIndexingMap(init), init->get());
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
        if (map && !fits(classify(*map, extract.getTensor()), t))
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
} // namespace

/// Inputs of reductions over the last dimension, traced back to candidates.
SmallVector<Value>
raise::findCandidates(func::FuncOp fn,
                      function_ref<void(Operation *, StringRef)> unsupported) {
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
    auto inType = dyn_cast<RankedTensorType>(in.getType());
    if (inType && inType.getRank() >= 1 &&
        inType.isDynamicDim(inType.getRank() - 1)) {
      unsupported(op, "its reduced dimension is dynamic (raise needs K)");
      return;
    }
    // The interpretation walks the ops after a candidate in its block: one
    // from outside the reduction's block (a function argument normalized in
    // a loop body) cannot reach it.
    SmallVector<Value> chain = stripToCandidates(in);
    if (chain.front().getParentBlock() != op->getBlock())
      unsupported(op, "what it reduces comes from outside its block (the "
                      "interpretation follows one block)");
    for (Value c : chain) {
      auto type = dyn_cast<RankedTensorType>(c.getType());
      if (type && type.getRank() >= 1 &&
          isNormElementType(type.getElementType()) &&
          !type.isDynamicDim(type.getRank() - 1) &&
          c.getParentBlock() == op->getBlock())
        candidates.insert(c);
    }
  });
  return candidates.takeVector();
}

DenseMap<Value, Term> raise::interpretFrom(Value x, double tol) {
  Interpreter interpreter(x, tol);
  interpreter.run();
  return interpreter.takeTerms();
}
