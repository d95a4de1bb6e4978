//===- ProjectionRewrites.h - IR edits shared by the rewrite passes
//--------===//
#ifndef FLASHNORM_TRANSFORMS_PROJECTIONREWRITES_H
#define FLASHNORM_TRANSFORMS_PROJECTIONREWRITES_H

#include "flashnorm/Analysis/Projection.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::flashnorm {

/// Discardable attribute set on a projection whose weight fold-gains has
/// already mean-centered for a LayerNorm, so defer-scale does not again.
constexpr StringLiteral kCenteredWeightsAttr = "flashnorm.centered_weights";

/// Replaces the weight operand of `projection` by a constant holding
/// `folded`, re-creating the layout ops of `source.chain` on top of it, so
/// that a constant or transpose shared with other users is never changed.
void replaceWeight(RewriterBase &rewriter, const Projection &projection,
                   const WeightSource &source, ElementsAttr folded);

/// Adds the per-output-feature `bias` (one value per element of the last
/// dimension) to the projection's result for all of its current users.
void addOutputBias(RewriterBase &rewriter, Operation *projection,
                   ArrayRef<double> bias);

} // namespace mlir::flashnorm

#endif
