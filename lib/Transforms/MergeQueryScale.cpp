//===- MergeQueryScale.cpp - The query's post-scale into the logits' scale ===//
//
// After defer-scale, the query projection's 1/RMS is a post-scale on q. A
// per-row scale commutes with what attention does to q before the logits:
// reshapes, transposes and the rotary embedding (a rotation of each row's
// feature pairs: RoPE(s q) = s RoPE(q)), and it factors out of the logits
// (q_i . k_j), whose row i it then scales. Where the logits are multiplied
// by the attention's constant next (1/sqrt(d), when fold-gains could not
// fold it into the query weight: argument weights without the prepare
// function, a norm without gain, or fold-attention-scale=false), that
// multiply takes s too:
//   softmax(c (s (.)row q) k^T) = softmax((c s) (.)row (q k^T))
// exact in real arithmetic, and the post-scale's pass over q is gone: the
// logits are multiplied once either way. Keys are never touched, so what
// a KV cache stores does not change.
//
//===----------------------------------------------------------------------===//

#include "MergeQueryScale.h"

#include "flashnorm/Analysis/Projection.h"
#include "flashnorm/Analysis/ScaleDegree.h"
#include "flashnorm/Utils/IndexingMaps.h"
#include "flashnorm/Utils/Remarks.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"

using namespace mlir;
using namespace mlir::flashnorm;

/// Whether the contraction `query` reaches multiplies it by a stored
/// weight (a constant or a global, through layout ops): the next
/// projection of an MLP, not an attention's logits, whose keys are
/// computed. The merge is as exact there, but a refusal is not worth a
/// remark about queries and logits.
static bool isStoredWeightProduct(OpOperand &query) {
  Operation *owner = query.getOwner();
  unsigned input = query.getOperandNumber();
  int64_t axis = 1; // tosa.matmul's [batch, K, N]
  if (auto linalgOp = dyn_cast<linalg::LinalgOp>(owner)) {
    FailureOr<ContractionRoles> roles = classifyContraction(linalgOp, input);
    if (failed(roles))
      return false;
    axis = roles->weightAxis;
  }
  return succeeded(traceWeightToConstant(owner->getOperand(1 - input), axis));
}

FailureOr<QueryMergePlan> flashnorm::planQueryMerge(PostScaleOp post,
                                                    std::string &why) {
  // A path to a contraction with a stored weight is refused without a
  // remark (isStoredWeightProduct).
  bool quiet = false;
  auto fail = [&](const Twine &msg) {
    why = quiet ? "" : msg.str();
    return failure();
  };
  why.clear();
  auto type = dyn_cast<RankedTensorType>(post.getType());
  // Cheap first: a post-scale that rounds keeps its rounding where it is.
  if (!type || type.getRank() < 2 || post.getInput().getType() != type)
    return failure();
  std::string pathWhy;
  FailureOr<QueryPath> path =
      traceQueryToLogits(post.getResult(), type.getRank() - 1, &pathWhy);
  if (failed(path))
    return failure(); // Not a query's, or not all the way: no remark.
  quiet = isStoredWeightProduct(*path->query);
  QueryMergePlan plan{post, std::move(*path), {}, {}, {}, {}};
  for (Operation *op : plan.path.ops)
    if (!isWideEnough(op->getResult(0).getType()) ||
        getElementTypeOrSelf(op->getResult(0).getType()).isBF16())
      return fail("the query computes in a narrow type on the way to the "
                  "logits, where its unscaled values would round or "
                  "overflow differently");
  FailureOr<LogitScale> site = findScaleOfLogits(*plan.path.query, &pathWhy);
  if (failed(site))
    return fail(pathWhy + " (the attention scale may already be folded into "
                          "the query weight)");
  auto generic = site->site->getParentOfType<linalg::GenericOp>();
  if (!generic || site->site->getParentOp() != generic ||
      !generic.hasPureTensorSemantics())
    return fail("the logits' scale is not in an element-wise generic");
  Value logits = plan.path.logits;
  OpOperand *logitsUse = &*logits.use_begin();
  AffineMap logitsMap = getUnitDimsMap(generic, logitsUse);
  if (!logitsMap.isProjectedPermutation() ||
      !getElementTypeOrSelf(logits.getType()).isF32())
    return fail("the logits are not f32 read element by element");
  if (!getElementTypeOrSelf(post.getScale()).isF32())
    return fail("the query's 1/RMS is f64, wider than the f32 logits");
  SmallVector<AffineExpr> rows;
  for (int64_t r : plan.path.logitRows)
    rows.push_back(r == kUnitRow
                       ? getAffineConstantExpr(0, generic.getContext())
                       : logitsMap.getResult(r));
  plan.scaleMap =
      AffineMap::get(logitsMap.getNumDims(), 0, rows, generic.getContext());
  plan.site = *site;
  plan.generic = generic;
  if (type.hasStaticShape())
    plan.savedBytes =
        2 * type.getNumElements() * int64_t(type.getElementTypeBitWidth() / 8);
  return plan;
}

Operation *flashnorm::applyQueryMerge(RewriterBase &rewriter,
                                      const QueryMergePlan &plan) {
  linalg::GenericOp old = plan.generic;
  PostScaleOp post = plan.post;
  Value scale = post.getScale();
  // The generic reads s by the logits' rows, beside its inputs.
  SmallVector<Value> ins(old.getDpsInputs());
  ins.push_back(scale);
  SmallVector<AffineMap> maps;
  for (OpOperand *in : old.getDpsInputOperands())
    maps.push_back(old.getMatchingIndexingMap(in));
  maps.push_back(plan.scaleMap);
  for (OpOperand &init : old.getDpsInitsMutable())
    maps.push_back(old.getMatchingIndexingMap(&init));
  rewriter.setInsertionPoint(old);
  auto merged = linalg::GenericOp::create(
      rewriter, old.getLoc(), old->getResultTypes(), ins, old.getDpsInits(),
      maps, old.getIteratorTypesArray());
  merged->setDiscardableAttrs(old->getDiscardableAttrDictionary());
  rewriter.inlineRegionBefore(old.getRegion(), merged.getRegion(),
                              merged.getRegion().end());
  Block *body = merged.getBody();
  Value s =
      body->insertArgument(old.getNumDpsInputs(),
                           getElementTypeOrSelf(scale.getType()), old.getLoc());
  // x * c becomes x * (c s); x / c becomes x * (s / c).
  Operation *site = plan.site.site;
  Value x = site->getOperand(plan.site.scaledOperand);
  Value c = site->getOperand(1 - plan.site.scaledOperand);
  rewriter.setInsertionPoint(site);
  Location loc = site->getLoc();
  Value product;
  if (isa<arith::DivFOp>(site)) {
    Value sc = arith::DivFOp::create(rewriter, loc, s, c);
    product = arith::MulFOp::create(rewriter, loc, x, sc);
    rewriter.replaceOp(site, product);
  } else {
    Value cs = arith::MulFOp::create(rewriter, loc, c, s);
    rewriter.modifyOpInPlace(
        site, [&] { site->setOperand(1 - plan.site.scaledOperand, cs); });
    product = site->getResult(0);
  }
  // As post_scale: a row whose scale is 0 (its mean square overflowed) is
  // 0, whatever its raw logits hold (inf * 0 would be NaN).
  rewriter.setInsertionPointAfterValue(product);
  Value zero = arith::ConstantOp::create(
      rewriter, loc, rewriter.getZeroAttr(product.getType()));
  Value zeroScale = s.getType() == product.getType()
                        ? zero
                        : arith::ConstantOp::create(
                              rewriter, loc, rewriter.getZeroAttr(s.getType()));
  Value isZero = arith::CmpFOp::create(rewriter, loc, arith::CmpFPredicate::OEQ,
                                       s, zeroScale);
  Value exact = arith::SelectOp::create(rewriter, loc, isZero, zero, product);
  rewriter.replaceAllUsesExcept(product, exact, exact.getDefiningOp());
  rewriter.replaceOp(old, merged->getResults());
  // q is read unscaled.
  rewriter.replaceOp(post, post.getInput());
  return merged;
}
