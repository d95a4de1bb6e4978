//===- MoveScale.cpp - Post-scales moved past the next projection ---------===//
//
// After defer-scale, a gated MLP reads post-scaled projections:
//   down(act(s (.) gate) (.) (s (.) up))
// A per-row scale that reaches the next projection only through element-wise
// ops homogeneous in it moves past that projection exactly:
//   down(act(gate) (.) (s (.) up)) = s (.)row down(act(gate) (.) up)
// so the post-scale pass over the wide [tokens, mlp] tensor becomes one over
// the narrow [tokens, hidden] result (docs/MATH.md §2, the paper's FFN
// extension).
//
// Which post-scales can go is decided symbolically, without touching the IR:
// every value of the element-wise chain between the post-scales and the
// projection gets its degree in each stripped scale (x * y adds degrees,
// x + y, max, select need equal ones, a literal 0 is a multiple of
// anything, x^2 of a constant exponent doubles them, exp, tanh or + 1 of
// a scaled value is no multiple at all). The
// post-scales are tried one at a time, each kept if the projection's input
// stays a multiple of every kept one: SwiGLU and GeGLU keep the gate's scale
// (silu and gelu are not homogeneous) and move the up path's; ReLU and ReGLU
// move both, as s^2, since the statistics are >= 0 and
// relu(s x) = s relu(x) for s >= 0; squared ReLU (x * x, or x^2 as
// fpowi, powf or tosa.pow) moves its scale as s^2. A scale is moved as new
// post-scales of the projection's result, one per degree.
//
//===----------------------------------------------------------------------===//

#include "MergeQueryScale.h"

#include "flashnorm/Analysis/Projection.h"
#include "flashnorm/Analysis/ScaleDegree.h"
#include "flashnorm/Dialect/FlashNorm/IR/FlashNormOps.h"
#include "flashnorm/Transforms/Passes.h"
#include "flashnorm/Transforms/ProjectionRewrites.h"
#include "flashnorm/Utils/Cleanup.h"
#include "flashnorm/Utils/IndexingMaps.h"
#include "flashnorm/Utils/Remarks.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tosa/IR/TosaOps.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "flashnorm-move-scale"

namespace mlir::flashnorm {
#define GEN_PASS_DEF_MOVESCALE
#include "flashnorm/Transforms/Passes.h.inc"
} // namespace mlir::flashnorm

using namespace mlir;
using namespace mlir::flashnorm;

namespace {
constexpr StringLiteral kPass = "flashnorm-move-scale";

/// Whether `v` is a ranked tensor of `shape` (any element type).
bool hasShape(Value v, ArrayRef<int64_t> shape) {
  auto type = dyn_cast<RankedTensorType>(v.getType());
  return type && type.getShape() == shape;
}

/// An element-wise op the chain may run through: one result of the chain's
/// shape (no broadcast of a scaled value into it).
bool isChainOp(Operation *op, ArrayRef<int64_t> shape) {
  if (op->getNumResults() != 1 || !hasShape(op->getResult(0), shape))
    return false;
  if (auto generic = dyn_cast<linalg::GenericOp>(op))
    return generic.hasPureTensorSemantics() && generic.getNumDpsInits() == 1 &&
           generic.getNumLoops() == generic.getNumParallelLoops() &&
           readsInOrder(generic, generic.getDpsInitOperand(0));
  // TOSA broadcasts a dimension that is 1 at run time: where the shape is
  // not static, a post-scaled value of `?` rows may be one row spread over
  // the result's rows, and its scale would not match them after the move.
  if (isa<tosa::MulOp, tosa::AddOp, tosa::SubOp, tosa::NegateOp, tosa::ClampOp,
          tosa::CastOp, tosa::SigmoidOp, tosa::TanhOp, tosa::ExpOp, tosa::AbsOp,
          tosa::MaximumOp, tosa::MinimumOp, tosa::PowOp>(op))
    return ShapedType::isStaticShape(shape);
  return isa<arith::MulFOp, arith::AddFOp, arith::SubFOp, arith::NegFOp,
             arith::MaximumFOp, arith::MinimumFOp, arith::ExtFOp,
             arith::TruncFOp>(op);
}

/// The element-wise ops between a projection's input and what feeds them,
/// and the post-scales among those inputs.
struct Chain {
  SmallVector<int64_t> shape;
  /// Each op's result has one use, the next op of the chain (or the
  /// projection): rewriting them changes nothing else.
  llvm::SetVector<Operation *> ops;
  /// Operands of chain ops that read a post-scale of a statistic.
  SmallVector<OpOperand *> leaves;
  /// The post-scales the leaves read, in the order they are first read.
  llvm::SetVector<Operation *> postScales;
};

Chain collectChain(Value root) {
  Chain chain;
  auto type = dyn_cast<RankedTensorType>(root.getType());
  if (!type)
    return chain;
  chain.shape = llvm::to_vector(type.getShape());
  SmallVector<Value> worklist{root};
  while (!worklist.empty()) {
    Value v = worklist.pop_back_val();
    Operation *op = v.getDefiningOp();
    // (The root's other users, if any, are planMove's refusal to report.)
    if (!op || (v != root && !v.hasOneUse()) || !isChainOp(op, chain.shape) ||
        !chain.ops.insert(op))
      continue;
    for (OpOperand &operand : op->getOpOperands()) {
      // A post-scale that rounds its accumulator (f32 to bf16) can only be
      // stripped where a generic reads it as an input, and rounds in its
      // body: a separate conversion would cost what the post-scale did (and
      // an init's type is its result's).
      auto ps = operand.get().getDefiningOp<PostScaleOp>();
      auto generic = dyn_cast<linalg::GenericOp>(op);
      if (ps && hasShape(ps, chain.shape) &&
          (ps.getInput().getType() == ps.getType() ||
           (generic && generic.isDpsInput(&operand))) &&
          isa_and_nonnull<RMSInvOp, LayerInvOp>(
              ps.getScale().getDefiningOp()) &&
          ps->getBlock() == op->getBlock()) {
        chain.leaves.push_back(&operand);
        chain.postScales.insert(ps);
        continue;
      }
      worklist.push_back(operand.get());
    }
  }
  return chain;
}

/// Evaluates degrees over a chain with a given set of post-scales stripped.
class DegreeEvaluator {
public:
  DegreeEvaluator(const Chain &chain,
                  const llvm::SmallPtrSetImpl<Operation *> &stripped)
      : chain(chain), stripped(stripped) {}

  Degree ofValue(Value v) {
    if (auto ps = v.getDefiningOp<PostScaleOp>())
      return stripped.contains(ps) ? Degree::scaledBy(ps) : Degree::unscaled();
    Operation *op = v.getDefiningOp();
    if (!op || !chain.ops.contains(op))
      return isZeroConstant(v) ? Degree::zero() : Degree::unscaled();
    auto [it, inserted] = memo.try_emplace(v);
    if (inserted)
      it->second = ofOp(op);
    return it->second;
  }

  /// The op that first made a scaled value no multiple of the scales.
  Operation *culprit = nullptr;

private:
  Degree ofOp(Operation *op) {
    Degree d = Degree::none();
    if (auto generic = dyn_cast<linalg::GenericOp>(op))
      d = ofGeneric(generic);
    else
      d = degreeOfElementwise(op, [&](Value v) { return ofValue(v); });
    if (d.kind == Degree::None && !culprit)
      culprit = op;
    return d;
  }

  Degree ofGeneric(linalg::GenericOp generic) {
    return degreeOfGeneric(generic,
                           [&](OpOperand &use) { return ofValue(use.get()); });
  }

  const Chain &chain;
  const llvm::SmallPtrSetImpl<Operation *> &stripped;
  DenseMap<Value, Degree> memo;
};

/// A decided move: which post-scales the chain stops reading, the scales
/// (with repeats, one per degree) that follow the projection, and the
/// element-wise bytes per call that saves (per row where the rows are
/// dynamic; unknown where the features are).
struct MovePlan {
  Projection down;
  Chain chain;
  SmallVector<Operation *> stripped;
  SmallVector<Value> scales;
  std::optional<int64_t> savedBytes;
  bool perRow = false;
};

/// The result type of `down` once rebuilt: narrow results accumulate in f32.
RankedTensorType rawResultType(const Projection &down) {
  auto type = cast<RankedTensorType>(down.op->getResult(0).getType());
  return type.getElementTypeBitWidth() < 32
             ? type.clone(Float32Type::get(type.getContext()))
             : type;
}

/// Element-wise traffic the move saves: the stripped post-scales (read and
/// write) that die, minus the wider reads or conversions of their raw
/// accumulators and the post-scales added after the projection. All these
/// tensors share the projection's rows, so it is counted per row.
void countBytes(MovePlan &plan) {
  int64_t saved = 0;
  auto row = [&](Type t, int sign) {
    auto type = cast<RankedTensorType>(t);
    int64_t n = type.getShape().back();
    if (ShapedType::isDynamic(n) || !plan.savedBytes)
      return void(plan.savedBytes = std::nullopt);
    saved += sign * n * int64_t(type.getElementTypeBitWidth() / 8);
  };
  plan.savedBytes = 0;
  for (Operation *op : plan.stripped) {
    auto ps = cast<PostScaleOp>(op);
    unsigned chainUses = llvm::count_if(plan.chain.leaves, [&](OpOperand *u) {
      return u->get() == ps.getResult();
    });
    if (chainUses == llvm::range_size(ps->getUses())) {
      row(ps.getInput().getType(), 1);
      row(ps.getType(), 1);
    }
    if (ps.getInput().getType() == ps.getType())
      continue;
    for (OpOperand *leaf : plan.chain.leaves)
      if (leaf->get() == ps.getResult()) {
        // The generic reads the wider raw tensor instead.
        row(ps.getInput().getType(), -1);
        row(ps.getType(), 1);
      }
  }
  RankedTensorType raw = rawResultType(plan.down);
  for (size_t i = 0; i < plan.scales.size(); ++i) {
    row(raw, -1);
    row(i + 1 == plan.scales.size() ? plan.down.op->getResult(0).getType()
                                    : Type(raw),
        -1);
  }
  if (!plan.savedBytes)
    return;
  ArrayRef<int64_t> rows = raw.getShape().drop_back();
  plan.perRow = llvm::any_of(rows, ShapedType::isDynamic);
  plan.savedBytes =
      plan.perRow ? saved : saved * ShapedType::getNumElements(rows);
}

FailureOr<MovePlan> planMove(const Projection &down, std::string &why) {
  Value root = down.getActivation();
  Chain chain = collectChain(root);
  if (chain.postScales.empty())
    return failure(); // Nothing to move; not worth a remark.
  if (!down.rowPreserving)
    return why = "its result rows are not its input's rows", failure();
  if (!down.zeroInit)
    return why = "it accumulates into a non-zero init (a fused bias would be "
                 "scaled too)",
           failure();
  if (!root.hasOneUse())
    return why = "its input also feeds other ops, which would see it "
                 "unscaled",
           failure();
  // Unscaled, the chain's values are the raw products: every type they
  // pass through (the projection's result, a generic's body, what a
  // stripped post-scale rounds to) must hold them. f32's range (bf16's
  // too) holds what an f32 statistic brings back into range; an f64
  // statistic's rows (1e-50, 1e100) only f64 holds.
  bool f64Scales = llvm::any_of(chain.postScales, [](Operation *ps) {
    return getElementTypeOrSelf(cast<PostScaleOp>(ps).getScale()).isF64();
  });
  auto holdsRaw = [f64Scales](Type t) {
    return f64Scales ? getElementTypeOrSelf(t).isF64() : isWideEnough(t);
  };
  StringRef narrow =
      f64Scales ? "a type narrower than its f64 statistic" : StringRef("f16");
  if (!holdsRaw(down.op->getResult(0).getType()))
    return why = ("its result is " + narrow +
                  ", where an unnormalized product could overflow")
                     .str(),
           failure();
  auto computesWide = [&](Operation *op) {
    WalkResult tooNarrow = op->walk([&](Operation *inner) {
      for (Region &region : inner->getRegions())
        for (Value arg : region.getArguments())
          if (isa<FloatType>(arg.getType()) && !holdsRaw(arg.getType()))
            return WalkResult::interrupt();
      for (Value result : inner->getResults())
        if (isa<FloatType>(getElementTypeOrSelf(result)) &&
            !holdsRaw(result.getType()))
          return WalkResult::interrupt();
      return WalkResult::advance();
    });
    return !tooNarrow.wasInterrupted();
  };
  if (!llvm::all_of(chain.ops, computesWide) ||
      !llvm::all_of(chain.postScales, [&](Operation *ps) {
        return holdsRaw(ps->getResult(0).getType());
      }))
    return why = ("the element-wise ops before it compute in " + narrow +
                  ", where unnormalized values could overflow")
                     .str(),
           failure();
  // A post-scale the chain also reads other than as a leaf would stay
  // scaled there: it cannot be stripped.
  llvm::SmallPtrSet<Operation *, 4> readElsewhere;
  llvm::SmallPtrSet<OpOperand *, 8> leaves(chain.leaves.begin(),
                                           chain.leaves.end());
  for (Operation *op : chain.ops)
    for (OpOperand &operand : op->getOpOperands())
      if (Operation *def = operand.get().getDefiningOp();
          def && chain.postScales.contains(def) && !leaves.contains(&operand))
        readElsewhere.insert(def);

  // Greedy, in the order the chain reads them: keep a post-scale if the
  // input stays a multiple of every kept one.
  llvm::SmallPtrSet<Operation *, 4> stripped;
  Degree result;
  Operation *culprit = nullptr;
  for (Operation *ps : chain.postScales) {
    if (readElsewhere.contains(ps))
      continue;
    stripped.insert(ps);
    DegreeEvaluator eval(chain, stripped);
    Degree d = eval.ofValue(root);
    bool ok = d.kind == Degree::Multiple &&
              llvm::all_of(stripped,
                           [&](Operation *s) { return d.of.lookup(s) > 0; });
    LLVM_DEBUG(llvm::dbgs() << "[" << kPass << "] strip " << *ps << ": "
                            << (ok ? "homogeneous" : "refused") << "\n");
    if (ok) {
      result = d;
      continue;
    }
    stripped.erase(ps);
    if (!culprit)
      culprit = eval.culprit;
  }
  if (stripped.empty()) {
    why = "its input is no multiple of the post-scale(s) it reads";
    if (culprit)
      why += ": '" + culprit->getName().getStringRef().str() + "' at " +
             formatLoc(culprit->getLoc()) + " is not homogeneous in them";
    return failure();
  }
  MovePlan plan{down, std::move(chain), {}, {}, {}};
  for (Operation *ps : plan.chain.postScales)
    if (stripped.contains(ps)) {
      plan.stripped.push_back(ps);
      for (int i = 0; i < result.of.lookup(ps); ++i)
        plan.scales.push_back(cast<PostScaleOp>(ps).getScale());
    }
  countBytes(plan);
  if (plan.savedBytes && *plan.savedBytes < 0)
    return why = "moving would cost " + std::to_string(-*plan.savedBytes) +
                 " element-wise bytes per call" +
                 (plan.perRow ? " and row" : "") +
                 " (the post-scales it adds outweigh those it removes)",
           failure();
  return plan;
}

/// The chain reads the raw input of a stripped post-scale. Where that input
/// is a widened f32 accumulator and the chain reads bf16, the generic takes
/// the f32 tensor and rounds it in its body (one rounding, as before).
void readRaw(RewriterBase &rewriter, OpOperand &leaf) {
  auto ps = cast<PostScaleOp>(leaf.get().getDefiningOp());
  Value raw = ps.getInput();
  Operation *user = leaf.getOwner();
  if (raw.getType() == ps.getType()) {
    rewriter.modifyOpInPlace(user, [&] { leaf.set(raw); });
    return;
  }
  auto generic = cast<linalg::GenericOp>(user);
  BlockArgument arg = generic.getMatchingBlockArgument(&leaf);
  auto narrow = cast<FloatType>(arg.getType());
  auto wide = cast<FloatType>(getElementTypeOrSelf(raw.getType()));
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPointToStart(generic.getBody());
  rewriter.modifyOpInPlace(generic, [&] {
    leaf.set(raw);
    arg.setType(wide);
  });
  Value rounded = narrow.getWidth() < wide.getWidth()
                      ? Value(arith::TruncFOp::create(
                            rewriter, generic.getLoc(), narrow, arg))
                      : Value(arith::ExtFOp::create(rewriter, generic.getLoc(),
                                                    narrow, arg));
  rewriter.replaceAllUsesExcept(arg, rounded, rounded.getDefiningOp());
}

/// Applies `plan`; returns the projection (rebuilt where it was widened).
Operation *applyMove(RewriterBase &rewriter, MovePlan &plan) {
  llvm::SmallPtrSet<Operation *, 4> stripped(plan.stripped.begin(),
                                             plan.stripped.end());
  for (OpOperand *leaf : plan.chain.leaves)
    if (stripped.contains(leaf->get().getDefiningOp()))
      readRaw(rewriter, *leaf);

  const Projection &down = plan.down;
  Type resultType = down.op->getResult(0).getType();
  Value raw = rebuildProjection(rewriter, down, down.getActivation());
  rewriter.setInsertionPointAfterValue(raw);
  Value scaled = raw;
  Operation *first = nullptr;
  for (auto [i, scale] : llvm::enumerate(plan.scales)) {
    Type type = i + 1 == plan.scales.size() ? resultType : raw.getType();
    scaled =
        PostScaleOp::create(rewriter, down.op->getLoc(), type, scaled, scale);
    if (!first)
      first = scaled.getDefiningOp();
  }
  if (raw.getDefiningOp() == down.op)
    rewriter.replaceAllUsesExcept(raw, scaled, first);
  else
    rewriter.replaceOp(down.op, scaled);
  return raw.getDefiningOp();
}

struct MoveScalePass : flashnorm::impl::MoveScaleBase<MoveScalePass> {
  void runOnOperation() override {
    func::FuncOp fn = getOperation();
    if (fn.isExternal())
      return;
    PassReporter reporter(fn, kPass);
    RewriteCleanup cleanup(fn);
    SmallVector<Operation *> candidates;
    fn.walk([&](Operation *op) {
      if (isa<linalg::LinalgOp, tosa::MatMulOp>(op))
        candidates.push_back(op);
    });
    IRRewriter rewriter(&getContext());
    for (Operation *op : candidates) {
      for (OpOperand &use : op->getOpOperands()) {
        // Cheap first: the input must come from an element-wise op.
        Operation *def = use.get().getDefiningOp();
        auto type = dyn_cast<RankedTensorType>(use.get().getType());
        if (!def || !type || isa<PostScaleOp>(def) ||
            !isChainOp(def, type.getShape()))
          continue;
        FailureOr<Projection> down = matchProjection(use);
        if (failed(down))
          continue;
        std::string why;
        FailureOr<MovePlan> plan = planMove(*down, why);
        if (failed(plan)) {
          if (!why.empty())
            reporter.refused(op, "post-scale not moved past it: " + why);
          continue;
        }
        std::string what =
            ("moved " + Twine(plan->stripped.size()) + " post-scale(s) past '" +
             op->getName().getStringRef() + "', applied after it as " +
             Twine(plan->scales.size()) + " post-scale(s)")
                .str();
        if (plan->savedBytes)
          what += "; saves " + std::to_string(*plan->savedBytes) +
                  " element-wise bytes per call" +
                  (plan->perRow ? " and row" : "");
        reporter.applied(applyMove(rewriter, *plan), what);
        ++numMoved;
        break; // `op` may have been replaced.
      }
    }
    // The query's post-scale into the logits' scale, past the rotary
    // embedding (MergeQueryScale.cpp).
    SmallVector<PostScaleOp> posts;
    fn.walk([&](PostScaleOp post) { posts.push_back(post); });
    for (PostScaleOp post : posts) {
      std::string why;
      FailureOr<QueryMergePlan> plan = planQueryMerge(post, why);
      if (failed(plan)) {
        if (!why.empty())
          reporter.refused(post, "query post-scale not merged into the "
                                 "logits' scale: " +
                                     why);
        continue;
      }
      std::string what = "merged the query's post-scale into the logits' "
                         "scale, past " +
                         std::to_string(plan->path.ops.size()) +
                         " op(s) linear in q";
      if (plan->savedBytes)
        what += "; saves " + std::to_string(*plan->savedBytes) +
                " element-wise bytes per call";
      reporter.applied(applyQueryMerge(rewriter, *plan), what);
      ++numMoved;
    }
    cleanup.eraseNewlyDead();
  }
};
} // namespace
