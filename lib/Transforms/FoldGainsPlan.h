//===- FoldGainsPlan.h - One norm's fold, decided before anything changes -===//
//
// The planning half of flashnorm-fold-gains (FoldGains.cpp applies it):
// where a norm's gain (and a LayerNorm's bias and mean-centering) goes for
// each projection that reads it, and then every folded value, in new
// attributes. Nothing here touches the IR; a refusal leaves it as it was.
//
//===----------------------------------------------------------------------===//
#ifndef FLASHNORM_LIB_TRANSFORMS_FOLDGAINSPLAN_H
#define FLASHNORM_LIB_TRANSFORMS_FOLDGAINSPLAN_H

#include "FoldGainsCheckpoint.h"
#include "FoldGainsQuantized.h"
#include "PrepareFunction.h"

#include "flashnorm/Analysis/LogitScale.h"
#include "flashnorm/Analysis/Projection.h"
#include "flashnorm/Dialect/FlashNorm/IR/FlashNormOps.h"
#include "flashnorm/Utils/FoldPlan.h"

#include "llvm/ADT/DenseSet.h"

namespace mlir::flashnorm {

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
  /// The projection of each of `argFolds`, and the attention scale its
  /// weight takes (a query projection's).
  SmallVector<Projection> argProjections;
  SmallVector<std::optional<LogitScale>> argLogits;
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
  /// The same for the checkpoint targets and the argument folds, one per
  /// target or fold.
  SmallVector<SmallVector<ElementsAttr>> checkpointLogitBiases, argLogitBiases;
  unsigned numLogitScales = 0;
  SmallVector<Requantized> requantized;
  /// The requantized weights' errors, for the remark.
  std::string requantErrors;

  bool valuesInCheckpoint() const { return gainRef || biasRef; }
  /// A narrow weight under a LayerNorm: defer-scale's centered post-scale
  /// needs the column sums of every one (as folded and stored).
  bool needsColumnSums() const { return layer && !center; }
};

/// Plans folds for one function: the pass's options, the folds already
/// recorded for its prepare function, and where it notes the norms refused
/// for want of a prepare function or a fold plan (the pass warns of them).
class NormFoldPlanner {
public:
  NormFoldPlanner(bool cloneShared, bool partial,
                  std::optional<double> requantizeTolerance,
                  bool foldAttentionScale, const SmallVector<ArgFold> *argFolds,
                  bool withCheckpoint,
                  llvm::DenseSet<Operation *> &refusedForArguments,
                  llvm::DenseSet<Operation *> &refusedForCheckpoint)
      : cloneShared(cloneShared), partial(partial),
        requantizeTolerance(requantizeTolerance),
        foldAttentionScale(foldAttentionScale), argFolds(argFolds),
        withCheckpoint(withCheckpoint),
        refusedForArguments(refusedForArguments),
        refusedForCheckpoint(refusedForCheckpoint) {}

  /// The norm's fold, or why not (`why` left empty where there is nothing
  /// to fold). Reads the IR only. For RMSNormOp and LayerNormOp.
  template <typename NormOp>
  FailureOr<NormFold> plan(NormOp norm, std::string &why) const;

  /// Every folded weight, bias and requantized weight of `f`, in new
  /// attributes (the raw-buffer weight folder).
  LogicalResult computeFolded(NormFold &f, std::string &why) const;

private:
  template <typename NormOp>
  void noteUnfoldedCentering(NormOp norm, std::string &why) const;
  template <typename NormOp>
  LogicalResult planVectors(NormOp norm, NormFold &f, std::string &why) const;
  template <typename NormOp>
  LogicalResult planUse(NormOp norm, OpOperand *use, NormFold &f,
                        std::string &why) const;
  std::optional<LogitScale> getLogitScale(const Projection &p) const;

  bool cloneShared;
  /// Users that are not projections keep the gained norm (else the norm is
  /// not folded).
  bool partial;
  /// Set with allow-requantize: the largest RMS change (relative) allowed.
  std::optional<double> requantizeTolerance;
  bool foldAttentionScale;
  /// Set with prepare-function: the argument folds recorded so far (an
  /// argument weight is folded for one norm only).
  const SmallVector<ArgFold> *argFolds;
  /// Set with fold-plan.
  bool withCheckpoint;
  /// Norms refused because a gain or weight is a function argument, which
  /// the prepare function would have folded.
  llvm::DenseSet<Operation *> &refusedForArguments;
  /// Norms refused because a gain or weight is an extern global, which a
  /// fold plan would have folded.
  llvm::DenseSet<Operation *> &refusedForCheckpoint;
};

} // namespace mlir::flashnorm

#endif
