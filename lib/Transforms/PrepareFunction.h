//===- PrepareFunction.h - Argument weights folded once -------------------===//
//
// A strategy of flashnorm-fold-gains (prepare-function=true): importers pass
// weights as function arguments, which no compile-time fold can reach. The
// folds of such weights go into a generated `@<fn>_flashnorm_prepare`, with
// the arguments `@<fn>` had, returning one value per argument of `@<fn>`
// marked `flashnorm.folded`, in argument order: the caller runs it once on
// the weights and passes its results to those arguments on every call
// (calls in the module are rewritten so). A folded weight replaces the
// weight it was: one linalg.generic computing `W * g` in f32 (a LayerNorm's
// centering: minus the mean along k), rounded once to W's type. What the
// fold derives from a weight goes into arguments the pass appended to
// `@<fn>` (the projections read them): a LayerNorm's bias folded through
// the weight, `sum_k b[k] W[k, n]`, and the column sums of a narrow folded
// weight, which cannot carry the centering, `sum_k W*[k, n]` as stored;
// each summed in f32 (f64 for f64 weights) and rounded once.
//
//===----------------------------------------------------------------------===//
#ifndef FLASHNORM_LIB_TRANSFORMS_PREPAREFUNCTION_H
#define FLASHNORM_LIB_TRANSFORMS_PREPAREFUNCTION_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/PatternMatch.h"

#include <optional>

namespace mlir::flashnorm {

/// A weight argument whose fold moves into the prepare function.
struct ArgFold {
  unsigned weightArg;
  int64_t axis;
  /// The gain: an argument of the function (`1 + g` under `onePlus`), or
  /// the values the plan read of a constant one (`1 + g` already formed in
  /// f64), or neither (a LayerNorm's centering alone).
  std::optional<unsigned> gainArg;
  SmallVector<double> gainValues;
  bool onePlus, center;
  /// A query projection's attention scale (findLogitScale), taken with the
  /// gain, and by the bias folded through the weight; 1 elsewhere.
  double logitScale = 1.0;
  /// Whether the weight itself changes: not for the column sums alone of a
  /// weightless LayerNorm's narrow weight.
  bool foldsWeight = true;
  /// A LayerNorm's bias (an argument of the function, or the values the
  /// plan read of a constant one) folded through the weight into the
  /// appended argument `biasOut`, one per output of the projection.
  std::optional<unsigned> biasArg;
  SmallVector<double> biasValues;
  std::optional<unsigned> biasOut;
  /// The appended argument taking the column sums of the weight as folded
  /// and stored (a narrow weight under a LayerNorm).
  std::optional<unsigned> sumsOut;

  bool hasBias() const { return biasArg || !biasValues.empty(); }
};

/// Why `fn` cannot get a prepare function, or "": its name is taken, or a
/// use of `fn` other than a call in `module` (a func.constant) would still
/// pass unprepared weights.
std::string whyNoPrepareFunction(ModuleOp module, func::FuncOp fn);

/// Appends to `fn` the arguments the prepare function fills with what it
/// derives from the weights of `folds` (read by `projections`, one per
/// fold), marked `flashnorm.folded`, and records them in the folds: a
/// LayerNorm's bias folded through the weight, which the projection's
/// product adds, and with `sumsType` the folded weight's column sums, which
/// `flashnorm.column_sums_argument` names on the projection for
/// defer-scale. The entry block's new arguments are read by the new ops
/// alone, so a pattern driver rewriting `fn` may run this.
void appendDerivedArguments(RewriterBase &rewriter, func::FuncOp fn,
                            MutableArrayRef<ArgFold> folds,
                            ArrayRef<Operation *> projections,
                            std::optional<Type> sumsType);

/// Creates `@<fn>_flashnorm_prepare` folding `folds`, marks the folded
/// arguments of `fn` and makes every call of `fn` in `module` go through
/// the prepare function. The arguments `folds` name in `biasOut` and
/// `sumsOut` are the ones appended (appendDerivedArguments), the last of
/// `fn`; the calls get them from the prepare function.
void createPrepareFunction(ModuleOp module, func::FuncOp fn,
                           SmallVector<ArgFold> folds);

} // namespace mlir::flashnorm

#endif // FLASHNORM_LIB_TRANSFORMS_PREPAREFUNCTION_H
