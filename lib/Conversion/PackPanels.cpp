//===- PackPanels.cpp - Projections over weight panels (CPU) --------------===//
//
// A projection's weight W, read as the kernel reads it: for each k, the P
// outputs of one register tile. In either stored layout that is a strided
// walk (K x N: rows of N floats apart; N x K: P columns), one new page per k
// for large N, which no prefetcher follows. Stored in panels [N / P][K][P]
// (contiguous per tile), the projection becomes a loop over panels, each a
// contraction of the activation with one panel into its columns of the
// output. Large weights are split over the cores (an scf.forall of one
// chunk of panels per core); a post-scale that only reads the projection is
// applied per panel while the panel's outputs are in cache. This file
// plans (which projections, how wide their panels, how the activation is
// blocked) and reports; PanelLoops.cpp builds the loops of a plan.
//
//===----------------------------------------------------------------------===//

#include "PackPanels.h"

#include "CpuDotProduct.h"

#include "flashnorm/Analysis/Projection.h"
#include "flashnorm/Conversion/Passes.h"
#include "flashnorm/Utils/Remarks.h"

#include <thread>

using namespace mlir;
using namespace mlir::flashnorm;

/// k per activation block: a 16-output panel's block is then 16 KiB of
/// f32, in L1 while the row tiles pass over it (GotoBLAS's kc).
static constexpr int64_t kBlockK = 256;

/// The most bytes of a panel's block widened at once (PanelPlan::widenPanels).
static constexpr int64_t kWidenedPanelBytes = 64 << 10;

/// The activation's blocks of `plan` (PanelPlan::kBlock, rowBlock): none
/// where it fits `budget` bytes, else blocks of kBlockK of k (fewer where
/// one row of that is over the budget) by the rows of the innermost row
/// dimension that fill the budget, at least the register tile's `tileRows`
/// (a thinner block would leave the micro-kernel's rows idle); and the
/// groups of outputs whose accumulator fills the budget
/// (PanelPlan::groupOutputs). Without blocks each panel reads the whole
/// activation again: at 128 x 2048 f32 (1 MiB, twice the measured
/// machine's L2) from L3, 128 MiB per call at N = 2048 (PERFORMANCE.md).
static void planActivationBlocks(PanelPlan &plan, const ContractionRoles &roles,
                                 ArrayRef<int64_t> ranges, int64_t budget,
                                 int64_t tileRows) {
  linalg::LinalgOp op = plan.op;
  int64_t rows = roles.rows, numK = ranges[plan.kDim];
  if (budget <= 0 || roles.dims.m.empty() || ShapedType::isDynamic(rows) ||
      ShapedType::isDynamic(numK))
    return;
  // The micro-kernel reads the activation widened to the accumulator's
  // type (applyPacking widens it once).
  Type activation = getElementTypeOrSelf(op->getOperand(roles.activation));
  Type acc = getElementTypeOrSelf(op.getDpsInitOperand(0)->get());
  if (!activation.isIntOrFloat() || !acc.isIntOrFloat())
    return;
  int64_t bytes =
      std::max<int64_t>(1, std::max(activation.getIntOrFloatBitWidth(),
                                    acc.getIntOrFloatBitWidth()) /
                               8);
  if (rows * numK * bytes <= budget)
    return;
  unsigned m = roles.dims.m.back();
  int64_t kBlock = fitTile(numK, std::min(kBlockK, budget / bytes));
  int64_t otherRows = rows / ranges[m];
  int64_t rowBlock = fitTile(
      ranges[m], std::max(tileRows, budget / (kBlock * bytes * otherRows)));
  plan.mDim = m;
  plan.kBlock = kBlock < numK ? kBlock : 0;
  plan.rowBlock = rowBlock < ranges[m] ? rowBlock : 0;
  int64_t accBytes = std::max<int64_t>(1, acc.getIntOrFloatBitWidth() / 8);
  // A group's accumulator fills the budget too (its rows by the group's
  // outputs), beside the activation's block.
  plan.groupOutputs =
      std::max<int64_t>(1, budget / (rowBlock * otherRows * accBytes));
}

FailureOr<PanelPlan> flashnorm::planPanels(linalg::LinalgOp op,
                                           const PanelOptions &options,
                                           std::string &why) {
  auto fail = [&](const Twine &msg) {
    why = msg.str();
    return failure();
  };
  std::string dimsWhy;
  FailureOr<ContractionRoles> roles = inferProjectionDims(op, &dimsWhy);
  if (failed(roles))
    return fail(dimsWhy);
  if (!roles->dims.batch.empty())
    return fail("a batch dimension");
  // The panel loops widen float activations only (and the body's sitofp or
  // uitofp would be lost to the contraction's default signed conversion).
  if (!isa<FloatType>(
          getElementTypeOrSelf(op->getOperand(roles->activation))) ||
      !isa<FloatType>(getElementTypeOrSelf(op.getDpsInitOperand(0)->get())))
    return fail("the activation or the result is not a float");
  unsigned n = *roles->n, k = roles->k;
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  if (llvm::is_contained(ranges, 0))
    return fail("a dimension is empty");
  // Panels as wide as the micro-kernel's tile (flashnorm-cpu-codegen):
  // decode (a few rows) keeps 8 vectors of outputs (8 independent FMA
  // chains; 128 f32 on AVX-512, 512 contiguous bytes per k) in registers,
  // prefill two vectors by a few rows.
  const RegisterTile &tile = options.tile;
  int64_t panel = options.panel;
  if (panel == 0) {
    bool decode = !ShapedType::isDynamic(roles->rows) && roles->rows < 4;
    panel = decode && ranges[n] % tile.decodeOutputs() == 0
                ? tile.decodeOutputs()
                : tile.prefillOutputs();
  }
  MLIRContext *ctx = op.getContext();
  AffineMap outMap = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
  if (!outMap.isProjectedPermutation() || outMap.getNumResults() == 0 ||
      outMap.getResults().back() != getAffineDimExpr(n, ctx))
    return fail("the output's last dimension is not n");
  // The weight: the input indexed by n and k only (no batch).
  if (!roles->weightIsMatrix)
    return fail("no input is indexed by n and k alone");
  PanelPlan plan{op,          roles->weight, n, k, roles->weightAxis, panel,
                 op.getLoc(), PostScaleOp()};
  planActivationBlocks(plan, *roles, ranges, options.activationBlockBytes,
                       tile.prefillRows());
  auto weightType =
      dyn_cast<FloatType>(getElementTypeOrSelf(op->getOperand(roles->weight)));
  auto accType =
      dyn_cast<FloatType>(getElementTypeOrSelf(op.getDpsInitOperand(0)->get()));
  // Only a block small enough to stay in L2 beside the activation's block
  // (and well under the allocator's 128 KiB threshold for a fresh mmap: the
  // widened block is a temporary of every panel).
  int64_t widenedBytes = (plan.kBlock ? plan.kBlock : ranges[k]) * panel *
                         (accType ? accType.getWidth() / 8 : 0);
  plan.widenPanels =
      weightType && accType && weightType.getWidth() < accType.getWidth() &&
      !ShapedType::isDynamic(roles->rows) && roles->rows > tile.prefillRows() &&
      widenedBytes <= kWidenedPanelBytes;
  Value result = op->getResult(0);
  if (result.hasOneUse())
    if (auto post = dyn_cast<PostScaleOp>(*result.getUsers().begin());
        post && post.getInput() == result)
      plan.post = post;
  return plan;
}

bool flashnorm::isWholeWeight(const PanelPlan &plan, ArrayRef<int64_t> shape,
                              int64_t axis, ArrayRef<Operation *> chain) {
  if (!onlyRelayouts(chain))
    return false;
  // (The op handle's methods are not const.)
  linalg::LinalgOp op = plan.op;
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  return shape.size() == 2 && shape[axis] == ranges[plan.kDim] &&
         shape[1 - axis] == ranges[plan.nDim];
}

/// A projection split over the cores leaves no core for its statistic, and
/// its fused post-scale reads the statistic: the groups
/// (flashnorm-async-mark) of such projections run serially, all of them.
void flashnorm::unmarkGroups(func::FuncOp fn,
                             const llvm::DenseSet<int64_t> &groups) {
  fn.walk([&](Operation *op) {
    auto group = op->getAttrOfType<IntegerAttr>(kAsyncGroupAttr);
    if (!group || !groups.contains(group.getInt()))
      return;
    for (StringRef name : {kAsyncGroupAttr, kAsyncRoleAttr, kAsyncPairAttr})
      op->removeAttr(name);
  });
}

int64_t flashnorm::panelThreads(int64_t threads) {
  return threads > 0
             ? threads
             : std::max<int64_t>(1, std::thread::hardware_concurrency());
}

void flashnorm::packProjection(RewriterBase &rewriter, const PanelPlan &plan,
                               Value panels, int64_t bytes, int64_t numThreads,
                               int64_t parallelMinBytes, PassReporter &reporter,
                               llvm::DenseSet<int64_t> &splitGroups) {
  // Both cores only where the panels are worth a task each.
  bool parallel = bytes >= parallelMinBytes && numThreads > 1;
  auto group = plan.op->getAttrOfType<IntegerAttr>(kAsyncGroupAttr);
  if (group && parallel)
    splitGroups.insert(group.getInt());
  // The post-scale runs in the projection's epilogue, unless the
  // projection runs as a task beside its statistic (a concurrent group on
  // one core), which the post-scale must wait for.
  bool fusePost = !group || parallel;
  auto panelsType = cast<RankedTensorType>(panels.getType());
  std::string what =
      "weight packed into " + std::to_string(panelsType.getDimSize(0)) +
      " panels of " + std::to_string(plan.panel) + " outputs, " +
      (parallel ? "split over " + std::to_string(numThreads) + " cores"
                : std::string("in a loop on one core"));
  if (plan.kBlock || plan.rowBlock) {
    linalg::LinalgOp op = plan.op;
    SmallVector<int64_t> ranges = op.getStaticLoopRanges();
    what += ", the activation read in blocks of " +
            std::to_string(plan.rowBlock ? plan.rowBlock : ranges[plan.mDim]) +
            " rows by " +
            std::to_string(plan.kBlock ? plan.kBlock : ranges[plan.kDim]) +
            " of k";
  }
  if (plan.widenPanels)
    what += ", each panel's block widened once";
  if (fusePost && plan.post)
    what += ", post-scale fused";
  if (group && parallel)
    what += "; its norm runs serially (no core is left for a concurrent "
            "statistic)";
  reporter.applied(plan.op, what);
  applyPacking(rewriter, plan, panels, parallel, parallel ? numThreads : 1,
               fusePost);
}
