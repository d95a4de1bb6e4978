//===- FoldGainsPlan.cpp - One norm's fold, planned -----------------------===//
//
// Where each projection's share of a norm's fold goes (FoldGains.cpp's
// header lists the places: constants, dequantization factors, int8
// weights, the prepare function, the fold plan), decided from the shared
// projection analysis (matchProjection, traceWeight), then the folded
// values made by the raw-buffer weight folder, all before the pattern
// replaces anything.
//
//===----------------------------------------------------------------------===//

#include "FoldGainsPlan.h"

#include "flashnorm/Transforms/ProjectionRewrites.h"
#include "flashnorm/Utils/Remarks.h"
#include "flashnorm/Utils/Safetensors.h"
#include "flashnorm/Utils/WeightFolder.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tosa/IR/TosaOps.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include <cmath>

using namespace mlir;
using namespace mlir::flashnorm;

namespace {
/// The per-feature values of a constant gain or bias, or why not.
FailureOr<SmallVector<double>> readFeatureConstant(Value v, StringRef what,
                                                   std::string &why) {
  FailureOr<SmallVector<double>> values = readConstantAsDoubles(v, &why);
  if (failed(values))
    why = (what + " is not foldable: " + why).str();
  return values;
}

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

} // namespace

/// The norm's fold, or why not (`why` left empty where there is nothing
/// to fold). Reads the IR only.
template <typename NormOp>
FailureOr<NormFold> NormFoldPlanner::plan(NormOp norm, std::string &why) const {
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
  f.centerOnly = weightless && (argFolds || withCheckpoint);
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
            cast<ShapedType>(fn.getArgument(a.weightArg).getType()).getShape(),
            a.axis))
      return fail("the column sums of weight argument #" + Twine(a.weightArg) +
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
template <typename NormOp>
void NormFoldPlanner::noteUnfoldedCentering(NormOp norm,
                                            std::string &why) const {
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
template <typename NormOp>
LogicalResult NormFoldPlanner::planVectors(NormOp norm, NormFold &f,
                                           std::string &why) const {
  auto inCheckpoint = [&](Value v, std::optional<PlanVector> &ref,
                          StringRef what) -> LogicalResult {
    ml_program::GlobalOp global;
    FailureOr<PlanVector> vec = matchCheckpointVector(v, global);
    if (failed(vec))
      return failure();
    if (!withCheckpoint) {
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
template <typename NormOp>
LogicalResult NormFoldPlanner::planUse(NormOp norm, OpOperand *use, NormFold &f,
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
    if (!withCheckpoint) {
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
    why = !arg.hasOneUse()
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
    f.argLogits.push_back(getLogitScale(*projection));
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
LogicalResult NormFoldPlanner::computeFolded(NormFold &f,
                                             std::string &why) const {
  auto fail = [&](const Twine &msg) {
    why = msg.str();
    return failure();
  };
  // The constant biases on the way from a query projection to its
  // logits, times the attention scale the projection absorbs.
  auto scaleLogitBiases =
      [&](const std::optional<LogitScale> &logit,
          SmallVector<SmallVector<ElementsAttr>> &into) -> LogicalResult {
    into.emplace_back();
    if (!logit)
      return success();
    ++f.numLogitScales;
    for (auto &[add, b] : logit->biases) {
      int64_t n = b.value.getShapedType().getDimSize(b.axis);
      FailureOr<ElementsAttr> scaled = scaleAlongAxis(
          b.value, b.axis, SmallVector<double>(n, logit->factor), &why);
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
    if (failed(scaleLogitBiases(t.logit, f.checkpointLogitBiases)))
      return failure();
  }
  for (auto [a, logit] : llvm::zip_equal(f.argFolds, f.argLogits)) {
    // The prepare function takes the attention scale with the gain (and
    // the bias folded through the weight); without a gain it stays where
    // it is, as for the plan.
    if (!f.gainValue)
      logit.reset();
    a.logitScale = logit ? logit->factor : 1.0;
    if (failed(scaleLogitBiases(logit, f.argLogitBiases)))
      return failure();
  }
  for (const FoldTarget &t : f.targets) {
    // The attention scale goes in with the gain (one rounding), and into
    // the biases on the way to the logits.
    double c = t.logit ? t.logit->factor : 1.0;
    SmallVector<double> scale(f.gain);
    for (double &v : scale)
      v *= c;
    if (failed(scaleLogitBiases(t.logit, f.logitBiases)))
      return failure();
    FailureOr<ElementsAttr> attr =
        f.center ? scaleAndCenterAlongAxis(t.source.value, t.source.axis, scale,
                                           &why)
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
    double largest = elementType
                         ? APFloat::getLargest(elementType.getFloatSemantics())
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

std::optional<LogitScale>
NormFoldPlanner::getLogitScale(const Projection &p) const {
  if (!foldAttentionScale)
    return std::nullopt;
  FailureOr<LogitScale> scale = findLogitScale(p);
  return succeeded(scale) ? std::optional(*scale) : std::nullopt;
}

template FailureOr<NormFold>
NormFoldPlanner::plan<RMSNormOp>(RMSNormOp, std::string &) const;
template FailureOr<NormFold>
NormFoldPlanner::plan<LayerNormOp>(LayerNormOp, std::string &) const;
