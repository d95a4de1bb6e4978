//===- TensorCoreTile.cpp - f16 and bf16 projections on tensor cores ------===//
//
// f16 and bf16 projections whose sizes are multiples of the m16n8k16 MMA
// tile: one warp per 16 x 8 output tile (up to four warps per block, side by
// side along n), the k loop a vector.contract of 16 x 16 by 8 x 16
// fragments, which flashnorm-gpu-mma turns into mma.sync. No shared memory:
// each warp loads its fragments from global memory, so what keeps the
// tensor cores fed is how many of those loads are in flight. The k loop
// takes up to kMaxUnroll steps per iteration and prefetches: an iteration
// reads the next group of steps into registers, then multiplies the group
// read before, so a warp has that many 256-byte weight fragments in flight
// behind its multiplies instead of one load waiting for each. Each warp
// writes its tile once, from zero.
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
  Type type = cast<MemRefType>(p->a.getType()).getElementType();
  if (!type.isF16() && !type.isBF16())
    return fail("only f16 and bf16 run on tensor cores");
  if (cast<MemRefType>(p->b.getType()).getElementType() != type)
    return fail("the weight's type is not the activations'");
  // The accumulator must start at zero (deferred projections do).
  if (!startsAtZero(p->c, op))
    return fail("the accumulator does not start at zero");
  if (ShapedType::isDynamic(p->m) || ShapedType::isDynamic(p->n) ||
      ShapedType::isDynamic(p->k) || p->m % 16 || p->n % 8 || p->k % 16)
    return fail("sizes are not static multiples of the 16 x 8 x 16 tile");
  TensorCorePlan plan{op, *p, deadZeroFill(p->c, op)};
  int64_t tiles = p->n / 8;
  plan.warps = tiles % 4 == 0 ? 4 : tiles % 2 == 0 ? 2 : 1;
  // The most steps up to kMaxUnroll that divide the k loop (no remainder
  // loop): 4096 / 16 = 256 steps take 8, 576 / 16 = 36 take 6.
  int64_t steps = p->k / 16;
  for (plan.unroll = std::min(steps, kMaxUnroll); steps % plan.unroll;)
    --plan.unroll;
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
  Type type = cast<MemRefType>(p.a.getType()).getElementType();
  Type f32 = b.getF32Type();
  Value pad = arith::ConstantOp::create(b, loc, b.getZeroAttr(type));
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
  int64_t unroll = plan.unroll;
  AffineMap id2 = AffineMap::getMultiDimIdentityMap(2, ctx);
  // The A and B fragments of the `unroll` steps from k0, A's first.
  auto readGroup = [&](OpBuilder &rb, Location l, Value k0) {
    SmallVector<Value> fragments;
    for (int64_t step = 0; step < unroll; ++step) {
      Value kk = affine::AffineApplyOp::create(
          rb, l, AffineMap::get(1, 0, d0 + 16 * step), ValueRange{k0});
      fragments.push_back(
          fragment(rb, a, {m0, kk}, VectorType::get({16, 16}, type), id2));
    }
    for (int64_t step = 0; step < unroll; ++step) {
      Value kk = affine::AffineApplyOp::create(
          rb, l, AffineMap::get(1, 0, d0 + 16 * step), ValueRange{k0});
      // B as n x k: read directly (N x K) or transposed (K x N).
      fragments.push_back(
          p.transposeB
              ? fragment(rb, w, {n0, kk}, VectorType::get({8, 16}, type), id2)
              : fragment(rb, w, {kk, n0}, VectorType::get({8, 16}, type),
                         AffineMap::getPermutationMap(ArrayRef<unsigned>{1, 0},
                                                      ctx)));
    }
    return fragments;
  };
  auto multiplyGroup = [&](OpBuilder &mb, Location l, Value acc,
                           ValueRange fragments) {
    for (int64_t step = 0; step < unroll; ++step)
      acc = vector::ContractionOp::create(mb, l, fragments[step],
                                          fragments[unroll + step], acc, maps,
                                          iterators);
    return acc;
  };
  // Register prefetch: each iteration reads the next group's fragments,
  // then multiplies the group the one before read. The next group is
  // carried by the loop, so it is in registers (its loads in flight) while
  // the tensor cores work on this one: code generation cannot sink a load
  // to its multiply, as it may within one iteration.
  SmallVector<Value> inits{acc0};
  llvm::append_range(inits, readGroup(b, loc, index(0)));
  auto loop = scf::ForOp::create(
      b, loc, index(16 * unroll), index(k), index(16 * unroll), inits,
      [&](OpBuilder &lb, Location l, Value k0, ValueRange carried) {
        SmallVector<Value> next{Value()};
        llvm::append_range(next, readGroup(lb, l, k0));
        next[0] = multiplyGroup(lb, l, carried[0], carried.drop_front());
        scf::YieldOp::create(lb, l, next);
      });
  Value sums =
      multiplyGroup(b, loc, loop.getResult(0), loop.getResults().drop_front());
  vector::TransferWriteOp::create(b, loc, sums, c, ValueRange{m0, n0},
                                  inBounds);
  gpu::TerminatorOp::create(b, loc);
  builder.name(launch, role);
  if (plan.deadFill)
    plan.deadFill->erase();
  op->erase();
}
