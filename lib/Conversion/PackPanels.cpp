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

#include "CpuDotProduct.h"

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

  // The slice of `v` (indexed through `map`) at [offset, offset + size) of
  // each of the loops `bounds`, all of the others; its offsets, sizes and
  // strides (to insert it back) and type.
  struct LoopBound {
    unsigned dim;
    OpFoldResult offset;
    int64_t size;
  };
  struct Slice {
    SmallVector<OpFoldResult> offsets, sizes, strides;
    RankedTensorType type;
  };
  auto sliceOf = [&](OpBuilder &b, Location l, Value v, AffineMap map,
                     ArrayRef<LoopBound> bounds) {
    auto type = cast<RankedTensorType>(v.getType());
    Slice slice{SmallVector<OpFoldResult>(type.getRank(), b.getIndexAttr(0)),
                tensor::getMixedSizes(b, l, v),
                SmallVector<OpFoldResult>(type.getRank(), b.getIndexAttr(1)),
                type};
    SmallVector<int64_t> shape(type.getShape());
    for (auto [pos, expr] : llvm::enumerate(map.getResults()))
      for (const LoopBound &bound : bounds)
        if (expr == getAffineDimExpr(bound.dim, ctx)) {
          slice.offsets[pos] = bound.offset;
          slice.sizes[pos] = b.getIndexAttr(bound.size);
          shape[pos] = bound.size;
        }
    slice.type = RankedTensorType::get(shape, type.getElementType());
    return slice;
  };
  auto extract = [&](OpBuilder &b, Location l, Value v, const Slice &slice) {
    return tensor::ExtractSliceOp::create(b, l, slice.type, v, slice.offsets,
                                          slice.sizes, slice.strides)
        .getResult();
  };
  AffineMap outMap = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
  auto columns = [&](OpBuilder &b, Location l, Value acc, OpFoldResult offset,
                     int64_t width) {
    return sliceOf(b, l, acc, outMap, {{plan.nDim, offset, width}});
  };
  auto times = [&](OpBuilder &b, Location l, Value v, int64_t c) {
    return affine::AffineApplyOp::create(
               b, l, AffineMap::get(1, 0, getAffineDimExpr(0, ctx) * c), v)
        .getResult();
  };
  // `body` over `count` blocks of `step` (its offset and the value carried
  // from block to block, starting at `init`): an scf.for (its bounds at the
  // start of `chunkBody`), or the body alone for one block.
  Block *chunkBody = nullptr;
  llvm::SmallDenseMap<int64_t, Value> blockBounds;
  auto overBlocks =
      [&](Location l, int64_t count, int64_t step, Value init,
          function_ref<Value(OpFoldResult, Value)> body) -> Value {
    if (count == 1)
      return body(rewriter.getIndexAttr(0), init);
    auto index = [&](int64_t v) {
      Value &bound = blockBounds[v];
      if (!bound) {
        OpBuilder::InsertionGuard guard(rewriter);
        rewriter.setInsertionPointToStart(chunkBody);
        bound = arith::ConstantIndexOp::create(rewriter, l, v);
      }
      return bound;
    };
    auto loop = scf::ForOp::create(rewriter, l, index(0), index(count * step),
                                   index(step), ValueRange{init});
    OpBuilder::InsertionGuard guard(rewriter);
    rewriter.setInsertionPointToStart(loop.getBody());
    scf::YieldOp::create(
        rewriter, l, body(loop.getInductionVar(), loop.getRegionIterArgs()[0]));
    return loop.getResult(0);
  };

  // An activation read in blocks (PanelPlan::kBlock, rowBlock) leaves each
  // panel's outputs unfinished until its last block: the post-scale then
  // runs over a chunk's outputs once all blocks are in; otherwise in each
  // panel's epilogue, while its outputs are in cache.
  int64_t kBlock = plan.kBlock ? plan.kBlock : numK;
  int64_t numRows = op.getStaticLoopRanges()[plan.mDim];
  int64_t rowBlock = plan.rowBlock ? plan.rowBlock : numRows;
  bool blocked = kBlock < numK || rowBlock < numRows;
  bool panelPost = post && !blocked;
  // A zero accumulator under a post-scale fused per panel is filled panel
  // by panel, in cache, rather than all at once before.
  auto fill = post ? init.getDefiningOp<linalg::FillOp>() : nullptr;
  bool zeroFill = fill && matchPattern(fill.value(), m_AnyZeroFloat());
  Value base = zeroFill ? fill.getOutputs()[0] : init;
  auto filledSlice = [&](OpBuilder &b, Location l, OpFoldResult global,
                         int64_t width) -> Value {
    Value out = extract(b, l, base, columns(b, l, base, global, width));
    return zeroFill
               ? linalg::FillOp::create(b, l, fill.value(), out).getResult(0)
               : out;
  };
  // Panel `index`'s contraction over k [kOffset, kOffset + kBlock) with the
  // activation block `inputs` into the columns at `offset` of `acc` (of the
  // projection's columns at `global`, and post-scaled there, when the
  // post-scale runs per panel).
  auto panelStep = [&](OpBuilder &b, Location l, Value index,
                       OpFoldResult kOffset, ArrayRef<Value> inputs, Value acc,
                       Value offset, Value global) {
    auto weightType =
        RankedTensorType::get({kBlock, panel}, panelsType.getElementType());
    Value weight = tensor::ExtractSliceOp::create(
        b, l, weightType, panels,
        ArrayRef<OpFoldResult>{index, kOffset, b.getIndexAttr(0)},
        ArrayRef<OpFoldResult>{b.getIndexAttr(1), b.getIndexAttr(kBlock),
                               b.getIndexAttr(panel)},
        SmallVector<OpFoldResult>(3, b.getIndexAttr(1)));
    if (plan.widenPanels)
      weight = widen(weight);
    Slice slice = columns(b, l, acc, offset, panel);
    auto outType =
        RankedTensorType::get(slice.type.getShape(), initType.getElementType());
    Value out = panelPost ? filledSlice(b, l, global, panel)
                          : extract(b, l, acc, slice);
    SmallVector<Value> operands(inputs);
    operands[plan.weightIndex] = weight;
    Value product =
        linalg::ContractOp::create(b, l, TypeRange{outType}, operands,
                                   ValueRange{out}, mapsAttr)
            .getResult(0);
    if (panelPost)
      product = PostScaleOp::create(b, l, slice.type, product, post.getScale());
    return std::make_pair(product, slice);
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
  // projection's; where the post-scale waits for the blocks, the projection's
  // accumulator is the forall's too (first), each chunk's slice of it
  // carried from block to block in place (a buffer of the chunk's own,
  // carried by a loop, would take bufferization's runtime ownership checks).
  SmallVector<Value> shared{init};
  if (post) {
    Value out = tensor::EmptyOp::create(
        rewriter, loc, tensor::getMixedSizes(rewriter, loc, init),
        post.getType().getElementType());
    shared.assign({out});
    if (!panelPost)
      shared.insert(shared.begin(), init);
  }
  auto forall = scf::ForallOp::create(
      rewriter, loc, ArrayRef<OpFoldResult>{rewriter.getIndexAttr(chunks)},
      shared, std::nullopt);
  {
    OpBuilder::InsertionGuard guard(rewriter);
    rewriter.setInsertionPoint(forall.getTerminator());
    chunkBody = forall.getBody();
    Value acc = forall.getRegionIterArgs().front();
    Value chunk = forall.getInductionVars().front();
    Value chunkOffset = times(rewriter, loc, chunk, perChunk * panel);
    Slice chunkSlice =
        columns(rewriter, loc, acc, chunkOffset, perChunk * panel);
    Value chunkAcc = extract(rewriter, loc, acc, chunkSlice);
    Value first = times(rewriter, loc, chunk, perChunk);
    // The loops of a chunk, outermost first: groups of panels whose
    // accumulator stays in cache while the activation's blocks pass
    // (GotoBLAS's nc), row blocks, k blocks, then the group's panels.
    int64_t perGroup =
        plan.groupOutputs
            ? fitTile(perChunk, std::max<int64_t>(1, plan.groupOutputs / panel))
            : perChunk;
    // One k block (rows at `rowOffset`, k at `kOffset`) of the panels from
    // `groupFirst` into `blockAcc` (the group's columns of those rows).
    auto panelsOverBlock = [&](Value groupFirst, OpFoldResult rowOffset,
                               OpFoldResult kOffset, Value blockAcc) {
      // The activation's block, for every panel of the group: copied,
      // contiguous (in place its rows are a whole row of k apart, a power
      // of two for real models, and share L1 sets with each other and
      // with the accumulator's rows).
      SmallVector<Value> inputs;
      for (auto [in, activation] :
           llvm::zip_equal(op.getDpsInputOperands(), activations)) {
        if (!activation || !blocked) {
          inputs.push_back(activation);
          continue;
        }
        Slice block = sliceOf(
            rewriter, loc, activation, op.getMatchingIndexingMap(in),
            {{plan.mDim, rowOffset, rowBlock}, {plan.kDim, kOffset, kBlock}});
        Value copy = tensor::EmptyOp::create(
            rewriter, loc, block.type.getShape(), block.type.getElementType());
        inputs.push_back(
            linalg::CopyOp::create(
                rewriter, loc, extract(rewriter, loc, activation, block), copy)
                .getResult(0));
      }
      // The panels: independent (a forall, so that nothing is carried from
      // one to the next), run one after the other.
      auto inner = scf::ForallOp::create(
          rewriter, loc,
          ArrayRef<OpFoldResult>{rewriter.getIndexAttr(perGroup)},
          ValueRange{blockAcc}, std::nullopt);
      inner->setAttr(kSerialPanelsAttr, rewriter.getUnitAttr());
      OpBuilder::InsertionGuard innerGuard(rewriter);
      rewriter.setInsertionPoint(inner.getTerminator());
      Value c = inner.getInductionVars().front();
      Value index = arith::AddIOp::create(rewriter, loc, groupFirst, c);
      Value innerAcc = inner.getRegionIterArgs().front();
      auto [value, slice] = panelStep(rewriter, loc, index, kOffset, inputs,
                                      innerAcc, times(rewriter, loc, c, panel),
                                      times(rewriter, loc, index, panel));
      rewriter.setInsertionPointToStart(inner.getTerminator().getBody());
      tensor::ParallelInsertSliceOp::create(rewriter, loc, value, innerAcc,
                                            slice.offsets, slice.sizes,
                                            slice.strides);
      return inner.getResult(0);
    };
    // The k blocks of one row block (at `rowOffset`) of a group.
    auto rowsOverK = [&](Value groupFirst, OpFoldResult rowOffset,
                         Value rowsIn) -> Value {
      Slice rows = sliceOf(rewriter, loc, rowsIn, outMap,
                           {{plan.mDim, rowOffset, rowBlock}});
      Value rowsAcc =
          rowBlock < numRows ? extract(rewriter, loc, rowsIn, rows) : rowsIn;
      Value rowsOut = overBlocks(
          loc, numK / kBlock, kBlock, rowsAcc,
          [&](OpFoldResult kOffset, Value blockAcc) -> Value {
            return panelsOverBlock(groupFirst, rowOffset, kOffset, blockAcc);
          });
      if (rowBlock == numRows)
        return rowsOut;
      return tensor::InsertSliceOp::create(rewriter, loc, rowsOut, rowsIn,
                                           rows.offsets, rows.sizes,
                                           rows.strides)
          .getResult();
    };
    Value chunkResult = overBlocks(
        loc, perChunk / perGroup, perGroup, chunkAcc,
        [&](OpFoldResult groupOffset, Value groupIn) -> Value {
          if (perGroup == perChunk)
            return overBlocks(loc, numRows / rowBlock, rowBlock, groupIn,
                              [&](OpFoldResult rowOffset, Value rowsIn) {
                                return rowsOverK(first, rowOffset, rowsIn);
                              });
          Value g = cast<Value>(groupOffset);
          Value groupFirst = arith::AddIOp::create(rewriter, loc, first, g);
          Slice cols =
              columns(rewriter, loc, groupIn, times(rewriter, loc, g, panel),
                      perGroup * panel);
          Value groupOut =
              overBlocks(loc, numRows / rowBlock, rowBlock,
                         extract(rewriter, loc, groupIn, cols),
                         [&](OpFoldResult rowOffset, Value rowsIn) {
                           return rowsOverK(groupFirst, rowOffset, rowsIn);
                         });
          return tensor::InsertSliceOp::create(rewriter, loc, groupOut, groupIn,
                                               cols.offsets, cols.sizes,
                                               cols.strides)
              .getResult();
        });
    SmallVector<Value> results{chunkResult};
    if (post && !panelPost)
      results.push_back(PostScaleOp::create(
          rewriter, loc,
          RankedTensorType::get(chunkSlice.type.getShape(),
                                post.getType().getElementType()),
          chunkResult, post.getScale()));
    rewriter.setInsertionPointToStart(forall.getTerminator().getBody());
    for (auto [result, out] :
         llvm::zip_equal(results, forall.getRegionIterArgs()))
      tensor::ParallelInsertSliceOp::create(
          rewriter, loc, result, out, chunkSlice.offsets, chunkSlice.sizes,
          chunkSlice.strides);
  }
  if (!parallel || chunks == 1) {
    // One core: the loop runs where the forall stands (flashnorm-cpu-
    // codegen), possibly beside its statistic: it takes over the marks.
    forall->setAttr(kSerialPanelsAttr, rewriter.getUnitAttr());
    for (NamedAttribute attr : op->getDiscardableAttrs())
      forall->setAttr(attr.getName(), attr.getValue());
  }
  if (post) {
    rewriter.replaceOp(post, forall.getResults().back());
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
