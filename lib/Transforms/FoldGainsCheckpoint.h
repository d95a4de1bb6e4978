//===- FoldGainsCheckpoint.h - Folds recorded for a checkpoint --*- C++ -*-===//
//
// A strategy of flashnorm-fold-gains (fold-plan=FILE): weights that are
// extern globals live in a checkpoint no compile-time fold can reach. Each
// fold becomes entries of a FoldPlan that flashnorm-fold-checkpoint applies
// with the raw-buffer weight folder (`scale`: gain and centering;
// `contract`: a LayerNorm bias through the weight; `column_sums`: the sums
// a LayerNorm's centered post-scale reads where f16/bf16 weights cannot
// carry the centering), and the program loads new extern globals named
// after the weight (`<w>.flashnorm`, `<w>.flashnorm_bias`,
// `<w>.flashnorm_colsum`). fold-gains decides every fold first; this
// records only accepted ones.
//
//===----------------------------------------------------------------------===//
#ifndef FLASHNORM_LIB_TRANSFORMS_FOLDGAINSCHECKPOINT_H
#define FLASHNORM_LIB_TRANSFORMS_FOLDGAINSCHECKPOINT_H

#include "flashnorm/Analysis/LogitScale.h"
#include "flashnorm/Analysis/Projection.h"
#include "flashnorm/Utils/FoldPlan.h"

#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/SetVector.h"

#include <optional>

namespace mlir::flashnorm {

/// What folding one norm needs: its projections and their weight constants.
struct FoldTarget {
  Projection projection;
  WeightSource source;
  /// The attention scale the projection's result absorbs (folded with the
  /// gain: one rounding).
  std::optional<LogitScale> logit;
};

/// The value `v` as `scale * T + offset` of an extern global T (a gain or
/// bias whose values are in a checkpoint; set in `global`), through
/// reshapes, widening casts and the uniform scales and offsets
/// drop-redundant builds for a merged norm.
FailureOr<PlanVector> matchCheckpointVector(Value v,
                                            ml_program::GlobalOp &global);

/// One norm's fold into its checkpoint weights, as fold-gains decided it.
struct CheckpointNormFold {
  /// The gain and bias: checkpoint tensors, or values (empty: none).
  std::optional<PlanVector> gainRef, biasRef;
  ArrayRef<double> gain, bias;
  /// The weights are rewritten (a gain, or the centering, goes in);
  /// centered, if `center`.
  bool scale = false, center = false;
  /// Set where the weights cannot carry the centering: their column sums,
  /// in this type (the statistic's), for defer-scale.
  std::optional<Type> columnSums;
};

/// Records folds into the weights of a checkpoint as plan entries and
/// points the program at the globals they make.
class CheckpointRecorder {
public:
  /// `replacedGlobals` collects the globals whose loads a fold replaced.
  explicit CheckpointRecorder(llvm::SetVector<Operation *> &replacedGlobals)
      : replacedGlobals(replacedGlobals) {}

  /// Points `t`'s projection at a new extern global `<weight>.flashnorm`
  /// (unless nothing scales it: a LayerNorm's bias alone) and its bias at
  /// `<weight>.flashnorm_bias`, and records how the checkpoint makes them:
  /// both times the attention scale `t` absorbs, if any. With column sums,
  /// also those of what the weight holds then, at
  /// `<weight>.flashnorm_colsum`, named on the projection.
  void record(RewriterBase &rewriter, const FoldTarget &t,
              const CheckpointNormFold &fold);

  /// The plan so far.
  const FoldPlan &getPlan() const { return plan; }
  FoldPlan &getPlan() { return plan; }

private:
  void recordColumnSums(RewriterBase &rewriter, const FoldTarget &t,
                        const PlanTensor &source, PlanVector vector, Type type);

  FoldPlan plan;
  llvm::SetVector<Operation *> &replacedGlobals;
};

} // namespace mlir::flashnorm

#endif // FLASHNORM_LIB_TRANSFORMS_FOLDGAINSCHECKPOINT_H
