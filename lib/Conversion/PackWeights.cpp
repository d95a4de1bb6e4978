//===- PackWeights.cpp - Constant weights in the CPU kernel's panels ------===//
//
// Constant weights in the CPU kernel's panels [N / P][K][P] (why, and the
// loop over panels a projection becomes: PackPanels.h), relaid once at
// compile time by the raw-buffer weight folder, so nothing is relaid per
// call. Plan, then apply: a projection is checked to the end (roles from
// inferContractionDims, the weight traced to its constant, the panels
// computed) before anything is replaced.
//
//===----------------------------------------------------------------------===//

#include "PackPanels.h"

#include "flashnorm/Analysis/Projection.h"
#include "flashnorm/Conversion/Passes.h"
#include "flashnorm/Utils/Cleanup.h"
#include "flashnorm/Utils/Remarks.h"
#include "flashnorm/Utils/WeightFolder.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
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
/// A projection whose constant weight is packed: the plan and its panels,
/// relaid at compile time by the raw-buffer weight folder.
struct PackPlan {
  PanelPlan panels;
  ElementsAttr value;
};

/// Decides whether `op` is packed; the plan or why not (for -debug-only,
/// and as a remark once the weight is known to be in the IR: `constant`).
FailureOr<PackPlan> planPacking(linalg::LinalgOp op,
                                const PanelOptions &options, std::string &why,
                                bool &constant) {
  FailureOr<PanelPlan> plan = planPanels(op, options, why);
  if (failed(plan))
    return failure();
  std::string traceWhy;
  FailureOr<WeightSource> source = traceWeightToConstant(
      op->getOperand(plan->weightIndex), plan->weightAxis, &traceWhy);
  if (failed(source))
    return why = traceWhy, failure();
  constant = true;
  // A checkpoint's weight (an ml_program global) keeps its layout: its
  // bytes are not in the IR, or belong to the global.
  if (source->global)
    return why = "the weight is a global", failure();
  if (source->value.getShapedType().getRank() != 2)
    return why = "the weight constant is not 2-D", failure();
  if (!isWholeWeight(*plan, source->value.getShapedType().getShape(),
                     source->axis, source->chain))
    return why = "the weight constant is not the projection's k x n (a "
                 "layout op broadcasts it)",
           failure();
  FailureOr<ElementsAttr> panels =
      packPanels(source->value, source->axis, plan->panel, &traceWhy);
  if (failed(panels))
    return why = traceWhy, failure();
  return PackPlan{*plan, *panels};
}

struct PackWeightsPass : flashnorm::impl::PackWeightsBase<PackWeightsPass> {
  using PackWeightsBase::PackWeightsBase;
  void runOnOperation() override {
    if (panel < 0) {
      emitError(getOperation().getLoc())
          << "flashnorm-pack-weights: panel must be 0 (by shape) or positive, "
             "not "
          << panel.getValue();
      return signalPassFailure();
    }
    if (threads < 0) {
      emitError(getOperation().getLoc())
          << "flashnorm-pack-weights: threads must be 0 (this machine's) or "
             "positive, not "
          << threads.getValue();
      return signalPassFailure();
    }
    for (auto [name, value] :
         {std::make_pair("parallel-min-bytes", parallelMinBytes.getValue()),
          std::make_pair("activation-block-bytes",
                         activationBlockBytes.getValue())})
      if (value < 0) {
        emitError(getOperation().getLoc())
            << "flashnorm-pack-weights: " << name
            << " must not be negative, not " << value;
        return signalPassFailure();
      }
    FailureOr<RegisterTile> tile = registerTileFor(vectorBits);
    if (failed(tile)) {
      emitError(getOperation().getLoc())
          << "flashnorm-pack-weights: " << kVectorBitsValues << ", not "
          << vectorBits.getValue();
      return signalPassFailure();
    }
    PassReporter reporter(getOperation(), "flashnorm-pack-weights");
    SmallVector<PackPlan> plans;
    getOperation().walk([&](linalg::LinalgOp op) {
      std::string why;
      bool constant = false;
      FailureOr<PackPlan> plan =
          planPacking(op, {panel, *tile, activationBlockBytes}, why, constant);
      LLVM_DEBUG(llvm::dbgs()
                 << "[pack-weights] " << op->getName() << " at " << op.getLoc()
                 << ": " << (succeeded(plan) ? "packed" : why) << "\n");
      if (succeeded(plan))
        plans.push_back(*plan);
      else if (constant)
        reporter.refused(op, "weight left in its layout: " + why);
    });
    RewriteCleanup cleanup(getOperation());
    IRRewriter rewriter(&getContext());
    int64_t numThreads = panelThreads(threads);
    llvm::DenseSet<int64_t> splitGroups;
    for (PackPlan &plan : plans) {
      PanelPlan &p = plan.panels;
      // Before the projection, which dominates wherever packProjection
      // builds the loop (at the projection, or at a fused post-scale).
      rewriter.setInsertionPoint(p.op);
      Value panels = arith::ConstantOp::create(rewriter, p.loc,
                                               cast<TypedAttr>(plan.value));
      int64_t bytes = plan.value.getShapedType().getNumElements() *
                      plan.value.getElementType().getIntOrFloatBitWidth() / 8;
      packProjection(rewriter, p, panels, bytes, numThreads, parallelMinBytes,
                     reporter, splitGroups);
    }
    unmarkGroups(getOperation(), splitGroups);
    // The unpacked weights (and their layout ops), once nothing reads them.
    cleanup.eraseNewlyDead();
  }
};
} // namespace
