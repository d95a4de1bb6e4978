//===- PanelLoops.cpp - The loops of a projection over panels (CPU) -------===//
//
// applyPacking (PackPanels.h): a planned projection rebuilt over its weight's
// panels [N / P][K][P]. The loops, outermost first, as GotoBLAS orders them:
// chunks of panels, one per core (an scf.forall); in each, groups of panels
// whose accumulator stays in cache (nc); row blocks and k blocks of the
// activation (mc, kc), each block copied contiguous; then the group's
// panels, each a linalg.contract of the block with one panel, which
// flashnorm-cpu-codegen turns into the register-tiled micro-kernel. The
// plan (PanelPlan) has decided every size; nothing here refuses.
//
//===----------------------------------------------------------------------===//

#include "PackPanels.h"

#include "CpuCopies.h"
#include "CpuDotProduct.h"

#include "flashnorm/Conversion/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Matchers.h"

using namespace mlir;
using namespace mlir::flashnorm;

namespace {
/// The loops applyPacking builds, outermost first: an `scf.forall` over
/// chunks of panels (one per core), in each chunk groups of panels whose
/// accumulator stays in cache while the activation's blocks pass
/// (GotoBLAS's nc), row blocks, k blocks (the activation's block copied),
/// then a serial forall over the group's panels, each a `linalg.contract`
/// of the block with one panel. A level of one iteration is no loop. One
/// method per level; every value is built with the one rewriter, at its
/// insertion point.
class PanelLoops {
public:
  PanelLoops(RewriterBase &rewriter, const PanelPlan &plan, Value panels,
             bool fusePost);

  /// Builds the forall of `chunks` chunks in place of the projection and
  /// returns it (its last result replaces the projection, or its fused
  /// post-scale).
  scf::ForallOp build(int64_t chunks);

private:
  /// A loop dimension's part: [offset, offset + size) of loop `dim`.
  struct LoopBound {
    unsigned dim;
    OpFoldResult offset;
    int64_t size;
  };
  /// A slice of a tensor: what extract_slice and insert_slice take.
  struct Slice {
    SmallVector<OpFoldResult> offsets, sizes, strides;
    RankedTensorType type;
  };

  /// The accumulator's type when `element` is a narrower float (bf16, f16),
  /// else `element`.
  Type widened(Type element);
  /// `v` widened to widened() of its element type (`v` when that is its own).
  Value widen(Value v);
  /// The slice of `v` (indexed through `map`) at each of `bounds`, all of
  /// the other loops.
  Slice sliceOf(Value v, AffineMap map, ArrayRef<LoopBound> bounds);
  Value extract(Value v, const Slice &slice);
  Value insert(Value part, Value into, const Slice &slice);
  /// The output columns [offset, offset + width) of `acc`.
  Slice columns(Value acc, OpFoldResult offset, int64_t width);
  Value times(Value v, int64_t c);
  /// `body` over `count` blocks of `step` (its offset and the value carried
  /// from block to block, starting at `init`): an scf.for, its bounds at
  /// the start of the chunk's body, or the body alone for one block.
  Value overBlocks(int64_t count, int64_t step, Value init,
                   function_ref<Value(OpFoldResult, Value)> body);

  /// The chunk's groups of panels (from panel `first`) into `chunkAcc`.
  Value chunk(Value first, Value chunkAcc);
  /// The row blocks of the group from panel `groupFirst` into `groupAcc`.
  Value group(Value groupFirst, Value groupAcc);
  /// The k blocks of one row block (at `rowOffset`) of a group.
  Value rowsOverK(Value groupFirst, OpFoldResult rowOffset, Value rowsIn);
  /// One k block (rows at `rowOffset`, k at `kOffset`) of the group's
  /// panels into `blockAcc` (the group's columns of those rows).
  Value panelsOverBlock(Value groupFirst, OpFoldResult rowOffset,
                        OpFoldResult kOffset, Value blockAcc);
  /// Panel `index`'s contraction over the k block at `kOffset` with the
  /// activation block `inputs` into the columns at `offset` of `acc` (of
  /// the projection's columns at `global`, and post-scaled there, when the
  /// post-scale runs per panel); the product and where it goes in `acc`.
  std::pair<Value, Slice> panelStep(Value index, OpFoldResult kOffset,
                                    ArrayRef<Value> inputs, Value acc,
                                    Value offset, Value global);

  RewriterBase &rewriter;
  const PanelPlan &plan;
  linalg::LinalgOp op;
  MLIRContext *ctx;
  Location loc;
  Value panels;
  RankedTensorType panelsType;
  int64_t numPanels, numK;
  Value init;
  RankedTensorType initType;
  AffineMap outMap;
  ArrayAttr mapsAttr;
  /// The fused post-scale, or null.
  PostScaleOp post;
  /// The projection's inputs as the panels read them (the weight's null).
  SmallVector<Value> activations;
  /// The activation's blocks (PanelPlan::kBlock, rowBlock; whole where 0).
  int64_t kBlock, numRows, rowBlock;
  bool blocked;
  /// The post-scale in each panel's epilogue (no blocks), else over the
  /// chunk after its last block.
  bool panelPost;
  /// A zero accumulator under a post-scale fused per panel is filled panel
  /// by panel, in cache, rather than all at once before: `base` is then
  /// the fill's output.
  linalg::FillOp zeroFill;
  Value base;
  int64_t perChunk = 0, perGroup = 0;
  Block *chunkBody = nullptr;
  llvm::SmallDenseMap<int64_t, Value> blockBounds;
};
} // namespace

PanelLoops::PanelLoops(RewriterBase &rewriter, const PanelPlan &plan,
                       Value panels, bool fusePost)
    : rewriter(rewriter), plan(plan), op(plan.op), ctx(op.getContext()),
      loc(plan.loc), panels(panels),
      panelsType(cast<RankedTensorType>(panels.getType())),
      numPanels(panelsType.getDimSize(0)), numK(panelsType.getDimSize(1)),
      init(op.getDpsInitOperand(0)->get()),
      initType(cast<RankedTensorType>(init.getType())),
      outMap(op.getMatchingIndexingMap(op.getDpsInitOperand(0))),
      post(fusePost ? plan.post : nullptr) {
  // The weight is read as the panel's [k, n].
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
  maps.push_back(AffineMapAttr::get(outMap));
  mapsAttr = rewriter.getArrayAttr(maps);
  kBlock = plan.kBlock ? plan.kBlock : numK;
  numRows = op.getStaticLoopRanges()[plan.mDim];
  rowBlock = plan.rowBlock ? plan.rowBlock : numRows;
  blocked = kBlock < numK || rowBlock < numRows;
  panelPost = post && !blocked;
  auto fill = post ? init.getDefiningOp<linalg::FillOp>() : nullptr;
  if (fill && matchPattern(fill.value(), m_AnyZeroFloat()))
    zeroFill = fill;
  base = zeroFill ? zeroFill.getOutputs()[0] : init;
}

Type PanelLoops::widened(Type element) {
  auto from = dyn_cast<FloatType>(element);
  auto to = dyn_cast<FloatType>(initType.getElementType());
  if (!from || !to || from.getWidth() >= to.getWidth())
    return element;
  return to;
}

Value PanelLoops::widen(Value v) {
  auto type = dyn_cast<RankedTensorType>(v.getType());
  Type to = type ? widened(type.getElementType()) : Type();
  if (!type || to == type.getElementType())
    return v;
  Value empty = tensor::EmptyOp::create(
      rewriter, loc, tensor::getMixedSizes(rewriter, loc, v), to);
  return copyWidened(rewriter, loc, v, empty)->getResult(0);
}

PanelLoops::Slice PanelLoops::sliceOf(Value v, AffineMap map,
                                      ArrayRef<LoopBound> bounds) {
  auto type = cast<RankedTensorType>(v.getType());
  Slice slice{
      SmallVector<OpFoldResult>(type.getRank(), rewriter.getIndexAttr(0)),
      tensor::getMixedSizes(rewriter, loc, v),
      SmallVector<OpFoldResult>(type.getRank(), rewriter.getIndexAttr(1)),
      type};
  SmallVector<int64_t> shape(type.getShape());
  for (auto [pos, expr] : llvm::enumerate(map.getResults()))
    for (const LoopBound &bound : bounds)
      if (expr == getAffineDimExpr(bound.dim, ctx)) {
        slice.offsets[pos] = bound.offset;
        slice.sizes[pos] = rewriter.getIndexAttr(bound.size);
        shape[pos] = bound.size;
      }
  slice.type = RankedTensorType::get(shape, type.getElementType());
  return slice;
}

Value PanelLoops::extract(Value v, const Slice &slice) {
  return tensor::ExtractSliceOp::create(rewriter, loc, slice.type, v,
                                        slice.offsets, slice.sizes,
                                        slice.strides)
      .getResult();
}

Value PanelLoops::insert(Value part, Value into, const Slice &slice) {
  return tensor::InsertSliceOp::create(rewriter, loc, part, into, slice.offsets,
                                       slice.sizes, slice.strides)
      .getResult();
}

PanelLoops::Slice PanelLoops::columns(Value acc, OpFoldResult offset,
                                      int64_t width) {
  return sliceOf(acc, outMap, {{plan.nDim, offset, width}});
}

Value PanelLoops::times(Value v, int64_t c) {
  return affine::AffineApplyOp::create(
             rewriter, loc, AffineMap::get(1, 0, getAffineDimExpr(0, ctx) * c),
             v)
      .getResult();
}

Value PanelLoops::overBlocks(int64_t count, int64_t step, Value init,
                             function_ref<Value(OpFoldResult, Value)> body) {
  if (count == 1)
    return body(rewriter.getIndexAttr(0), init);
  auto index = [&](int64_t v) {
    Value &bound = blockBounds[v];
    if (!bound) {
      OpBuilder::InsertionGuard guard(rewriter);
      rewriter.setInsertionPointToStart(chunkBody);
      bound = arith::ConstantIndexOp::create(rewriter, loc, v);
    }
    return bound;
  };
  auto loop = scf::ForOp::create(rewriter, loc, index(0), index(count * step),
                                 index(step), ValueRange{init});
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPointToStart(loop.getBody());
  scf::YieldOp::create(
      rewriter, loc, body(loop.getInductionVar(), loop.getRegionIterArgs()[0]));
  return loop.getResult(0);
}

std::pair<Value, PanelLoops::Slice>
PanelLoops::panelStep(Value index, OpFoldResult kOffset, ArrayRef<Value> inputs,
                      Value acc, Value offset, Value global) {
  int64_t panel = plan.panel;
  auto weightType =
      RankedTensorType::get({kBlock, panel}, panelsType.getElementType());
  Value weight = tensor::ExtractSliceOp::create(
      rewriter, loc, weightType, panels,
      ArrayRef<OpFoldResult>{index, kOffset, rewriter.getIndexAttr(0)},
      ArrayRef<OpFoldResult>{rewriter.getIndexAttr(1),
                             rewriter.getIndexAttr(kBlock),
                             rewriter.getIndexAttr(panel)},
      SmallVector<OpFoldResult>(3, rewriter.getIndexAttr(1)));
  if (plan.widenPanels)
    weight = widen(weight);
  Slice slice = columns(acc, offset, panel);
  auto outType =
      RankedTensorType::get(slice.type.getShape(), initType.getElementType());
  Value out;
  if (panelPost) {
    out = extract(base, columns(base, global, panel));
    if (zeroFill)
      out = linalg::FillOp::create(rewriter, loc, zeroFill.value(), out)
                .getResult(0);
  } else {
    out = extract(acc, slice);
  }
  SmallVector<Value> operands(inputs);
  operands[plan.weightIndex] = weight;
  Value product =
      linalg::ContractOp::create(rewriter, loc, TypeRange{outType}, operands,
                                 ValueRange{out}, mapsAttr)
          .getResult(0);
  if (panelPost)
    product = PostScaleOp::create(rewriter, loc, slice.type, product,
                                  post.getScale());
  return {product, slice};
}

Value PanelLoops::panelsOverBlock(Value groupFirst, OpFoldResult rowOffset,
                                  OpFoldResult kOffset, Value blockAcc) {
  // The activation's block, for every panel of the group: copied,
  // contiguous (in place its rows are a whole row of k apart, a power of
  // two for real models, and share L1 sets with each other and with the
  // accumulator's rows).
  SmallVector<Value> inputs;
  for (auto [in, activation] :
       llvm::zip_equal(op.getDpsInputOperands(), activations)) {
    if (!activation || !blocked) {
      inputs.push_back(activation);
      continue;
    }
    Slice block = sliceOf(
        activation, op.getMatchingIndexingMap(in),
        {{plan.mDim, rowOffset, rowBlock}, {plan.kDim, kOffset, kBlock}});
    // Widened by the copy (build()).
    Value copy = tensor::EmptyOp::create(rewriter, loc, block.type.getShape(),
                                         widened(block.type.getElementType()));
    inputs.push_back(
        copyWidened(rewriter, loc, extract(activation, block), copy)
            ->getResult(0));
  }
  // The panels: independent (a forall, so that nothing is carried from one
  // to the next), run one after the other.
  auto inner = scf::ForallOp::create(
      rewriter, loc, ArrayRef<OpFoldResult>{rewriter.getIndexAttr(perGroup)},
      ValueRange{blockAcc}, std::nullopt);
  inner->setAttr(kSerialPanelsAttr, rewriter.getUnitAttr());
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPoint(inner.getTerminator());
  Value c = inner.getInductionVars().front();
  Value index = arith::AddIOp::create(rewriter, loc, groupFirst, c);
  Value innerAcc = inner.getRegionIterArgs().front();
  Value offset = times(c, plan.panel);
  Value global = times(index, plan.panel);
  auto [value, slice] =
      panelStep(index, kOffset, inputs, innerAcc, offset, global);
  rewriter.setInsertionPointToStart(inner.getTerminator().getBody());
  tensor::ParallelInsertSliceOp::create(rewriter, loc, value, innerAcc,
                                        slice.offsets, slice.sizes,
                                        slice.strides);
  return inner.getResult(0);
}

Value PanelLoops::rowsOverK(Value groupFirst, OpFoldResult rowOffset,
                            Value rowsIn) {
  Slice rows = sliceOf(rowsIn, outMap, {{plan.mDim, rowOffset, rowBlock}});
  Value rowsAcc = rowBlock < numRows ? extract(rowsIn, rows) : rowsIn;
  Value rowsOut = overBlocks(
      numK / kBlock, kBlock, rowsAcc,
      [&](OpFoldResult kOffset, Value blockAcc) -> Value {
        return panelsOverBlock(groupFirst, rowOffset, kOffset, blockAcc);
      });
  return rowBlock < numRows ? insert(rowsOut, rowsIn, rows) : rowsOut;
}

Value PanelLoops::group(Value groupFirst, Value groupAcc) {
  return overBlocks(numRows / rowBlock, rowBlock, groupAcc,
                    [&](OpFoldResult rowOffset, Value rowsIn) {
                      return rowsOverK(groupFirst, rowOffset, rowsIn);
                    });
}

Value PanelLoops::chunk(Value first, Value chunkAcc) {
  if (perGroup == perChunk)
    return group(first, chunkAcc);
  return overBlocks(
      perChunk / perGroup, perGroup, chunkAcc,
      [&](OpFoldResult groupOffset, Value groupIn) -> Value {
        Value g = cast<Value>(groupOffset);
        Value groupFirst = arith::AddIOp::create(rewriter, loc, first, g);
        Slice cols =
            columns(groupIn, times(g, plan.panel), perGroup * plan.panel);
        Value groupOut = group(groupFirst, extract(groupIn, cols));
        return insert(groupOut, groupIn, cols);
      });
}

scf::ForallOp PanelLoops::build(int64_t chunks) {
  int64_t panel = plan.panel;
  // A fused post-scale's scale may be computed after the projection; the
  // projection's operands dominate the post-scale, which uses its result.
  rewriter.setInsertionPoint(post ? post.getOperation() : op.getOperation());
  // Activations narrower than the accumulator (bf16, f16) are widened once
  // rather than at every k of every panel: the micro-kernel then broadcasts
  // f32 straight from memory (on AVX2 the per-k widening of a bf16 tile's
  // rows was about half of its instructions). Exact, as the contraction's
  // own widening is. Whole, here, when the panels read the activation in
  // place; by the copy of each block when it is blocked, which then reads
  // half the bytes and leaves no widened copy of the whole activation (a
  // buffer of M x K f32, written and read once more per call).
  for (OpOperand *in : op.getDpsInputOperands())
    activations.push_back(in->getOperandNumber() == plan.weightIndex ? Value()
                          : blocked                                  ? in->get()
                                    : widen(in->get()));
  perChunk = numPanels / chunks;
  perGroup =
      plan.groupOutputs
          ? fitTile(perChunk, std::max<int64_t>(1, plan.groupOutputs / panel))
          : perChunk;
  // The forall writes the post-scale's result when it is fused, else the
  // projection's; where the post-scale waits for the blocks, the
  // projection's accumulator is the forall's too (first), each chunk's
  // slice of it carried from block to block in place (a buffer of the
  // chunk's own, carried by a loop, would take bufferization's runtime
  // ownership checks).
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
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPoint(forall.getTerminator());
  chunkBody = forall.getBody();
  Value acc = forall.getRegionIterArgs().front();
  Value index = forall.getInductionVars().front();
  Slice chunkSlice =
      columns(acc, times(index, perChunk * panel), perChunk * panel);
  Value chunkAcc = extract(acc, chunkSlice);
  Value result = chunk(times(index, perChunk), chunkAcc);
  SmallVector<Value> results{result};
  if (post && !panelPost)
    results.push_back(PostScaleOp::create(
        rewriter, loc,
        RankedTensorType::get(chunkSlice.type.getShape(),
                              post.getType().getElementType()),
        result, post.getScale()));
  rewriter.setInsertionPointToStart(forall.getTerminator().getBody());
  for (auto [value, out] : llvm::zip_equal(results, forall.getRegionIterArgs()))
    tensor::ParallelInsertSliceOp::create(rewriter, loc, value, out,
                                          chunkSlice.offsets, chunkSlice.sizes,
                                          chunkSlice.strides);
  return forall;
}

/// The projection over the panels: for each panel b (in parallel when the
/// weight is large enough to split across cores), the original contraction
/// of the activation with panel b ([K, P], contiguous) into the output's
/// columns [b P, (b + 1) P), as a `linalg.contract` (operands cast to the
/// accumulator's type), which the vectorizer turns into a vector.contract.
void flashnorm::applyPacking(RewriterBase &rewriter, const PanelPlan &plan,
                             Value panels, bool parallel, int64_t threads,
                             bool fusePost) {
  linalg::LinalgOp op = plan.op;
  int64_t numPanels = cast<RankedTensorType>(panels.getType()).getDimSize(0);
  // `chunks` tasks (one per core), each a loop over its consecutive panels:
  // a task per panel would cost more than a decode panel's work.
  int64_t chunks = 1;
  for (int64_t c = std::min(threads, numPanels); c > 1; --c)
    if (numPanels % c == 0) {
      chunks = c;
      break;
    }
  PostScaleOp post = fusePost ? plan.post : nullptr;
  scf::ForallOp forall =
      PanelLoops(rewriter, plan, panels, fusePost).build(chunks);
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
