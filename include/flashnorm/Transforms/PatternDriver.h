//===- PatternDriver.h - How flashnorm's rewrite passes apply patterns ----===//
//
// The greedy driver restricted to what the passes own: it visits the
// flashnorm ops of a function and the ops the patterns create, never the
// rest (whose dead code, constants and order stay as they were), with no
// constant folding (big weights folded through attributes are what the
// raw-buffer folder exists to avoid) and no region simplification. What the
// rewrites leave dead is erased afterwards (RewriteCleanup).
//
//===----------------------------------------------------------------------===//
#ifndef FLASHNORM_TRANSFORMS_PATTERNDRIVER_H
#define FLASHNORM_TRANSFORMS_PATTERNDRIVER_H

#include "mlir/IR/PatternMatch.h"

namespace mlir::flashnorm {

/// Applies `patterns` to the flashnorm ops under `root` until none applies,
/// then erases what the rewrites made dead.
LogicalResult applyFlashNormPatterns(Operation *root,
                                     RewritePatternSet &&patterns);

} // namespace mlir::flashnorm

#endif
