//===- TensorCoreBlock.cpp - Prefill on tensor cores through shared memory ===//
//
// f16 and bf16 projections of many tokens (prefill), staged as CUTLASS's
// sm80 GEMMs stage them: each block computes a bm x bn output tile (128 or
// 64 each) over k in tiles of kBlockK, its eight warps side by side (two
// along m, four along n), each a (bm / 2) x (bn / 4) patch of m16n8k16
// fragments. Where TensorCoreTile's warps each load their own fragments
// from global memory (every A fragment read again by each warp along n,
// every weight fragment by each block along m), here the block's 256
// threads copy a k tile of A and of the weight into shared memory once, 16
// bytes per copy, and the warps read their fragments from there:
// - the copies are `cp.async` (nvgpu.device_async_copy, bypassing L1) into
//   a ring of `stages` buffers: while the warps multiply tile t, the copies
//   of tiles t + 1 .. t + stages - 1 are in flight. An iteration issues
//   the copy of tile t + stages - 1 into the stage tile t - 1 used (one
//   commit group per iteration), multiplies tile t, then waits until at
//   most stages - 2 groups are pending (tile t + 1 has landed) and meets
//   the block at a barrier (every copy of tile t + 1 visible, every warp
//   done with tile t's stage, which the next iteration refills). Past the
//   last tile the copy repeats it into a stage nothing reads again, so the
//   loop has one shape throughout: no peeled iterations, no branch; after
//   the loop the block waits for those copies too.
// - a stage holds the tile as the operand is stored: rows of kBlockK for A
//   and an N x K weight (nn.Linear's, and every constant weight after
//   flashnorm-gpu-weight-layout), kBlockK rows along n for a K x N weight
//   (an argument stored so); each row is padded by 16 bytes, so that the
//   eight rows an `ldmatrix` reads at one column fall in different banks
//   (at 64 bytes A's would be four ways in conflict);
// - flashnorm-gpu-mma reads each fragment from shared memory with one
//   `ldmatrix.x4`: A's 16 x 16, and the weight's 16 rows of two n-tiles,
//   split in the 8 x 16 halves each mma takes (as CUTLASS's warp iterators
//   read B, half the ldmatrix instructions of an x2 per n-tile); a K x N
//   weight's by `ldmatrix.trans`, which hands each lane its pairs along k
//   from rows along n. The ring is one buffer per operand, stage-major, so
//   that a fragment's address is 16-byte aligned whatever the stage (all
//   strides multiples of 8).
// Stages: kBlockMaxStages (4) where kBlockSharedBytes allows, which is
// every tile: 80 KB for 128 x 128 (74 KB with a K x N weight), 40 KB for
// 64 x 64. Past the 48 KB a kernel may declare statically, so the rings
// are views of the block's dynamic shared memory
// (`gpu.dynamic_shared_memory`, 16-byte aligned; the weight's ring starts
// at A's size, a multiple of 80 bytes x 64) and the launch says how much.
// Each output tile is written once, from zero, as in TensorCoreTile.cpp.
// Any number of tokens from 64 (a prompt is as long as it is): where the
// rows are not a multiple of the block's, the last block's copies of rows
// past the end copy the last row again (as flashnorm-gpu-mma clamps
// TensorCoreTile's padded rows) and only real rows are written. The
// weight's rows (outputs) and k stay multiples of the tiles: every model's
// are.
//
//===----------------------------------------------------------------------===//

#include "KernelBuilder.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mlir::flashnorm;
using namespace mlir::flashnorm::kernels;

namespace {
/// A stage of one operand's ring: `tile` rows of kBlockK elements (A, a
/// weight stored N x K) or kBlockK rows of `tile` (a weight stored K x N,
/// its rows along n). Each row is padded by kBlockPad elements (16 bytes),
/// so that the eight rows an ldmatrix reads at one column fall in
/// different banks.
struct StageShape {
  int64_t rows, rowLength;
  int64_t elements() const { return rows * (rowLength + kBlockPad); }
};
StageShape stageShape(int64_t tile, bool alongK) {
  return alongK ? StageShape{tile, kBlockK} : StageShape{kBlockK, tile};
}
} // namespace

FailureOr<TensorCoreBlockPlan> kernels::planTensorCoreBlock(linalg::LinalgOp op,
                                                            std::string &why) {
  auto fail = [&](const Twine &msg) {
    why = msg.str();
    return failure();
  };
  FailureOr<RowMajorProjection> p = matchTensorCoreProjection(op, why);
  if (failed(p))
    return failure();
  int64_t minTile = kBlockTiles.back();
  // Fewer rows than a block tile: mostly padding, and too few blocks to
  // stage anything for; the warp-per-tile kernel's.
  if (p->m < minTile)
    return fail("fewer than " + Twine(minTile) + " rows");
  if (p->n % minTile || p->k % kBlockK)
    return fail("outputs are not a multiple of " + Twine(minTile) +
                " nor k of " + Twine(kBlockK));
  TensorCoreBlockPlan plan{op, *p, deadZeroFill(p->c, op)};
  // The tiles that pad the fewest rows (the largest of those), halved (n
  // first) while the grid would leave SMs of an H200 without a block: 512
  // tokens x 576 outputs (SmolLM2) take 64 x 64 (72 blocks), 4096 x 4096
  // 128 x 128, 130 tokens 64 rows (62 padded, where 128 would pad 126).
  auto leastPadding = [](int64_t size) {
    int64_t best = kBlockTiles.front();
    for (int64_t tile : kBlockTiles)
      if (llvm::alignTo(size, tile) < llvm::alignTo(size, best))
        best = tile;
    return best;
  };
  plan.blockM = leastPadding(p->m);
  plan.blockN = leastPadding(p->n);
  auto grid = [&] {
    return llvm::divideCeil(p->m, plan.blockM) * (p->n / plan.blockN);
  };
  while (grid() < kBlockMinGrid &&
         (plan.blockM > minTile || plan.blockN > minTile)) {
    if (plan.blockN >= plan.blockM && plan.blockN > minTile)
      plan.blockN /= 2;
    else
      plan.blockM /= 2;
  }
  plan.raggedRows = p->m % plan.blockM != 0;
  int64_t stageBytes =
      (stageShape(plan.blockM, true).elements() +
       stageShape(plan.blockN, p->transposeB).elements()) *
      cast<MemRefType>(p->a.getType()).getElementTypeBitWidth() / 8;
  plan.stages = std::min(kBlockMaxStages, kBlockSharedBytes / stageBytes);
  return plan;
}

void kernels::buildTensorCoreBlock(KernelBuilder &builder,
                                   const TensorCoreBlockPlan &plan,
                                   StringRef role) {
  linalg::LinalgOp op = plan.op;
  const RowMajorProjection &p = plan.projection;
  int64_t bm = plan.blockM, bn = plan.blockN, k = p.k, stages = plan.stages;
  OpBuilder b(op);
  Location loc = op.getLoc();
  MLIRContext *ctx = b.getContext();
  Value a = to2d(b, loc, p.a), w = to2d(b, loc, p.b), c = to2d(b, loc, p.c);
  auto index = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(b, loc, v);
  };
  Type type = cast<MemRefType>(p.a.getType()).getElementType();
  constexpr int64_t warpsM = 2, warpsN = 4, threads = 32 * warpsM * warpsN;
  auto workgroup =
      gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);
  StageShape shapeA = stageShape(bm, true),
             shapeW = stageShape(bn, p.transposeB);
  auto ringType = [&](StageShape shape) {
    return MemRefType::get({stages, shape.rows, shape.rowLength + kBlockPad},
                           type, MemRefLayoutAttrInterface(), workgroup);
  };
  auto bytesOf = [](MemRefType ring) {
    return ring.getNumElements() * ring.getElementTypeBitWidth() / 8;
  };
  MemRefType ringTypeA = ringType(shapeA), ringTypeW = ringType(shapeW);
  int64_t sharedBytes = bytesOf(ringTypeA) + bytesOf(ringTypeW);
  // Warps along n are threads y, along m threads z.
  auto launch = gpu::LaunchOp::create(
      b, loc, index(llvm::divideCeil(p.m, bm)), index(p.n / bn), index(1),
      index(32), index(warpsN), index(warpsM),
      arith::ConstantIntOp::create(b, loc, sharedBytes, 32),
      /*asyncTokenType=*/nullptr, /*asyncDependencies=*/{});
  b.setInsertionPointToStart(&launch.getBody().front());
  Value shared = gpu::DynamicSharedMemoryOp::create(
      b, loc,
      MemRefType::get({ShapedType::kDynamic}, b.getI8Type(),
                      MemRefLayoutAttrInterface(), workgroup));
  Value ringA =
      memref::ViewOp::create(b, loc, ringTypeA, shared, index(0), ValueRange{});
  Value ringW = memref::ViewOp::create(b, loc, ringTypeW, shared,
                                       index(bytesOf(ringTypeA)), ValueRange{});
  AffineExpr d0, d1, d2;
  bindDims(ctx, d0, d1, d2);
  auto apply = [&](OpBuilder &ab, Location l, AffineExpr e, ValueRange v) {
    return affine::AffineApplyOp::create(ab, l, AffineMap::get(v.size(), 0, e),
                                         v)
        .getResult();
  };
  gpu::KernelDim3 blockId = launch.getBlockIds(), tid = launch.getThreadIds();
  Value flat =
      apply(b, loc, d0 + 32 * (d1 + warpsN * d2), {tid.x, tid.y, tid.z});
  Value m0 = apply(b, loc, d0 * bm, {blockId.x});
  Value n0 = apply(b, loc, d0 * bn, {blockId.y});
  // The warp's patch within the block tile.
  int64_t warpM = bm / warpsM, warpN = bn / warpsN;
  int64_t mTiles = warpM / 16, nTiles = warpN / 8;
  assert(nTiles % 2 == 0 && "a warp's n-tiles pair (warpN >= 16)");
  Value wm = apply(b, loc, d0 * warpM, {tid.z});
  Value wn = apply(b, loc, d0 * warpN, {tid.y});

  // The block's copy of the k tile at k0 into `stage`: each operand's
  // stage rows in 16-byte pieces, consecutive threads along a row, as many
  // pieces per thread as the stage has (one or two per operand: 256 or 512
  // pieces); then the thread's commit group.
  int64_t perCopy = 16 / (type.getIntOrFloatBitWidth() / 8);
  auto copyTile = [&](OpBuilder &cb, Location l, Value k0, Value stage) {
    SmallVector<Value> tokens;
    // The stage's rows from (rowOrigin, columnOrigin) of `from`.
    auto copyRows = [&](Value from, Value rowOrigin, Value columnOrigin,
                        Value ring, StageShape shape,
                        std::optional<int64_t> realRows) {
      int64_t piecesPerRow = shape.rowLength / perCopy;
      assert(shape.rows * piecesPerRow % threads == 0 &&
             "every thread copies as many pieces");
      for (int64_t piece = 0; piece < shape.rows * piecesPerRow;
           piece += threads) {
        Value r = apply(cb, l, (d0 + piece).floorDiv(piecesPerRow), {flat});
        Value col = apply(cb, l, (d0 + piece) % piecesPerRow * perCopy, {flat});
        Value row = apply(cb, l, d0 + d1, {rowOrigin, r});
        // Rows past the last real one (a ragged last block) copy the last
        // row again: a row of A reaches only its own row of the product,
        // and those are not written.
        if (realRows)
          row = affine::AffineMinOp::create(
              cb, l,
              AffineMap::get(
                  1, 0, {d0, getAffineConstantExpr(*realRows - 1, ctx)}, ctx),
              ValueRange{row});
        tokens.push_back(nvgpu::DeviceAsyncCopyOp::create(
            cb, l, nvgpu::DeviceAsyncTokenType::get(ctx), ring,
            ValueRange{stage, r, col}, from,
            ValueRange{row, apply(cb, l, d0 + d1, {columnOrigin, col})},
            cb.getIndexAttr(perCopy), /*srcElements=*/Value(),
            /*bypassL1=*/cb.getUnitAttr()));
      }
    };
    std::optional<int64_t> rowsOfA;
    if (plan.raggedRows)
      rowsOfA = p.m;
    copyRows(a, m0, k0, ringA, shapeA, rowsOfA);
    if (p.transposeB)
      copyRows(w, n0, k0, ringW, shapeW, std::nullopt);
    else
      copyRows(w, k0, n0, ringW, shapeW, std::nullopt);
    return nvgpu::DeviceAsyncCreateGroupOp::create(
        cb, l, nvgpu::DeviceAsyncTokenType::get(ctx), tokens);
  };
  // Until tile t + 1 has landed: all but the stages - 2 latest groups.
  auto waitForNext = [&](OpBuilder &wb, Location l, Value group) {
    nvgpu::DeviceAsyncWaitOp::create(wb, l, group,
                                     wb.getI32IntegerAttr(stages - 2));
    gpu::BarrierOp::create(wb, l);
  };

  // The warp's fragments of a stage, multiplied into its accumulators.
  Value pad = arith::ConstantOp::create(b, loc, b.getZeroAttr(type));
  SmallVector<bool> inBounds{true, true};
  // Fragments are rows x k: a stage read as stored, or (a K x N weight's)
  // transposed.
  AffineMap asStored = AffineMap::getMinorIdentityMap(3, 2, ctx);
  AffineMap transposed = AffineMap::get(3, 0, {d2, d1}, ctx);
  auto multiply = [&](OpBuilder &mb, Location l, Value stage,
                      SmallVector<Value> accs) {
    // A 16 x 16 fragment at `rows` and k = kk of a stage whose rows run
    // along k (read as stored) or along n (read transposed).
    auto fragment = [&](Value ring, Value rows, int64_t kk, bool alongK) {
      Value at = index(kk);
      return vector::TransferReadOp::create(
          mb, l, VectorType::get({16, 16}, type), ring,
          alongK ? ValueRange{stage, rows, at} : ValueRange{stage, at, rows},
          AffineMapAttr::get(alongK ? asStored : transposed), pad, Value(),
          mb.getBoolArrayAttr(inBounds));
    };
    for (int64_t kk = 0; kk < kBlockK; kk += 16) {
      SmallVector<Value> as, ws;
      for (int64_t i = 0; i < mTiles; ++i)
        as.push_back(
            fragment(ringA, apply(mb, l, d0 + 16 * i, {wm}), kk, true));
      // Two n-tiles' weight fragments per read, split in halves: one
      // ldmatrix.x4 where each alone is an x2.
      for (int64_t j = 0; j < nTiles; j += 2) {
        Value both =
            fragment(ringW, apply(mb, l, d0 + 8 * j, {wn}), kk, p.transposeB);
        for (int64_t half = 0; half < 2; ++half)
          ws.push_back(vector::ExtractStridedSliceOp::create(
              mb, l, both, ArrayRef<int64_t>{8 * half, 0},
              ArrayRef<int64_t>{8, 16}, ArrayRef<int64_t>{1, 1}));
      }
      for (int64_t i = 0; i < mTiles; ++i)
        for (int64_t j = 0; j < nTiles; ++j)
          accs[i * nTiles + j] =
              multiplyFragments(mb, l, as[i], ws[j], accs[i * nTiles + j]);
    }
    return accs;
  };

  // Tiles 0 .. stages - 2 into their stages (the last tile again where k
  // has fewer), then until tile 0 has landed.
  Value group;
  for (int64_t stage = 0; stage + 1 < stages; ++stage)
    group = copyTile(b, loc, index(std::min(stage * kBlockK, k - kBlockK)),
                     index(stage));
  waitForNext(b, loc, group);
  SmallVector<Value> accs(mTiles * nTiles, zeroFragment(b, loc));
  auto loop = scf::ForOp::create(
      b, loc, index(0), index(k), index(kBlockK), accs,
      [&](OpBuilder &lb, Location l, Value k0, ValueRange carried) {
        // Tile t + stages - 1 (the last one past the end) into the stage
        // tile t - 1 used.
        Value ahead = affine::AffineMinOp::create(
            lb, l,
            AffineMap::get(1, 0,
                           {d0 + (stages - 1) * kBlockK,
                            getAffineConstantExpr(k - kBlockK, ctx)},
                           ctx),
            ValueRange{k0});
        Value aheadStage =
            apply(lb, l, (d0.floorDiv(kBlockK) + stages - 1) % stages, {k0});
        Value next = copyTile(lb, l, ahead, aheadStage);
        Value stage = apply(lb, l, d0.floorDiv(kBlockK) % stages, {k0});
        SmallVector<Value> sums = multiply(lb, l, stage, carried);
        waitForNext(lb, l, next);
        scf::YieldOp::create(lb, l, sums);
      });
  // The copies past the last tile may still be in flight: none outlives
  // the block (an empty group commits nothing; waiting for no pending group
  // waits for all).
  if (stages > 2)
    nvgpu::DeviceAsyncWaitOp::create(
        b, loc,
        nvgpu::DeviceAsyncCreateGroupOp::create(
            b, loc, nvgpu::DeviceAsyncTokenType::get(ctx), ValueRange{}),
        b.getI32IntegerAttr(0));
  // A ragged last block writes its real rows only (flashnorm-gpu-mma
  // guards each lane's rows).
  SmallVector<bool> rowsInBounds{!plan.raggedRows, true};
  for (int64_t i = 0; i < mTiles; ++i)
    for (int64_t j = 0; j < nTiles; ++j)
      vector::TransferWriteOp::create(
          b, loc, loop.getResult(i * nTiles + j), c,
          ValueRange{apply(b, loc, d0 + d1 + 16 * i, {m0, wm}),
                     apply(b, loc, d0 + d1 + 8 * j, {n0, wn})},
          rowsInBounds);
  gpu::TerminatorOp::create(b, loc);
  builder.name(launch, role);
  if (plan.deadFill)
    plan.deadFill->erase();
  op->erase();
}
