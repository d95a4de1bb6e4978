//===- TensorCoreTile.cpp - f16 projections on tensor cores ---------------===//
//
// f16 projections whose sizes are multiples of the m16n8k16 MMA tile: one
// warp per 16 x 8 output tile (up to four warps per block, side by side
// along n), the k loop a vector.contract of 16 x 16 by 8 x 16 fragments,
// which flashnorm-gpu-mma turns into nvgpu.mma.sync (upstream does not
// convert bf16). No shared memory: each warp loads its fragments from
// global memory. Each warp writes its tile once, from zero.
//
//===----------------------------------------------------------------------===//

#include "KernelBuilder.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace mlir::flashnorm;
using namespace mlir::flashnorm::kernels;

FailureOr<TensorCorePlan> kernels::planTensorCoreTile(linalg::LinalgOp op,
                                                      std::string &why) {
  auto fail = [&](const Twine &msg) {
    why = msg.str();
    return failure();
  };
  FailureOr<RowMajorProjection> p = matchRowMajor(op, why);
  if (failed(p))
    return failure();
  if (!cast<MemRefType>(p->a.getType()).getElementType().isF16())
    return fail("only f16 runs on tensor cores here");
  // The accumulator must start at zero (deferred projections do).
  if (!startsAtZero(p->c, op))
    return fail("the accumulator does not start at zero");
  if (ShapedType::isDynamic(p->m) || ShapedType::isDynamic(p->n) ||
      ShapedType::isDynamic(p->k) || p->m % 16 || p->n % 8 || p->k % 16)
    return fail("sizes are not static multiples of the 16 x 8 x 16 tile");
  TensorCorePlan plan{op, *p, deadZeroFill(p->c, op)};
  int64_t tiles = p->n / 8;
  plan.warps = tiles % 4 == 0 ? 4 : tiles % 2 == 0 ? 2 : 1;
  return plan;
}

void kernels::buildTensorCoreTile(KernelBuilder &builder,
                                  const TensorCorePlan &plan, StringRef role) {
  linalg::LinalgOp op = plan.op;
  const RowMajorProjection &p = plan.projection;
  int64_t m = p.m, n = p.n, k = p.k, warps = plan.warps;
  OpBuilder b(op);
  Location loc = op.getLoc();
  Value a = to2d(b, loc, p.a), w = to2d(b, loc, p.b), c = to2d(b, loc, p.c);
  auto index = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(b, loc, v);
  };
  Value one = index(1);
  // Warps are threads y.
  auto launch =
      gpu::LaunchOp::create(b, loc, index(m / 16), index(n / 8 / warps), one,
                            index(32), index(warps), one);
  b.setInsertionPointToStart(&launch.getBody().front());
  MLIRContext *ctx = b.getContext();
  AffineExpr d0, d1;
  bindDims(ctx, d0, d1);
  Value m0 =
      affine::AffineApplyOp::create(b, loc, AffineMap::get(1, 0, d0 * 16),
                                    ValueRange{launch.getBlockIds().x});
  Value n0 = affine::AffineApplyOp::create(
      b, loc, AffineMap::get(2, 0, (d0 * warps + d1) * 8),
      ValueRange{launch.getBlockIds().y, launch.getThreadIds().y});
  Type f16 = b.getF16Type(), f32 = b.getF32Type();
  Value pad = arith::ConstantOp::create(b, loc, b.getZeroAttr(f16));
  SmallVector<bool> inBounds{true, true};
  auto fragment = [&](OpBuilder &fb, Value buffer, ValueRange at,
                      VectorType type, AffineMap map) -> Value {
    return vector::TransferReadOp::create(fb, loc, type, buffer, at,
                                          AffineMapAttr::get(map), pad, Value(),
                                          fb.getBoolArrayAttr(inBounds));
  };
  auto accType = VectorType::get({16, 8}, f32);
  Value acc0 = arith::ConstantOp::create(
      b, loc, accType, DenseElementsAttr::get(accType, b.getF32FloatAttr(0)));
  AffineExpr dm, dn, dk;
  bindDims(ctx, dm, dn, dk);
  using Exprs = ArrayRef<AffineExpr>;
  auto maps = b.getAffineMapArrayAttr(AffineMap::inferFromExprList(
      ArrayRef<Exprs>{Exprs{dm, dk}, Exprs{dn, dk}, Exprs{dm, dn}}, ctx));
  auto iterators = b.getArrayAttr(
      {vector::IteratorTypeAttr::get(ctx, vector::IteratorType::parallel),
       vector::IteratorTypeAttr::get(ctx, vector::IteratorType::parallel),
       vector::IteratorTypeAttr::get(ctx, vector::IteratorType::reduction)});
  auto loop = scf::ForOp::create(
      b, loc, index(0), index(k), index(16), ValueRange{acc0},
      [&](OpBuilder &lb, Location l, Value kk, ValueRange acc) {
        AffineMap id2 = AffineMap::getMultiDimIdentityMap(2, ctx);
        Value va =
            fragment(lb, a, {m0, kk}, VectorType::get({16, 16}, f16), id2);
        // B as n x k: read directly (N x K) or transposed (K x N).
        Value vb =
            p.transposeB
                ? fragment(lb, w, {n0, kk}, VectorType::get({8, 16}, f16), id2)
                : fragment(lb, w, {kk, n0}, VectorType::get({8, 16}, f16),
                           AffineMap::getPermutationMap(
                               ArrayRef<unsigned>{1, 0}, ctx));
        Value next = vector::ContractionOp::create(lb, l, va, vb, acc[0], maps,
                                                   iterators);
        scf::YieldOp::create(lb, l, next);
      });
  vector::TransferWriteOp::create(b, loc, loop.getResult(0), c,
                                  ValueRange{m0, n0}, inBounds);
  gpu::TerminatorOp::create(b, loc);
  builder.name(launch, role);
  if (plan.deadFill)
    plan.deadFill->erase();
  op->erase();
}
