//===- GpuWeightLayout.cpp - Weights in the layout GPU kernels read -------===//
//
// The GPU projection kernels read the weight fastest as N x K, each output's
// row contiguous along k (flashnorm-gpu-kernels: a warp per output, loads
// along the row; cuBLASLt and the tensor-core fragments read it as well).
// What importers write is rarely that: PyTorch's nn.Linear weight is N x K
// but reaches the matmul through a transpose (a `linalg.transpose` or a
// yield-only generic), which a GPU would run on every call; TOSA and GPT-2's
// Conv1D store K x N. So, on tensors, for every projection whose weight is
// a constant, a global or an argument behind layout-only ops:
// - stored N x K: the projection reads the stored value directly with an
//   (n, k) indexing map; the layout ops are dropped, no byte moves;
// - a K x N constant: the raw-buffer weight folder writes it once, at
//   compile time, as N x K (a permutation: no rounding), read the same way;
// - a K x N global or argument keeps its layout (its bytes are not in the
//   IR), said in a remark.
// Plan, then apply: the whole decision (contraction roles from
// inferContractionDims, the weight traced, the new constant built) is made
// before the IR changes.
//
//===----------------------------------------------------------------------===//

#include "flashnorm/Analysis/Projection.h"
#include "flashnorm/Conversion/Passes.h"
#include "flashnorm/Utils/Remarks.h"
#include "flashnorm/Utils/WeightFolder.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "flashnorm-gpu-weight-layout"

namespace mlir::flashnorm {
#define GEN_PASS_DEF_GPUWEIGHTLAYOUT
#include "flashnorm/Conversion/Passes.h.inc"
} // namespace mlir::flashnorm

using namespace mlir;
using namespace mlir::flashnorm;

namespace {
constexpr StringLiteral kPass = "flashnorm-gpu-weight-layout";

/// An accepted projection: the weight operand, what replaces it (an existing
/// N x K value, or a new constant) and the layout ops it leaves unused.
struct LayoutPlan {
  linalg::LinalgOp op;
  unsigned weightIndex;
  unsigned nDim, kDim;
  Value stored;        // the stored N x K value, or null
  ElementsAttr relaid; // else: the N x K constant to create
  SmallVector<Operation *> chain;
  Operation *constant = nullptr; // the K x N constant, erased once unused
};

/// Decides how `op` reads its weight: a plan, or why not. `refusal` is set
/// when the reason is worth a remark (a projection whose weight stays in a
/// layout the kernels read slowly); projections already reading N x K are
/// not.
FailureOr<LayoutPlan> planLayout(linalg::LinalgOp op, std::string &why,
                                 bool &refusal) {
  auto fail = [&](const Twine &msg, bool remark = false) {
    why = msg.str();
    refusal = remark;
    return failure();
  };
  std::string dimsWhy;
  FailureOr<ContractionRoles> roles = inferProjectionDims(op, &dimsWhy);
  if (failed(roles))
    return fail(dimsWhy);
  // The weight: indexed by n and k, and otherwise only by batch dimensions
  // of one (TOSA's matmul is batched by 1), which it stops naming once it
  // is read as N x K.
  if (!roles->weightIsMatrix)
    return fail("no input is indexed by n and k alone");
  unsigned n = *roles->n, k = roles->k;
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  OpOperand *in = &op->getOpOperand(roles->weight);
  AffineMap map = op.getMatchingIndexingMap(in);
  int64_t axis = roles->weightAxis;
  std::string traceWhy;
  FailureOr<WeightSource> source =
      traceWeight(in->get(), axis, /*allowArgument=*/true, &traceWhy);
  if (failed(source))
    return fail("the weight is computed: " + traceWhy);
  if (source->chain.empty() && map.getNumResults() == 2 && axis == 1)
    return fail("the weight is read as stored, N x K");
  // A named op must have a generic form whose weight map can change.
  if (!isa<linalg::GenericOp, linalg::MatmulOp, linalg::BatchMatmulOp,
           linalg::ContractOp>(op))
    return fail("'" + op->getName().getStringRef() + "' is not handled", true);
  Value stored = source->argument ? Value(source->argument)
                                  : source->constant->getResult(0);
  auto storedType = dyn_cast<RankedTensorType>(stored.getType());
  auto weightType = cast<RankedTensorType>(in->get().getType());
  if (!storedType || storedType.getRank() != 2 ||
      storedType.getElementType() != weightType.getElementType())
    return fail("the stored weight is not 2-D of the weight's type", true);
  // The stored tensor holds exactly the weight (no broadcast between).
  SmallVector<int64_t> expected =
      source->axis == 1 ? SmallVector<int64_t>{ranges[n], ranges[k]}
                        : SmallVector<int64_t>{ranges[k], ranges[n]};
  if (storedType.getShape() != ArrayRef<int64_t>(expected) ||
      !onlyRelayouts(source->chain))
    return fail("the stored weight is not the N x K or K x N weight "
                "itself (a broadcast or a dynamic size between)",
                true);
  LayoutPlan plan{op,      in->getOperandNumber(), n,      k, nullptr,
                  nullptr, source->chain,          nullptr};
  if (source->axis == 1) {
    plan.stored = stored;
    return plan;
  }
  // A global's bytes belong to it (and are not in the IR if extern).
  if (!source->value || source->global)
    return fail(Twine("the weight is ") +
                    (source->argument ? "an argument" : "a global") +
                    " stored K x N; only constants are relaid",
                true);
  FailureOr<ElementsAttr> relaid =
      storeRowsAlongK(source->value, source->axis, &traceWhy);
  if (failed(relaid))
    return fail(traceWhy, true);
  plan.relaid = *relaid;
  plan.constant = source->constant;
  return plan;
}

/// The projection reads its weight as N x K through (n, k). `relaidOf`
/// holds the N x K constants made so far by K x N constant: projections
/// that share a weight share its new layout too.
void applyLayout(RewriterBase &rewriter, const LayoutPlan &plan,
                 DenseMap<Operation *, Value> &relaidOf) {
  linalg::LinalgOp op = plan.op;
  MLIRContext *ctx = op.getContext();
  Value weight = plan.stored;
  if (!weight) {
    Value &made = relaidOf[plan.constant];
    if (!made) {
      rewriter.setInsertionPoint(plan.constant);
      made = arith::ConstantOp::create(rewriter, plan.constant->getLoc(),
                                       cast<TypedAttr>(plan.relaid));
    }
    weight = made;
  }
  rewriter.setInsertionPoint(op);
  // A named op becomes the generic it stands for (its marks kept) so that
  // its weight can take another indexing map.
  linalg::GenericOp generic = dyn_cast<linalg::GenericOp>(op.getOperation());
  if (!generic) {
    DictionaryAttr marks = op->getDiscardableAttrDictionary();
    generic = *linalg::generalizeNamedOp(rewriter, op);
    generic->setDiscardableAttrs(marks);
  }
  SmallVector<AffineMap> maps = generic.getIndexingMapsArray();
  maps[plan.weightIndex] = AffineMap::get(
      generic.getNumLoops(), 0,
      {getAffineDimExpr(plan.nDim, ctx), getAffineDimExpr(plan.kDim, ctx)},
      ctx);
  rewriter.modifyOpInPlace(generic, [&] {
    generic->setOperand(plan.weightIndex, weight);
    generic.setIndexingMapsAttr(rewriter.getAffineMapArrayAttr(maps));
  });
  // The layout ops (nearest first) with the empty tensors they wrote into,
  // and the K x N constant, where nothing else reads them.
  for (Operation *dead : plan.chain) {
    if (!dead->use_empty())
      continue;
    SmallVector<Value> operands(dead->getOperands());
    rewriter.eraseOp(dead);
    for (Value operand : operands)
      if (auto empty = operand.getDefiningOp<tensor::EmptyOp>();
          empty && empty->use_empty())
        rewriter.eraseOp(empty);
  }
  if (plan.constant && plan.constant->use_empty())
    rewriter.eraseOp(plan.constant);
}

struct GpuWeightLayoutPass
    : flashnorm::impl::GpuWeightLayoutBase<GpuWeightLayoutPass> {
  void runOnOperation() override {
    PassReporter reporter(getOperation(), kPass);
    SmallVector<LayoutPlan> plans;
    getOperation().walk([&](linalg::LinalgOp op) {
      std::string why;
      bool refusal = false;
      FailureOr<LayoutPlan> plan = planLayout(op, why, refusal);
      LLVM_DEBUG(llvm::dbgs()
                 << kPass << ": " << op->getName() << " at " << op.getLoc()
                 << ": " << (succeeded(plan) ? "accepted" : why) << "\n");
      if (succeeded(plan))
        plans.push_back(std::move(*plan));
      else if (refusal)
        reporter.refused(op, "weight read as stored: " + why);
    });
    IRRewriter rewriter(&getContext());
    DenseMap<Operation *, Value> relaidOf;
    for (const LayoutPlan &plan : plans) {
      reporter.applied(plan.op, plan.stored
                                    ? "weight read as stored, N x K (" +
                                          Twine(plan.chain.size()) +
                                          " layout op(s) dropped)"
                                    : Twine("weight relaid at compile time "
                                            "from K x N to N x K"));
      applyLayout(rewriter, plan, relaidOf);
    }
  }
};
} // namespace
