//===- LowerToLinalg.cpp - flashnorm ops to linalg on tensors -------------===//

#include "flashnorm/Conversion/Passes.h"
#include "flashnorm/Dialect/FlashNorm/IR/FlashNormOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/DialectConversion.h"

#include <functional>

namespace mlir::flashnorm {
#define GEN_PASS_DEF_LOWERTOLINALG
#include "flashnorm/Conversion/Passes.h.inc"
} // namespace mlir::flashnorm

using namespace mlir;
using namespace mlir::flashnorm;

namespace {

/// Casts a scalar between float types (no-op when equal).
Value castFloat(OpBuilder &b, Location loc, Value v, Type to) {
  Type from = v.getType();
  if (from == to)
    return v;
  if (from.getIntOrFloatBitWidth() < to.getIntOrFloatBitWidth())
    return arith::ExtFOp::create(b, loc, to, v);
  return arith::TruncFOp::create(b, loc, to, v);
}

Value floatConstant(OpBuilder &b, Location loc, Type t, double v) {
  return arith::ConstantOp::create(b, loc, b.getFloatAttr(t, v));
}

/// Builds the ops of a row-wise normalization: statistics over the last
/// dimension of `x` in `statType`, then an element-wise epilogue.
class RowOps {
public:
  RowOps(OpBuilder &b, Location loc, Value x, Type statType, int64_t lanes)
      : b(b), loc(loc), x(x), statType(statType),
        rank(cast<RankedTensorType>(x.getType()).getRank()), lanes(lanes) {}

  /// The body of a sum over x: acc + (x - shift)^2, without the shift
  /// (no shift operand) or the square as asked, in the statistic's type.
  std::function<void(OpBuilder &, Location, ValueRange)>
  sumBody(bool shifted, bool square) const {
    Type type = statType;
    return [=](OpBuilder &nb, Location l, ValueRange args) {
      Value v = castFloat(nb, l, args[0], type);
      if (shifted)
        v = arith::SubFOp::create(nb, l, v, args[1]);
      if (square)
        v = arith::MulFOp::create(nb, l, v, v);
      linalg::YieldOp::create(
          nb, l, Value(arith::AddFOp::create(nb, l, args.back(), v)));
    };
  }

  /// sum_k (x[r, k] - shift[r])^2, or sum_k x[r, k] when `square` is false.
  Value reduce(Value shift, bool square) {
    auto type = cast<RankedTensorType>(x.getType());
    int64_t k = type.getShape().back();
    if (lanes > 1 && !ShapedType::isDynamic(k) && k > lanes && k % lanes == 0)
      return reduceInLanes(shift, square, k);
    Value acc =
        linalg::FillOp::create(b, loc, constant(0.0), emptyRows(statType))
            .getResult(0);
    SmallVector<Value> inputs{x};
    SmallVector<AffineMap> maps{fullMap()};
    if (shift) {
      inputs.push_back(shift);
      maps.push_back(rowMap());
    }
    maps.push_back(rowMap());
    SmallVector<utils::IteratorType> iters(rank, utils::IteratorType::parallel);
    iters.back() = utils::IteratorType::reduction;
    return linalg::GenericOp::create(b, loc, TypeRange{acc.getType()}, inputs,
                                     ValueRange{acc}, maps, iters,
                                     sumBody(bool(shift), square))
        .getResult(0);
  }

  /// The same sum in `lanes` partial sums per row (x seen as [.., K / L,
  /// L], summed over K / L into [.., L], then the L added): a vector code
  /// generator keeps the partial sums in one register across the row and
  /// reduces horizontally once per row, not once per vector.
  Value reduceInLanes(Value shift, bool square, int64_t k) {
    auto type = cast<RankedTensorType>(x.getType());
    SmallVector<int64_t> shape(type.getShape());
    shape.back() = k / lanes;
    shape.push_back(lanes);
    SmallVector<ReassociationIndices> groups;
    for (int64_t d = 0; d + 1 < rank; ++d)
      groups.push_back({d});
    groups.push_back({rank - 1, rank});
    Value blocks = tensor::ExpandShapeOp::create(
        b, loc, RankedTensorType::get(shape, type.getElementType()), x, groups);
    MLIRContext *ctx = b.getContext();
    SmallVector<AffineExpr> rows, partial;
    for (unsigned d = 0; d + 1 < rank; ++d)
      rows.push_back(getAffineDimExpr(d, ctx));
    partial = rows;
    partial.push_back(getAffineDimExpr(rank, ctx));
    SmallVector<int64_t> partialShape(type.getShape().drop_back());
    partialShape.push_back(lanes);
    SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, x);
    sizes.back() = b.getIndexAttr(lanes);
    Value empty = tensor::EmptyOp::create(b, loc, sizes, statType);
    Value acc =
        linalg::FillOp::create(b, loc, constant(0.0), empty).getResult(0);
    SmallVector<Value> inputs{blocks};
    SmallVector<AffineMap> maps{
        AffineMap::getMultiDimIdentityMap(rank + 1, ctx)};
    if (shift) {
      inputs.push_back(shift);
      maps.push_back(AffineMap::get(rank + 1, 0, rows, ctx));
    }
    maps.push_back(AffineMap::get(rank + 1, 0, partial, ctx));
    SmallVector<utils::IteratorType> iters(rank + 1,
                                           utils::IteratorType::parallel);
    iters[rank - 1] = utils::IteratorType::reduction;
    Value sums = linalg::GenericOp::create(b, loc, TypeRange{acc.getType()},
                                           inputs, ValueRange{acc}, maps, iters,
                                           sumBody(bool(shift), square))
                     .getResult(0);
    // The L partial sums of each row.
    Value total =
        linalg::FillOp::create(b, loc, constant(0.0), emptyRows(statType))
            .getResult(0);
    SmallVector<utils::IteratorType> rowIters(rank,
                                              utils::IteratorType::parallel);
    rowIters.back() = utils::IteratorType::reduction;
    return linalg::GenericOp::create(
               b, loc, TypeRange{total.getType()}, ValueRange{sums},
               ValueRange{total}, ArrayRef<AffineMap>{fullMap(), rowMap()},
               rowIters,
               [&](OpBuilder &nb, Location l, ValueRange args) {
                 linalg::YieldOp::create(
                     nb, l,
                     Value(arith::AddFOp::create(nb, l, args[1], args[0])));
               })
        .getResult(0);
  }

  /// Element-wise over a row tensor, producing `resultElt`.
  Value mapRows(Value rows, Type resultElt,
                function_ref<Value(OpBuilder &, Location, Value)> fn) {
    AffineMap id = AffineMap::getMultiDimIdentityMap(rank - 1, b.getContext());
    SmallVector<utils::IteratorType> par(rank - 1,
                                         utils::IteratorType::parallel);
    return linalg::GenericOp::create(
               b, loc, TypeRange{emptyRows(resultElt).getType()},
               ValueRange{rows}, ValueRange{emptyRows(resultElt)},
               ArrayRef<AffineMap>{id, id}, par,
               [&](OpBuilder &nb, Location l, ValueRange args) {
                 linalg::YieldOp::create(nb, l, fn(nb, l, args[0]));
               })
        .getResult(0);
  }

  /// Number of features as a `statType` scalar.
  Value featureCount() {
    auto type = cast<RankedTensorType>(x.getType());
    if (!type.isDynamicDim(rank - 1))
      return constant(type.getDimSize(rank - 1));
    Value dim = tensor::DimOp::create(b, loc, x, rank - 1);
    Value i64 = arith::IndexCastOp::create(b, loc, b.getI64Type(), dim);
    return arith::UIToFPOp::create(b, loc, statType, i64);
  }

  /// 1/sqrt(sum / K + eps) per row.
  Value invSqrtOfMean(Value sum, double eps) {
    Value k = featureCount(), e = constant(eps);
    return mapRows(sum, statType, [&](OpBuilder &nb, Location l, Value v) {
      Value mean = arith::DivFOp::create(nb, l, v, k);
      Value biased = arith::AddFOp::create(nb, l, mean, e);
      return Value(math::RsqrtOp::create(nb, l, biased));
    });
  }

  /// result[r, k] = round(((x[r, k] - shift[r] F[k]) * scale[r]) * G[k] +
  /// B[k]), with F = `shiftFactor` (1 without it; centered_post_scale's
  /// column sums) and G = gain (+ 1 under one_plus); all in `statType`. With
  /// `zeroScaleIsZero`, a row whose scale is 0 is 0 (post_scale's contract).
  Value normalize(Value shift, Value scale, Value gain, bool onePlus,
                  Value bias, RankedTensorType resultType,
                  bool zeroScaleIsZero = false, Value shiftFactor = Value()) {
    SmallVector<Value> inputs{x, scale};
    SmallVector<AffineMap> maps{fullMap(), rowMap()};
    // (By position, not by value: one value may be two of them.)
    for (auto [v, map] : {std::pair(shift, rowMap()),
                          {shiftFactor, featureMap()},
                          {gain, featureMap()},
                          {bias, featureMap()}}) {
      if (!v)
        continue;
      inputs.push_back(v);
      maps.push_back(map);
    }
    maps.push_back(fullMap());
    SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, x);
    Value init =
        tensor::EmptyOp::create(b, loc, sizes, resultType.getElementType());
    SmallVector<utils::IteratorType> par(rank, utils::IteratorType::parallel);
    return linalg::GenericOp::create(
               b, loc, TypeRange{resultType}, inputs, ValueRange{init}, maps,
               par,
               [&](OpBuilder &nb, Location l, ValueRange args) {
                 unsigned next = 2;
                 auto arg = [&](Value v) {
                   return v ? castFloat(nb, l, args[next++], statType)
                            : Value();
                 };
                 Value v = castFloat(nb, l, args[0], statType);
                 Value sh = arg(shift), f = arg(shiftFactor), g = arg(gain),
                       bi = arg(bias);
                 if (f)
                   sh = arith::MulFOp::create(nb, l, sh, f);
                 if (sh)
                   v = arith::SubFOp::create(nb, l, v, sh);
                 Value sc = castFloat(nb, l, args[1], statType);
                 Value r = arith::MulFOp::create(nb, l, v, sc);
                 if (zeroScaleIsZero) {
                   Value zero = floatConstant(nb, l, statType, 0.0);
                   Value isZero = arith::CmpFOp::create(
                       nb, l, arith::CmpFPredicate::OEQ, sc, zero);
                   r = arith::SelectOp::create(nb, l, isZero, zero, r);
                 }
                 if (g) {
                   if (onePlus)
                     g = arith::AddFOp::create(
                         nb, l, g, floatConstant(nb, l, statType, 1.0));
                   r = arith::MulFOp::create(nb, l, r, g);
                 }
                 if (bi)
                   r = arith::AddFOp::create(nb, l, r, bi);
                 linalg::YieldOp::create(
                     nb, l, castFloat(nb, l, r, resultType.getElementType()));
               })
        .getResult(0);
  }

  /// Rounds a per-row statistic to the type rms_inv/layer_inv return.
  Value roundTo(Value rows, Type elt) {
    if (statType == elt)
      return rows;
    return mapRows(rows, elt, [&](OpBuilder &nb, Location l, Value v) {
      return castFloat(nb, l, v, elt);
    });
  }

private:
  Value constant(double v) { return floatConstant(b, loc, statType, v); }
  Value emptyRows(Type elt) {
    SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, x);
    sizes.pop_back();
    return tensor::EmptyOp::create(b, loc, sizes, elt);
  }
  AffineMap fullMap() {
    return AffineMap::getMultiDimIdentityMap(rank, b.getContext());
  }
  /// (d0, .., dn-1) -> (d0, .., dn-2); for rank 1 the single row is a 0-d
  /// tensor (getMajorSubMap(0) would be a null map).
  AffineMap rowMap() {
    SmallVector<AffineExpr> dims;
    for (unsigned d = 0; d + 1 < rank; ++d)
      dims.push_back(getAffineDimExpr(d, b.getContext()));
    return AffineMap::get(rank, 0, dims, b.getContext());
  }
  AffineMap featureMap() {
    return AffineMap::get(rank, 0, getAffineDimExpr(rank - 1, b.getContext()));
  }

  OpBuilder &b;
  Location loc;
  Value x;
  Type statType;
  unsigned rank;
  /// Partial sums per row in a reduction (0 or 1: one running sum).
  int64_t lanes;
};

/// f32 for the statistics, f64 for f64 inputs or when asked for; a
/// post-scale multiplies in f64 when its scale is f64.
template <typename OpTy>
Type statTypeFor(OpBuilder &b, OpTy op, bool statsF64) {
  bool wide = statsF64 || getElementTypeOrSelf(op.getInput()).isF64();
  if constexpr (std::is_same_v<OpTy, PostScaleOp> ||
                std::is_same_v<OpTy, CenteredPostScaleOp>)
    wide |= getElementTypeOrSelf(op.getScale()).isF64();
  return wide ? Type(b.getF64Type()) : Type(b.getF32Type());
}

/// Mean and 1/std per row, two-pass.
std::pair<Value, Value> layerStats(RowOps &rows, double eps) {
  Value k = rows.featureCount();
  Value sum = rows.reduce(Value(), /*square=*/false);
  Value mean =
      rows.mapRows(sum, k.getType(), [&](OpBuilder &nb, Location l, Value v) {
        return Value(arith::DivFOp::create(nb, l, v, k));
      });
  Value inv = rows.invSqrtOfMean(rows.reduce(mean, /*square=*/true), eps);
  return {mean, inv};
}

template <typename OpTy> struct FlashNormLowering : OpRewritePattern<OpTy> {
  FlashNormLowering(MLIRContext *ctx, bool statsF64, int64_t lanes)
      : OpRewritePattern<OpTy>(ctx), statsF64(statsF64), lanes(lanes) {}
  LogicalResult matchAndRewrite(OpTy op,
                                PatternRewriter &rewriter) const override {
    Value x = op.getInput();
    RowOps rows(rewriter, op.getLoc(), x, statTypeFor(rewriter, op, statsF64),
                lanes);
    Operation *before = op->getPrevNode();
    SmallVector<Value, 2> lowered = lower(op, rows);
    // The ops built for a statistic or a post-scale carry its async-schedule
    // marks (flashnorm-async-mark) down to the buffers.
    for (StringRef name : {kAsyncGroupAttr, kAsyncRoleAttr, kAsyncPairAttr})
      if (Attribute mark = op->getAttr(name))
        for (Operation *o = before ? before->getNextNode()
                                   : &op->getBlock()->front();
             o != op.getOperation(); o = o->getNextNode())
          o->setAttr(name, mark);
    rewriter.replaceOp(op, lowered);
    return success();
  }
  SmallVector<Value, 2> lower(OpTy op, RowOps &rows) const;
  bool statsF64;
  int64_t lanes;
};

template <>
SmallVector<Value, 2> FlashNormLowering<RMSNormOp>::lower(RMSNormOp op,
                                                          RowOps &rows) const {
  double eps = op.getEpsilon().convertToDouble();
  Value inv = rows.invSqrtOfMean(rows.reduce(Value(), true), eps);
  return {rows.normalize(Value(), inv, op.getGain(),
                         op.getGainConvention() == GainConvention::one_plus,
                         Value(), op.getType())};
}

template <>
SmallVector<Value, 2> FlashNormLowering<RMSInvOp>::lower(RMSInvOp op,
                                                         RowOps &rows) const {
  double eps = op.getEpsilon().convertToDouble();
  return {rows.roundTo(rows.invSqrtOfMean(rows.reduce(Value(), true), eps),
                       getElementTypeOrSelf(op.getType()))};
}

template <>
SmallVector<Value, 2>
FlashNormLowering<LayerNormOp>::lower(LayerNormOp op, RowOps &rows) const {
  auto [mean, inv] = layerStats(rows, op.getEpsilon().convertToDouble());
  return {rows.normalize(mean, inv, op.getGain(), false, op.getBias(),
                         op.getType())};
}

template <>
SmallVector<Value, 2> FlashNormLowering<LayerInvOp>::lower(LayerInvOp op,
                                                           RowOps &rows) const {
  return {
      rows.roundTo(layerStats(rows, op.getEpsilon().convertToDouble()).second,
                   getElementTypeOrSelf(op.getType()))};
}

template <>
SmallVector<Value, 2>
FlashNormLowering<LayerStatsOp>::lower(LayerStatsOp op, RowOps &rows) const {
  auto [mean, inv] = layerStats(rows, op.getEpsilon().convertToDouble());
  Type type = getElementTypeOrSelf(op.getMean().getType());
  return {rows.roundTo(mean, type), rows.roundTo(inv, type)};
}

template <>
SmallVector<Value, 2>
FlashNormLowering<PostScaleOp>::lower(PostScaleOp op, RowOps &rows) const {
  return {rows.normalize(Value(), op.getScale(), Value(), false, Value(),
                         op.getType(), /*zeroScaleIsZero=*/true)};
}

template <>
SmallVector<Value, 2>
FlashNormLowering<CenteredPostScaleOp>::lower(CenteredPostScaleOp op,
                                              RowOps &rows) const {
  return {rows.normalize(op.getMean(), op.getScale(), Value(), false, Value(),
                         op.getType(), /*zeroScaleIsZero=*/true,
                         op.getColsum())};
}

struct LowerToLinalgPass
    : flashnorm::impl::LowerToLinalgBase<LowerToLinalgPass> {
  using LowerToLinalgBase::LowerToLinalgBase;
  void runOnOperation() override {
    ConversionTarget target(getContext());
    target.addIllegalDialect<FlashNormDialect>();
    target.markUnknownOpDynamicallyLegal([](Operation *) { return true; });
    RewritePatternSet patterns(&getContext());
    if (sumLanes < 0) {
      mlir::emitError(getOperation()->getLoc())
          << "flashnorm-lower-to-linalg: sum-lanes must not be negative";
      return signalPassFailure();
    }
    populateLowerToLinalgPatterns(patterns, statsF64, sumLanes);
    if (failed(applyPartialConversion(getOperation(), target,
                                      std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace

void flashnorm::populateLowerToLinalgPatterns(RewritePatternSet &patterns,
                                              bool statsF64, int64_t lanes) {
  patterns.add<FlashNormLowering<RMSNormOp>, FlashNormLowering<RMSInvOp>,
               FlashNormLowering<LayerNormOp>, FlashNormLowering<LayerInvOp>,
               FlashNormLowering<LayerStatsOp>, FlashNormLowering<PostScaleOp>,
               FlashNormLowering<CenteredPostScaleOp>>(patterns.getContext(),
                                                       statsF64, lanes);
}
