//===- ProjectionRewrites.h - IR edits shared by the rewrite passes -------===//
//
// The edits fold-gains, defer-scale and the prepare function make to a
// projection the shared analysis (Projection.h) has described: a new weight
// put in place of the old through its layout chain (never changing what
// other users read), a folded bias added, the projection rebuilt on another
// activation, a norm's projections pointed at another norm through their
// reshapes. Only accepted plans call them.
//
//===----------------------------------------------------------------------===//
#ifndef FLASHNORM_TRANSFORMS_PROJECTIONREWRITES_H
#define FLASHNORM_TRANSFORMS_PROJECTIONREWRITES_H

#include "flashnorm/Analysis/LogitScale.h"
#include "flashnorm/Analysis/Projection.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/SmallPtrSet.h"

namespace mlir::flashnorm {

/// Replaces the weight operand of `projection` by a constant holding
/// `folded` (a new global `<name>.flashnorm` when the weight is a global),
/// re-creating the layout ops of `source.chain` on top of it, so that a
/// constant, global or transpose shared with other users is never changed.
void replaceWeight(RewriterBase &rewriter, const Projection &projection,
                   const WeightSource &source, ElementsAttr folded);

/// The same with the new source value given (it must dominate the chain).
void replaceWeight(RewriterBase &rewriter, const Projection &projection,
                   const WeightSource &source, Value replacement);

/// A new immutable global beside `source.global`, named `<its name><suffix>`
/// (made unique), holding `value` (`#ml_program.extern` for a checkpoint
/// tensor), and its load right after `source.constant`.
ml_program::GlobalLoadConstOp
createGlobalBeside(RewriterBase &rewriter, const WeightSource &source,
                   StringRef suffix, RankedTensorType type, Attribute value);

/// Points every use of `from` that getUsesThroughRowRegrouping lists, but
/// those in `keep`, at `to` (of the same type): the reshapes and row slices
/// on the way are copied onto `to` (views: nothing is computed twice), and
/// those left without users are erased.
void redirectUsesThroughRowRegrouping(
    RewriterBase &rewriter, Value from, Value to,
    const llvm::SmallPtrSetImpl<OpOperand *> &keep);

/// Adds the per-output-feature `bias` (one value per element of the last
/// dimension) to the projection's result for all of its current users.
void addOutputBias(RewriterBase &rewriter, Operation *projection,
                   ArrayRef<double> bias);

/// The same with the bias as a value (a 1-D tensor of the result's element
/// type that dominates the projection).
void addOutputBias(RewriterBase &rewriter, Operation *projection, Value bias);

/// Moves an attention scale into what feeds it: bypasses its multiply (the
/// value is the product now) and replaces each bias on the way by its
/// scaled value in `scaledBiases` (in order). The caller scales the
/// projection's weight.
void bypassLogitScale(RewriterBase &rewriter, const LogitScale &scale,
                      ArrayRef<ElementsAttr> scaledBiases);

/// Whether rebuildProjection rebuilds `projection` (its result is narrower
/// than f32) rather than changing its activation in place.
bool isRebuiltInF32(const Projection &projection);

/// Re-creates `projection` reading `activation` instead of its activation
/// (in place when its result is f32 or wider). A projection with an f16 or
/// bf16 result is rebuilt to accumulate and return f32, so that an
/// unnormalized product never overflows a narrow type; the post-scale that
/// follows rounds it back. Returns the (new) result.
Value rebuildProjection(RewriterBase &rewriter, const Projection &projection,
                        Value activation);

} // namespace mlir::flashnorm

#endif
