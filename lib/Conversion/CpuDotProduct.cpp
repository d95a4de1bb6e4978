//===- CpuDotProduct.cpp - Contractions read along k on the CPU -----------===//
//
// See CpuDotProduct.h: a contraction whose inputs are both contiguous along
// k becomes lanes of partial sums (an element-wise multiply-add over
// contiguous vectors) and one horizontal sum per output.
//
//===----------------------------------------------------------------------===//

#include "CpuDotProduct.h"

#include "flashnorm/Analysis/Projection.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Async/IR/Async.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;
using namespace mlir::flashnorm;

int64_t flashnorm::fitTile(int64_t size, int64_t want) {
  int64_t t = std::max<int64_t>(1, std::min(size, want));
  while (size % t)
    --t;
  return t;
}

/// `type` with its last dimension split into (size / lanes, lanes), and the
/// reassociation that does it.
static std::pair<SmallVector<int64_t>, SmallVector<ReassociationIndices>>
splitLastDim(MemRefType type, int64_t lanes) {
  SmallVector<int64_t> shape(type.getShape());
  shape.back() /= lanes;
  shape.push_back(lanes);
  SmallVector<ReassociationIndices> reassociation;
  int64_t last = type.getRank() - 1;
  for (int64_t d = 0; d < last; ++d)
    reassociation.push_back({d});
  reassociation.push_back({last, last + 1});
  return {shape, reassociation};
}

FailureOr<ContractionRoles>
flashnorm::matchSplitK(linalg::LinalgOp op, ArrayRef<AffineMap> inputMaps,
                       int64_t lanes, std::string &why) {
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  if (llvm::any_of(ranges, ShapedType::isDynamic)) {
    why = "dynamic sizes";
    return failure();
  }
  FailureOr<ContractionRoles> roles = classifyContraction(op, 0, &why);
  if (failed(roles))
    return failure();
  AffineExpr k = getAffineDimExpr(roles->k, op.getContext());
  for (AffineMap map : inputMaps)
    if (map.getNumResults() == 0 || map.getResults().back() != k) {
      why = "an input is not indexed by k last (the micro-kernel's case)";
      return failure();
    }
  if (ranges[roles->k] % lanes || ranges[roles->k] / lanes < 2) {
    why = "k is not a multiple of two or more vectors";
    return failure();
  }
  return roles;
}

FailureOr<DotPlan> flashnorm::planDotProduct(linalg::LinalgOp op,
                                             const DotOptions &options,
                                             std::string &why) {
  int64_t lanes = options.lanes;
  ArrayRef<int64_t> tiles = options.tiles;
  if (op.getNumDpsInputs() != 2 || op.getNumDpsInits() != 1) {
    why = "not two inputs and one output";
    return failure();
  }
  auto outType = dyn_cast<MemRefType>(op.getDpsInitOperand(0)->get().getType());
  if (!outType || !isa<FloatType>(outType.getElementType())) {
    why = "not a floating-point output buffer";
    return failure();
  }
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  FailureOr<ContractionRoles> roles =
      matchSplitK(op, ArrayRef(maps).drop_back(), lanes, why);
  if (failed(roles))
    return failure();
  if (roles->dims.n.empty()) {
    why = "no output dimension of the weight";
    return failure();
  }
  unsigned k = roles->k;
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  auto accWidth = outType.getElementType().getIntOrFloatBitWidth();
  for (OpOperand *input : op.getDpsInputOperands()) {
    auto type = dyn_cast<MemRefType>(input->get().getType());
    if (!type || !isa<FloatType>(type.getElementType()) ||
        type.getElementType().getIntOrFloatBitWidth() > accWidth) {
      why = "an input is not a float buffer no wider than the output";
      return failure();
    }
    SmallVector<int64_t> strides;
    int64_t offset;
    if (failed(type.getStridesAndOffset(strides, offset)) ||
        strides.back() != 1) {
      why = "an input is not contiguous along k";
      return failure();
    }
  }
  for (OpOperand *input : op.getDpsInputOperands()) {
    auto [shape, reassociation] =
        splitLastDim(cast<MemRefType>(input->get().getType()), lanes);
    if (failed(memref::ExpandShapeOp::computeExpandedType(
            cast<MemRefType>(input->get().getType()), shape, reassociation))) {
      why = "an input's layout cannot be split along k";
      return failure();
    }
  }

  // The register tile: mt rows by nt outputs of `lanes` partial sums each,
  // the accumulators half of the registers (beside mt + nt loads per step;
  // at most 8 outputs, a single row's FMA chains). Lanes wider than a
  // register take as many registers each.
  unsigned numLoops = op.getNumLoops();
  unsigned n = roles->dims.n.back();
  int64_t rows = roles->dims.m.empty() ? 1 : ranges[roles->dims.m.back()];
  const RegisterTile &regs = options.registers;
  int64_t perLane = std::max<int64_t>(1, lanes / regs.lanes);
  int64_t accumulators = std::max<int64_t>(1, regs.dotAccumulators() / perLane);
  int64_t mt = fitTile(
      rows, tiles.empty() ? std::min(regs.dotRows(), accumulators) : tiles[0]);
  int64_t nt =
      fitTile(ranges[n], tiles.empty() ? std::min<int64_t>(8, accumulators / mt)
                                       : tiles[1]);
  DotPlan plan;
  plan.op = op;
  plan.k = k;
  plan.lanes = lanes;
  plan.tileSizes.assign(numLoops + 1, 1);
  if (!roles->dims.m.empty())
    plan.tileSizes[roles->dims.m.back()] = mt;
  plan.tileSizes[n] = nt;
  plan.tileSizes[numLoops] = lanes;
  // Loop order: batch, outputs, rows, ko (lanes in one tile): a tile of
  // weight rows is read from memory once and stays in cache while every
  // row block of the activation passes over it.
  llvm::append_range(plan.interchange, roles->dims.batch);
  llvm::append_range(plan.interchange, roles->dims.n);
  llvm::append_range(plan.interchange, roles->dims.m);
  plan.interchange.push_back(k);
  plan.interchange.push_back(numLoops);
  // The blocks the split runs on, one after another, all in the same small
  // buffer of partial sums (at most 32 KiB: in L1, never a page fault):
  // up to 16 rows by as many outputs as fit, outputs outside rows, so that
  // a block's weight rows are read from memory once and stay in cache
  // while every row block passes over them.
  int64_t mb = fitTile(rows, std::max<int64_t>(mt, 16));
  int64_t bytes = outType.getElementTypeBitWidth() / 8;
  int64_t nb = fitTile(
      ranges[n], std::max<int64_t>(nt, (32 << 10) / (mb * lanes * bytes)));
  plan.blockSizes.assign(numLoops, 0);
  for (unsigned d : roles->dims.batch)
    plan.blockSizes[d] = 1;
  for (unsigned d : roles->dims.m)
    plan.blockSizes[d] = d == roles->dims.m.back() ? mb : 1;
  for (unsigned d : roles->dims.n)
    plan.blockSizes[d] = d == n ? nb : 1;
  llvm::append_range(plan.blockInterchange, roles->dims.batch);
  llvm::append_range(plan.blockInterchange, roles->dims.n);
  llvm::append_range(plan.blockInterchange, roles->dims.m);
  plan.blockInterchange.push_back(k);
  // The cores, where a large weight is split into more than one block.
  int64_t numBlocks = 1;
  for (auto [range, block] : llvm::zip(ranges, plan.blockSizes))
    numBlocks *= block ? range / block : 1;
  plan.parallel =
      numBlocks > 1 &&
      mayUseCores(op,
                  cast<MemRefType>(op.getDpsInputOperand(1)->get().getType()),
                  options.threads, options.parallelMinBytes);
  return plan;
}

bool flashnorm::mayUseCores(Operation *op, MemRefType weight, int64_t threads,
                            int64_t minBytes) {
  return threads > 1 &&
         weight.getNumElements() * weight.getElementTypeBitWidth() / 8 >=
             minBytes &&
         !op->getParentOfType<async::ExecuteOp>();
}

FailureOr<DotOps> flashnorm::buildDotProduct(RewriterBase &rewriter,
                                             const DotPlan &plan) {
  Operation *contraction = linalg::LinalgOp(plan.op).getOperation();
  MLIRContext *ctx = contraction->getContext();
  Location loc = contraction->getLoc();
  // Loops over the blocks, the contraction of one block's views inside.
  rewriter.setInsertionPoint(contraction);
  scf::SCFTilingOptions options;
  options.setTileSizes(getAsIndexOpFoldResult(ctx, plan.blockSizes));
  options.setInterchange(plan.blockInterchange);
  if (plan.parallel)
    options.setLoopType(scf::SCFTilingOptions::LoopType::ForallOp);
  FailureOr<scf::SCFTilingResult> blocks =
      scf::tileUsingSCF(rewriter, cast<TilingInterface>(contraction), options);
  if (failed(blocks))
    return failure();
  rewriter.eraseOp(contraction);
  auto op = cast<linalg::LinalgOp>(blocks->tiledOps.front());
  Operation *outermost =
      blocks->loops.empty() ? op.getOperation() : blocks->loops.front();

  // A buffer of partial sums, a block's output with a dimension of lanes:
  // one for all blocks, or one per block where they run on the cores.
  OpOperand *init = op.getDpsInitOperand(0);
  auto outType = cast<MemRefType>(init->get().getType());
  Type element = outType.getElementType();
  SmallVector<int64_t> partialShape(outType.getShape());
  partialShape.push_back(plan.lanes);
  Operation *scope = plan.parallel ? op.getOperation() : outermost;
  rewriter.setInsertionPoint(scope);
  Value partial = memref::AllocOp::create(
      rewriter, loc, MemRefType::get(partialShape, element));
  rewriter.setInsertionPointAfter(scope);
  memref::DeallocOp::create(rewriter, loc, partial);

  unsigned numLoops = op.getNumLoops();
  AffineExpr lane = getAffineDimExpr(numLoops, ctx);
  auto withLane = [&](AffineMap map) {
    SmallVector<AffineExpr> results(map.getResults());
    results.push_back(lane);
    return AffineMap::get(numLoops + 1, 0, results, ctx);
  };
  rewriter.setInsertionPoint(op);
  // Inputs: k split into (ko, lane), a view.
  SmallVector<Value> inputs;
  SmallVector<AffineMap> maps;
  for (OpOperand *input : op.getDpsInputOperands()) {
    auto [shape, reassociation] =
        splitLastDim(cast<MemRefType>(input->get().getType()), plan.lanes);
    inputs.push_back(memref::ExpandShapeOp::create(
        rewriter, loc, shape, input->get(), reassociation));
    AffineMap map = op.getMatchingIndexingMap(input);
    SmallVector<AffineExpr> results(map.getResults().drop_back());
    results.push_back(map.getResults().back()); // ko
    results.push_back(lane);
    maps.push_back(AffineMap::get(numLoops + 1, 0, results, ctx));
  }
  maps.push_back(withLane(op.getMatchingIndexingMap(init)));

  // Zeroed, then the contraction's own scalar body over the split loops.
  Value zero = arith::ConstantOp::create(rewriter, loc, element,
                                         rewriter.getZeroAttr(element));
  auto fill = linalg::FillOp::create(rewriter, loc, zero, partial);
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  iterators.push_back(utils::IteratorType::parallel);
  auto sums = linalg::GenericOp::create(rewriter, loc, TypeRange{}, inputs,
                                        ValueRange{partial}, maps, iterators);
  rewriter.cloneRegionBefore(op->getRegion(0), sums.getRegion(),
                             sums.getRegion().end());

  // out += the lanes' sum.
  unsigned rank = outType.getRank();
  AffineMap all = rewriter.getMultiDimIdentityMap(rank + 1);
  AffineMap dropLane =
      AffineMap::get(rank + 1, 0, all.getResults().drop_back(), ctx);
  SmallVector<utils::IteratorType> sumIterators(rank,
                                                utils::IteratorType::parallel);
  sumIterators.push_back(utils::IteratorType::reduction);
  auto total = linalg::GenericOp::create(
      rewriter, loc, TypeRange{}, ValueRange{partial}, ValueRange{init->get()},
      ArrayRef<AffineMap>{all, dropLane}, sumIterators,
      [](OpBuilder &b, Location l, ValueRange args) {
        Value sum = arith::AddFOp::create(b, l, args[1], args[0]);
        linalg::YieldOp::create(b, l, sum);
      });
  rewriter.eraseOp(op);
  return DotOps{sums,
                {cast<linalg::LinalgOp>(fill.getOperation()),
                 cast<linalg::LinalgOp>(total.getOperation())}};
}

void flashnorm::fuseDotMultiplyAdds(RewriterBase &rewriter, Operation *root) {
  SmallVector<vector::MultiDimReductionOp> reductions;
  root->walk([&](vector::MultiDimReductionOp op) { reductions.push_back(op); });
  for (vector::MultiDimReductionOp op : reductions) {
    auto mul = op.getSource().getDefiningOp<arith::MulFOp>();
    auto acc = dyn_cast<VectorType>(op.getAcc().getType());
    if (op.getKind() != vector::CombiningKind::ADD || !mul ||
        !mul->hasOneUse() || !acc)
      continue;
    // Only unit dimensions are reduced: the reduction is one add per lane.
    VectorType source = op.getSourceVectorType();
    if (llvm::any_of(op.getReductionDims(),
                     [&](int64_t d) { return source.getDimSize(d) != 1; }))
      continue;
    rewriter.setInsertionPoint(op);
    Value lhs =
        vector::ShapeCastOp::create(rewriter, op.getLoc(), acc, mul.getLhs());
    Value rhs =
        vector::ShapeCastOp::create(rewriter, op.getLoc(), acc, mul.getRhs());
    rewriter.replaceOpWithNewOp<vector::FMAOp>(op, lhs, rhs, op.getAcc());
    rewriter.eraseOp(mul);
  }
}
