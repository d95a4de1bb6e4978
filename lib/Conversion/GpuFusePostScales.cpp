//===- GpuFusePostScales.cpp - Post-scales into their consumer, on tensors ===//
//
// A deferred norm's post-scale (1/RMS times the raw product, a
// `linalg.generic` marked "post" once lowered) is usually read by one
// element-wise op: a residual add, a bias, a SwiGLU gate. On the GPU each
// would be a kernel, and the post-scale's one would write the whole product
// to memory for the next to read it back. This pass merges the two with
// upstream's element-wise fusion (linalg::fuseElementwiseOps), on tensors,
// before bufferization: SSA values say exactly who reads the post-scale, so
// no buffer reuse or in-place update has to be ruled out, as it would on
// buffers.
//
// The fused op keeps the post-scale's marks (its norm's group and pair), so
// flashnorm-async-schedule still joins the statistic's stream before it and
// fused mode still takes it into the projection's epilogue; its role says
// "post_fused" (the kernel's name). A reader carrying marks of its own (the
// post-scale of another norm, or a SwiGLU gate that took the other
// projection's post-scale in already) is refused: one op cannot wait for two
// joins, or pair with two projections, under one set of marks.
//
// A projection that flashnorm-gpu-kernels will hand to cuBLASLt (the same
// rule, `takesGemmLt`) keeps its post-scale: that pass moves it before the
// GEMM as a scale of the activation, the GEMM writes the post-scale's type,
// and its reader reads that.
//
// Plan, then apply: every check reads the IR as it is; only accepted plans
// fuse, a post-scale at a time, in block order.
//
//===----------------------------------------------------------------------===//

#include "flashnorm/Conversion/Passes.h"
#include "flashnorm/Utils/Remarks.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "flashnorm-gpu-fuse-post-scales"

namespace mlir::flashnorm {
#define GEN_PASS_DEF_GPUFUSEPOSTSCALES
#include "flashnorm/Conversion/Passes.h.inc"
} // namespace mlir::flashnorm

using namespace mlir;
using namespace mlir::flashnorm;

namespace {
constexpr StringLiteral kPass = "flashnorm-gpu-fuse-post-scales";

/// An accepted fusion: the post-scale and its consumer's use of it, and
/// the consumer's output operand if that is the post-scale's result too,
/// unread (convert-elementwise-to-linalg writes `arith.addf %y, %b` into
/// `%y`'s tensor): the consumer then writes the post-scale's own output
/// instead, or the post-scale would stay, computed for its shape alone.
struct FusionPlan {
  linalg::GenericOp post;
  OpOperand *use;
  OpOperand *unreadInit = nullptr;
};

bool isPostScale(Operation *op) { return getAsyncRole(op) == AsyncRole::post; }

bool isAllParallel(linalg::GenericOp op) {
  return op.getNumLoops() == op.getNumParallelLoops();
}

/// Whether `post` fuses into its one consumer: the plan, or why not.
FailureOr<FusionPlan> planFusion(linalg::GenericOp post, GemmPath gemm,
                                 std::string &why) {
  auto fail = [&](const Twine &msg) {
    why = msg.str();
    return failure();
  };
  if (post->getNumResults() != 1 || !isAllParallel(post))
    return fail("it is not element-wise");
  Value result = post->getResult(0);
  if (result.use_empty())
    return fail("nothing reads it");
  // One reader, reading it once as an input; it may also name the result
  // as the output it overwrites without reading.
  OpOperand *use = nullptr, *unreadInit = nullptr;
  for (OpOperand &u : result.getUses()) {
    auto reader = dyn_cast<linalg::GenericOp>(u.getOwner());
    if (!reader)
      return fail("its reader is not a linalg.generic");
    if (reader.isDpsInit(&u)) {
      if (!reader.getMatchingBlockArgument(&u).use_empty())
        return fail("its reader updates it in place");
      if (unreadInit)
        return fail("its result has more than one reader");
      unreadInit = &u;
      continue;
    }
    if (use)
      return fail("its result has more than one reader");
    use = &u;
  }
  if (!use || (unreadInit && unreadInit->getOwner() != use->getOwner()))
    return fail("its result has more than one reader");
  auto consumer = cast<linalg::GenericOp>(use->getOwner());
  if (!isAllParallel(consumer) ||
      consumer.getNumLoops() != post.getNumLoops() ||
      !consumer.getMatchingIndexingMap(use).isIdentity())
    return fail("its reader is not element-wise over the same rows");
  // One op is the post-scale of one norm's projection: a reader that is a
  // post-scale already (another norm's, or one that took another
  // post-scale in) cannot wait for a second join or pair with a second
  // projection under its one set of marks.
  if (consumer->hasAttr(kAsyncGroupAttr) || consumer->hasAttr(kAsyncRoleAttr))
    return fail("its reader is a post-scale itself");
  // What upstream's fusion itself requires (the producer's output map a
  // permutation, the consumer's map of it invertible).
  if (!linalg::areElementwiseOpsFusable(use))
    return fail("upstream's element-wise fusion refuses the pair");
  // Last, once it could fuse: flashnorm-gpu-kernels scales the activation by
  // 1/RMS before cuBLASLt's GEMM, which writes the post-scale's type: half
  // the bytes of the f32 product a fused reader would read, and a faster
  // GEMM.
  for (Value input : post.getDpsInputs())
    if (auto proj = input.getDefiningOp<linalg::LinalgOp>();
        proj && getAsyncRole(proj) == AsyncRole::proj &&
        takesGemmLt(proj, gemm))
      return fail("its projection runs on cuBLASLt, which writes it scaled "
                  "from a pre-scaled activation");
  return FusionPlan{post, use, unreadInit};
}

/// Fuses `plan.post` into its consumer; the fused op takes the post-scale's
/// marks, its role "post_fused".
LogicalResult applyFusion(RewriterBase &rewriter, const FusionPlan &plan) {
  linalg::GenericOp post = plan.post;
  Operation *consumer = plan.use->getOwner();
  SmallVector<NamedAttribute> marks;
  for (StringRef mark : {kAsyncGroupAttr, kAsyncPairAttr})
    if (Attribute value = post->getAttr(mark))
      marks.emplace_back(rewriter.getStringAttr(mark), value);
  if (plan.unreadInit) {
    // The post-scale's output has the type of its result and is defined
    // before it.
    Value own = post.getDpsInitOperand(0)->get();
    rewriter.modifyOpInPlace(consumer, [&] { plan.unreadInit->set(own); });
  }
  rewriter.setInsertionPoint(consumer);
  FailureOr<linalg::ElementwiseOpFusionResult> fused =
      linalg::fuseElementwiseOps(rewriter, plan.use);
  if (failed(fused))
    return failure();
  for (NamedAttribute mark : marks)
    fused->fusedOp->setAttr(mark.getName(), mark.getValue());
  fused->fusedOp->setAttr(
      kAsyncRoleAttr,
      AsyncRoleAttr::get(rewriter.getContext(), AsyncRole::post_fused));
  // The post-scale had one reader: only the consumer's results remain.
  for (auto [original, replacement] : fused->replacements)
    if (original.getDefiningOp() == consumer)
      rewriter.replaceAllUsesWith(original, replacement);
  rewriter.eraseOp(consumer);
  Value init = post.getDpsInitOperand(0)->get();
  rewriter.eraseOp(post);
  // The post-scale's own output (a tensor.empty) goes with it.
  if (Operation *empty = init.getDefiningOp<tensor::EmptyOp>();
      empty && empty->use_empty())
    rewriter.eraseOp(empty);
  return success();
}

struct GpuFusePostScalesPass
    : flashnorm::impl::GpuFusePostScalesBase<GpuFusePostScalesPass> {
  using GpuFusePostScalesBase::GpuFusePostScalesBase;

  void runOnOperation() override {
    func::FuncOp fn = getOperation();
    SmallVector<linalg::GenericOp> posts;
    fn.walk([&](linalg::GenericOp op) {
      if (isPostScale(op))
        posts.push_back(op);
    });
    if (posts.empty())
      return;
    PassReporter reporter(fn, kPass);
    IRRewriter rewriter(&getContext());
    // In block order, each planned on the IR the fusions before it left: a
    // fused op carries marks, so a later post-scale it reads is refused
    // rather than taken in as a second one.
    for (linalg::GenericOp post : posts) {
      std::string why;
      FailureOr<FusionPlan> plan = planFusion(post, gemm, why);
      if (failed(plan)) {
        LLVM_DEBUG(llvm::dbgs()
                   << "refused " << post.getLoc() << ": " << why << "\n");
        reporter.refused(post, "post-scale kept as its own kernel: " + why);
        continue;
      }
      Location loc = post.getLoc();
      std::string consumer =
          plan->use->getOwner()->getName().getStringRef().str() + " at " +
          formatLoc(plan->use->getOwner()->getLoc());
      if (failed(applyFusion(rewriter, *plan))) {
        // areElementwiseOpsFusable accepted it: upstream's fusion agrees.
        fn.emitError() << kPass << ": fusing the post-scale at "
                       << formatLoc(loc) << " failed";
        return signalPassFailure();
      }
      reporter.applied(fn, "post-scale at " + formatLoc(loc) +
                               " fused into its reader, " + consumer);
    }
  }
};
} // namespace
