//===- FoldGains.cpp - Weightless normalization (FLASHNORM.md §1)
//----------===//

#include "flashnorm/Analysis/Projection.h"
#include "flashnorm/Dialect/FlashNorm/IR/FlashNormOps.h"
#include "flashnorm/Transforms/Passes.h"
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

/// The per-feature multiplier G of a norm: gain, or 1 + gain (in f64).
FailureOr<SmallVector<double>> readEffectiveGain(RMSNormOp norm,
                                                 std::string &why) {
  FailureOr<SmallVector<double>> gain =
      readConstantAsDoubles(norm.getGain(), &why);
  if (failed(gain)) {
    why = "gain is not foldable: " + why;
    return failure();
  }
  if (norm.getGainConvention() == GainConvention::one_plus)
    for (double &g : *gain)
      g += 1.0;
  return gain;
}

/// Replaces the weight operand of `target` by a folded copy of its constant,
/// re-creating the layout ops between them so nothing shared is changed.
void rewriteWeight(PatternRewriter &rewriter, const FoldTarget &target,
                   ElementsAttr folded) {
  const WeightSource &src = target.source;
  rewriter.setInsertionPointAfter(src.constant);
  Operation *newConstant =
      isa<tosa::ConstOp>(src.constant)
          ? tosa::ConstOp::create(rewriter, src.constant->getLoc(),
                                  folded.getShapedType(), folded)
                .getOperation()
          : arith::ConstantOp::create(rewriter, src.constant->getLoc(),
                                      cast<TypedAttr>(folded))
                .getOperation();
  Value current = newConstant->getResult(0);
  for (Operation *layoutOp : llvm::reverse(src.chain)) {
    rewriter.setInsertionPoint(layoutOp);
    IRMapping mapping;
    mapping.map(layoutOp->getOperand(0), current);
    current = rewriter.clone(*layoutOp, mapping)->getResult(0);
  }
  Operation *projection = target.projection.op;
  rewriter.modifyOpInPlace(projection, [&] {
    projection->setOperand(target.projection.weightIndex, current);
  });
}

struct FoldGainsPattern : OpRewritePattern<RMSNormOp> {
  FoldGainsPattern(MLIRContext *ctx, PassReporter &reporter, bool cloneShared)
      : OpRewritePattern(ctx), reporter(reporter), cloneShared(cloneShared) {}

  LogicalResult matchAndRewrite(RMSNormOp norm,
                                PatternRewriter &rewriter) const override {
    if (!norm.getGain() || norm.getResult().use_empty())
      return failure();
    auto refuse = [&](Operation *at, const Twine &why) {
      reporter.refused(at, why);
      return failure();
    };
    std::string why;
    FailureOr<SmallVector<double>> gain = readEffectiveGain(norm, why);
    if (failed(gain))
      return refuse(norm, "gain not folded: " + why);

    SmallVector<FoldTarget> targets;
    for (OpOperand *use : getUsesThroughRowRegrouping(norm.getResult())) {
      Operation *user = use->getOwner();
      FailureOr<Projection> projection = matchProjection(*use, &why);
      if (failed(projection))
        return refuse(norm, "gain not folded: user '" +
                                user->getName().getStringRef() + "' at " +
                                formatLoc(user->getLoc()) + ": " + why);
      FailureOr<WeightSource> source = traceWeightToConstant(
          projection->getWeight(), projection->weightAxis, &why);
      if (failed(source))
        return refuse(norm, "gain not folded: user '" +
                                user->getName().getStringRef() + "' at " +
                                formatLoc(user->getLoc()) + ": " + why);
      if (!cloneShared && !source->constant->getResult(0).hasOneUse())
        return refuse(norm, "gain not folded: the weight of '" +
                                user->getName().getStringRef() +
                                "' has other users and "
                                "clone-shared-weights=false");
      targets.push_back({*projection, *source});
    }

    // Fold every weight first: a failure leaves the IR untouched.
    SmallVector<ElementsAttr> folded;
    for (const FoldTarget &t : targets) {
      FailureOr<ElementsAttr> attr =
          scaleAlongAxis(t.source.value, t.source.axis, *gain, &why);
      if (failed(attr))
        return refuse(norm, "gain not folded: weight of '" +
                                t.projection.op->getName().getStringRef() +
                                "': " + why);
      folded.push_back(*attr);
    }
    for (auto [t, attr] : llvm::zip(targets, folded))
      rewriteWeight(rewriter, t, attr);

    rewriter.setInsertionPoint(norm);
    auto weightless = rewriter.replaceOpWithNewOp<RMSNormOp>(
        norm, norm.getInput(), Value(), norm.getEpsilon().convertToDouble());
    reporter.applied(weightless, "folded the gain into " +
                                     Twine(targets.size()) +
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
    patterns.add<FoldGainsPattern>(&getContext(), reporter, cloneSharedWeights);
    if (failed(applyFlashNormPatterns(fn, std::move(patterns))))
      return signalPassFailure();
    numFolded += reporter.getNumApplied();
  }
};
} // namespace
