//===- MergeQueryScale.h - The query's post-scale into the logits' scale --===//
//
// A strategy of flashnorm-move-scale (MergeQueryScale.cpp).
//
//===----------------------------------------------------------------------===//
#ifndef FLASHNORM_LIB_TRANSFORMS_MERGEQUERYSCALE_H
#define FLASHNORM_LIB_TRANSFORMS_MERGEQUERYSCALE_H

#include "flashnorm/Analysis/LogitScale.h"
#include "flashnorm/Dialect/FlashNorm/IR/FlashNormOps.h"

#include "mlir/IR/PatternMatch.h"

namespace mlir::flashnorm {

/// A query's post-scale `s` that reaches the logits through ops linear in
/// it, and the element-wise generic that multiplies the logits by the
/// attention's constant `c` next: the generic multiplies by `c s[row]`
/// instead and the post-scale goes.
struct QueryMergePlan {
  PostScaleOp post;
  QueryPath path;
  /// The multiply by `c` in the generic's body.
  LogitScale site;
  linalg::GenericOp generic;
  /// The generic's indexing of `s` (the logits' rows, through its map of
  /// the logits).
  AffineMap scaleMap;
  /// Element-wise bytes per call the post-scale cost.
  std::optional<int64_t> savedBytes;
};

/// Plans the merge for `post`; fails with `why` empty where `post` is not a
/// query's (nothing worth a remark), else with the reason.
FailureOr<QueryMergePlan> planQueryMerge(PostScaleOp post, std::string &why);

/// Applies `plan`; returns the new generic.
Operation *applyQueryMerge(RewriterBase &rewriter, const QueryMergePlan &plan);

} // namespace mlir::flashnorm

#endif
