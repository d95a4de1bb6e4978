#include "flashnorm/Transforms/PatternDriver.h"

#include "flashnorm/Dialect/FlashNorm/IR/FlashNormDialect.h"
#include "flashnorm/Utils/Cleanup.h"

#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

using namespace mlir;
using namespace mlir::flashnorm;

LogicalResult flashnorm::applyFlashNormPatterns(Operation *root,
                                                RewritePatternSet &&patterns) {
  RewriteCleanup cleanup(root);
  SmallVector<Operation *> ops;
  root->walk([&](Operation *op) {
    if (isa<FlashNormDialect>(op->getDialect()))
      ops.push_back(op);
  });
  if (ops.empty())
    return success();
  GreedyRewriteConfig config;
  config.enableFolding(false);
  config.setRegionSimplificationLevel(GreedySimplifyRegionLevel::Disabled);
  config.setStrictness(GreedyRewriteStrictness::ExistingAndNewOps);
  if (failed(applyOpPatternsGreedily(ops, std::move(patterns), config)))
    return failure();
  cleanup.eraseNewlyDead();
  return success();
}
