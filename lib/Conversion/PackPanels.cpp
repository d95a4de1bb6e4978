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
// applied per panel while the panel's outputs are in cache.
//
//===----------------------------------------------------------------------===//

#include "PackPanels.h"

#include "flashnorm/Analysis/Projection.h"
#include "flashnorm/Conversion/Passes.h"
#include "flashnorm/Utils/Remarks.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Matchers.h"

#include <thread>

using namespace mlir;
using namespace mlir::flashnorm;

FailureOr<PanelPlan> flashnorm::planPanels(linalg::LinalgOp op, int64_t panel,
                                           const RegisterTile &tile,
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
  unsigned n = *roles->n, k = roles->k;
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  if (llvm::is_contained(ranges, 0))
    return fail("a dimension is empty");
  // Panels as wide as the micro-kernel's tile (flashnorm-cpu-codegen):
  // decode (a few rows) keeps 8 vectors of outputs (8 independent FMA
  // chains; 128 f32 on AVX-512, 512 contiguous bytes per k) in registers,
  // prefill two vectors by a few rows.
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

/// The projection over the panels: for each panel b (in parallel when the
/// weight is large enough to split across cores), the original contraction
/// of the activation with panel b ([K, P], contiguous) into the output's
/// columns [b P, (b + 1) P), as a `linalg.contract` (operands cast to the
/// accumulator's type), which the vectorizer turns into a vector.contract.
void flashnorm::applyPacking(RewriterBase &rewriter, const PanelPlan &plan,
                             Value panels, bool parallel, int64_t threads,
                             bool fusePost) {
  int64_t panel = plan.panel;
  linalg::LinalgOp op = plan.op;
  MLIRContext *ctx = op.getContext();
  PostScaleOp post = fusePost ? plan.post : nullptr;
  // A fused post-scale's scale may be computed after the projection; the
  // projection's operands dominate the post-scale, which uses its result.
  rewriter.setInsertionPoint(post ? post.getOperation() : op.getOperation());
  Location loc = plan.loc;
  auto panelsType = cast<RankedTensorType>(panels.getType());
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

  // Activations narrower than the accumulator (bf16, f16) are widened once,
  // here, rather than at every k of every panel: the micro-kernel then
  // broadcasts f32 straight from memory (on AVX2 the per-k widening of a
  // bf16 tile's rows was about half of its instructions). Exact, as the
  // contraction's own widening is.
  Type accElement = initType.getElementType();
  auto widen = [&](Value v) -> Value {
    auto type = dyn_cast<RankedTensorType>(v.getType());
    auto from = type ? dyn_cast<FloatType>(type.getElementType()) : nullptr;
    auto to = dyn_cast<FloatType>(accElement);
    if (!from || !to || from.getWidth() >= to.getWidth())
      return v;
    Value empty = tensor::EmptyOp::create(
        rewriter, loc, tensor::getMixedSizes(rewriter, loc, v), to);
    AffineMap id = rewriter.getMultiDimIdentityMap(type.getRank());
    return linalg::GenericOp::create(
               rewriter, loc, TypeRange{empty.getType()}, ValueRange{v},
               ValueRange{empty}, ArrayRef<AffineMap>{id, id},
               SmallVector<utils::IteratorType>(type.getRank(),
                                                utils::IteratorType::parallel),
               [&](OpBuilder &b, Location l, ValueRange args) {
                 linalg::YieldOp::create(
                     b, l,
                     ValueRange{arith::ExtFOp::create(b, l, to, args[0])});
               })
        .getResult(0);
  };
  SmallVector<Value> activations;
  for (OpOperand *in : op.getDpsInputOperands())
    activations.push_back(in->getOperandNumber() == plan.weightIndex
                              ? Value()
                              : widen(in->get()));

  // Columns [offset, offset + width) of `acc` (the last dimension).
  auto columns = [&](OpBuilder &b, Location l, Value acc, OpFoldResult offset,
                     int64_t width) {
    SmallVector<OpFoldResult> offsets(rank, b.getIndexAttr(0)),
        sizes = tensor::getMixedSizes(b, l, acc),
        strides(rank, b.getIndexAttr(1));
    offsets.back() = offset;
    sizes.back() = b.getIndexAttr(width);
    return std::make_tuple(offsets, sizes, strides);
  };
  auto times = [&](OpBuilder &b, Location l, Value v, int64_t c) {
    return affine::AffineApplyOp::create(
               b, l, AffineMap::get(1, 0, getAffineDimExpr(0, ctx) * c), v)
        .getResult();
  };
  // Panel `index`'s contraction into the columns at `offset` of `acc`
  // (of the projection's columns at `global`, and post-scaled there, when
  // the post-scale is fused).
  auto panelStep = [&](OpBuilder &b, Location l, Value index, Value acc,
                       Value offset, Value global) {
    auto weightType =
        RankedTensorType::get({numK, panel}, panelsType.getElementType());
    Value weight = tensor::ExtractSliceOp::create(
        b, l, weightType, panels,
        ArrayRef<OpFoldResult>{index, b.getIndexAttr(0), b.getIndexAttr(0)},
        ArrayRef<OpFoldResult>{b.getIndexAttr(1), b.getIndexAttr(numK),
                               b.getIndexAttr(panel)},
        SmallVector<OpFoldResult>(3, b.getIndexAttr(1)));
    auto [offsets, sizes, strides] = columns(b, l, acc, offset, panel);
    SmallVector<int64_t> shape(
        cast<RankedTensorType>(acc.getType()).getShape());
    shape.back() = panel;
    auto outType = RankedTensorType::get(shape, initType.getElementType());
    Value out;
    if (post) {
      // A zero accumulator is filled panel by panel, in cache, rather than
      // all at once before.
      auto fill = init.getDefiningOp<linalg::FillOp>();
      bool zeroFill = fill && matchPattern(fill.value(), m_AnyZeroFloat());
      Value base = zeroFill ? fill.getOutputs()[0] : init;
      auto [o, z, t] = columns(b, l, base, global, panel);
      out = tensor::ExtractSliceOp::create(b, l, outType, base, o, z, t);
      if (zeroFill)
        out = linalg::FillOp::create(b, l, fill.value(), out).getResult(0);
    } else {
      out = tensor::ExtractSliceOp::create(b, l, outType, acc, offsets, sizes,
                                           strides);
    }
    SmallVector<Value> inputs;
    for (auto [in, activation] :
         llvm::zip_equal(op.getDpsInputOperands(), activations))
      inputs.push_back(in->getOperandNumber() == plan.weightIndex ? weight
                                                                  : activation);
    Value product = linalg::ContractOp::create(b, l, TypeRange{outType}, inputs,
                                               ValueRange{out}, mapsAttr)
                        .getResult(0);
    if (post)
      product = PostScaleOp::create(
          b, l, RankedTensorType::get(shape, post.getType().getElementType()),
          product, post.getScale());
    return std::make_tuple(product, offsets, sizes, strides);
  };

  // `chunks` tasks (one per core), each a loop over its consecutive panels:
  // a task per panel would cost more than a decode panel's work.
  int64_t chunks = 1;
  for (int64_t c = std::min(threads, numPanels); c > 1; --c)
    if (numPanels % c == 0) {
      chunks = c;
      break;
    }
  int64_t perChunk = numPanels / chunks;
  // The forall writes the post-scale's result when it is fused, else the
  // projection's.
  Value shared = init;
  if (post)
    shared = tensor::EmptyOp::create(rewriter, loc,
                                     tensor::getMixedSizes(rewriter, loc, init),
                                     post.getType().getElementType());
  auto sharedType = cast<RankedTensorType>(shared.getType());
  auto forall = scf::ForallOp::create(
      rewriter, loc, ArrayRef<OpFoldResult>{rewriter.getIndexAttr(chunks)},
      ValueRange{shared}, std::nullopt);
  {
    OpBuilder::InsertionGuard guard(rewriter);
    rewriter.setInsertionPoint(forall.getTerminator());
    Value acc = forall.getRegionIterArgs().front();
    Value chunk = forall.getInductionVars().front();
    Value chunkOffset = times(rewriter, loc, chunk, perChunk * panel);
    auto [offsets, sizes, strides] =
        columns(rewriter, loc, acc, chunkOffset, perChunk * panel);
    SmallVector<int64_t> shape(initType.getShape());
    shape.back() = perChunk * panel;
    Value chunkAcc = tensor::ExtractSliceOp::create(
        rewriter, loc,
        RankedTensorType::get(shape, sharedType.getElementType()), acc, offsets,
        sizes, strides);
    Value first = times(rewriter, loc, chunk, perChunk);
    // The chunk's panels: independent too (a forall, so that nothing is
    // carried from one to the next), run one after the other.
    auto inner = scf::ForallOp::create(
        rewriter, loc, ArrayRef<OpFoldResult>{rewriter.getIndexAttr(perChunk)},
        ValueRange{chunkAcc}, std::nullopt);
    inner->setAttr(kSerialPanelsAttr, rewriter.getUnitAttr());
    {
      OpBuilder::InsertionGuard innerGuard(rewriter);
      rewriter.setInsertionPoint(inner.getTerminator());
      Value c = inner.getInductionVars().front();
      Value index = arith::AddIOp::create(rewriter, loc, first, c);
      Value innerAcc = inner.getRegionIterArgs().front();
      auto [value, o, z, t] = panelStep(rewriter, loc, index, innerAcc,
                                        times(rewriter, loc, c, panel),
                                        times(rewriter, loc, index, panel));
      rewriter.setInsertionPointToStart(inner.getTerminator().getBody());
      tensor::ParallelInsertSliceOp::create(rewriter, loc, value, innerAcc, o,
                                            z, t);
    }
    rewriter.setInsertionPointToStart(forall.getTerminator().getBody());
    tensor::ParallelInsertSliceOp::create(rewriter, loc, inner.getResult(0),
                                          acc, offsets, sizes, strides);
  }
  if (!parallel || chunks == 1) {
    // One core: the loop runs where the forall stands (flashnorm-cpu-
    // codegen), possibly beside its statistic: it takes over the marks.
    forall->setAttr(kSerialPanelsAttr, rewriter.getUnitAttr());
    for (NamedAttribute attr : op->getDiscardableAttrs())
      forall->setAttr(attr.getName(), attr.getValue());
  }
  if (post) {
    rewriter.replaceOp(post, forall.getResult(0));
    rewriter.eraseOp(op);
    return;
  }
  rewriter.replaceOp(op, forall.getResult(0));
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
  if (fusePost && plan.post)
    what += ", post-scale fused";
  if (group && parallel)
    what += "; its norm runs serially (no core is left for a concurrent "
            "statistic)";
  reporter.applied(plan.op, what);
  applyPacking(rewriter, plan, panels, parallel, parallel ? numThreads : 1,
               fusePost);
}
