//===- PrepareFunction.h - Argument weights folded once -------------------===//
//
// A strategy of flashnorm-fold-gains (prepare-function=true): importers pass
// weights as function arguments, which no compile-time fold can reach. The
// folds of such weights go into a generated `@<fn>_flashnorm_prepare`, with
// the same arguments as `@<fn>`, returning each folded weight: the caller
// runs it once on the weights and passes its results in their place on
// every call (calls in the module are rewritten so). Each fold is one
// linalg.generic computing `W * g` in f32 (a LayerNorm's centering: minus
// the mean along k), rounded once to W's type.
//
//===----------------------------------------------------------------------===//
#ifndef FLASHNORM_LIB_TRANSFORMS_PREPAREFUNCTION_H
#define FLASHNORM_LIB_TRANSFORMS_PREPAREFUNCTION_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

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
};

/// Why `fn` cannot get a prepare function, or "": its name is taken, or a
/// use of `fn` other than a call in `module` (a func.constant) would still
/// pass unprepared weights.
std::string whyNoPrepareFunction(ModuleOp module, func::FuncOp fn);

/// Creates `@<fn>_flashnorm_prepare` folding `folds`, marks the folded
/// arguments of `fn` and makes every call of `fn` in `module` go through
/// the prepare function.
void createPrepareFunction(ModuleOp module, func::FuncOp fn,
                           SmallVector<ArgFold> folds);

} // namespace mlir::flashnorm

#endif // FLASHNORM_LIB_TRANSFORMS_PREPAREFUNCTION_H
