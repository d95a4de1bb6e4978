#ifndef FLASHNORM_TRANSFORMS_PATTERNDRIVER_H
#define FLASHNORM_TRANSFORMS_PATTERNDRIVER_H

#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::flashnorm {

/// The greedy driver as flashnorm's rewrite passes use it: no constant
/// folding (folding big weights through attributes is what the raw-buffer
/// folder exists to avoid) and no region simplification; dead ops that a
/// rewrite leaves behind are still erased.
inline LogicalResult applyFlashNormPatterns(Operation *root,
                                            RewritePatternSet &&patterns) {
  GreedyRewriteConfig config;
  config.enableFolding(false);
  config.setRegionSimplificationLevel(GreedySimplifyRegionLevel::Disabled);
  return applyPatternsGreedily(root, std::move(patterns), config);
}

} // namespace mlir::flashnorm

#endif
