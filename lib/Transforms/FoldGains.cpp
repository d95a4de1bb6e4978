//===- FoldGains.cpp - Weightless normalization (FLASHNORM.md §1)
//----------===//

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

/// What folding one norm needs: its projections and their weight constants.
struct FoldTarget {
  Projection projection;
  WeightSource source;
  /// The attention scale the projection's result absorbs (folded with the
  /// gain: one rounding).
  std::optional<LogitScale> logit;
};

/// Whether a dequantized weight reaches only its projection (`dequant` and
/// the layout ops after it have one use each): folding changes what it
/// holds.
bool isUsedOnce(Operation *dequant, ArrayRef<Operation *> chain) {
  return dequant->getResult(0).hasOneUse() &&
         llvm::all_of(
             chain, [](Operation *op) { return op->getResult(0).hasOneUse(); });
}

/// An int8 weight the gain goes into by requantizing (allow-requantize).
struct RequantTarget {
  Projection projection;
  Int8Dequant dequant;
};

/// The per-feature values of a constant gain or bias, or why not.
FailureOr<SmallVector<double>> readFeatureConstant(Value v, StringRef what,
                                                   std::string &why) {
  FailureOr<SmallVector<double>> values = readConstantAsDoubles(v, &why);
  if (failed(values))
    why = (what + " is not foldable: " + why).str();
  return values;
}

/// What fold-gains records for weights in a checkpoint (fold-plan).
struct CheckpointFolds {
  FoldPlan plan;
};

/// The value `v` as `scale * T + offset` of an extern global T (a gain or
/// bias whose values are in a checkpoint; set in `global`), through
/// reshapes, widening casts and the uniform scales and offsets
/// drop-redundant builds for a merged norm.
FailureOr<PlanVector> matchCheckpointVector(Value v,
                                            ml_program::GlobalOp &global) {
  PlanVector vec;
  auto uniform = [](Value c) -> std::optional<double> {
    FailureOr<SmallVector<double>> values = readConstantAsDoubles(c, nullptr);
    if (failed(values) || values->empty() ||
        llvm::any_of(*values, [&](double x) { return x != values->front(); }))
      return std::nullopt;
    return values->front();
  };
  while (Operation *def = v.getDefiningOp()) {
    if ((global = getLoadedGlobal(def))) {
      if (!isExternGlobal(global))
        return failure();
      vec.tensor = global.getSymName().str();
      return vec;
    }
    if (isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp, tosa::ReshapeOp,
            arith::ExtFOp>(def)) {
      v = def->getOperand(0);
      continue;
    }
    if (!isa<arith::MulFOp, arith::AddFOp>(def))
      return failure();
    // G = scale * X + offset, with X = c * Y or X = Y + c.
    std::optional<double> c = uniform(def->getOperand(1));
    Value next = def->getOperand(0);
    if (!c) {
      c = uniform(def->getOperand(0));
      next = def->getOperand(1);
    }
    if (!c)
      return failure();
    if (isa<arith::MulFOp>(def))
      vec.scale *= *c;
    else
      vec.offset += vec.scale * *c;
    v = next;
  }
  return failure();
}

/// The safetensors dtype of an element type ("BF16"), or "".
std::string getDType(Type elementType) {
  return safetensors::getDTypeForElementName(printToString(elementType));
}

/// A plan vector of literal values.
PlanVector literal(ArrayRef<double> values) {
  PlanVector vec;
  vec.values.assign(values.begin(), values.end());
  return vec;
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

/// A weight argument whose fold moves into the prepare function.
struct ArgFold {
  unsigned weightArg;
  int64_t axis;
  /// The gain: an argument of the function, or a constant.
  std::optional<unsigned> gainArg;
  ElementsAttr gainConstant;
  bool onePlus, center;
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

/// Folds a norm's gain (and a LayerNorm's bias and mean-centering) into the
/// constant weights of all its projections, or into none of them. With
/// `argFolds`, weights that are function arguments are folded through the
/// prepare function instead (recorded there).
template <typename NormOp> struct FoldGainsPattern : OpRewritePattern<NormOp> {
  FoldGainsPattern(MLIRContext *ctx, PassReporter &reporter, bool cloneShared,
                   std::optional<double> requantizeTolerance,
                   bool foldAttentionScale, SmallVector<ArgFold> *argFolds,
                   CheckpointFolds *checkpoint,
                   llvm::SetVector<Operation *> &replacedGlobals,
                   llvm::DenseSet<Operation *> &refusedForArguments,
                   llvm::DenseSet<Operation *> &refusedForCheckpoint)
      : OpRewritePattern<NormOp>(ctx), reporter(reporter),
        cloneShared(cloneShared), requantizeTolerance(requantizeTolerance),
        foldAttentionScale(foldAttentionScale), argFolds(argFolds),
        checkpoint(checkpoint), replacedGlobals(replacedGlobals),
        refusedForArguments(refusedForArguments),
        refusedForCheckpoint(refusedForCheckpoint) {}

  LogicalResult matchAndRewrite(NormOp norm,
                                PatternRewriter &rewriter) const override {
    constexpr bool layer = std::is_same_v<NormOp, LayerNormOp>;
    Value gainValue = norm.getGain(), biasValue = NormTraits::getBias(norm);
    // A weightless LayerNorm still has its centering to fold; defer-scale
    // does that for constant weights, only the prepare function can for
    // argument ones and only a plan for weights in a checkpoint.
    bool centerOnly =
        layer && !gainValue && !biasValue && (argFolds || checkpoint);
    if ((!gainValue && !biasValue && !centerOnly) ||
        norm.getResult().use_empty())
      return failure();
    // Centered already, by the fold that dropped this norm's gain or bias.
    if (centerOnly &&
        llvm::any_of(getUsesThroughRowRegrouping(norm.getResult()),
                     [](OpOperand *use) {
                       return use->getOwner()->hasAttr(kCenteredWeightsAttr);
                     }))
      return failure();
    std::string why;
    auto refuse = [&](const Twine &msg) {
      reporter.refused(norm, "not folded: " + msg);
      return failure();
    };
    int64_t numFeatures = norm.getFeatureSize();
    if (ShapedType::isDynamic(numFeatures))
      return refuse("the normalized dimension is dynamic");
    bool onePlus = NormTraits::isOnePlus(norm);
    // A runtime gain can only be folded through the prepare function.
    std::optional<unsigned> gainArg;
    SmallVector<double> gain(numFeatures, 1.0), bias;
    // A gain or bias whose values are in a checkpoint (fold-plan only).
    std::optional<PlanVector> gainRef, biasRef;
    SmallVector<ml_program::GlobalOp> vectorGlobals;
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
      vectorGlobals.push_back(global);
      return success();
    };
    if (gainValue) {
      FailureOr<SmallVector<double>> g =
          readFeatureConstant(gainValue, "gain", why);
      if (succeeded(g)) {
        gain = *g;
        if (onePlus)
          for (double &v : gain)
            v += 1.0; // In f64, never in the gain's own type.
      } else if (succeeded(inCheckpoint(gainValue, gainRef, "the gain"))) {
        if (onePlus)
          gainRef->offset += 1.0;
      } else if (refusedForCheckpoint.contains(norm)) {
        return refuse(why);
      } else if (!argFolds) {
        if (getArgumentThroughReshapes(gainValue)) {
          refusedForArguments.insert(norm);
          why += " (prepare-function=true folds it through a prepare "
                 "function)";
        }
        return refuse(why);
      } else if (!(gainArg = getArgumentThroughReshapes(gainValue))) {
        return refuse(why);
      }
    }
    if (biasValue) {
      FailureOr<SmallVector<double>> b =
          readFeatureConstant(biasValue, "bias", why);
      if (succeeded(b))
        bias = *b;
      else if (failed(inCheckpoint(biasValue, biasRef, "the bias")))
        return refuse(why);
    }
    bool valuesInCheckpoint = gainRef || biasRef;

    SmallVector<FoldTarget, 3> targets, checkpointTargets;
    SmallVector<RequantTarget, 1> requantTargets;
    unsigned numKFactors = 0;
    SmallVector<ArgFold> newArgFolds;
    // A LayerNorm's mean-centering goes into the weights too, unless one of
    // them is too narrow to carry it (canCarryCentering): then it stays in
    // the (weightless) norm, for every projection alike.
    bool center = layer;
    for (OpOperand *use : getUsesThroughRowRegrouping(norm.getResult())) {
      Operation *user = use->getOwner();
      auto userRefusal = [&]() {
        return refuse("user '" + user->getName().getStringRef() + "' at " +
                      formatLoc(user->getLoc()) + ": " + why);
      };
      FailureOr<Projection> projection = matchProjection(*use, &why);
      if (failed(projection))
        return userRefusal();
      if (biasValue && !projection->rowPreserving) {
        why = "a bias folds only through a projection whose rows are the "
              "norm's rows";
        return userRefusal();
      }
      FailureOr<WeightSource> source =
          traceWeight(projection->getWeight(), projection->weightAxis,
                      /*allowArgument=*/argFolds != nullptr, &why);
      // A quantized weight with a per-input-channel factor: the gain folds
      // into the factor, the integers stay (the factor becomes the target).
      FailureOr<KFactorSource> kFactor =
          failed(source) ? traceWeightToKFactor(projection->getWeight(),
                                                projection->weightAxis)
                         : FailureOr<KFactorSource>(failure());
      if (succeeded(kFactor)) {
        if (layer)
          why = "its weight is quantized: a LayerNorm's mean-centering "
                "cannot fold into the per-input-channel factor of its "
                "dequantization";
        else if (gainArg || valuesInCheckpoint)
          why = "its weight's per-input-channel factor is a constant but "
                "the gain is not";
        else if (!isUsedOnce(kFactor->dequant, kFactor->chain))
          why = "its dequantized weight has other users";
        else {
          Projection factorUse;
          factorUse.op = kFactor->dequant;
          factorUse.weightIndex = kFactor->factorOperand;
          targets.push_back(
              {factorUse, kFactor->factor, getLogitScale(*projection)});
          ++numKFactors;
          continue;
        }
        return userRefusal();
      }
      // Opt-in: an int8 weight with per-output-channel scales takes the
      // gain by requantizing (inexact, reported with its error).
      FailureOr<Int8Dequant> requant =
          failed(source) && requantizeTolerance
              ? traceWeightToInt8Dequant(projection->getWeight(),
                                         projection->weightAxis)
              : FailureOr<Int8Dequant>(failure());
      if (succeeded(requant)) {
        if (layer)
          why = "its weight is quantized: a LayerNorm's mean-centering and "
                "bias are not requantized";
        else if (gainArg || valuesInCheckpoint)
          why = "its weight is a constant int8 tensor but the gain is not "
                "a constant";
        else if (!isUsedOnce(requant->dequant, requant->chain))
          why = "its dequantized weight has other users";
        else {
          requantTargets.push_back({*projection, *requant});
          continue;
        }
        return userRefusal();
      }
      if (failed(source)) {
        if (!argFolds && succeeded(traceWeight(projection->getWeight(),
                                               projection->weightAxis,
                                               /*allowArgument=*/true))) {
          refusedForArguments.insert(norm);
          why += " (prepare-function=true folds it through a prepare "
                 "function)";
        }
        return userRefusal();
      }
      center &= canCarryCentering(getElementTypeOrSelf(
          source->argument ? source->argument.getType()
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
      if (source->global && !source->value) {
        // The weight is in a checkpoint: the fold goes into the plan.
        std::string name = source->global.getSymName().str();
        if (!checkpoint) {
          refusedForCheckpoint.insert(norm);
          why = "its weight is the extern global @" + name +
                " (fold-plan=FILE records the fold for "
                "flashnorm-fold-checkpoint)";
          return userRefusal();
        }
        if (!cloneShared &&
            (!source->constant->getResult(0).hasOneUse() || sharedVia()))
          return refuse("the weight of '" + user->getName().getStringRef() +
                        "' has other users and clone-shared-weights=false");
        if (!biasValue) {
          checkpointTargets.push_back({*projection, *source});
          continue;
        }
        // The folded bias is one value per output feature: the weight's
        // other dimensions must be just those.
        auto type = cast<RankedTensorType>(source->global.getType());
        int64_t rest = type.getNumElements() /
                       std::max<int64_t>(1, type.getDimSize(source->axis));
        auto result =
            cast<RankedTensorType>(projection->op->getResult(0).getType());
        if (rest != result.getShape().back())
          return refuse("the bias cannot be folded through the weight of '" +
                        user->getName().getStringRef() +
                        "' (it needs one output-feature dimension)");
        checkpointTargets.push_back({*projection, *source});
        continue;
      }
      if (valuesInCheckpoint)
        return refuse("the " + Twine(gainRef ? "gain" : "bias") +
                      " is in the checkpoint but the weight of '" +
                      user->getName().getStringRef() + "' is not");
      if (BlockArgument arg = source->argument) {
        unsigned index = arg.getArgNumber();
        Operation *shared = sharedVia();
        why = !arg.hasOneUse() ? "weight argument #" + std::to_string(index) +
                                     " has other users"
              : shared ? "weight argument #" + std::to_string(index) +
                             " reaches other users through '" +
                             shared->getName().getStringRef().str() + "'"
              : !cast<ShapedType>(arg.getType()).hasStaticShape()
                  ? "weight argument #" + std::to_string(index) +
                        " has a dynamic shape"
              : !bias.empty()
                  ? "a LayerNorm bias cannot be folded through argument "
                    "weights"
              : llvm::any_of(
                    *argFolds,
                    [&](const ArgFold &f) { return f.weightArg == index; })
                  ? "weight argument #" + std::to_string(index) +
                        " is already folded for another norm"
                  : "";
        if (!why.empty())
          return userRefusal();
        ArgFold fold{index,          source->axis, gainArg,
                     ElementsAttr(), onePlus,      layer};
        if (!gainArg && gainValue) {
          Attribute attr;
          (void)matchPattern(gainValue, m_Constant(&attr));
          fold.gainConstant = cast<ElementsAttr>(attr);
        }
        newArgFolds.push_back(fold);
        continue;
      }
      if (gainArg)
        return refuse("user '" + user->getName().getStringRef() +
                      "' has a constant weight but the gain is an argument");
      if (!cloneShared &&
          (!source->constant->getResult(0).hasOneUse() || sharedVia()))
        return refuse("the weight of '" + user->getName().getStringRef() +
                      "' has other users and clone-shared-weights=false");
      targets.push_back({*projection, *source, getLogitScale(*projection)});
    }

    for (ArgFold &f : newArgFolds)
      f.center = center;
    if (centerOnly &&
        (!center || (newArgFolds.empty() && checkpointTargets.empty())))
      return failure(); // Nothing for this pass (defer-scale says why).
    // Compute every folded weight and bias first: a failure leaves the IR
    // untouched.
    SmallVector<ElementsAttr> folded;
    SmallVector<SmallVector<double>> biases;
    SmallVector<SmallVector<ElementsAttr>> logitBiases;
    unsigned numLogitScales = 0;
    for (const FoldTarget &t : targets) {
      // The attention scale goes in with the gain (one rounding), and into
      // the biases on the way to the logits.
      double c = t.logit ? t.logit->factor : 1.0;
      SmallVector<double> scale(gain);
      for (double &v : scale)
        v *= c;
      logitBiases.emplace_back();
      if (t.logit) {
        ++numLogitScales;
        for (auto &[add, b] : t.logit->biases) {
          int64_t n = b.value.getShapedType().getDimSize(b.axis);
          FailureOr<ElementsAttr> scaled =
              scaleAlongAxis(b.value, b.axis, SmallVector<double>(n, c), &why);
          if (failed(scaled))
            return refuse("a bias before the attention logits: " + why);
          logitBiases.back().push_back(*scaled);
        }
      }
      FailureOr<ElementsAttr> attr =
          center ? scaleAndCenterAlongAxis(t.source.value, t.source.axis, scale,
                                           &why)
                 : scaleAlongAxis(t.source.value, t.source.axis, scale, &why);
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
      for (double &v : *b)
        v *= c;
      biases.push_back(*b);
    }
    SmallVector<Requantized> requantized;
    std::string errors;
    for (const RequantTarget &t : requantTargets) {
      const Int8Dequant &d = t.dequant;
      FailureOr<Requantized> r =
          requantizeInt8(d.q.value, d.q.axis, d.scale.value, gain, &why);
      if (failed(r))
        return refuse("the int8 weight of '" +
                      t.projection.op->getName().getStringRef() +
                      "' cannot be requantized: " + why);
      std::string stats = "max abs error " + formatNumber(r->maxAbsError) +
                          ", RMS error " + formatNumber(r->relRmsError) +
                          " of the weight's RMS, output error "
                          "<= " +
                          formatNumber(r->outputBound) + " per unit-RMS row";
      if (r->relRmsError > *requantizeTolerance)
        return refuse("requantizing the int8 weight of '" +
                      t.projection.op->getName().getStringRef() + "' at " +
                      formatLoc(t.projection.op->getLoc()) + " with the gain " +
                      "exceeds requantize-tolerance=" +
                      formatNumber(*requantizeTolerance) + " (" + stats + ")");
      errors += "; '" + t.projection.op->getName().getStringRef().str() +
                "' at " + formatLoc(t.projection.op->getLoc()) + ": " + stats;
      requantized.push_back(*r);
    }
    for (auto [t, r] : llvm::zip(requantTargets, requantized)) {
      const Int8Dequant &d = t.dequant;
      Projection qUse, scaleUse;
      qUse.op = scaleUse.op = d.dequant;
      qUse.weightIndex = d.qOperand;
      scaleUse.weightIndex = d.scaleOperand;
      replaceWeight(rewriter, qUse, d.q, r.q);
      replaceWeight(rewriter, scaleUse, d.scale, r.scales);
      for (const WeightSource *src : {&d.q, &d.scale})
        if (src->global)
          replacedGlobals.insert(src->global);
    }
    for (auto [i, t] : llvm::enumerate(targets)) {
      if (t.source.global)
        replacedGlobals.insert(t.source.global);
      replaceWeight(rewriter, t.projection, t.source, folded[i]);
      if (t.logit)
        bypassLogitScale(rewriter, *t.logit, logitBiases[i]);
      if (!biases.empty())
        addOutputBias(rewriter, t.projection.op, biases[i]);
    }
    // The gain and bias tensors too are read by the plan only, now.
    for (ml_program::GlobalOp global : vectorGlobals)
      replacedGlobals.insert(global);
    for (const FoldTarget &t : checkpointTargets)
      recordCheckpointFold(rewriter, t, gainValue ? gainRef : std::nullopt,
                           gain, biasValue ? biasRef : std::nullopt, bias,
                           /*scale=*/gainValue || center, center);
    // Every projection's weight is now centered for a LayerNorm.
    if (center)
      for (OpOperand *use : getUsesThroughRowRegrouping(norm.getResult()))
        rewriter.modifyOpInPlace(use->getOwner(), [&] {
          use->getOwner()->setAttr(kCenteredWeightsAttr,
                                   rewriter.getUnitAttr());
        });
    if (argFolds)
      argFolds->append(newArgFolds.begin(), newArgFolds.end());
    rewriter.setInsertionPoint(norm);
    Operation *weightless = NormTraits::createWeightless(rewriter, norm);
    if (!requantTargets.empty()) {
      reporter.approximated(weightless,
                            "folded the gain into " +
                                Twine(targets.size() + requantTargets.size()) +
                                " projection weight(s), requantizing " +
                                Twine(requantTargets.size()) + " int8 one(s)" +
                                errors);
      return success();
    }
    reporter.applied(
        weightless,
        Twine("folded the ") +
            (centerOnly  ? "mean-centering"
             : gainValue ? (biasValue ? "gain and bias" : "gain")
                         : "bias") +
            (centerOnly ? ""
             : center   ? " (and the mean-centering)"
             : layer    ? " (not the mean-centering: f16/bf16 weights cannot "
                          "carry it exactly)"
                        : "") +
            " into " +
            Twine(targets.size() + newArgFolds.size() +
                  checkpointTargets.size()) +
            " projection weight(s)" +
            (newArgFolds.empty()
                 ? ""
                 : " (" + Twine(newArgFolds.size()) +
                       " argument(s), through the prepare function)") +
            (numLogitScales == 0
                 ? ""
                 : " (with the attention scale of " + Twine(numLogitScales) +
                       " query projection(s))") +
            (numKFactors == 0
                 ? ""
                 : " (" + Twine(numKFactors) +
                       " quantized, into the per-input-channel factor of "
                       "their dequantization)") +
            (checkpointTargets.empty()
                 ? ""
                 : " (" + Twine(checkpointTargets.size()) +
                       " in the checkpoint, through the fold plan)"));
    return success();
  }

  /// Points `t`'s projection at a new extern global `<weight>.flashnorm`
  /// (unless nothing scales it: a LayerNorm's bias alone) and its bias
  /// at `<weight>.flashnorm_bias`, and records how the checkpoint makes
  /// them.
  void recordCheckpointFold(PatternRewriter &rewriter, const FoldTarget &t,
                            std::optional<PlanVector> gainRef,
                            ArrayRef<double> gain,
                            std::optional<PlanVector> biasRef,
                            ArrayRef<double> bias, bool scale,
                            bool center) const {
    ml_program::GlobalOp source = t.source.global;
    auto type = cast<RankedTensorType>(source.getType());
    PlanTensor entry;
    entry.source = source.getSymName().str();
    entry.sourceDType = getDType(type.getElementType());
    entry.sourceShape.assign(type.getShape().begin(), type.getShape().end());
    entry.axis = t.source.axis;
    MLIRContext *ctx = rewriter.getContext();
    if (biasRef || !bias.empty()) {
      auto result =
          cast<RankedTensorType>(t.projection.op->getResult(0).getType());
      auto biasType = RankedTensorType::get({result.getShape().back()},
                                            result.getElementType());
      auto load =
          createGlobalBeside(rewriter, t.source, ".flashnorm_bias", biasType,
                             ml_program::ExternAttr::get(ctx, biasType));
      PlanTensor contract = entry;
      contract.op = PlanTensor::Op::Contract;
      contract.name = load.getGlobal().getLeafReference().str();
      contract.dtype = getDType(result.getElementType());
      contract.shape = {result.getShape().back()};
      contract.vector = biasRef ? *biasRef : literal(bias);
      checkpoint->plan.tensors.push_back(std::move(contract));
      addOutputBias(rewriter, t.projection.op, load.getResult());
    }
    if (!scale)
      return;
    auto load = createGlobalBeside(rewriter, t.source, ".flashnorm", type,
                                   ml_program::ExternAttr::get(ctx, type));
    entry.op = PlanTensor::Op::Scale;
    entry.name = load.getGlobal().getLeafReference().str();
    entry.dtype = entry.sourceDType;
    entry.shape = entry.sourceShape;
    entry.center = center;
    entry.vector = gainRef ? *gainRef : literal(gain);
    checkpoint->plan.tensors.push_back(std::move(entry));
    replacedGlobals.insert(source);
    replaceWeight(rewriter, t.projection, t.source, load.getResult());
  }

  PassReporter &reporter;
  bool cloneShared;
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
  CheckpointFolds *checkpoint;
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

/// Builds `out = W * G` along `axis` (and, with `center`, minus the mean
/// over `axis`) in f32, rounded once to W's element type.
Value buildArgFold(OpBuilder &b, Location loc, Value w, Value g, int64_t axis,
                   bool onePlus, bool center) {
  MLIRContext *ctx = b.getContext();
  auto type = cast<RankedTensorType>(w.getType());
  unsigned rank = type.getRank();
  Type f32 = b.getF32Type(), elt = type.getElementType();
  AffineMap id = AffineMap::getMultiDimIdentityMap(rank, ctx);
  AffineMap alongAxis = AffineMap::get(rank, 0, getAffineDimExpr(axis, ctx));
  SmallVector<utils::IteratorType> par(rank, utils::IteratorType::parallel);
  auto cast = [](OpBuilder &nb, Location l, Value v, Type to) -> Value {
    if (v.getType() == to)
      return v;
    if (v.getType().getIntOrFloatBitWidth() < to.getIntOrFloatBitWidth())
      return arith::ExtFOp::create(nb, l, to, v);
    return arith::TruncFOp::create(nb, l, to, v);
  };
  SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, w);
  // Without centering the product is rounded right away.
  Type scaledElt = center ? f32 : elt;
  Value scaled =
      linalg::GenericOp::create(
          b, loc, TypeRange{type.clone(scaledElt)}, ValueRange{w, g},
          ValueRange{Value(tensor::EmptyOp::create(b, loc, sizes, scaledElt))},
          ArrayRef<AffineMap>{id, alongAxis, id}, par,
          [&](OpBuilder &nb, Location l, ValueRange args) {
            Value gv = cast(nb, l, args[1], f32);
            if (onePlus)
              gv = arith::AddFOp::create(
                  nb, l, gv,
                  arith::ConstantOp::create(nb, l, nb.getF32FloatAttr(1.0f)));
            Value r =
                arith::MulFOp::create(nb, l, cast(nb, l, args[0], f32), gv);
            linalg::YieldOp::create(nb, l, cast(nb, l, r, scaledElt));
          })
          .getResult(0);
  if (!center)
    return scaled;
  Value mean;
  AffineMap withoutAxis = id.dropResult(axis);
  {
    SmallVector<OpFoldResult> rest(sizes);
    rest.erase(rest.begin() + axis);
    Value zero = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0.0f));
    Value empty = tensor::EmptyOp::create(b, loc, rest, f32);
    Value acc = linalg::FillOp::create(b, loc, zero, empty).getResult(0);
    SmallVector<utils::IteratorType> iters(par);
    iters[axis] = utils::IteratorType::reduction;
    double inv = 1.0 / type.getDimSize(axis);
    mean = linalg::GenericOp::create(
               b, loc, TypeRange{acc.getType()}, ValueRange{scaled},
               ValueRange{acc}, ArrayRef<AffineMap>{id, withoutAxis}, iters,
               [&](OpBuilder &nb, Location l, ValueRange args) {
                 Value part = arith::MulFOp::create(
                     nb, l, args[0],
                     arith::ConstantOp::create(nb, l, nb.getF32FloatAttr(inv)));
                 linalg::YieldOp::create(
                     nb, l, Value(arith::AddFOp::create(nb, l, args[1], part)));
               })
               .getResult(0);
  }
  return linalg::GenericOp::create(
             b, loc, TypeRange{type}, ValueRange{scaled, mean},
             ValueRange{Value(tensor::EmptyOp::create(b, loc, sizes, elt))},
             ArrayRef<AffineMap>{id, withoutAxis, id}, par,
             [&](OpBuilder &nb, Location l, ValueRange args) {
               Value v = arith::SubFOp::create(nb, l, args[0], args[1]);
               linalg::YieldOp::create(nb, l, cast(nb, l, v, elt));
             })
      .getResult(0);
}

/// Creates `@<fn>_flashnorm_prepare`, marks the folded arguments and makes
/// every call of `fn` in the module go through the prepare function.
void createPrepareFunction(ModuleOp module, func::FuncOp fn,
                           SmallVector<ArgFold> folds) {
  llvm::sort(folds, [](const ArgFold &a, const ArgFold &b) {
    return a.weightArg < b.weightArg;
  });
  MLIRContext *ctx = module.getContext();
  OpBuilder b(ctx);
  b.setInsertionPointAfter(fn);
  Location loc = fn.getLoc();
  SmallVector<Type> results;
  for (const ArgFold &f : folds)
    results.push_back(fn.getArgumentTypes()[f.weightArg]);
  std::string name = (fn.getName() + "_flashnorm_prepare").str();
  auto prepare = func::FuncOp::create(
      b, loc, name, FunctionType::get(ctx, fn.getArgumentTypes(), results));
  prepare.setVisibility(fn.getVisibility());
  SymbolTable(module).insert(prepare);
  Block *entry = prepare.addEntryBlock();
  b.setInsertionPointToStart(entry);
  SmallVector<Value> folded;
  for (const ArgFold &f : folds) {
    Value g;
    if (f.gainArg) {
      g = entry->getArgument(*f.gainArg);
      if (cast<RankedTensorType>(g.getType()).getRank() != 1) {
        SmallVector<ReassociationIndices> all(1);
        for (int64_t i = 0; i < cast<RankedTensorType>(g.getType()).getRank();
             ++i)
          all[0].push_back(i);
        g = tensor::CollapseShapeOp::create(b, loc, g, all);
      }
    } else if (f.gainConstant) {
      g = arith::ConstantOp::create(b, loc, cast<TypedAttr>(f.gainConstant));
    } else { // A LayerNorm without gain: center only.
      auto wType = cast<RankedTensorType>(fn.getArgumentTypes()[f.weightArg]);
      g = arith::ConstantOp::create(
          b, loc,
          DenseElementsAttr::get(
              RankedTensorType::get({wType.getDimSize(f.axis)}, b.getF32Type()),
              1.0f));
    }
    folded.push_back(buildArgFold(b, loc, entry->getArgument(f.weightArg), g,
                                  f.axis, f.onePlus, f.center));
    fn.setArgAttr(f.weightArg, kFoldedArgAttr, UnitAttr::get(ctx));
  }
  func::ReturnOp::create(b, loc, folded);

  // Callers in this module: prepare first, then call with folded weights.
  module.walk([&](func::CallOp call) {
    if (call.getCallee() != fn.getName())
      return;
    OpBuilder cb(call);
    auto prepared =
        func::CallOp::create(cb, call.getLoc(), prepare, call.getOperands());
    for (auto [i, f] : llvm::enumerate(folds))
      call->setOperand(f.weightArg, prepared.getResult(i));
  });
}

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
    SmallVector<func::FuncOp> functions(module.getOps<func::FuncOp>());
    CheckpointFolds checkpoint;
    llvm::SetVector<Operation *> replacedGlobals;
    for (func::FuncOp fn : functions) {
      if (fn.isExternal())
        continue;
      SmallVector<ArgFold> argFolds;
      llvm::DenseSet<Operation *> refusedForArguments, refusedForCheckpoint;
      {
        PassReporter reporter(fn, kPass);
        RewritePatternSet patterns(&getContext());
        patterns
            .add<FoldGainsPattern<RMSNormOp>, FoldGainsPattern<LayerNormOp>>(
                &getContext(), reporter, cloneSharedWeights,
                allowRequantize ? std::optional<double>(requantizeTolerance)
                                : std::nullopt,
                foldAttentionScaleOpt, prepareFunction ? &argFolds : nullptr,
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
      if (!refusedForArguments.empty())
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
        checkpoint.plan.drop.push_back(global.getSymName().str());
      global->erase();
    }
    if (!foldPlan.empty() && failed(writePlan(checkpoint.plan)))
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
