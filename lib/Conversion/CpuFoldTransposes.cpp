//===- CpuFoldTransposes.cpp - Read transposed inputs in place (CPU) ------===//
//
// `x @ W.T` as importers write it transposes PyTorch's N x K weight into a
// K x N tensor the matmul then reads: on buffers, a copy of the whole weight
// per call, read down its columns (a strided gather). When the contraction
// reads the stored tensor through the composed map instead, both inputs
// are contiguous along k, which is the case flashnorm-cpu-codegen's split-k
// kernel (CpuDotProduct.h) streams. Plan, then apply: each contraction's
// folds are decided, and checked against that kernel's conditions, before
// the contraction is generalized and re-pointed.
//
//===----------------------------------------------------------------------===//

#include "CpuDotProduct.h"
#include "flashnorm/Conversion/Passes.h"
#include "flashnorm/Utils/Cleanup.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "flashnorm-cpu-fold-transposes"

namespace mlir::flashnorm {
#define GEN_PASS_DEF_CPUFOLDTRANSPOSES
#include "flashnorm/Conversion/Passes.h.inc"
} // namespace mlir::flashnorm

using namespace mlir;
using namespace mlir::flashnorm;

namespace {
/// One input read through its producer's permutation.
struct FoldedRead {
  unsigned operand;
  Value source;
  AffineMap map;
};

struct FoldPlan {
  linalg::LinalgOp op;
  SmallVector<FoldedRead> reads;
};

/// What a permutation `value` is made of, and the map from its indices to
/// the source's: `value` is the result of a linalg op on tensors with one
/// input, all loops parallel, both maps permutations, whose body yields the
/// input element (linalg.transpose, or the generic form of one).
std::optional<std::pair<Value, AffineMap>> permutedSource(Value value) {
  auto op = value.getDefiningOp<linalg::LinalgOp>();
  if (!op || !op.hasPureTensorSemantics() || op.getNumDpsInputs() != 1 ||
      op.getNumDpsInits() != 1 || op.getNumLoops() != op.getNumParallelLoops())
    return std::nullopt;
  Block *body = op.getBlock();
  auto yield = dyn_cast<linalg::YieldOp>(body->getTerminator());
  if (body->getOperations().size() != 1 || !yield ||
      yield->getNumOperands() != 1 ||
      yield->getOperand(0) != body->getArgument(0))
    return std::nullopt;
  OpOperand *input = op.getDpsInputOperand(0);
  AffineMap in = op.getMatchingIndexingMap(input);
  AffineMap out = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
  if (!in.isPermutation() || !out.isPermutation())
    return std::nullopt;
  return std::make_pair(input->get(), in.compose(inversePermutation(out)));
}

/// The inputs of `op` to read through their transposes, if afterwards both
/// inputs are indexed by k last and the split-k kernel takes `op`.
FailureOr<FoldPlan> planFold(linalg::LinalgOp op, int64_t lanes,
                             std::string &why) {
  if (!op.hasPureTensorSemantics() || op.getNumDpsInputs() != 2 ||
      !linalg::isaContractionOpInterface(op)) {
    why = "not a contraction of two tensors";
    return failure();
  }
  FoldPlan plan;
  plan.op = op;
  // The maps each input is read through once folded.
  SmallVector<AffineMap> maps;
  for (OpOperand *input : op.getDpsInputOperands()) {
    AffineMap map = op.getMatchingIndexingMap(input);
    if (std::optional<std::pair<Value, AffineMap>> source =
            permutedSource(input->get())) {
      map = source->second.compose(map);
      plan.reads.push_back({input->getOperandNumber(), source->first, map});
    }
    maps.push_back(map);
  }
  if (plan.reads.empty()) {
    why = "no transposed input";
    return failure();
  }
  if (failed(matchSplitK(op, maps, lanes, why)))
    return failure();
  return plan;
}

struct CpuFoldTransposesPass
    : flashnorm::impl::CpuFoldTransposesBase<CpuFoldTransposesPass> {
  using CpuFoldTransposesBase::CpuFoldTransposesBase;

  void runOnOperation() override {
    if (vectorWidth < 0) {
      getOperation()->emitError()
          << "flashnorm-cpu-fold-transposes: vector-width must not be "
             "negative";
      return signalPassFailure();
    }
    // The split-k kernel's lanes: by default one register of f32 of the
    // machine the code is compiled for (flashnorm-cpu-codegen's default).
    int64_t lanes =
        vectorWidth ? vectorWidth.getValue() : registerTileFor(0)->lanes;
    SmallVector<FoldPlan> plans;
    getOperation()->walk([&](linalg::LinalgOp op) {
      std::string why;
      FailureOr<FoldPlan> plan = planFold(op, lanes, why);
      if (linalg::isaContractionOpInterface(op))
        LLVM_DEBUG(llvm::dbgs()
                   << op->getName() << " at " << op.getLoc() << ": "
                   << (succeeded(plan) ? "fold" : why) << "\n");
      if (succeeded(plan))
        plans.push_back(std::move(*plan));
    });
    if (plans.empty())
      return;
    RewriteCleanup cleanup(getOperation());
    IRRewriter rewriter(&getContext());
    for (FoldPlan &plan : plans) {
      rewriter.setInsertionPoint(plan.op);
      DictionaryAttr attrs = plan.op->getDiscardableAttrDictionary();
      linalg::GenericOp generic = dyn_cast<linalg::GenericOp>(*plan.op);
      if (!generic) {
        FailureOr<linalg::GenericOp> general =
            linalg::generalizeNamedOp(rewriter, plan.op);
        if (failed(general))
          continue; // Not reached: a named contraction generalizes.
        generic = *general;
        generic->setDiscardableAttrs(attrs);
      }
      SmallVector<AffineMap> maps = generic.getIndexingMapsArray();
      rewriter.modifyOpInPlace(generic, [&] {
        for (const FoldedRead &read : plan.reads) {
          generic->setOperand(read.operand, read.source);
          maps[read.operand] = read.map;
        }
        generic.setIndexingMapsAttr(rewriter.getAffineMapArrayAttr(maps));
      });
    }
    cleanup.eraseNewlyDead();
  }
};
} // namespace
