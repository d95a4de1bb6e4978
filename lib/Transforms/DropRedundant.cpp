//===- DropRedundant.cpp - Redundant norms (docs/MATH.md §3) -------------===//

#include "flashnorm/Analysis/Projection.h"
#include "flashnorm/Dialect/FlashNorm/IR/FlashNormOps.h"
#include "flashnorm/Transforms/Passes.h"
#include "flashnorm/Transforms/PatternDriver.h"
#include "flashnorm/Utils/Remarks.h"
#include "flashnorm/Utils/WeightFolder.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tosa/IR/TosaOps.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>
#include <limits>

namespace mlir::flashnorm {
#define GEN_PASS_DEF_DROPREDUNDANT
#include "flashnorm/Transforms/Passes.h.inc"
} // namespace mlir::flashnorm

using namespace mlir;
using namespace mlir::flashnorm;

namespace {
constexpr StringLiteral kPass = "flashnorm-drop-redundant";

/// The value of a uniform (splat) float constant.
std::optional<double> getUniformConstant(Value v) {
  FailureOr<SmallVector<double>> values = readConstantAsDoubles(v, nullptr);
  if (failed(values) || values->empty() ||
      llvm::any_of(*values, [&](double x) { return x != values->front(); }))
    return std::nullopt;
  return values->front();
}

/// Builds the f32 gain `G * factor` of `norm` (G = gain, 1 + gain, or 1),
/// folding it when the gain is constant. Returns a null value when the
/// result is the identity.
FailureOr<Value> buildScaledGain(PatternRewriter &rewriter, RMSNormOp norm,
                                 double factor) {
  Location loc = norm.getLoc();
  Value gain = norm.getGain();
  bool onePlus = norm.getGainConvention() == GainConvention::one_plus;
  if (!gain && factor == 1.0)
    return Value();
  int64_t k = norm.getFeatureSize();
  if (ShapedType::isDynamic(k))
    return failure();
  // The corrected gain is built in f32, or in the gain's type if wider.
  Type elt = rewriter.getF32Type();
  if (gain) {
    Type gainElt = cast<RankedTensorType>(gain.getType()).getElementType();
    if (gainElt.getIntOrFloatBitWidth() > 32)
      elt = gainElt;
  }
  auto gainType = RankedTensorType::get({k}, elt);
  auto constant = [&](ArrayRef<double> values) -> Value {
    SmallVector<Attribute> attrs;
    for (double v : values)
      attrs.push_back(rewriter.getFloatAttr(elt, v));
    return arith::ConstantOp::create(
        rewriter, loc,
        values.size() == 1 ? DenseElementsAttr::get(gainType, attrs[0])
                           : DenseElementsAttr::get(gainType, attrs));
  };
  if (!gain)
    return constant(factor);
  if (FailureOr<SmallVector<double>> values =
          readConstantAsDoubles(gain, nullptr);
      succeeded(values)) {
    SmallVector<double> scaled;
    for (double g : *values)
      scaled.push_back(((onePlus ? 1.0 : 0.0) + g) * factor);
    return constant(scaled);
  }
  // A runtime gain: widen before adding one (bf16 1 + g rounds wrongly).
  if (cast<RankedTensorType>(gain.getType()).getElementType() != elt)
    gain = arith::ExtFOp::create(rewriter, loc, gainType, gain);
  if (onePlus)
    gain = arith::AddFOp::create(rewriter, loc, gain, constant(1.0));
  if (factor != 1.0)
    gain = arith::MulFOp::create(rewriter, loc, gain, constant(factor));
  return gain;
}

/// Why merging would change what the original computes where it overflows,
/// or "": the original forms c times a row of RMS at most 1 (elements up to
/// sqrt(K)) in the input type, and its sum of squares (up to c^2 K) in the
/// statistic's type; where those can overflow, its rows come out 0 or NaN
/// and the merged norm's would not. A |c| <= 1 forms nothing larger than
/// the first norm did. The bounds leave 1% for the roundings on the way
/// (the first norm's output, the product, the sum: f16's sqrt(35) rounds
/// up by 3e-4).
std::string whyScaleOverflows(RMSNormOp outer, double c) {
  if (std::abs(c) <= 1.0)
    return "";
  auto type = cast<RankedTensorType>(outer.getInput().getType());
  int64_t k = type.getShape().back();
  if (ShapedType::isDynamic(k))
    return "a scale of magnitude above 1 on rows of a size known only at run "
           "time may overflow the original";
  constexpr double kMargin = 1.01;
  auto largest = [](Type t) {
    return llvm::APFloat::getLargest(cast<FloatType>(t).getFloatSemantics())
               .convertToDouble() /
           kMargin;
  };
  Type elt = type.getElementType(), stat = getStatisticType(elt);
  double sumOfSquares = c * c * static_cast<double>(k);
  if (sumOfSquares >= largest(stat))
    return "the original's sum of squares (up to c^2 K = " +
           formatNumber(sumOfSquares) + ") overflows " + printToString(stat) +
           ", where its rows come out 0";
  double element = std::abs(c) * std::sqrt(static_cast<double>(k));
  if (element >= largest(elt))
    return "the original's scaled row (up to |c| sqrt(K) = " +
           formatNumber(element) + ") overflows " + printToString(elt);
  return "";
}

/// §3(a): rms_norm(c * rms_norm(x, e1), g, e2) == rms_norm(x, g', e').
struct MergeConsecutiveNorms : OpRewritePattern<RMSNormOp> {
  MergeConsecutiveNorms(MLIRContext *ctx, PassReporter &reporter)
      : OpRewritePattern(ctx), reporter(reporter) {}

  LogicalResult matchAndRewrite(RMSNormOp outer,
                                PatternRewriter &rewriter) const override {
    Value in = outer.getInput();
    double c = 1.0;
    if (auto mul = in.getDefiningOp<arith::MulFOp>()) {
      if (std::optional<double> s = getUniformConstant(mul.getRhs())) {
        c = *s;
        in = mul.getLhs();
      } else if (std::optional<double> s = getUniformConstant(mul.getLhs())) {
        c = *s;
        in = mul.getRhs();
      } else {
        return failure();
      }
    }
    auto inner = in.getDefiningOp<RMSNormOp>();
    if (!inner)
      return failure();
    if (Value g = inner.getGain()) {
      std::optional<double> uniform = getUniformConstant(g);
      if (!uniform) {
        reporter.refused(outer, "not merged with the norm before it: its gain "
                                "is not a uniform constant");
        return failure();
      }
      c *= (inner.getGainConvention() == GainConvention::one_plus ? 1.0 : 0.0) +
           *uniform;
    }
    if (c == 0.0 || !std::isfinite(c)) {
      reporter.refused(outer, "not merged: the scale between the norms is " +
                                  formatNumber(c));
      return failure();
    }
    if (std::string why = whyScaleOverflows(outer, c); !why.empty()) {
      reporter.refused(outer, "not merged: " + why);
      return failure();
    }
    double e1 = inner.getEpsilon().convertToDouble();
    double e2 = outer.getEpsilon().convertToDouble();
    double denom = c * c + e2;
    double eps = e1 * e2 / denom;
    // The statistic adds eps in f32 (flush-to-zero on GPUs): a merged eps
    // below f32's normal range would vanish there, and a zero row the
    // original maps to 0 would give 0/0. With e2 = 0 the merged eps is 0,
    // and the mean square of a row of 1e-22, which the first norm scaled
    // up before the second took it, underflows. With e1 = 0 it is 0 too:
    // the merged norm reads the raw row, whose mean square is an f32
    // subnormal at 1e-22 (a 1/RMS 7.7% off, which the original's second
    // norm corrected); computing it in f64 instead would hide the norm
    // from fold-gains and defer-scale behind the casts.
    if (e1 == 0.0) {
      reporter.refused(outer, "not merged: the norm before it has eps 0, so "
                              "the merged one would too, and its f32 "
                              "statistic of rows below ~1e-19 is inaccurate "
                              "where the original's is corrected");
      return failure();
    }
    if (!(eps >= std::numeric_limits<float>::min())) {
      reporter.refused(outer, "not merged: the merged epsilon " +
                                  formatNumber(eps) +
                                  " is below f32's normal range");
      return failure();
    }
    double factor = c / std::sqrt(denom);
    rewriter.setInsertionPoint(outer);
    FailureOr<Value> gain = buildScaledGain(rewriter, outer, factor);
    if (failed(gain)) {
      reporter.refused(outer, "not merged: the gain correction needs a static "
                              "normalized dimension");
      return failure();
    }
    auto merged = rewriter.replaceOpWithNewOp<RMSNormOp>(
        outer, inner.getInput(), *gain, eps);
    reporter.applied(merged, "merged two consecutive norms (exact): scale " +
                                 formatNumber(c) + ", eps " +
                                 formatNumber(eps));
    return success();
  }

  PassReporter &reporter;
};

/// Steps back over one op that keeps every row of its result inside one row
/// of its source (the last dimension stays the normalized one).
Value stepOverRowPreservingView(Value v) {
  Operation *def = v.getDefiningOp();
  if (!def || !v.hasOneUse())
    return Value();
  if (auto expand = dyn_cast<tensor::ExpandShapeOp>(def))
    return expand.getSrc();
  if (auto collapse = dyn_cast<tensor::CollapseShapeOp>(def))
    return collapse.getReassociationIndices().back().size() == 1
               ? collapse.getSrc()
               : Value();
  if (auto transpose = dyn_cast<linalg::TransposeOp>(def)) {
    ArrayRef<int64_t> perm = transpose.getPermutation();
    return perm.back() == static_cast<int64_t>(perm.size()) - 1
               ? transpose.getInput()
               : Value();
  }
  if (auto transpose = dyn_cast<tosa::TransposeOp>(def)) {
    ArrayRef<int32_t> perm = transpose.getPerms();
    return perm.back() == static_cast<int32_t>(perm.size()) - 1
               ? transpose.getInput1()
               : Value();
  }
  if (auto slice = dyn_cast<tensor::ExtractSliceOp>(def))
    return slice.getType().getRank() == slice.getSourceType().getRank()
               ? slice.getSource()
               : Value();
  if (auto reshape = dyn_cast<tosa::ReshapeOp>(def)) {
    auto src = cast<RankedTensorType>(reshape.getInput1().getType());
    auto dst = cast<RankedTensorType>(reshape.getType());
    if (src.getRank() == 0 || dst.getRank() == 0 || !src.hasStaticShape() ||
        !dst.hasStaticShape() || src.getShape().back() % dst.getShape().back())
      return Value();
    return reshape.getInput1();
  }
  return Value();
}

/// §3(b): norm1 -> bias-free projection -> row-preserving views -> norm2.
/// norm2 cancels norm1's per-row scale: exactly if its eps is 0.
struct CancelBeforeScaleInvariantNorm : OpRewritePattern<RMSNormOp> {
  CancelBeforeScaleInvariantNorm(MLIRContext *ctx, PassReporter &reporter,
                                 bool allowApproximate)
      : OpRewritePattern(ctx), reporter(reporter),
        allowApproximate(allowApproximate) {}

  LogicalResult matchAndRewrite(RMSNormOp norm2,
                                PatternRewriter &rewriter) const override {
    Value v = norm2.getInput();
    while (Value src = stepOverRowPreservingView(v))
      v = src;
    Operation *projOp = v.getDefiningOp();
    if (!projOp || !v.hasOneUse() || projOp->getNumResults() != 1)
      return failure();
    // Find the operand through which a weightless norm feeds the projection.
    for (OpOperand &use : projOp->getOpOperands()) {
      auto norm1 = use.get().getDefiningOp<RMSNormOp>();
      if (!norm1 || norm1.getGain())
        continue;
      FailureOr<Projection> p = matchProjection(use);
      if (failed(p))
        continue;
      if (!p->rowPreserving || !p->zeroInit) {
        reporter.refused(norm2, "not cancelled: the projection between the "
                                "norms does not keep rows or has a bias");
        return failure();
      }
      Type resultElt =
          cast<ShapedType>(projOp->getResult(0).getType()).getElementType();
      if (isNarrowFloat(resultElt)) {
        reporter.refused(norm2, "not cancelled: the " +
                                    printToString(resultElt) +
                                    " projection of the raw input could "
                                    "overflow without the first norm");
        return failure();
      }
      double e1 = norm1.getEpsilon().convertToDouble();
      double e2 = norm2.getEpsilon().convertToDouble();
      if (e2 != 0.0 && !allowApproximate) {
        reporter.refused(norm2,
                         "not cancelled: exact only for eps = 0 (this norm "
                         "has eps " +
                             formatNumber(e2) + "); enable allow-approximate");
        return failure();
      }
      rewriter.modifyOpInPlace(projOp, [&] { use.set(norm1.getInput()); });
      if (e2 == 0.0) {
        Operation *reported = widenStatistic(rewriter, norm2);
        reporter.applied(reported, "cancelled the scale of the norm at " +
                                       formatLoc(norm1.getLoc()) +
                                       " (exact: eps = 0; the statistic in "
                                       "f64)");
      } else {
        reporter.approximated(
            norm2,
            llvm::formatv(
                "cancelled the scale of the norm at {0}; per-row relative "
                "error |sqrt((my + {1} * (mx + {2})) / (my + {1})) - 1|, about "
                "{1} * |mx + {2} - 1| / (2 * my) (mx, my: mean squares of the "
                "first norm's input row and of this norm's input row without "
                "the first norm)",
                formatLoc(norm1.getLoc()), formatNumber(e2), formatNumber(e1))
                .str());
      }
      return success();
    }
    return failure();
  }

  /// Without the first norm, the second one reads the raw scale: an f32 row
  /// of magnitude below ~1e-19 squares to 0 there (0 / 0 with eps = 0)
  /// where the original, normalized first, is finite, and one above ~1e19
  /// overflows. In f64 the mean square of every finite f32 row is a normal
  /// number, so the norm runs there and rounds once back to f32. Returns
  /// the new norm.
  static Operation *widenStatistic(PatternRewriter &rewriter, RMSNormOp norm) {
    auto type = cast<RankedTensorType>(norm.getInput().getType());
    if (!type.getElementType().isF32())
      return norm;
    Location loc = norm.getLoc();
    rewriter.setInsertionPoint(norm);
    Value wide = arith::ExtFOp::create(
        rewriter, loc, type.clone(rewriter.getF64Type()), norm.getInput());
    auto wideNorm = RMSNormOp::create(rewriter, loc, wide, norm.getGain(), 0.0,
                                      norm.getGainConvention());
    rewriter.replaceOpWithNewOp<arith::TruncFOp>(norm, type,
                                                 wideNorm.getResult());
    return wideNorm;
  }

  PassReporter &reporter;
  bool allowApproximate;
};

struct DropRedundantPass
    : flashnorm::impl::DropRedundantBase<DropRedundantPass> {
  using DropRedundantBase::DropRedundantBase;
  void runOnOperation() override {
    func::FuncOp fn = getOperation();
    if (fn.isExternal())
      return;
    PassReporter reporter(fn, kPass);
    if (!reportRefusals)
      reporter.countRefusalsOnly();
    RewritePatternSet patterns(&getContext());
    patterns.add<MergeConsecutiveNorms>(&getContext(), reporter);
    patterns.add<CancelBeforeScaleInvariantNorm>(&getContext(), reporter,
                                                 allowApproximate);
    if (failed(applyFlashNormPatterns(fn, std::move(patterns))))
      return signalPassFailure();
    numRewritten += reporter.getNumApplied();
  }
};
} // namespace
