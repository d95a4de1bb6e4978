//===- FoldGains.cpp - Weightless normalization (docs/MATH.md §1) --------===//
//
// flashnorm-fold-gains: a norm's learned gain g (and a LayerNorm's bias and
// mean-centering) moves into the weights of the projections that read it,
// (x / rms(x)) (diag(g) W) instead of ((x / rms(x)) diag(g)) W, and the
// norm becomes weightless. Folded into all of its projections or none: a norm
// with one projection it cannot fold keeps its gain, with a remark saying
// which and why. A user that is not a projection of the norm at all (a
// post-norm block's residual add) keeps the gained norm (`partial`): the
// projections read a weightless copy beside it.
//
// Where the gain goes depends on where each weight lives, found by the
// shared projection analysis (matchProjection, traceWeight):
// - a constant: the raw-buffer weight folder (WeightFolder.h) scales it
//   along the projection's k axis in one pass, in f64, rounded once to its
//   type (with a query projection's attention scale, and centered for a
//   LayerNorm where the type can carry it);
// - a dequantization's per-input-channel factor: the factor takes the gain,
//   the integers stay; an int8 weight with per-output-channel scales is
//   requantized only with allow-requantize, within its tolerance
//   (FoldGainsQuantized.h);
// - a function argument (prepare-function=true): a generated
//   @<fn>_flashnorm_prepare, which the caller runs once on the weights,
//   folds it;
// - an extern global (fold-plan=FILE): the fold is recorded for
//   flashnorm-fold-checkpoint, which applies it to the checkpoint (a
//   query's attention scale times the plan's gain vector;
//   FoldGainsCheckpoint.h).
//
// Plan, then apply (FoldGainsPattern): the plan reads the gain and every
// projection's weight, the weight folder then makes every folded value in
// new attributes, and only when both succeeded is anything replaced.
//
//===----------------------------------------------------------------------===//

#include "FoldGainsCheckpoint.h"
#include "FoldGainsQuantized.h"
#include "PrepareFunction.h"

#include "flashnorm/Analysis/Projection.h"
#include "flashnorm/Dialect/FlashNorm/IR/FlashNormOps.h"
#include "flashnorm/Transforms/Passes.h"
#include "flashnorm/Transforms/PatternDriver.h"
#include "flashnorm/Transforms/ProjectionRewrites.h"
#include "flashnorm/Utils/FoldPlan.h"
#include "flashnorm/Utils/Remarks.h"
#include "flashnorm/Utils/Safetensors.h"
#include "flashnorm/Utils/WeightFolder.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tosa/IR/TosaOps.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"
#include <cmath>

namespace mlir::flashnorm {
#define GEN_PASS_DEF_FOLDGAINS
#include "flashnorm/Transforms/Passes.h.inc"
} // namespace mlir::flashnorm

using namespace mlir;
using namespace mlir::flashnorm;

namespace {
constexpr StringLiteral kPass = "flashnorm-fold-gains";

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
    return RMSNormOp::create(r, op.getLoc(), op.getInput(), Value(),
                             op.getEpsilon().convertToDouble());
  }
  static Operation *createWeightless(RewriterBase &r, LayerNormOp op) {
    return LayerNormOp::create(r, op.getLoc(), op.getInput(), Value(), Value(),
                               op.getEpsilon().convertToDouble());
  }
};

/// The entry-block argument `v` is, looking through reshapes.
std::optional<unsigned> getArgumentThroughReshapes(Value v) {
  while (Operation *def = v.getDefiningOp()) {
    if (!isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp, tosa::ReshapeOp>(
            def))
      return std::nullopt;
    v = def->getOperand(0);
  }
  auto arg = cast<BlockArgument>(v);
  if (!arg.getOwner()->isEntryBlock() ||
      !isa<FunctionOpInterface>(arg.getOwner()->getParentOp()))
    return std::nullopt;
  return arg.getArgNumber();
}

/// Whether a projection reads `norm`: a fold would have somewhere to go.
bool feedsProjection(Operation *norm) {
  return llvm::any_of(
      getUsesThroughRowRegrouping(norm->getResult(0)),
      [](OpOperand *use) { return succeeded(matchProjection(*use)); });
}

/// One norm's fold, decided before anything changes: where the gain (and a
/// LayerNorm's bias and mean-centering) goes for each projection, and then
/// (`computeFolded`) the folded values themselves.
struct NormFold {
  Value gainValue, biasValue;
  bool layer = false, onePlus = false;
  /// A LayerNorm without gain or bias whose mean-centering alone is left
  /// for the prepare function or the checkpoint.
  bool centerOnly = false;
  /// A LayerNorm without gain or bias whose checkpoint weights cannot
  /// carry the mean-centering: the plan records their column sums alone.
  bool sumsOnly = false;
  /// The mean-centering goes into the weights (every one can carry it).
  bool center = false;
  /// A runtime gain or bias, folded through the prepare function.
  std::optional<unsigned> gainArg, biasArg;
  SmallVector<double> gain, bias;
  /// A gain or bias whose values are in a checkpoint (fold-plan only), and
  /// the globals that hold them.
  std::optional<PlanVector> gainRef, biasRef;
  SmallVector<ml_program::GlobalOp> vectorGlobals;
  /// Constant weights (and per-input-channel factors), weights in the
  /// checkpoint, int8 weights to requantize, argument weights.
  SmallVector<FoldTarget, 3> targets, checkpointTargets;
  SmallVector<RequantTarget, 1> requantTargets;
  SmallVector<ArgFold> argFolds;
  /// The projection of each of `argFolds`.
  SmallVector<Projection> argProjections;
  unsigned numKFactors = 0;
  /// Users that are not projections of the norm (`partial`): they keep the
  /// gained norm; and why each is not a projection, for the remark.
  SmallVector<OpOperand *> keptUses;
  SmallVector<std::string> keptWhy;

  bool foldsSomething() const {
    return !targets.empty() || !checkpointTargets.empty() ||
           !requantTargets.empty() || !argFolds.empty();
  }

  /// What computeFolded made, one per target.
  SmallVector<ElementsAttr> folded;
  SmallVector<SmallVector<double>> biases;
  SmallVector<SmallVector<ElementsAttr>> logitBiases;
  /// The same for the checkpoint targets, one per target.
  SmallVector<SmallVector<ElementsAttr>> checkpointLogitBiases;
  unsigned numLogitScales = 0;
  SmallVector<Requantized> requantized;
  /// The requantized weights' errors, for the remark.
  std::string requantErrors;

  bool valuesInCheckpoint() const { return gainRef || biasRef; }
  /// A narrow weight under a LayerNorm: defer-scale's centered post-scale
  /// needs the column sums of every one (as folded and stored).
  bool needsColumnSums() const { return layer && !center; }
};

/// Folds a norm's gain (and a LayerNorm's bias and mean-centering) into the
/// constant weights of all its projections, or into none of them. With
/// `argFolds`, weights that are function arguments are folded through the
/// prepare function instead (recorded there). Plan, then apply: `plan`
/// reads the IR (the gain, each projection's weight), `computeFolded`
/// makes every folded weight, each may refuse; only then does `apply`
/// replace anything.
template <typename NormOp> struct FoldGainsPattern : OpRewritePattern<NormOp> {
  FoldGainsPattern(MLIRContext *ctx, PassReporter &reporter, bool cloneShared,
                   bool partial, std::optional<double> requantizeTolerance,
                   bool foldAttentionScale, SmallVector<ArgFold> *argFolds,
                   CheckpointRecorder *checkpoint,
                   llvm::SetVector<Operation *> &replacedGlobals,
                   llvm::DenseSet<Operation *> &refusedForArguments,
                   llvm::DenseSet<Operation *> &refusedForCheckpoint)
      : OpRewritePattern<NormOp>(ctx), reporter(reporter),
        cloneShared(cloneShared), partial(partial),
        requantizeTolerance(requantizeTolerance),
        foldAttentionScale(foldAttentionScale), argFolds(argFolds),
        checkpoint(checkpoint), replacedGlobals(replacedGlobals),
        refusedForArguments(refusedForArguments),
        refusedForCheckpoint(refusedForCheckpoint) {}

  LogicalResult matchAndRewrite(NormOp norm,
                                PatternRewriter &rewriter) const override {
    std::string why;
    FailureOr<NormFold> fold = plan(norm, why);
    if (succeeded(fold) && failed(computeFolded(*fold, why)))
      fold = failure();
    if (failed(fold)) {
      // Nothing to fold says nothing.
      if (!why.empty())
        reporter.refused(norm, "not folded: " + why);
      return failure();
    }
    apply(rewriter, norm, *fold);
    return success();
  }

  /// The norm's fold, or why not (`why` left empty where there is nothing
  /// to fold). Reads the IR only.
  FailureOr<NormFold> plan(NormOp norm, std::string &why) const {
    NormFold f;
    f.layer = std::is_same_v<NormOp, LayerNormOp>;
    f.gainValue = norm.getGain();
    f.biasValue = NormTraits::getBias(norm);
    bool weightless = f.layer && !f.gainValue && !f.biasValue;
    // Centered already, or given column sums, by the fold that dropped
    // this norm's gain or bias (or by this pattern, visiting again).
    if (weightless &&
        llvm::any_of(getUsesThroughRowRegrouping(norm.getResult()),
                     [](OpOperand *use) {
                       Operation *user = use->getOwner();
                       return user->hasAttr(kCenteredWeightsAttr) ||
                              user->hasAttr(kColumnSumsAttr) ||
                              user->hasAttr(kColumnSumsArgumentAttr);
                     }))
      return failure();
    // A weightless LayerNorm still has its centering to fold; defer-scale
    // does that for constant weights, only the prepare function can for
    // argument ones and only a plan for weights in a checkpoint.
    f.centerOnly = weightless && (argFolds || checkpoint);
    if ((!f.gainValue && !f.biasValue && !f.centerOnly) ||
        norm.getResult().use_empty()) {
      if (weightless && !f.centerOnly)
        noteUnfoldedCentering(norm, why);
      return failure();
    }
    auto fail = [&](const Twine &msg) {
      why = msg.str();
      return failure();
    };
    int64_t numFeatures = norm.getFeatureSize();
    if (ShapedType::isDynamic(numFeatures))
      return fail("the normalized dimension is dynamic");
    f.onePlus = NormTraits::isOnePlus(norm);
    f.gain.assign(numFeatures, 1.0);
    if (failed(planVectors(norm, f, why)))
      return failure();
    // A LayerNorm's mean-centering goes into the weights too, unless one of
    // them is too narrow to carry it (canCarryCentering): then it stays in
    // the (weightless) norm, for every projection alike.
    f.center = f.layer;
    for (OpOperand *use : getUsesThroughRowRegrouping(norm.getResult()))
      if (failed(planUse(norm, use, f, why)))
        return failure();
    // Users that are not projections alone: nothing to fold, and they say
    // why, as the first of them would without `partial`.
    if (!f.keptUses.empty() && !f.foldsSomething()) {
      why = llvm::join(f.keptWhy, "; ");
      return failure();
    }
    auto fn = norm->template getParentOfType<func::FuncOp>();
    for (auto [a, projection] : llvm::zip_equal(f.argFolds, f.argProjections)) {
      a.center = f.center;
      // A weightless LayerNorm's narrow weight stays as it is; only its
      // column sums are prepared.
      a.foldsWeight = !f.centerOnly || f.center;
      if (f.needsColumnSums() &&
          !columnSumsFollowOutputs(
              projection,
              cast<ShapedType>(fn.getArgument(a.weightArg).getType())
                  .getShape(),
              a.axis))
        return fail("the column sums of weight argument #" +
                    Twine(a.weightArg) +
                    " (which its f16/bf16 values need in place of the "
                    "mean-centering) are not one per output");
    }
    if (f.centerOnly && !f.center) {
      // defer-scale subtracts the mean's share after the projections, with
      // each weight's column sums: it sums constant weights itself, only
      // the plan can sum checkpoint ones, and the prepare function argument
      // ones.
      f.sumsOnly = true;
      f.targets.clear();
      auto followsOutputs = [](const FoldTarget &t) {
        ml_program::GlobalOp global = t.source.global;
        auto type = cast<RankedTensorType>(global.getType());
        return columnSumsFollowOutputs(t.projection, type.getShape(),
                                       t.source.axis);
      };
      if ((f.argFolds.empty() && f.checkpointTargets.empty()) ||
          !llvm::all_of(f.checkpointTargets, followsOutputs)) {
        why.clear(); // Nothing for this pass (defer-scale says why).
        return failure();
      }
    } else if (f.centerOnly && f.argFolds.empty() &&
               f.checkpointTargets.empty()) {
      why.clear(); // Nothing for this pass: defer-scale centers constants.
      return failure();
    }
    return f;
  }

  /// A weightless LayerNorm that this pass (without a plan or a prepare
  /// function) leaves, though one of them would take its mean-centering
  /// (weights in a checkpoint: centered or summed by the plan; f32
  /// argument weights: centered by the prepare function). Counted for the
  /// warning, and said in `why`; left empty where nothing would (constant
  /// weights are defer-scale's).
  void noteUnfoldedCentering(NormOp norm, std::string &why) const {
    for (OpOperand *use : getUsesThroughRowRegrouping(norm.getResult())) {
      FailureOr<Projection> p = matchProjection(*use);
      FailureOr<WeightSource> source =
          succeeded(p) ? traceWeight(p->getWeight(), p->weightAxis,
                                     /*allowArgument=*/true)
                       : FailureOr<WeightSource>(failure());
      if (failed(source))
        continue;
      std::string user = "the weight of '" +
                         p->op->getName().getStringRef().str() + "' at " +
                         formatLoc(p->op->getLoc());
      if (source->global && !source->value) {
        refusedForCheckpoint.insert(norm);
        why = "the mean-centering, since " + user + " is the extern global @" +
              source->global.getSymName().str() +
              " (fold-plan=FILE records it for flashnorm-fold-checkpoint)";
        return;
      }
      if (BlockArgument arg = source->argument;
          arg && canCarryCentering(getElementTypeOrSelf(arg.getType()))) {
        refusedForArguments.insert(norm);
        why = "the mean-centering, since " + user + " is argument #" +
              std::to_string(arg.getArgNumber()) +
              " (prepare-function=true centers it through a prepare "
              "function)";
        return;
      }
    }
  }

  /// The gain's and bias's values: constants, a runtime gain (prepare
  /// function), or vectors of a checkpoint (fold plan).
  LogicalResult planVectors(NormOp norm, NormFold &f, std::string &why) const {
    auto inCheckpoint = [&](Value v, std::optional<PlanVector> &ref,
                            StringRef what) -> LogicalResult {
      ml_program::GlobalOp global;
      FailureOr<PlanVector> vec = matchCheckpointVector(v, global);
      if (failed(vec))
        return failure();
      if (!checkpoint) {
        refusedForCheckpoint.insert(norm);
        why = (what + " is the extern global @" + vec->tensor +
               " (fold-plan=FILE records the fold for "
               "flashnorm-fold-checkpoint)")
                  .str();
        return failure();
      }
      ref = *vec;
      f.vectorGlobals.push_back(global);
      return success();
    };
    // A gain or bias passed as an argument: the prepare function's to
    // fold; without one, a norm that has a projection to fold it into is
    // counted for the warning.
    auto inArgument = [&](Value v,
                          std::optional<unsigned> &arg) -> LogicalResult {
      std::optional<unsigned> index = getArgumentThroughReshapes(v);
      if (!argFolds) {
        if (index && feedsProjection(norm)) {
          refusedForArguments.insert(norm);
          why += " (prepare-function=true folds it through a prepare "
                 "function)";
        }
        return failure();
      }
      arg = index;
      return success(index.has_value());
    };
    if (f.gainValue) {
      FailureOr<SmallVector<double>> g =
          readFeatureConstant(f.gainValue, "gain", why);
      if (succeeded(g)) {
        f.gain = *g;
        if (f.onePlus)
          for (double &v : f.gain)
            v += 1.0; // In f64, never in the gain's own type.
      } else if (succeeded(inCheckpoint(f.gainValue, f.gainRef, "the gain"))) {
        if (f.onePlus)
          f.gainRef->offset += 1.0;
      } else if (refusedForCheckpoint.contains(norm) ||
                 failed(inArgument(f.gainValue, f.gainArg))) {
        return failure();
      }
    }
    if (f.biasValue) {
      FailureOr<SmallVector<double>> b =
          readFeatureConstant(f.biasValue, "bias", why);
      if (succeeded(b)) {
        f.bias = *b;
      } else if (succeeded(inCheckpoint(f.biasValue, f.biasRef, "the bias"))) {
      } else if (refusedForCheckpoint.contains(norm) ||
                 failed(inArgument(f.biasValue, f.biasArg))) {
        return failure();
      }
    }
    return success();
  }

  /// Where the fold goes for one projection reading the norm: its
  /// constant weight, the per-input-channel factor of its dequantization,
  /// its int8 weight (requantized), its argument weight (the prepare
  /// function) or its weight in the checkpoint (the fold plan).
  LogicalResult planUse(NormOp norm, OpOperand *use, NormFold &f,
                        std::string &why) const {
    Operation *user = use->getOwner();
    auto fail = [&](const Twine &msg) {
      why = msg.str();
      return failure();
    };
    auto userRefusal = [&]() {
      return fail("user '" + user->getName().getStringRef() + "' at " +
                  formatLoc(user->getLoc()) + ": " + why);
    };
    FailureOr<Projection> projection = matchProjection(*use, &why);
    if (failed(projection) && partial) {
      // Not a projection of the norm: it reads the gained norm, which stays
      // for it.
      f.keptUses.push_back(use);
      f.keptWhy.push_back("user '" + user->getName().getStringRef().str() +
                          "' at " + formatLoc(user->getLoc()) + ": " + why);
      why.clear();
      return success();
    }
    if (failed(projection))
      return userRefusal();
    if (f.biasValue && !projection->rowPreserving) {
      why = "a bias folds only through a projection whose rows are the "
            "norm's rows";
      return userRefusal();
    }
    FailureOr<WeightSource> source =
        traceWeight(projection->getWeight(), projection->weightAxis,
                    /*allowArgument=*/argFolds != nullptr, &why);
    // A weight dequantized from integers: its per-input-channel factor, or
    // (allow-requantize) its int8 values, take the gain.
    if (failed(source)) {
      QuantizedFoldLimits limits;
      limits.layer = f.layer;
      limits.constantGain = !f.gainArg && !f.valuesInCheckpoint();
      limits.requantizeTolerance = requantizeTolerance;
      std::string quantizedWhy;
      FailureOr<std::optional<QuantizedFold>> quantized =
          planQuantizedFold(*projection, limits, quantizedWhy);
      if (failed(quantized)) {
        why = quantizedWhy;
        return userRefusal();
      }
      if (*quantized) {
        if (auto *factor = std::get_if<FoldTarget>(&**quantized)) {
          factor->logit = getLogitScale(*projection);
          f.targets.push_back(*factor);
          ++f.numKFactors;
        } else {
          f.requantTargets.push_back(std::get<RequantTarget>(**quantized));
        }
        return success();
      }
      if (!argFolds &&
          succeeded(traceWeight(projection->getWeight(), projection->weightAxis,
                                /*allowArgument=*/true))) {
        refusedForArguments.insert(norm);
        why += " (prepare-function=true folds it through a prepare "
               "function)";
      }
      return userRefusal();
    }
    f.center &= canCarryCentering(
        getElementTypeOrSelf(source->argument ? source->argument.getType()
                             : source->global ? source->global.getType()
                                              : source->value.getShapedType()));
    // Ops between the weight and the projection, and the weight itself,
    // must have no other users: the fold changes what they hold.
    auto sharedVia = [&]() -> Operation * {
      for (Operation *op : source->chain)
        if (!op->getResult(0).hasOneUse())
          return op;
      return nullptr;
    };
    auto sharedRefusal = [&]() {
      return fail("the weight of '" + user->getName().getStringRef() +
                  "' has other users and clone-shared-weights=false");
    };
    if (source->global && !source->value) {
      // The weight is in a checkpoint: the fold goes into the plan, which
      // holds values, not a gain the function receives.
      std::string name = source->global.getSymName().str();
      if (f.gainArg || f.biasArg)
        return fail("the " + Twine(f.gainArg ? "gain" : "bias") +
                    " is an argument but the weight of '" +
                    user->getName().getStringRef() +
                    "' is in the checkpoint (the extern global @" + name + ")");
      if (!checkpoint) {
        refusedForCheckpoint.insert(norm);
        why = "its weight is the extern global @" + name +
              " (fold-plan=FILE records the fold for "
              "flashnorm-fold-checkpoint)";
        return userRefusal();
      }
      if (!cloneShared &&
          (!source->constant->getResult(0).hasOneUse() || sharedVia()))
        return sharedRefusal();
      if (f.biasValue) {
        // The folded bias is one value per output feature: the weight's
        // other dimensions must be just those.
        auto type = cast<RankedTensorType>(source->global.getType());
        int64_t rest = type.getNumElements() /
                       std::max<int64_t>(1, type.getDimSize(source->axis));
        auto result =
            cast<RankedTensorType>(projection->op->getResult(0).getType());
        if (rest != result.getShape().back())
          return fail("the bias cannot be folded through the weight of '" +
                      user->getName().getStringRef() +
                      "' (it needs one output-feature dimension)");
      }
      f.checkpointTargets.push_back(
          {*projection, *source, getLogitScale(*projection)});
      return success();
    }
    if (f.valuesInCheckpoint())
      return fail("the " + Twine(f.gainRef ? "gain" : "bias") +
                  " is in the checkpoint but the weight of '" +
                  user->getName().getStringRef() + "' is not");
    if (BlockArgument arg = source->argument) {
      unsigned index = arg.getArgNumber();
      Operation *shared = sharedVia();
      why =
          !arg.hasOneUse()
              ? "weight argument #" + std::to_string(index) + " has other users"
          : shared ? "weight argument #" + std::to_string(index) +
                         " reaches other users through '" +
                         shared->getName().getStringRef().str() + "'"
          : !cast<ShapedType>(arg.getType()).hasStaticShape()
              ? "weight argument #" + std::to_string(index) +
                    " has a dynamic shape"
          : f.biasValue &&
                  !columnSumsFollowOutputs(
                      *projection, cast<ShapedType>(arg.getType()).getShape(),
                      source->axis)
              ? "the bias cannot be folded through weight argument #" +
                    std::to_string(index) +
                    " (it needs one output-feature dimension)"
          : llvm::any_of(*argFolds,
                         [&](const ArgFold &a) { return a.weightArg == index; })
              ? "weight argument #" + std::to_string(index) +
                    " is already folded for another norm"
              : "";
      if (!why.empty())
        return userRefusal();
      // A constant gain goes in as the values the plan read (through
      // reshapes and globals, 1 + g formed), not as the IR holds it.
      ArgFold fold{index, source->axis, f.gainArg, {}, f.onePlus, f.layer};
      if (!f.gainArg)
        fold.gainValues = f.gain;
      if (f.biasValue) {
        fold.biasArg = f.biasArg;
        if (!f.biasArg)
          fold.biasValues = f.bias;
      }
      f.argFolds.push_back(fold);
      f.argProjections.push_back(*projection);
      return success();
    }
    if (f.gainArg || f.biasArg)
      return fail("user '" + user->getName().getStringRef() +
                  "' has a constant weight but the " +
                  Twine(f.gainArg ? "gain" : "bias") + " is an argument");
    if (!cloneShared &&
        (!source->constant->getResult(0).hasOneUse() || sharedVia()))
      return sharedRefusal();
    f.targets.push_back({*projection, *source, getLogitScale(*projection)});
    return success();
  }

  /// Every folded weight, bias and requantized weight, in new attributes
  /// (the raw-buffer weight folder); the IR is untouched, so a failure
  /// leaves it as it was.
  LogicalResult computeFolded(NormFold &f, std::string &why) const {
    auto fail = [&](const Twine &msg) {
      why = msg.str();
      return failure();
    };
    // The constant biases on the way from a query projection to its
    // logits, times the attention scale the projection absorbs.
    auto scaleLogitBiases =
        [&](const FoldTarget &t,
            SmallVector<SmallVector<ElementsAttr>> &into) -> LogicalResult {
      into.emplace_back();
      if (!t.logit)
        return success();
      ++f.numLogitScales;
      for (auto &[add, b] : t.logit->biases) {
        int64_t n = b.value.getShapedType().getDimSize(b.axis);
        FailureOr<ElementsAttr> scaled = scaleAlongAxis(
            b.value, b.axis, SmallVector<double>(n, t.logit->factor), &why);
        if (failed(scaled))
          return fail("a bias before the attention logits: " + why);
        into.back().push_back(*scaled);
      }
      return success();
    };
    for (FoldTarget &t : f.checkpointTargets) {
      // The plan scales the gain by the attention scale; without a gain
      // (a LayerNorm's bias or centering alone) the scale stays where it
      // is, merged with the post-scale later.
      if (!f.gainValue)
        t.logit.reset();
      if (failed(scaleLogitBiases(t, f.checkpointLogitBiases)))
        return failure();
    }
    for (const FoldTarget &t : f.targets) {
      // The attention scale goes in with the gain (one rounding), and into
      // the biases on the way to the logits.
      double c = t.logit ? t.logit->factor : 1.0;
      SmallVector<double> scale(f.gain);
      for (double &v : scale)
        v *= c;
      if (failed(scaleLogitBiases(t, f.logitBiases)))
        return failure();
      FailureOr<ElementsAttr> attr =
          f.center ? scaleAndCenterAlongAxis(t.source.value, t.source.axis,
                                             scale, &why)
                   : scaleAlongAxis(t.source.value, t.source.axis, scale, &why);
      if (failed(attr))
        return fail("weight of '" + t.projection.op->getName().getStringRef() +
                    "': " + why);
      f.folded.push_back(*attr);
      if (f.bias.empty())
        continue;
      FailureOr<SmallVector<double>> b =
          contractAlongAxis(t.source.value, t.source.axis, f.bias, &why);
      auto resultType =
          cast<RankedTensorType>(t.projection.op->getResult(0).getType());
      if (failed(b) ||
          static_cast<int64_t>(b->size()) != resultType.getShape().back())
        return fail("the bias cannot be folded through the weight of '" +
                    t.projection.op->getName().getStringRef() +
                    "' (it needs one output-feature dimension)");
      for (double &v : *b)
        v *= c;
      // Added in the result's type: a bias past its range would be inf.
      auto elementType = dyn_cast<FloatType>(resultType.getElementType());
      double largest =
          elementType ? APFloat::getLargest(elementType.getFloatSemantics())
                            .convertToDouble()
                      : INFINITY;
      if (llvm::any_of(*b, [&](double v) { return !(std::abs(v) <= largest); }))
        return fail("the bias folded through the weight of '" +
                    t.projection.op->getName().getStringRef() + "' overflows " +
                    printToString(resultType.getElementType()));
      f.biases.push_back(*b);
    }
    for (const RequantTarget &t : f.requantTargets) {
      FailureOr<Requantized> r =
          requantize(t, f.gain, *requantizeTolerance, f.requantErrors, why);
      if (failed(r))
        return failure();
      f.requantized.push_back(*r);
    }
    return success();
  }

  /// Replaces the weights with their folded values, records the checkpoint
  /// and prepare-function folds, and makes the norm weightless.
  void apply(PatternRewriter &rewriter, NormOp norm, NormFold &f) const {
    for (auto [t, r] : llvm::zip_equal(f.requantTargets, f.requantized))
      replaceRequantized(rewriter, t, r, replacedGlobals);
    for (auto [i, t] : llvm::enumerate(f.targets)) {
      if (t.source.global)
        replacedGlobals.insert(t.source.global);
      replaceWeight(rewriter, t.projection, t.source, f.folded[i]);
      if (t.logit)
        bypassLogitScale(rewriter, *t.logit, f.logitBiases[i]);
      if (!f.biases.empty())
        addOutputBias(rewriter, t.projection.op, f.biases[i]);
    }
    // The gain and bias tensors too are read by the plan only, now.
    for (ml_program::GlobalOp global : f.vectorGlobals)
      replacedGlobals.insert(global);
    // A LayerNorm whose weights cannot carry the centering: defer-scale's
    // post-scale subtracts the mean's share with each folded weight's
    // column sums, which the plan computes (in the statistic's type).
    CheckpointNormFold recorded;
    recorded.gainRef = f.gainValue ? f.gainRef : std::nullopt;
    recorded.biasRef = f.biasValue ? f.biasRef : std::nullopt;
    recorded.gain = f.gain;
    recorded.bias = f.bias;
    recorded.scale = f.gainValue || f.center;
    recorded.center = f.center;
    if (f.layer && !f.center)
      recorded.columnSums =
          getStatisticType(getElementTypeOrSelf(norm->getOperand(0).getType()));
    for (auto [i, t] : llvm::enumerate(f.checkpointTargets)) {
      checkpoint->record(rewriter, t, recorded);
      if (t.logit)
        bypassLogitScale(rewriter, *t.logit, f.checkpointLogitBiases[i]);
    }
    llvm::SmallPtrSet<OpOperand *, 2> kept(f.keptUses.begin(),
                                           f.keptUses.end());
    // Every projection's weight is now centered for a LayerNorm.
    if (f.center)
      for (OpOperand *use : getUsesThroughRowRegrouping(norm.getResult()))
        if (!kept.contains(use))
          rewriter.modifyOpInPlace(use->getOwner(), [&] {
            use->getOwner()->setAttr(kCenteredWeightsAttr,
                                     rewriter.getUnitAttr());
          });
    if (argFolds) {
      std::optional<Type> sums;
      if (f.needsColumnSums())
        sums = getStatisticType(
            getElementTypeOrSelf(norm->getOperand(0).getType()));
      appendDerivedArguments(
          rewriter, norm->template getParentOfType<func::FuncOp>(), f.argFolds,
          llvm::map_to_vector(f.argProjections,
                              [](const Projection &p) { return p.op; }),
          sums);
      argFolds->append(f.argFolds.begin(), f.argFolds.end());
    }
    // The projections read the weightless norm; users that are not
    // projections keep the gained one.
    rewriter.setInsertionPoint(norm);
    Operation *weightless = NormTraits::createWeightless(rewriter, norm);
    if (kept.empty()) {
      rewriter.replaceOp(norm, weightless->getResults());
    } else {
      redirectUsesThroughRowRegrouping(rewriter, norm.getResult(),
                                       weightless->getResult(0), kept);
      reporter.silence(norm);
    }
    std::string keptRemark = f.keptWhy.empty()
                                 ? ""
                                 : "; kept the gained norm for the others; " +
                                       llvm::join(f.keptWhy, "; ");
    if (f.sumsOnly) {
      std::string where;
      if (!f.checkpointTargets.empty())
        where = std::to_string(f.checkpointTargets.size()) +
                " in the checkpoint, through the fold plan";
      if (!f.argFolds.empty())
        where += (where.empty() ? "" : "; ") +
                 std::to_string(f.argFolds.size()) +
                 " argument(s), through the prepare function";
      reporter.applied(
          weightless,
          "recorded the column sums of " +
              Twine(f.checkpointTargets.size() + f.argFolds.size()) +
              " projection weight(s) (" + where +
              ") for defer-scale (f16/bf16 weights cannot carry "
              "the mean-centering)" +
              keptRemark);
      return;
    }
    if (!f.requantTargets.empty()) {
      reporter.approximated(
          weightless, "folded the gain into " +
                          Twine(f.targets.size() + f.requantTargets.size()) +
                          " projection weight(s), requantizing " +
                          Twine(f.requantTargets.size()) + " int8 one(s)" +
                          f.requantErrors + keptRemark);
      return;
    }
    reporter.applied(
        weightless,
        Twine("folded the ") +
            (f.centerOnly  ? "mean-centering"
             : f.gainValue ? (f.biasValue ? "gain and bias" : "gain")
                           : "bias") +
            (f.centerOnly ? ""
             : f.center   ? " (and the mean-centering)"
             : f.layer    ? " (not the mean-centering: f16/bf16 weights "
                            "cannot carry it exactly)"
                          : "") +
            " into " +
            Twine(f.targets.size() + f.argFolds.size() +
                  f.checkpointTargets.size()) +
            " projection weight(s)" +
            (f.argFolds.empty()
                 ? ""
                 : " (" + Twine(f.argFolds.size()) +
                       " argument(s), through the prepare function)") +
            (f.numLogitScales == 0
                 ? ""
                 : " (with the attention scale of " + Twine(f.numLogitScales) +
                       " query projection(s))") +
            (f.numKFactors == 0
                 ? ""
                 : " (" + Twine(f.numKFactors) +
                       " quantized, into the per-input-channel factor of "
                       "their dequantization)") +
            (f.checkpointTargets.empty()
                 ? ""
                 : " (" + Twine(f.checkpointTargets.size()) +
                       " in the checkpoint, through the fold plan)") +
            keptRemark);
  }

  PassReporter &reporter;
  bool cloneShared;
  /// Users that are not projections keep the gained norm (else the norm is
  /// not folded).
  bool partial;
  /// Set with allow-requantize: the largest RMS change (relative) allowed.
  std::optional<double> requantizeTolerance;
  bool foldAttentionScale;

  std::optional<LogitScale> getLogitScale(const Projection &p) const {
    if (!foldAttentionScale)
      return std::nullopt;
    FailureOr<LogitScale> scale = findLogitScale(p);
    return succeeded(scale) ? std::optional(*scale) : std::nullopt;
  }
  SmallVector<ArgFold> *argFolds;
  /// Set with fold-plan.
  CheckpointRecorder *checkpoint;
  /// Globals whose loads were replaced: those nothing loads any more are
  /// erased (and, if extern, dropped from the checkpoint).
  llvm::SetVector<Operation *> &replacedGlobals;
  /// Norms refused because a gain or weight is a function argument, which
  /// the prepare function would have folded.
  llvm::DenseSet<Operation *> &refusedForArguments;
  /// Norms refused because a gain or weight is an extern global, which a
  /// fold plan would have folded.
  llvm::DenseSet<Operation *> &refusedForCheckpoint;
};

struct FoldGainsPass : flashnorm::impl::FoldGainsBase<FoldGainsPass> {
  using FoldGainsBase::FoldGainsBase;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (!(requantizeTolerance > 0) || !std::isfinite(requantizeTolerance)) {
      emitError(module.getLoc())
          << kPass << ": requantize-tolerance must be a positive number, not "
          << requantizeTolerance.getValue();
      return signalPassFailure();
    }
    // Before anything folds: the plan must not land on the program.
    if (!foldPlan.empty()) {
      auto file = module.getLoc()->findInstanceOf<FileLineColLoc>();
      std::string why = whyNotPlanDestination(
          foldPlan, file ? file.getFilename().strref() : StringRef());
      if (!why.empty()) {
        emitError(module.getLoc())
            << kPass << ": fold-plan '" << foldPlan << "': " << why;
        return signalPassFailure();
      }
    }
    SmallVector<func::FuncOp> functions(module.getOps<func::FuncOp>());
    llvm::SetVector<Operation *> replacedGlobals;
    CheckpointRecorder checkpoint(replacedGlobals);
    for (func::FuncOp fn : functions) {
      if (fn.isExternal())
        continue;
      SmallVector<ArgFold> argFolds;
      llvm::DenseSet<Operation *> refusedForArguments, refusedForCheckpoint;
      std::string noPrepare =
          prepareFunction ? whyNoPrepareFunction(module, fn) : "";
      {
        PassReporter reporter(fn, kPass);
        RewritePatternSet patterns(&getContext());
        patterns
            .add<FoldGainsPattern<RMSNormOp>, FoldGainsPattern<LayerNormOp>>(
                &getContext(), reporter, cloneSharedWeights, partial,
                allowRequantize ? std::optional<double>(requantizeTolerance)
                                : std::nullopt,
                foldAttentionScaleOpt,
                prepareFunction && noPrepare.empty() ? &argFolds : nullptr,
                foldPlan.empty() ? nullptr : &checkpoint, replacedGlobals,
                refusedForArguments, refusedForCheckpoint);
        if (failed(applyFlashNormPatterns(fn, std::move(patterns))))
          return signalPassFailure();
        numFolded += reporter.getNumApplied();
      }
      // Importers pass weights as arguments: without the prepare function
      // nothing folds, and a user who asked for no remarks would see
      // nothing at all. Said once per function, without flags, at its
      // location (a diagnostic on the op would print the whole function).
      if (!refusedForArguments.empty() && !noPrepare.empty())
        mlir::emitWarning(fn.getLoc())
            << kPass << ": " << refusedForArguments.size() << " norm(s) of @"
            << fn.getName()
            << " not folded because their gains or projection weights are "
               "function arguments, and no prepare function can fold them: "
            << noPrepare;
      else if (!refusedForArguments.empty())
        mlir::emitWarning(fn.getLoc())
            << kPass << ": " << refusedForArguments.size() << " norm(s) of @"
            << fn.getName()
            << " not folded because their gains or projection "
               "weights are function arguments; "
               "--flashnorm=prepare-function=true folds them "
               "through a @"
            << fn.getName()
            << "_flashnorm_prepare function run once on the "
               "weights";
      if (!refusedForCheckpoint.empty())
        mlir::emitWarning(fn.getLoc())
            << kPass << ": " << refusedForCheckpoint.size() << " norm(s) of @"
            << fn.getName()
            << " not folded because their gains or projection weights are "
               "extern globals (in a checkpoint); "
               "--flashnorm=fold-plan=plan.json records the folds, "
               "flashnorm-fold-checkpoint applies them to the checkpoint";
      if (!argFolds.empty())
        createPrepareFunction(module, fn, std::move(argFolds));
    }
    // The globals the folds replaced everywhere go (the pass made them
    // dead); a checkpoint no longer needs the extern ones.
    for (Operation *op : replacedGlobals) {
      auto global = cast<ml_program::GlobalOp>(op);
      if (!SymbolTable::symbolKnownUseEmpty(global, module))
        continue;
      if (isExternGlobal(global))
        checkpoint.getPlan().drop.push_back(global.getSymName().str());
      global->erase();
    }
    for (auto global : module.getOps<ml_program::GlobalOp>())
      if (isExternGlobal(global))
        checkpoint.getPlan().loads.push_back(global.getSymName().str());
    if (!foldPlan.empty() && failed(writePlan(checkpoint.getPlan())))
      return signalPassFailure();
  }

  /// Writes the plan to `fold-plan` (also when empty: the caller's script
  /// then applies a plan that copies the checkpoint).
  LogicalResult writePlan(const FoldPlan &plan) {
    std::error_code ec;
    llvm::raw_fd_ostream out(foldPlan, ec, llvm::sys::fs::OF_Text);
    if (!ec) {
      out << plan.toJSON();
      out.close();
      if (out.has_error()) {
        ec = out.error();
        out.clear_error(); // Else the stream aborts when destroyed.
      }
    }
    if (ec)
      return mlir::emitError(getOperation().getLoc())
             << kPass << ": cannot write the fold plan '" << foldPlan
             << "': " << ec.message();
    return success();
  }
};
} // namespace
