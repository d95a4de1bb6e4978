//===- PackWeights.cpp - Constant weights in the CPU kernel's panels ------===//
//
// A projection's weight W, read as the kernel reads it: for each k, the P
// outputs of one register tile. In either stored layout that is a strided
// walk (K x N: rows of N floats apart; N x K: P columns), one new page per k
// for large N, which no prefetcher follows. Constants are relaid once, at
// compile time, into panels [N / P][K][P] (contiguous per tile), and the
// projection becomes a generic over them; the output is the original one
// seen as [.., N / P, P] (a reshape, no copy). Plan, then apply: a
// projection is checked to the end (roles from inferContractionDims, the
// weight traced to its constant, the panels computed) before anything is
// replaced.
//
//===----------------------------------------------------------------------===//

#include "flashnorm/Analysis/Projection.h"
#include "flashnorm/Conversion/Passes.h"
#include "flashnorm/Utils/Cleanup.h"
#include "flashnorm/Utils/WeightFolder.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/IR/LinalgInterfaces.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "flashnorm-pack-weights"

namespace mlir::flashnorm {
#define GEN_PASS_DEF_PACKWEIGHTS
#include "flashnorm/Conversion/Passes.h.inc"
} // namespace mlir::flashnorm

using namespace mlir;
using namespace mlir::flashnorm;

namespace {
/// An accepted projection: what to build.
struct PackPlan {
  linalg::LinalgOp op;
  unsigned weightIndex;
  unsigned nDim, kDim;
  ElementsAttr panels;
  Location loc;
};

/// Decides whether `op` is packed; the plan or why not (for -debug-only).
FailureOr<PackPlan> planPacking(linalg::LinalgOp op, int64_t panel,
                                std::string &why) {
  auto fail = [&](const Twine &msg) {
    why = msg.str();
    return failure();
  };
  if (!op.hasPureTensorSemantics() || op.getNumDpsInputs() != 2 ||
      op.getNumDpsInits() != 1 || !linalg::isaContractionOpInterface(op))
    return fail("not a two-input contraction on tensors");
  FailureOr<linalg::ContractionDimensions> dims =
      linalg::inferContractionDims(op);
  if (failed(dims) || dims->n.size() != 1 || dims->k.size() != 1 ||
      !dims->batch.empty())
    return fail("not one n and one k dimension without batch");
  unsigned n = dims->n.front(), k = dims->k.front();
  MLIRContext *ctx = op.getContext();
  AffineMap outMap = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
  if (!outMap.isProjectedPermutation() || outMap.getNumResults() == 0 ||
      outMap.getResults().back() != getAffineDimExpr(n, ctx))
    return fail("the output's last dimension is not n");
  // The weight: the input indexed by n and k only.
  for (OpOperand *in : op.getDpsInputOperands()) {
    AffineMap map = op.getMatchingIndexingMap(in);
    if (map.getNumResults() != 2 || !map.isProjectedPermutation() ||
        !map.isFunctionOfDim(n) || !map.isFunctionOfDim(k))
      continue;
    int64_t axis = *map.getResultPosition(getAffineDimExpr(k, ctx));
    std::string traceWhy;
    FailureOr<WeightSource> source =
        traceWeightToConstant(in->get(), axis, &traceWhy);
    if (failed(source))
      return fail(traceWhy);
    // A checkpoint's weight (an ml_program global) keeps its layout: its
    // bytes are not in the IR, or belong to the global.
    if (source->global)
      return fail("the weight is a global");
    ShapedType type = source->value.getShapedType();
    if (type.getRank() != 2)
      return fail("the weight constant is not 2-D");
    if (llvm::is_contained(op.getStaticLoopRanges(), 0))
      return fail("a dimension is empty");
    FailureOr<ElementsAttr> panels =
        packPanels(source->value, source->axis, panel, &traceWhy);
    if (failed(panels))
      return fail(traceWhy);
    return PackPlan{op, in->getOperandNumber(), n, k, *panels, op.getLoc()};
  }
  return fail("no input is indexed by n and k alone");
}

/// The projection over the panels: for each panel b (in parallel when the
/// weight is large enough to split across cores), the original contraction
/// of the activation with panel b ([K, P], contiguous) into the output's
/// columns [b P, (b + 1) P), as a `linalg.contract` (operands cast to the
/// accumulator's type), which the vectorizer turns into a vector.contract.
void applyPacking(RewriterBase &rewriter, const PackPlan &plan, int64_t panel,
                  bool parallel) {
  linalg::LinalgOp op = plan.op;
  MLIRContext *ctx = op.getContext();
  rewriter.setInsertionPoint(op);
  Location loc = plan.loc;
  auto panelsType = cast<RankedTensorType>(plan.panels.getShapedType());
  Value panels =
      arith::ConstantOp::create(rewriter, loc, cast<TypedAttr>(plan.panels));
  int64_t numPanels = panelsType.getDimSize(0), numK = panelsType.getDimSize(1);
  Value init = op.getDpsInitOperand(0)->get();
  auto initType = cast<RankedTensorType>(init.getType());
  int64_t rank = initType.getRank();
  unsigned numLoops = op.getNumLoops();
  SmallVector<Attribute> maps;
  for (OpOperand *in : op.getDpsInputOperands())
    maps.push_back(AffineMapAttr::get(
        in->getOperandNumber() == plan.weightIndex
            ? AffineMap::get(numLoops, 0,
                             {getAffineDimExpr(plan.kDim, ctx),
                              getAffineDimExpr(plan.nDim, ctx)},
                             ctx)
            : op.getMatchingIndexingMap(in)));
  maps.push_back(
      AffineMapAttr::get(op.getMatchingIndexingMap(op.getDpsInitOperand(0))));
  ArrayAttr mapsAttr = rewriter.getArrayAttr(maps);

  // One panel's contraction, with `acc` the output so far and `b` the panel.
  auto panelSlices = [&](OpBuilder &b, Location l, Value index, Value acc) {
    Value offset = affine::AffineApplyOp::create(
        b, l, AffineMap::get(1, 0, getAffineDimExpr(0, ctx) * panel), index);
    auto weightType =
        RankedTensorType::get({numK, panel}, panelsType.getElementType());
    Value weight = tensor::ExtractSliceOp::create(
        b, l, weightType, panels,
        ArrayRef<OpFoldResult>{index, b.getIndexAttr(0), b.getIndexAttr(0)},
        ArrayRef<OpFoldResult>{b.getIndexAttr(1), b.getIndexAttr(numK),
                               b.getIndexAttr(panel)},
        SmallVector<OpFoldResult>(3, b.getIndexAttr(1)));
    SmallVector<OpFoldResult> offsets(rank, b.getIndexAttr(0)),
        sizes = tensor::getMixedSizes(b, l, acc),
        strides(rank, b.getIndexAttr(1));
    offsets.back() = offset;
    sizes.back() = b.getIndexAttr(panel);
    SmallVector<int64_t> shape(initType.getShape());
    shape.back() = panel;
    auto outType = RankedTensorType::get(shape, initType.getElementType());
    Value out = tensor::ExtractSliceOp::create(b, l, outType, acc, offsets,
                                               sizes, strides);
    SmallVector<Value> inputs;
    for (OpOperand *in : op.getDpsInputOperands())
      inputs.push_back(in->getOperandNumber() == plan.weightIndex ? weight
                                                                  : in->get());
    auto contract = linalg::ContractOp::create(b, l, TypeRange{outType}, inputs,
                                               ValueRange{out}, mapsAttr);
    return std::make_tuple(contract.getResult(0), offsets, sizes, strides);
  };

  auto forall = scf::ForallOp::create(
      rewriter, loc, ArrayRef<OpFoldResult>{rewriter.getIndexAttr(numPanels)},
      ValueRange{init}, std::nullopt);
  {
    OpBuilder::InsertionGuard guard(rewriter);
    rewriter.setInsertionPoint(forall.getTerminator());
    Value acc = forall.getRegionIterArgs().front();
    auto [value, offsets, sizes, strides] =
        panelSlices(rewriter, loc, forall.getInductionVars().front(), acc);
    rewriter.setInsertionPointToStart(forall.getTerminator().getBody());
    tensor::ParallelInsertSliceOp::create(rewriter, loc, value, acc, offsets,
                                          sizes, strides);
  }
  if (!parallel) {
    // One core: the panels in a loop (flashnorm-cpu-codegen), which may
    // still run beside its statistic: it takes over the async marks.
    forall->setAttr(kSerialPanelsAttr, rewriter.getUnitAttr());
    for (NamedAttribute attr : op->getDiscardableAttrs())
      forall->setAttr(attr.getName(), attr.getValue());
  }
  Value result = forall.getResult(0);
  rewriter.replaceOp(op, result);
}

/// A projection split over the cores leaves no core for its statistic:
/// groups (flashnorm-async-mark) left without a projection run serially.
void unmarkGroupsWithoutProjection(func::FuncOp fn,
                                   const llvm::DenseSet<int64_t> &groups) {
  llvm::DenseSet<int64_t> withProjection;
  fn.walk([&](Operation *op) {
    auto group = op->getAttrOfType<IntegerAttr>(kAsyncGroupAttr);
    auto role = op->getAttrOfType<StringAttr>(kAsyncRoleAttr);
    if (group && role && role.getValue() == "proj")
      withProjection.insert(group.getInt());
  });
  fn.walk([&](Operation *op) {
    auto group = op->getAttrOfType<IntegerAttr>(kAsyncGroupAttr);
    if (!group || !groups.contains(group.getInt()) ||
        withProjection.contains(group.getInt()))
      return;
    for (StringRef name : {kAsyncGroupAttr, kAsyncRoleAttr, kAsyncPairAttr})
      op->removeAttr(name);
  });
}

struct PackWeightsPass : flashnorm::impl::PackWeightsBase<PackWeightsPass> {
  using PackWeightsBase::PackWeightsBase;
  void runOnOperation() override {
    if (panel <= 0) {
      getOperation().emitError()
          << "flashnorm-pack-weights: panel must be positive, not " << panel;
      return signalPassFailure();
    }
    SmallVector<PackPlan> plans;
    getOperation().walk([&](linalg::LinalgOp op) {
      std::string why;
      FailureOr<PackPlan> plan = planPacking(op, panel, why);
      LLVM_DEBUG(llvm::dbgs()
                 << "[pack-weights] " << op->getName() << " at " << op.getLoc()
                 << ": " << (succeeded(plan) ? "packed" : why) << "\n");
      if (succeeded(plan))
        plans.push_back(*plan);
    });
    RewriteCleanup cleanup(getOperation());
    IRRewriter rewriter(&getContext());
    llvm::DenseSet<int64_t> splitGroups;
    for (const PackPlan &plan : plans) {
      // Both cores only where the panels are worth a task each.
      int64_t bytes = plan.panels.getShapedType().getNumElements() *
                      plan.panels.getElementType().getIntOrFloatBitWidth() / 8;
      bool parallel = bytes >= parallelMinBytes;
      if (auto group = plan.op->getAttrOfType<IntegerAttr>(kAsyncGroupAttr);
          group && parallel)
        splitGroups.insert(group.getInt());
      applyPacking(rewriter, plan, panel, parallel);
    }
    unmarkGroupsWithoutProjection(getOperation(), splitGroups);
    // The unpacked weights (and their layout ops), once nothing reads them.
    cleanup.eraseNewlyDead();
  }
};
} // namespace
