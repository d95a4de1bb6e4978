//===- TensorCoreTile.cpp - f16 and bf16 projections on tensor cores ------===//
//
// f16 and bf16 projections whose outputs and k are multiples of the
// m16n8k16 MMA tile, any rows from 2 (a decode step of a few tokens:
// speculative decoding, a small batch; the prompts the staged kernel of
// TensorCoreBlock.cpp does not take), those of the last tile padded when
// they are not a multiple of 16. Each 16 x 8 output tile is
// computed by one warp per slice of k (up to four tiles per block, side by side
// along n), its k loop a vector.contract of 16 x 16 by 8 x 16 fragments, which
// flashnorm-gpu-mma turns into mma.sync. No shared memory for the operands:
// each warp loads its fragments from global memory, so what keeps the tensor
// cores fed is how many of those loads are in flight, and how wide they are:
// - With the weight N x K, fragments span two steps (16 x 32 and 8 x 32),
//   which flashnorm-gpu-mma gives each lane as 16 contiguous bytes per row
//   (the sum's order along k permuted within the 32, the same for both
//   operands), where 16-wide fragments take a 4-byte load per register.
// - The k loop takes up to kMaxUnroll steps per iteration, so that a warp
//   has that many 256-byte weight fragments in flight instead of one load
//   waiting for each. It is written as a register prefetch (an iteration
//   reads the next group, carried by the loop, and multiplies the one read
//   before); LLVM folds that back into a loop that reads a group and then
//   multiplies it; for 16-wide fragments ptxas issues a group's loads ahead
//   of the multiplies in loops of static trip count four or more, for
//   paired ones it unrolls the loop and keeps two or three loads ahead of
//   each multiply.
// - Decode has few tiles (16 tokens x 4096 outputs: 512 warps, 4 per SM of
//   an H200, a small part of the loads in flight the weight stream needs),
//   so k is split into slices, one warp each, up to kTargetWarps (sliced-k,
//   as CUTLASS calls it). The slices' partial
//   tiles meet in shared memory and the block sums them in a fixed order:
//   deterministic, no atomics, no second kernel, no workspace.
// Each tile is written once, from zero.
// Padded rows cost tensor-core work, which decode has to spare, and no
// weight bytes: the weight is read once for all the rows, where the SIMT
// GEMV (a block per output row) reads it once per row.
// Fused mode gives the kernel a norm's epilogue (TileEpilogue): the warps
// also sum the squares of A's rows, on the tensor cores too: each A
// fragment times its own two halves (rows 0-7 and 8-15 as weight
// fragments: registers the lane already holds) gives the rows' products
// with one another, 16 x 16 in two accumulators, whose diagonal is the
// rows' sums of squares. Two more mma.sync per step cost the tensor cores
// little at decode (their work there is a small part of what they can do)
// and the lanes no conversions or FMAs. The first warp of each slice writes
// both accumulators to shared memory beside its partial tile, and the
// threads that sum the slices sum the diagonal too and hand both to the
// epilogue (1/RMS and the post-scale) in place of the plain store: the
// statistic without a kernel or a load of its own.
//
//===----------------------------------------------------------------------===//

#include "KernelBuilder.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace mlir::flashnorm;
using namespace mlir::flashnorm::kernels;

FailureOr<TensorCorePlan> kernels::planTensorCoreTile(linalg::LinalgOp op,
                                                      std::string &why,
                                                      int64_t maxUnroll) {
  auto fail = [&](const Twine &msg) {
    why = msg.str();
    return failure();
  };
  FailureOr<RowMajorProjection> p = matchTensorCoreProjection(op, why);
  if (failed(p))
    return failure();
  // One row stays a GEMV (RowReduction.cpp reads the weight once too,
  // without 15 rows of padding).
  if (p->m < 2)
    return fail("one row (the GEMV's)");
  if (p->n % 8 || p->k % 16)
    return fail("the outputs are not a multiple of 8 or k of 16 (the "
                "m16n8k16 tile)");
  TensorCorePlan plan{op, *p, deadZeroFill(p->c, op)};
  // Rows need not be a multiple of 16: the last tile's are padded (a
  // decode step of 2-15 tokens in one tile; a prompt of 20 or 130).
  plan.paddedRows = p->m % 16 != 0;
  // Slices of k, doubled while the kernel stays within kTargetWarps and
  // each slice keeps kMinSliceSteps: 16 x 4096 x 4096 (512 tiles) takes 8,
  // 16 x 4096 x 14336 (1792 tiles) 2. (Past the target the warps do not fit
  // at once: 4 slices of 16 x 4096 x 14336, 7168 warps, measured 11% slower
  // than 2.)
  int64_t tiles = (p->m + 15) / 16 * (p->n / 8), steps = p->k / 16;
  while (plan.slices < kMaxBlockWarps &&
         tiles * plan.slices * 2 <= kTargetWarps &&
         steps % (2 * plan.slices) == 0 &&
         steps / (2 * plan.slices) >= kMinSliceSteps)
    plan.slices *= 2;
  // Tiles side by side in a block, as many as divide the row and fit.
  int64_t rowTiles = p->n / 8;
  for (plan.warps = 4;
       rowTiles % plan.warps || plan.warps * plan.slices > kMaxBlockWarps;)
    plan.warps /= 2;
  // The most steps up to kMaxUnroll that divide a slice's k loop (no
  // remainder loop): 4096 / 16 = 256 steps take 8, 576 / 16 = 36 take 6.
  int64_t sliceSteps = steps / plan.slices;
  for (plan.unroll = std::min(sliceSteps, maxUnroll); sliceSteps % plan.unroll;)
    --plan.unroll;
  // Two steps per fragment where a group holds pairs of steps and the
  // weight's rows run along k (N x K, as flashnorm-gpu-weight-layout
  // leaves it): the slices then start at multiples of 32 too.
  plan.pairedSteps = p->transposeB && plan.unroll % 2 == 0;
  return plan;
}

void kernels::buildTensorCoreTile(KernelBuilder &builder,
                                  const TensorCorePlan &plan, StringRef role,
                                  const TileEpilogue *epilogue) {
  linalg::LinalgOp op = plan.op;
  const RowMajorProjection &p = plan.projection;
  int64_t m = p.m, n = p.n, k = p.k, warps = plan.warps, slices = plan.slices;
  OpBuilder b(epilogue ? epilogue->at : op.getOperation());
  Location loc = op.getLoc();
  MLIRContext *ctx = b.getContext();
  Value a = to2d(b, loc, p.a), w = to2d(b, loc, p.b), c = to2d(b, loc, p.c);
  auto index = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(b, loc, v);
  };
  Value one = index(1);
  Type f32 = b.getF32Type();
  // The slices' partial tiles, slice-major: rows 16s.. of slice s, the
  // block's tiles side by side; with an epilogue (even of one slice), each
  // slice's products of A's rows (16 x 16) too.
  bool throughShared = slices > 1 || epilogue;
  auto workgroup =
      gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);
  SmallVector<Type> shared;
  if (throughShared)
    shared.push_back(MemRefType::get({16 * slices, 8 * warps}, f32,
                                     MemRefLayoutAttrInterface(), workgroup));
  if (epilogue)
    shared.push_back(MemRefType::get({16 * slices, 16}, f32,
                                     MemRefLayoutAttrInterface(), workgroup));
  // Tiles are threads y, slices threads z.
  auto launch = gpu::LaunchOp::create(
      b, loc, index((m + 15) / 16), index(n / 8 / warps), one, index(32),
      index(warps), index(slices), /*dynamicSharedMemorySize=*/nullptr,
      /*asyncTokenType=*/nullptr, /*asyncDependencies=*/{}, shared);
  b.setInsertionPointToStart(&launch.getBody().front());
  AffineExpr d0, d1;
  bindDims(ctx, d0, d1);
  auto apply = [&](OpBuilder &ab, Location l, AffineExpr e, ValueRange v) {
    return affine::AffineApplyOp::create(ab, l, AffineMap::get(v.size(), 0, e),
                                         v)
        .getResult();
  };
  gpu::KernelDim3 blockId = launch.getBlockIds(), tid = launch.getThreadIds();
  Value m0 = apply(b, loc, d0 * 16, {blockId.x});
  Value n0 = apply(b, loc, (d0 * warps + d1) * 8, {blockId.y, tid.y});
  // This warp's slice of k: [kBegin, kBegin + k / slices).
  int64_t sliceK = k / slices;
  Value kBegin = apply(b, loc, d0 * sliceK, {tid.z});
  Type type = cast<MemRefType>(p.a.getType()).getElementType();
  Value pad = arith::ConstantOp::create(b, loc, b.getZeroAttr(type));
  SmallVector<bool> inBounds{true, true};
  // Padded rows: A's fragment and the last output tile run past the last row
  // (zeros read, nothing written there; flashnorm-gpu-mma clamps the reads
  // and guards the stores).
  SmallVector<bool> rowsInBounds{!plan.paddedRows, true};
  auto fragment = [&](OpBuilder &fb, Value buffer, ValueRange at,
                      VectorType type, AffineMap map,
                      ArrayRef<bool> within) -> Value {
    return vector::TransferReadOp::create(fb, loc, type, buffer, at,
                                          AffineMapAttr::get(map), pad, Value(),
                                          fb.getBoolArrayAttr(within));
  };
  Value acc0 = zeroFragment(b, loc);
  int64_t unroll = plan.unroll;
  AffineMap id2 = AffineMap::getMultiDimIdentityMap(2, ctx);
  AffineMap transposed =
      AffineMap::getPermutationMap(ArrayRef<unsigned>{1, 0}, ctx);
  // A group's `unroll` steps of 16 as fragments `width` wide along k.
  int64_t width = plan.pairedSteps ? 32 : 16, fragments = unroll * 16 / width;
  // The A and B fragments of the group from k0, A's first.
  auto readGroup = [&](OpBuilder &rb, Location l, Value k0) {
    SmallVector<Value> ks;
    for (int64_t f = 0; f < fragments; ++f)
      ks.push_back(apply(rb, l, d0 + width * f, {k0}));
    SmallVector<Value> read;
    for (Value kk : ks)
      read.push_back(fragment(rb, a, {m0, kk},
                              VectorType::get({16, width}, type), id2,
                              rowsInBounds));
    // B as n x k: read directly (N x K) or transposed (K x N).
    for (Value kk : ks)
      read.push_back(
          p.transposeB
              ? fragment(rb, w, {n0, kk}, VectorType::get({8, width}, type),
                         id2, inBounds)
              : fragment(rb, w, {kk, n0}, VectorType::get({8, width}, type),
                         transposed, inBounds));
    return read;
  };
  // The sums a group adds to: the tile's, and with an epilogue A's rows'
  // products with rows 0-7 and with rows 8-15 (from the A fragments in
  // registers: no load of their own).
  auto multiplyGroup = [&](OpBuilder &mb, Location l, ValueRange sums,
                           ValueRange read) {
    SmallVector<Value> next(sums);
    for (int64_t f = 0; f < fragments; ++f) {
      next[0] = multiplyFragments(mb, l, read[f], read[fragments + f], next[0]);
      if (epilogue)
        for (int64_t half = 0; half < 2; ++half)
          next[1 + half] = multiplyFragments(mb, l, read[f],
                                             halfFragment(mb, l, read[f], half),
                                             next[1 + half]);
    }
    return next;
  };
  // Register prefetch: each iteration reads the next group's fragments,
  // then multiplies the group the one before read (see the file header for
  // what LLVM and ptxas make of it).
  SmallVector<Value> inits{acc0};
  if (epilogue)
    inits.append({acc0, acc0});
  size_t numSums = inits.size();
  llvm::append_range(inits, readGroup(b, loc, kBegin));
  // The loop counts within the slice, from static bounds: ptxas issues a
  // group's loads together only in loops whose trip count it knows (with
  // bounds offset by the slice's start it sinks each load to its multiply:
  // 30 registers instead of 64).
  auto loop = scf::ForOp::create(
      b, loc, index(16 * unroll), index(sliceK), index(16 * unroll), inits,
      [&](OpBuilder &lb, Location l, Value step, ValueRange carried) {
        SmallVector<Value> read =
            readGroup(lb, l, apply(lb, l, d0 + d1, {kBegin, step}));
        SmallVector<Value> next = multiplyGroup(
            lb, l, carried.take_front(numSums), carried.drop_front(numSums));
        llvm::append_range(next, read);
        scf::YieldOp::create(lb, l, next);
      });
  SmallVector<Value> sums =
      multiplyGroup(b, loc, loop.getResults().take_front(numSums),
                    loop.getResults().drop_front(numSums));
  if (!throughShared) {
    vector::TransferWriteOp::create(b, loc, sums[0], c, ValueRange{m0, n0},
                                    rowsInBounds);
  } else {
    // Each slice's partial tile into shared memory; after the barrier the
    // block's threads sum the slices of each element in slice order and
    // write the block's tiles, consecutive threads along a row (the real
    // rows only, when they are padded).
    Value partials = launch.getWorkgroupAttributions()[0];
    vector::TransferWriteOp::create(b, loc, sums[0], partials,
                                    ValueRange{apply(b, loc, d0 * 16, {tid.z}),
                                               apply(b, loc, d0 * 8, {tid.y})},
                                    inBounds);
    Value products;
    if (epilogue) {
      // The block's warps along n read the same A: the first writes its
      // slice's products of A's rows, the halves side by side.
      products = launch.getWorkgroupAttributions()[1];
      Value zero = index(0), eight = index(8);
      Value first =
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, tid.y, zero);
      Value sliceRow = apply(b, loc, d0 * 16, {tid.z});
      auto writer = scf::IfOp::create(b, loc, first, /*withElseRegion=*/false);
      OpBuilder wb(writer.thenBlock()->getTerminator());
      for (int64_t half = 0; half < 2; ++half)
        vector::TransferWriteOp::create(
            wb, loc, sums[1 + half], products,
            ValueRange{sliceRow, half ? eight : zero}, inBounds);
    }
    gpu::BarrierOp::create(b, loc);
    int64_t rowLength = 8 * warps, threads = 32 * warps * slices;
    AffineExpr d2 = getAffineDimExpr(2, ctx);
    Value flat =
        apply(b, loc, d0 + 32 * (d1 + warps * d2), {tid.x, tid.y, tid.z});
    Value blockN = apply(b, loc, d0 * rowLength, {blockId.y});
    // The block's real rows: 16, or those left in the last tile.
    Value end = index(16 * rowLength);
    if (plan.paddedRows)
      end = affine::AffineMinOp::create(
                b, loc,
                AffineMap::get(1, 0,
                               {getAffineConstantExpr(16 * rowLength, ctx),
                                (m - d0 * 16) * rowLength},
                               ctx),
                ValueRange{blockId.x})
                .getResult();
    scf::ForOp::create(
        b, loc, flat, end, index(threads), ValueRange{},
        [&](OpBuilder &rb, Location l, Value e, ValueRange) {
          Value row = apply(rb, l, d0.floorDiv(rowLength), {e});
          Value column = apply(rb, l, d0 % rowLength, {e});
          // The slices' values in slice order.
          auto sumSlices =
              [&](Value buffer,
                  function_ref<SmallVector<Value>(int64_t slice)> indices) {
                Value sum;
                for (int64_t slice = 0; slice < slices; ++slice) {
                  Value part =
                      memref::LoadOp::create(rb, l, buffer, indices(slice));
                  sum =
                      sum ? arith::AddFOp::create(rb, l, sum, part).getResult()
                          : part;
                }
                return sum;
              };
          Value sum = sumSlices(partials, [&](int64_t slice) {
            return SmallVector<Value>{apply(rb, l, d0 + 16 * slice, {row}),
                                      column};
          });
          SmallVector<Value> at{apply(rb, l, d0 + d1, {m0, row}),
                                apply(rb, l, d0 + d1, {blockN, column})};
          if (epilogue) {
            // The row's sum of squares: the diagonal of its slices'
            // products.
            Value squares = sumSlices(products, [&](int64_t slice) {
              return SmallVector<Value>{apply(rb, l, d0 + 16 * slice, {row}),
                                        row};
            });
            epilogue->store(rb, l, at, sum, squares);
          } else {
            memref::StoreOp::create(rb, l, sum, c, at);
          }
          scf::YieldOp::create(rb, l);
        });
  }
  gpu::TerminatorOp::create(b, loc);
  builder.name(launch, role);
  if (plan.deadFill)
    plan.deadFill->erase();
  op->erase();
}
