//===- KernelBuilder.cpp - What the GPU kernel strategies share -----------===//
//
// The building half of KernelBuilder.h: bodies cloned into kernels, loops
// mapped to blocks and threads, launches named (the queries are in
// KernelQueries.cpp).
//
//===----------------------------------------------------------------------===//

#include "KernelBuilder.h"

#include "flashnorm/Conversion/Passes.h"

#include "mlir/Conversion/SCFToGPU/SCFToGPU.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/Transforms/ParallelLoopMapper.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/Utils/Utils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Transforms/DialectConversion.h"

#include <numeric>

using namespace mlir;
using namespace mlir::flashnorm;
using namespace mlir::flashnorm::kernels;

SmallVector<Value> kernels::applyMap(OpBuilder &b, Location loc, AffineMap map,
                                     ValueRange ivs) {
  SmallVector<Value> result;
  for (unsigned i = 0; i < map.getNumResults(); ++i) {
    AffineExpr expr = map.getResult(i);
    if (auto dim = dyn_cast<AffineDimExpr>(expr))
      result.push_back(ivs[dim.getPosition()]);
    else
      result.push_back(
          affine::AffineApplyOp::create(b, loc, map.getSubMap({i}), ivs));
  }
  return result;
}

SmallVector<Value> kernels::inlineBody(OpBuilder &b, linalg::LinalgOp op,
                                       ValueRange args, ValueRange ivs) {
  Block &body = *op.getBlock();
  IRMapping map;
  map.map(body.getArguments(), args);
  for (Operation &inner : body.without_terminator()) {
    if (auto index = dyn_cast<linalg::IndexOp>(inner)) {
      map.map(index.getResult(), ivs[index.getDim()]);
      continue;
    }
    b.clone(inner, map);
  }
  return llvm::map_to_vector(body.getTerminator()->getOperands(),
                             [&](Value v) { return map.lookupOrDefault(v); });
}

SmallVector<Value> kernels::loopSizes(OpBuilder &b, Location loc,
                                      linalg::LinalgOp op) {
  return llvm::map_to_vector(op.createLoopRanges(b, loc), [&](Range r) {
    return getValueOrCreateConstantIndexOp(b, loc, r.size);
  });
}

void kernels::allowContraction(Value acc) {
  auto add = acc.getDefiningOp<arith::AddFOp>();
  if (!add)
    return;
  auto contract = arith::FastMathFlagsAttr::get(acc.getContext(),
                                                arith::FastMathFlags::contract);
  add.setFastmathAttr(contract);
  for (Value operand : add->getOperands())
    if (auto mul = operand.getDefiningOp<arith::MulFOp>())
      mul.setFastmathAttr(contract);
}

Value kernels::loadAt(OpBuilder &b, Location loc, Value buffer, AffineMap map,
                      ValueRange ivs) {
  return memref::LoadOp::create(b, loc, buffer, applyMap(b, loc, map, ivs));
}

Value kernels::to2d(OpBuilder &b, Location loc, Value buffer) {
  auto type = cast<MemRefType>(buffer.getType());
  if (type.getRank() == 2)
    return buffer;
  SmallVector<ReassociationIndices> groups{{}, {type.getRank() - 1}};
  for (int64_t d = 0; d < type.getRank() - 1; ++d)
    groups[0].push_back(d);
  return memref::CollapseShapeOp::create(b, loc, buffer, groups);
}

Value kernels::zeroFragment(OpBuilder &b, Location loc) {
  auto type = VectorType::get({16, 8}, b.getF32Type());
  return arith::ConstantOp::create(
      b, loc, type, DenseElementsAttr::get(type, b.getF32FloatAttr(0)));
}

Value kernels::multiplyFragments(OpBuilder &b, Location loc, Value a, Value w,
                                 Value acc) {
  MLIRContext *ctx = b.getContext();
  AffineExpr m, n, k;
  bindDims(ctx, m, n, k);
  using Exprs = ArrayRef<AffineExpr>;
  auto maps = b.getAffineMapArrayAttr(AffineMap::inferFromExprList(
      ArrayRef<Exprs>{Exprs{m, k}, Exprs{n, k}, Exprs{m, n}}, ctx));
  auto parallel =
      vector::IteratorTypeAttr::get(ctx, vector::IteratorType::parallel);
  auto iterators = b.getArrayAttr(
      {parallel, parallel,
       vector::IteratorTypeAttr::get(ctx, vector::IteratorType::reduction)});
  return vector::ContractionOp::create(b, loc, a, w, acc, maps, iterators);
}

Value kernels::halfFragment(OpBuilder &b, Location loc, Value a, int64_t half) {
  auto type = cast<VectorType>(a.getType());
  return vector::ExtractStridedSliceOp::create(
      b, loc, a, ArrayRef<int64_t>{8 * half, 0},
      ArrayRef<int64_t>{8, type.getDimSize(1)}, ArrayRef<int64_t>{1, 1});
}

Value kernels::scaleElements(OpBuilder &b, Location loc, Value x, Value scale,
                             bool zeroRows) {
  Type f32 = b.getF32Type();
  auto vector = dyn_cast<VectorType>(x.getType());
  Type element = getElementTypeOrSelf(x.getType());
  Type wide = vector ? Type(VectorType::get(vector.getShape(), f32)) : f32;
  if (element != f32)
    x = arith::ExtFOp::create(b, loc, wide, x);
  Value s =
      vector ? Value(vector::BroadcastOp::create(b, loc, wide, scale)) : scale;
  Value v = arith::MulFOp::create(b, loc, x, s);
  if (zeroRows) {
    Value isZero = arith::CmpFOp::create(
        b, loc, arith::CmpFPredicate::OEQ, scale,
        arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0)));
    Value zeros = arith::ConstantOp::create(b, loc, wide, b.getZeroAttr(wide));
    v = arith::SelectOp::create(b, loc, isZero, zeros, v);
  }
  if (element != f32)
    v = arith::TruncFOp::create(
        b, loc,
        vector ? Type(VectorType::get(vector.getShape(), element)) : element,
        v);
  return v;
}

Value kernels::loadElements(OpBuilder &b, Location loc, Value buffer,
                            ValueRange at, int64_t width) {
  if (width == 1)
    return memref::LoadOp::create(b, loc, buffer, at);
  Type element = cast<MemRefType>(buffer.getType()).getElementType();
  return vector::LoadOp::create(b, loc, VectorType::get({width}, element),
                                buffer, at, /*nontemporal=*/false,
                                llvm::Align(16));
}

void kernels::storeElements(OpBuilder &b, Location loc, Value value,
                            Value buffer, ValueRange at, int64_t width) {
  if (width == 1)
    memref::StoreOp::create(b, loc, value, buffer, at);
  else
    vector::StoreOp::create(b, loc, value, buffer, at, /*nontemporal=*/false,
                            llvm::Align(16));
}

/// Row-major indices of `linear` over `sizes`.
static SmallVector<Value> delinearize(OpBuilder &b, Location loc, Value linear,
                                      ArrayRef<Value> sizes) {
  SmallVector<Value> ivs(sizes.size());
  for (int i = sizes.size() - 1; i >= 0; --i) {
    ivs[i] = i == 0 ? linear : arith::RemUIOp::create(b, loc, linear, sizes[i]);
    if (i > 0)
      linear = arith::DivUIOp::create(b, loc, linear, sizes[i]);
  }
  return ivs;
}

/// The indices of the output row block `linear` computes: row-major over
/// `sizes`, or with `weightRowsOuter` over the loops the weight (the
/// projection's second input) reads first, the others fastest (a decode
/// step's few rows then read each weight row while it is in L2).
static SmallVector<Value> blockIndices(OpBuilder &b, Location loc,
                                       linalg::LinalgOp op, Value linear,
                                       ArrayRef<Value> sizes,
                                       bool weightRowsOuter) {
  if (!weightRowsOuter)
    return delinearize(b, loc, linear, sizes);
  AffineMap weight = op.getMatchingIndexingMap(op.getDpsInputOperand(1));
  SmallVector<unsigned> order;
  for (unsigned d = 0; d < sizes.size(); ++d)
    if (weight.isFunctionOfDim(d))
      order.push_back(d);
  for (unsigned d = 0; d < sizes.size(); ++d)
    if (!weight.isFunctionOfDim(d))
      order.push_back(d);
  SmallVector<Value> permuted =
      llvm::map_to_vector(order, [&](unsigned d) { return sizes[d]; });
  SmallVector<Value> at = delinearize(b, loc, linear, permuted);
  SmallVector<Value> ivs(sizes.size());
  for (auto [position, d] : llvm::enumerate(order))
    ivs[d] = at[position];
  return ivs;
}

std::pair<gpu::LaunchOp, SmallVector<Value>>
KernelBuilder::launchPerRow(OpBuilder &b, Location loc, linalg::LinalgOp op,
                            int64_t blockThreads, bool weightRowsOuter) {
  SmallVector<Value> sizes = loopSizes(b, loc, op);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  Value rows = one;
  for (Value size : ArrayRef(sizes).drop_back())
    rows = arith::MulIOp::create(b, loc, rows, size);
  Value blockSize = arith::ConstantIndexOp::create(b, loc, blockThreads);
  auto launch =
      gpu::LaunchOp::create(b, loc, rows, one, one, blockSize, one, one);
  b.setInsertionPointToStart(&launch.getBody().front());
  SmallVector<Value> ivs =
      blockIndices(b, loc, op, launch.getBlockIds().x,
                   ArrayRef(sizes).drop_back(), weightRowsOuter);
  return {launch, ivs};
}

scf::ForOp KernelBuilder::buildKLoop(
    OpBuilder &b, Location loc, linalg::LinalgOp op, ArrayRef<Value> ivs,
    Value tid, int64_t blockThreads, int64_t width, ValueRange inits,
    function_ref<SmallVector<Value>(OpBuilder &, Location, ArrayRef<Value>,
                                    ArrayRef<Value>, ValueRange)>
        body,
    function_ref<bool(OpOperand *)> loaded) {
  SmallVector<OpOperand *> inputs;
  for (OpOperand *in : op.getDpsInputOperands())
    if (!loaded || loaded(in))
      inputs.push_back(in);
  Value steps = loopSizes(b, loc, op).back();
  int64_t unroll = 1;
  if (width > 1) {
    int64_t k = op.getStaticLoopRanges().back();
    for (int64_t u : {4, 2})
      if (unroll == 1 && (k / width) % (blockThreads * u) == 0)
        unroll = u;
    steps = arith::DivUIOp::create(
        b, loc, steps, arith::ConstantIndexOp::create(b, loc, width));
  }
  Value stride = arith::ConstantIndexOp::create(b, loc, blockThreads * unroll);
  return scf::ForOp::create(
      b, loc, tid, steps, stride, inits,
      [&](OpBuilder &nb, Location l, Value step, ValueRange iter) {
        SmallVector<Value> at(ivs);
        if (width == 1) {
          at.push_back(step);
          SmallVector<Value> args;
          for (OpOperand *in : inputs)
            args.push_back(
                loadAt(nb, l, in->get(), op.getMatchingIndexingMap(in), at));
          scf::YieldOp::create(nb, l, body(nb, l, args, at, iter));
          return;
        }
        at.push_back(nullptr);
        auto index = [&](int64_t c) {
          return arith::ConstantIndexOp::create(nb, l, c);
        };
        // Vector u of this thread starts at element (step + u threads) w.
        SmallVector<Value> starts;
        SmallVector<SmallVector<Value>> vectors(unroll);
        for (int64_t u = 0; u < unroll; ++u) {
          Value atU =
              arith::AddIOp::create(nb, l, step, index(u * blockThreads));
          starts.push_back(arith::MulIOp::create(nb, l, atU, index(width)));
          at.back() = starts.back();
          for (OpOperand *in : inputs) {
            auto type = cast<MemRefType>(in->get().getType());
            int64_t bytes = width * type.getElementTypeBitWidth() / 8;
            vectors[u].push_back(vector::LoadOp::create(
                nb, l, VectorType::get({width}, type.getElementType()),
                in->get(), applyMap(nb, l, op.getMatchingIndexingMap(in), at),
                /*nontemporal=*/false, llvm::MaybeAlign(bytes)));
          }
        }
        SmallVector<Value> carried(iter);
        for (int64_t u = 0; u < unroll; ++u)
          for (int64_t lane = 0; lane < width; ++lane) {
            at.back() = arith::AddIOp::create(nb, l, starts[u], index(lane));
            SmallVector<Value> args;
            for (Value v : vectors[u])
              args.push_back(vector::ExtractOp::create(nb, l, v, lane));
            carried = body(nb, l, args, at, carried);
          }
        scf::YieldOp::create(nb, l, carried);
      });
}

Value KernelBuilder::blockSum(OpBuilder &b, Location loc, Value value) {
  return gpu::AllReduceOp::create(
             b, loc, value,
             gpu::AllReduceOperationAttr::get(b.getContext(),
                                              gpu::AllReduceOperation::ADD),
             b.getUnitAttr())
      .getResult();
}

/// Innermost dimension on `first` (x), then y, z; the rest run sequentially.
static void setMapping(scf::ParallelOp loop, gpu::Processor first) {
  unsigned rank = loop.getNumLoops();
  MLIRContext *ctx = loop.getContext();
  AffineMap id = AffineMap::getMultiDimIdentityMap(1, ctx);
  SmallVector<gpu::ParallelLoopDimMappingAttr> mapping;
  for (unsigned d = 0; d < rank; ++d) {
    unsigned fromInner = rank - 1 - d;
    gpu::Processor p = fromInner < 3
                           ? static_cast<gpu::Processor>(
                                 static_cast<unsigned>(first) + fromInner)
                           : gpu::Processor::Sequential;
    mapping.push_back(gpu::ParallelLoopDimMappingAttr::get(ctx, p, id, id));
  }
  (void)gpu::setMappingAttr(loop, mapping);
}

/// Whether a dimension of `loop` whose blocks setMapping puts on the
/// grid's y or z (one block per iteration) may exceed their limit (65535
/// blocks; x takes 2^31 - 1): more rows than that (a long prompt, a prepare
/// function's 128256-row embedding) or an unknown number.
static bool mayExceedGridYZ(scf::ParallelOp loop) {
  constexpr int64_t kMaxGridYZ = 65535;
  // A bound is a constant or (as linalg's loops write them) the static size
  // of a buffer.
  auto known = [](Value v) -> std::optional<int64_t> {
    if (std::optional<int64_t> c = getConstantIntValue(v))
      return c;
    auto dim = v.getDefiningOp<memref::DimOp>();
    std::optional<int64_t> index = dim ? dim.getConstantIndex() : std::nullopt;
    auto type = dim ? dyn_cast<MemRefType>(dim.getSource().getType()) : nullptr;
    if (!index || !type || *index >= type.getRank() ||
        type.isDynamicDim(*index))
      return std::nullopt;
    return type.getDimSize(*index);
  };
  unsigned rank = loop.getNumLoops();
  for (unsigned d = rank > 3 ? rank - 3 : 0; d + 1 < rank; ++d) {
    std::optional<int64_t> lb = known(loop.getLowerBound()[d]),
                           ub = known(loop.getUpperBound()[d]),
                           step = known(loop.getStep()[d]);
    if (!lb || !ub || !step || *step < 1 ||
        llvm::divideCeil(std::max<int64_t>(*ub - *lb, 0), *step) > kMaxGridYZ)
      return true;
  }
  return false;
}

LogicalResult KernelBuilder::launchParallel(scf::ParallelOp loop,
                                            StringRef role) {
  unsigned rank = loop.getNumLoops();
  SmallVector<int64_t> tile(rank, 1);
  std::optional<int64_t> inner =
      getConstantIntValue(loop.getUpperBound()[rank - 1]);
  // (A 0-sized dimension still takes one thread: its grid is empty, and
  // the runtime launches nothing.)
  tile.back() = inner ? std::clamp<int64_t>(*inner, 1, threads) : threads;
  // Blocks that y or z cannot hold are all taken along x, as one
  // linearized dimension. (Each dimension but the innermost is tiled by 1:
  // as many blocks as iterations.)
  bool linearize = rank > 1 && mayExceedGridYZ(loop);
  auto [outerLoop, innerLoop] =
      scf::tileParallelLoop(loop, tile, /*noMinMaxBounds=*/true);
  if (linearize) {
    IRRewriter rewriter(outerLoop);
    std::vector<unsigned> all(rank);
    std::iota(all.begin(), all.end(), 0u);
    collapseParallelLoops(rewriter, outerLoop, {all});
    outerLoop = cast<scf::ParallelOp>(innerLoop->getParentOp());
  }
  setMapping(outerLoop, gpu::Processor::BlockX);
  setMapping(innerLoop, gpu::Processor::ThreadX);
  // Only this loop is mapped, so the conversion touches only it.
  RewritePatternSet patterns(fn.getContext());
  populateParallelLoopToGPUPatterns(patterns);
  ConversionTarget target(*fn.getContext());
  target.addLegalDialect<affine::AffineDialect, arith::ArithDialect,
                         gpu::GPUDialect, memref::MemRefDialect,
                         scf::SCFDialect, math::MathDialect>();
  target.markUnknownOpDynamicallyLegal([](Operation *) { return true; });
  configureParallelLoopToGPULegality(target);
  Operation *anchor = outerLoop->getParentOp();
  Location loc = outerLoop.getLoc();
  if (failed(applyPartialConversion(anchor, target, std::move(patterns))))
    return emitError(loc, "flashnorm-gpu-kernels: cannot map this loop "
                          "nest to a GPU kernel");
  finalizeParallelLoopToGPUConversion(anchor);
  // The new launch is the one without a name.
  anchor->walk([&](gpu::LaunchOp launch) {
    if (!launch.getFunctionAttr())
      name(launch, role);
  });
  return success();
}

void KernelBuilder::name(gpu::LaunchOp launch, StringRef role) {
  MLIRContext *ctx = fn.getContext();
  std::string module = (fn.getSymName() + "_kernels").str();
  std::string kernel =
      (fn.getSymName() + "_" + role + "_" + Twine(count++)).str();
  launch.setModuleAttr(FlatSymbolRefAttr::get(ctx, module));
  launch.setFunctionAttr(FlatSymbolRefAttr::get(ctx, kernel));
  reporter.applied(launch, "kernel @" + kernel);
}
