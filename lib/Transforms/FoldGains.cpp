//===- FoldGains.cpp - Weightless normalization (FLASHNORM.md §1)
//----------===//

#include "flashnorm/Analysis/Projection.h"
#include "flashnorm/Dialect/FlashNorm/IR/FlashNormOps.h"
#include "flashnorm/Transforms/Passes.h"
#include "flashnorm/Transforms/ProjectionRewrites.h"
#include "flashnorm/Transforms/PatternDriver.h"
#include "flashnorm/Utils/Remarks.h"
#include "flashnorm/Utils/WeightFolder.h"

#include "mlir/Dialect/Tosa/IR/TosaOps.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::flashnorm {
#define GEN_PASS_DEF_FOLDGAINS
#include "flashnorm/Transforms/Passes.h.inc"
} // namespace mlir::flashnorm

using namespace mlir;
using namespace mlir::flashnorm;

namespace {
constexpr StringLiteral kPass = "flashnorm-fold-gains";

/// What folding one norm needs: its projections and their weight constants.
struct FoldTarget {
  Projection projection;
  WeightSource source;
};

/// The per-feature values of a constant gain or bias, or why not.
FailureOr<SmallVector<double>> readFeatureConstant(Value v, StringRef what,
                                                   std::string &why) {
  FailureOr<SmallVector<double>> values = readConstantAsDoubles(v, &why);
  if (failed(values))
    why = (what + " is not foldable: " + why).str();
  return values;
}

/// The norm-specific parts of the fold.
struct NormTraits {
  static Value getBias(RMSNormOp) { return Value(); }
  static Value getBias(LayerNormOp op) { return op.getBias(); }
  static bool isOnePlus(RMSNormOp op) {
    return op.getGainConvention() == GainConvention::one_plus;
  }
  static bool isOnePlus(LayerNormOp) { return false; }
  static Operation *createWeightless(RewriterBase &r, RMSNormOp op) {
    return r.replaceOpWithNewOp<RMSNormOp>(op, op.getInput(), Value(),
                                           op.getEpsilon().convertToDouble());
  }
  static Operation *createWeightless(RewriterBase &r, LayerNormOp op) {
    return r.replaceOpWithNewOp<LayerNormOp>(
        op, op.getInput(), Value(), Value(), op.getEpsilon().convertToDouble());
  }
};

/// Folds a norm's gain (and a LayerNorm's bias and mean-centering) into the
/// constant weights of all its projections, or into none of them.
template <typename NormOp> struct FoldGainsPattern : OpRewritePattern<NormOp> {
  FoldGainsPattern(MLIRContext *ctx, PassReporter &reporter, bool cloneShared)
      : OpRewritePattern<NormOp>(ctx), reporter(reporter),
        cloneShared(cloneShared) {}

  LogicalResult matchAndRewrite(NormOp norm,
                                PatternRewriter &rewriter) const override {
    constexpr bool layer = std::is_same_v<NormOp, LayerNormOp>;
    Value gainValue = norm.getGain(), biasValue = NormTraits::getBias(norm);
    if ((!gainValue && !biasValue) || norm.getResult().use_empty())
      return failure();
    std::string why;
    auto refuse = [&](const Twine &msg) {
      reporter.refused(norm, "not folded: " + msg);
      return failure();
    };
    int64_t numFeatures = norm.getFeatureSize();
    if (ShapedType::isDynamic(numFeatures))
      return refuse("the normalized dimension is dynamic");
    SmallVector<double> gain(numFeatures, 1.0), bias;
    if (gainValue) {
      FailureOr<SmallVector<double>> g =
          readFeatureConstant(gainValue, "gain", why);
      if (failed(g))
        return refuse(why);
      gain = *g;
      if (NormTraits::isOnePlus(norm))
        for (double &v : gain)
          v += 1.0; // In f64, never in the gain's own type.
    }
    if (biasValue) {
      FailureOr<SmallVector<double>> b =
          readFeatureConstant(biasValue, "bias", why);
      if (failed(b))
        return refuse(why);
      bias = *b;
    }

    SmallVector<FoldTarget> targets;
    for (OpOperand *use : getUsesThroughRowRegrouping(norm.getResult())) {
      Operation *user = use->getOwner();
      auto userRefusal = [&]() {
        return refuse("user '" + user->getName().getStringRef() + "' at " +
                      formatLoc(user->getLoc()) + ": " + why);
      };
      FailureOr<Projection> projection = matchProjection(*use, &why);
      if (failed(projection))
        return userRefusal();
      FailureOr<WeightSource> source = traceWeightToConstant(
          projection->getWeight(), projection->weightAxis, &why);
      if (failed(source))
        return userRefusal();
      if (!cloneShared && !source->constant->getResult(0).hasOneUse())
        return refuse("the weight of '" + user->getName().getStringRef() +
                      "' has other users and clone-shared-weights=false");
      targets.push_back({*projection, *source});
    }

    // Compute every folded weight and bias first: a failure leaves the IR
    // untouched.
    SmallVector<ElementsAttr> folded;
    SmallVector<SmallVector<double>> biases;
    for (const FoldTarget &t : targets) {
      FailureOr<ElementsAttr> attr = scaleAlongAxis(
          t.source.value, t.source.axis, gain, /*center=*/layer, &why);
      if (failed(attr))
        return refuse("weight of '" +
                      t.projection.op->getName().getStringRef() + "': " + why);
      folded.push_back(*attr);
      if (bias.empty())
        continue;
      FailureOr<SmallVector<double>> b =
          contractAlongAxis(t.source.value, t.source.axis, bias, &why);
      auto resultType =
          cast<RankedTensorType>(t.projection.op->getResult(0).getType());
      if (failed(b) ||
          static_cast<int64_t>(b->size()) != resultType.getShape().back())
        return refuse("the bias cannot be folded through the weight of '" +
                      t.projection.op->getName().getStringRef() +
                      "' (it needs one output-feature dimension)");
      biases.push_back(*b);
    }
    for (auto [i, t] : llvm::enumerate(targets)) {
      replaceWeight(rewriter, t.projection, t.source, folded[i]);
      if (layer)
        rewriter.modifyOpInPlace(t.projection.op, [&] {
          t.projection.op->setAttr(kCenteredWeightsAttr,
                                   rewriter.getUnitAttr());
        });
      if (!biases.empty())
        addOutputBias(rewriter, t.projection.op, biases[i]);
    }
    rewriter.setInsertionPoint(norm);
    Operation *weightless = NormTraits::createWeightless(rewriter, norm);
    reporter.applied(weightless,
                     Twine("folded the ") +
                         (gainValue ? (biasValue ? "gain and bias" : "gain")
                                    : "bias") +
                         (layer ? " (and the mean-centering)" : "") +
                         " into " + Twine(targets.size()) +
                         " projection weight(s)");
    return success();
  }

  PassReporter &reporter;
  bool cloneShared;
};

struct FoldGainsPass : flashnorm::impl::FoldGainsBase<FoldGainsPass> {
  using FoldGainsBase::FoldGainsBase;
  void runOnOperation() override {
    func::FuncOp fn = getOperation();
    if (fn.isExternal())
      return;
    PassReporter reporter(fn, kPass);
    RewritePatternSet patterns(&getContext());
    patterns.add<FoldGainsPattern<RMSNormOp>, FoldGainsPattern<LayerNormOp>>(
        &getContext(), reporter, cloneSharedWeights);
    if (failed(applyFlashNormPatterns(fn, std::move(patterns))))
      return signalPassFailure();
    numFolded += reporter.getNumApplied();
  }
};
} // namespace
