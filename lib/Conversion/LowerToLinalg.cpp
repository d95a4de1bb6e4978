//===- LowerToLinalg.cpp - flashnorm ops to linalg on tensors
//--------------===//

#include "flashnorm/Conversion/Passes.h"
#include "flashnorm/Dialect/FlashNorm/IR/FlashNormOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/DialectConversion.h"

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

/// Identity map over `rank` dims, and the map that drops the last one.
AffineMap fullMap(MLIRContext *ctx, unsigned rank) {
  return AffineMap::getMultiDimIdentityMap(rank, ctx);
}
AffineMap rowMap(MLIRContext *ctx, unsigned rank) {
  return AffineMap::getMultiDimIdentityMap(rank, ctx).getMajorSubMap(rank - 1);
}
AffineMap featureMap(MLIRContext *ctx, unsigned rank) {
  return AffineMap::get(rank, 0, getAffineDimExpr(rank - 1, ctx));
}

/// An empty tensor with the row shape of `x` (all dims but the last).
Value emptyRows(OpBuilder &b, Location loc, Value x, Type elt) {
  SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, x);
  sizes.pop_back();
  return tensor::EmptyOp::create(b, loc, sizes, elt);
}

/// 1/sqrt(sum_k x^2 / K + eps) per row of `x`, in `statType`.
Value buildRmsInv(OpBuilder &b, Location loc, Value x, double eps,
                  Type statType) {
  MLIRContext *ctx = b.getContext();
  auto xType = cast<RankedTensorType>(x.getType());
  unsigned rank = xType.getRank();
  Value zero = arith::ConstantOp::create(b, loc, b.getFloatAttr(statType, 0.0));
  Value acc =
      linalg::FillOp::create(b, loc, zero, emptyRows(b, loc, x, statType))
          .getResult(0);
  SmallVector<utils::IteratorType> iters(rank, utils::IteratorType::parallel);
  iters.back() = utils::IteratorType::reduction;
  Value sumSq =
      linalg::GenericOp::create(
          b, loc, TypeRange{acc.getType()}, ValueRange{x}, ValueRange{acc},
          ArrayRef<AffineMap>{fullMap(ctx, rank), rowMap(ctx, rank)}, iters,
          [&](OpBuilder &nb, Location l, ValueRange args) {
            Value v = castFloat(nb, l, args[0], statType);
            Value sq = arith::MulFOp::create(nb, l, v, v);
            linalg::YieldOp::create(
                nb, l, Value(arith::AddFOp::create(nb, l, args[1], sq)));
          })
          .getResult(0);

  Value k;
  if (xType.isDynamicDim(rank - 1)) {
    Value dim = tensor::DimOp::create(b, loc, x, rank - 1);
    Value i64 = arith::IndexCastOp::create(b, loc, b.getI64Type(), dim);
    k = arith::UIToFPOp::create(b, loc, statType, i64);
  } else {
    k = arith::ConstantOp::create(
        b, loc, b.getFloatAttr(statType, xType.getDimSize(rank - 1)));
  }
  Value epsV = arith::ConstantOp::create(b, loc, b.getFloatAttr(statType, eps));
  SmallVector<utils::IteratorType> par(rank - 1, utils::IteratorType::parallel);
  AffineMap rows = AffineMap::getMultiDimIdentityMap(rank - 1, ctx);
  return linalg::GenericOp::create(
             b, loc, TypeRange{acc.getType()}, ValueRange{sumSq},
             ValueRange{emptyRows(b, loc, x, statType)},
             ArrayRef<AffineMap>{rows, rows}, par,
             [&](OpBuilder &nb, Location l, ValueRange args) {
               Value mean = arith::DivFOp::create(nb, l, args[0], k);
               Value ms = arith::AddFOp::create(nb, l, mean, epsV);
               linalg::YieldOp::create(nb, l,
                                       Value(math::RsqrtOp::create(nb, l, ms)));
             })
      .getResult(0);
}

/// f32 for the statistics, f64 for f64 inputs or when asked for.
Type statTypeFor(OpBuilder &b, Type elt, bool statsF64) {
  return statsF64 || elt.isF64() ? Type(b.getF64Type()) : Type(b.getF32Type());
}

/// `result[r, k] = round(x[r, k] * s[r] (* G[k]))`, computed in `computeType`.
Value buildScaleRows(OpBuilder &b, Location loc, Value x, Value s, Value gain,
                     bool onePlus, Type computeType,
                     RankedTensorType resultType) {
  MLIRContext *ctx = b.getContext();
  unsigned rank = resultType.getRank();
  SmallVector<Value> inputs{x, s};
  SmallVector<AffineMap> maps{fullMap(ctx, rank), rowMap(ctx, rank)};
  if (gain) {
    inputs.push_back(gain);
    maps.push_back(featureMap(ctx, rank));
  }
  maps.push_back(fullMap(ctx, rank));
  SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, x);
  Value init =
      tensor::EmptyOp::create(b, loc, sizes, resultType.getElementType());
  SmallVector<utils::IteratorType> par(rank, utils::IteratorType::parallel);
  return linalg::GenericOp::create(
             b, loc, TypeRange{resultType}, inputs, ValueRange{init}, maps, par,
             [&](OpBuilder &nb, Location l, ValueRange args) {
               Value v = castFloat(nb, l, args[0], computeType);
               Value r = arith::MulFOp::create(
                   nb, l, v, castFloat(nb, l, args[1], computeType));
               if (gain) {
                 Value g = castFloat(nb, l, args[2], computeType);
                 if (onePlus)
                   g = arith::AddFOp::create(
                       nb, l, g,
                       arith::ConstantOp::create(
                           nb, l, nb.getFloatAttr(computeType, 1.0)));
                 r = arith::MulFOp::create(nb, l, r, g);
               }
               linalg::YieldOp::create(
                   nb, l, castFloat(nb, l, r, resultType.getElementType()));
             })
      .getResult(0);
}

struct LowerRMSNorm : OpRewritePattern<RMSNormOp> {
  LowerRMSNorm(MLIRContext *ctx, bool statsF64)
      : OpRewritePattern(ctx), statsF64(statsF64) {}
  LogicalResult matchAndRewrite(RMSNormOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    RankedTensorType type = op.getInput().getType();
    Type stat = statTypeFor(rewriter, type.getElementType(), statsF64);
    Value s = buildRmsInv(rewriter, loc, op.getInput(),
                          op.getEpsilon().convertToDouble(), stat);
    rewriter.replaceOp(
        op, buildScaleRows(rewriter, loc, op.getInput(), s, op.getGain(),
                           op.getGainConvention() == GainConvention::one_plus,
                           stat, type));
    return success();
  }
  bool statsF64;
};

struct LowerRMSInv : OpRewritePattern<RMSInvOp> {
  LowerRMSInv(MLIRContext *ctx, bool statsF64)
      : OpRewritePattern(ctx), statsF64(statsF64) {}
  LogicalResult matchAndRewrite(RMSInvOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Type stat = statTypeFor(rewriter, op.getInput().getType().getElementType(),
                            statsF64);
    Value s = buildRmsInv(rewriter, loc, op.getInput(),
                          op.getEpsilon().convertToDouble(), stat);
    if (stat != rewriter.getF32Type()) {
      unsigned rank = op.getType().getRank();
      AffineMap id = AffineMap::getMultiDimIdentityMap(rank, getContext());
      SmallVector<utils::IteratorType> par(rank, utils::IteratorType::parallel);
      s = linalg::GenericOp::create(
              rewriter, loc, TypeRange{op.getType()}, ValueRange{s},
              ValueRange{emptyRows(rewriter, loc, op.getInput(),
                                   rewriter.getF32Type())},
              ArrayRef<AffineMap>{id, id}, par,
              [&](OpBuilder &nb, Location l, ValueRange args) {
                linalg::YieldOp::create(
                    nb, l, castFloat(nb, l, args[0], nb.getF32Type()));
              })
              .getResult(0);
    }
    rewriter.replaceOp(op, s);
    return success();
  }
  bool statsF64;
};

struct LowerPostScale : OpRewritePattern<PostScaleOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(PostScaleOp op,
                                PatternRewriter &rewriter) const override {
    Type elt = op.getInput().getType().getElementType();
    Type compute =
        elt.isF64() ? Type(rewriter.getF64Type()) : Type(rewriter.getF32Type());
    rewriter.replaceOp(op, buildScaleRows(rewriter, op.getLoc(), op.getInput(),
                                          op.getScale(), Value(), false,
                                          compute, op.getType()));
    return success();
  }
};

struct LowerToLinalgPass
    : flashnorm::impl::LowerToLinalgBase<LowerToLinalgPass> {
  using LowerToLinalgBase::LowerToLinalgBase;
  void runOnOperation() override {
    ConversionTarget target(getContext());
    target.addIllegalDialect<FlashNormDialect>();
    target.markUnknownOpDynamicallyLegal([](Operation *) { return true; });
    RewritePatternSet patterns(&getContext());
    populateLowerToLinalgPatterns(patterns, statsF64);
    if (failed(applyPartialConversion(getOperation(), target,
                                      std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace

void flashnorm::populateLowerToLinalgPatterns(RewritePatternSet &patterns,
                                              bool statsF64) {
  MLIRContext *ctx = patterns.getContext();
  patterns.add<LowerRMSNorm, LowerRMSInv>(ctx, statsF64);
  patterns.add<LowerPostScale>(ctx);
}
