//===- CpuCodegen.cpp - Tile and vectorize linalg on buffers for the CPU --===//
//
// Projections become register-blocked micro-kernels, built from upstream
// transforms only: the contraction is tiled (roles from
// inferContractionDims) so that one tile is a row block of `mt` rows by `nt`
// outputs, one k at a time; each tile is vectorized into a vector.contract
// (lowered later to broadcasts and FMAs); the tiles' subviews are folded
// into the transfers so that the accumulator's read and write leave the k
// loop (upstream's hoisting refuses transfers on views), and the
// accumulator lives in registers across k. Extra output dimensions (whole
// blocks of outputs) are the outer loops, then row blocks, then output
// tiles: a packed projection is one contraction per panel
// (flashnorm-pack-weights), whose weights every row block then reads from
// cache. Decode shapes (a few rows) take wide blocks, prefill shapes rows by
// two vectors, the accumulators half of the register file (RegisterTile.h:
// 8 x 32 on AVX-512, 4 x 16 on AVX2). On a K x N weight that nothing packed,
// decode streams whole rows instead (k outside the output tiles) and
// prefill copies blocks of the weight (256 rows by 128 KiB) into a
// contiguous buffer (on the stack, or the heap per core's chunk) that every
// row block then reads (CpuCopies.h).
//
// A contraction both of whose inputs are contiguous along k (an N x K
// weight nothing packed) would gather one element per cache line in that
// kernel; it is split along k into lanes of partial sums instead
// (CpuDotProduct.h).
//
// Every other linalg op is tiled over its innermost loop by `vector-width`
// (one vector register of f32 by default) and vectorized. Sizes are static here
// (tiles divide them); ops with dynamic sizes are left to
// convert-linalg-to-loops. Runs after flashnorm-async-schedule: it works inside
// the async tasks as anywhere else.
//
//===----------------------------------------------------------------------===//

#include "CpuCopies.h"
#include "CpuDotProduct.h"
#include "PackPanels.h"
#include "flashnorm/Conversion/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Async/IR/Async.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/IR/LinalgInterfaces.h"
#include "mlir/Dialect/Linalg/Transforms/Hoisting.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Dialect/SCF/Transforms/Transforms.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Dominance.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/CSE.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "flashnorm-cpu-codegen"

namespace mlir::flashnorm {
#define GEN_PASS_DEF_CPUCODEGEN
#include "flashnorm/Conversion/Passes.h.inc"
} // namespace mlir::flashnorm

using namespace mlir;
using namespace mlir::flashnorm;

namespace {
/// How one op is tiled: sizes per loop and the loop order.
struct TilePlan {
  SmallVector<int64_t> sizes;
  SmallVector<int64_t> interchange;
  bool contraction = false;
  /// Where the op is first split over the cores (an scf.forall over chunks
  /// of loop `chunkDim`, `chunkSize` each; 0: not split), then tiled.
  unsigned chunkDim = 0;
  int64_t chunkSize = 0;
  /// Cache blocks (0: whole) and their loop order, taken within a chunk
  /// before the tiles; empty: none.
  SmallVector<int64_t> blockSizes;
  SmallVector<int64_t> blockInterchange;
  /// The operand whose block is copied into a contiguous buffer before the
  /// block's tiles read it (a stored K x N weight's strip); none: -1.
  int64_t copyOperand = -1;
  /// Narrow float inputs (bf16, f16) widened to the accumulator's type by
  /// the copies: the activation once, before the op, the weight block by
  /// block (whose body only widens them: narrowInputsWiden).
  bool widen = false;
};

/// A stored K x N weight's block in prefill: this many rows (of k), by the
/// outputs that fill this many bytes (a quarter of a core's 512 KiB L2 on
/// the AVX2 machine measured; the best of the shapes tried there).
static constexpr int64_t kStripRows = 256;
static constexpr int64_t kStripBytes = 128 << 10;

/// The input of `op` that does not read dimension `m` and is a weight
/// stored K x N: dimension `n` its innermost, contiguous, index; or null.
static OpOperand *readsRowsOfN(linalg::LinalgOp op, unsigned m, unsigned n) {
  for (OpOperand *input : op.getDpsInputOperands()) {
    AffineMap map = op.getMatchingIndexingMap(input);
    auto type = dyn_cast<MemRefType>(input->get().getType());
    if (!type || map.getNumResults() == 0 || map.isFunctionOfDim(m) ||
        !type.isLastDimUnitStride())
      continue;
    auto last = dyn_cast<AffineDimExpr>(map.getResults().back());
    if (last && last.getPosition() == n)
      return input;
  }
  return nullptr;
}

/// The distance in elements between rows of `type` (its second-innermost
/// stride; 0 for one row or an unknown layout).
static int64_t rowStride(MemRefType type) {
  SmallVector<int64_t> strides;
  int64_t offset;
  if (type.getRank() < 2 || failed(type.getStridesAndOffset(strides, offset)))
    return 0;
  int64_t stride = strides[strides.size() - 2];
  return ShapedType::isDynamic(stride) ? 0 : stride;
}

struct CpuCodegenPass : flashnorm::impl::CpuCodegenBase<CpuCodegenPass> {
  using CpuCodegenBase::CpuCodegenBase;

  /// The cores a large projection may be split over (`threads`, resolved).
  int64_t numThreads = 1;
  /// The micro-kernel's register tile (`vector-bits`, resolved), and the
  /// vector width of everything else (`vector-width`, resolved).
  RegisterTile tile;
  int64_t width = 16;

  /// The micro-kernel's tile of a contraction: for (m, n, k) = the
  /// innermost m and n dimensions and k, `tile-sizes` if given, else
  /// (M, W, 1) for decode (M < 4 rows: wide rows of W stream; W = 256 on
  /// AVX-512) and the register tile's prefill rows and outputs otherwise;
  /// every other dimension one at a time. An n
  /// dimension that indexes whole panels (flashnorm-pack-weights) is taken
  /// one panel at a time with the panel's width as the tile.
  ///
  /// A decode tile on a K x N weight in its stored layout (nothing packed
  /// it) would read a 1 KiB strip of every row, one page apart for wide
  /// rows, which the prefetcher does not follow; there k goes outside the
  /// output tiles instead, 8 rows at a time, so that each pass streams 8
  /// whole rows and the accumulator (M x N, from L1) is read and written
  /// once per 8 rows. In prefill on such a weight, blocks of 256 rows of k
  /// by 128 KiB of outputs go outside the row blocks, each copied into a
  /// contiguous buffer first (GotoBLAS's packing of B, of one block, in
  /// cache): every row block then reads the block from L2, where in place
  /// its rows, a power of two apart, would share L1 sets and TLB entries
  /// (the whole weight is still read from memory once). Such a
  /// weight of at least `parallel-min-bytes` has its outputs split into one
  /// chunk per core first (outside an async task, which runs beside a
  /// statistic), each chunk tiled alike.
  std::optional<TilePlan> planContraction(linalg::LinalgOp op,
                                          ArrayRef<int64_t> ranges) {
    FailureOr<linalg::ContractionDimensions> dims =
        linalg::inferContractionDims(op);
    if (failed(dims) || dims->m.empty() || dims->n.empty() || dims->k.empty())
      return std::nullopt;
    unsigned m = dims->m.back(), n = dims->n.back();
    int64_t rows = ranges[m];
    // A panel dimension: the innermost n is a panel's width (<= 64).
    bool panels = dims->n.size() > 1 && ranges[n] <= 64;
    OpOperand *weight =
        panels || dims->k.size() != 1 ? nullptr : readsRowsOfN(op, m, n);
    bool storedKN = weight != nullptr;
    bool streamRows = tileSizes.empty() && rows < 4 && storedKN;
    SmallVector<int64_t> want =
        !tileSizes.empty()
            ? SmallVector<int64_t>(tileSizes.begin(), tileSizes.end())
        : streamRows ? SmallVector<int64_t>{rows, tile.wideOutputs(), 8}
        : rows < 4   ? SmallVector<int64_t>{rows, tile.wideOutputs(), 1}
                     : SmallVector<int64_t>{tile.prefillRows(),
                                            tile.prefillOutputs(), 1};
    TilePlan plan;
    plan.contraction = true;
    plan.sizes.assign(ranges.size(), 1);
    plan.sizes[m] = fitTile(rows, want[0]);
    // A stored K x N weight of at least parallel-min-bytes: its outputs in
    // one chunk per core (as the packed panels are), each tiled alike.
    if (storedKN && mayUseCores(op, cast<MemRefType>(weight->get().getType()),
                                numThreads, parallelMinBytes)) {
      int64_t chunk =
          fitTile(ranges[n], llvm::divideCeil(ranges[n], numThreads));
      if (chunk < ranges[n]) {
        plan.chunkDim = n;
        plan.chunkSize = chunk;
      }
    }
    int64_t outputs = plan.chunkSize ? plan.chunkSize : ranges[n];
    plan.sizes[n] = panels ? ranges[n] : fitVectorTile(op, outputs, want[1]);
    for (unsigned k : dims->k)
      plan.sizes[k] = fitTile(ranges[k], want[2]);
    // Loop order: batch, outer n (whole blocks of outputs), then m, inner
    // n, k; on a stored K x N weight m, k, inner n in decode (rows stream)
    // and inner n, m, k in prefill (the strip stays in cache).
    auto append = [&](ArrayRef<unsigned> ds) {
      plan.interchange.append(ds.begin(), ds.end());
    };
    ArrayRef<unsigned> innerN(n);
    // Prefill on a stored K x N weight: blocks of kStripRows rows by the
    // output tiles whose block fits kStripBytes, each copied into a
    // contiguous buffer that the row blocks then read (rows of a
    // power-of-two stride share L1 sets and each sits in its own page: read
    // in place, a strip falls out of cache and the TLB). Only where more
    // than one row block reads each block, and the weight's rows are wider
    // than the tile (a packed panel, or a weight one tile wide, is
    // contiguous already).
    bool strips =
        storedKN && !streamRows && tileSizes.empty() && rows > plan.sizes[m] &&
        rowStride(cast<MemRefType>(weight->get().getType())) > plan.sizes[n];
    if (strips) {
      unsigned k = dims->k.front();
      plan.widen = narrowInputsWiden(op);
      // The buffer's elements: the weight's, or the accumulator's where the
      // copy widens them.
      Type element = getElementTypeOrSelf(
          plan.widen ? op.getDpsInitOperand(0)->get() : weight->get());
      int64_t rowsPerBlock = fitTile(ranges[k], kStripRows);
      int64_t bytes = element.getIntOrFloatBitWidth() / 8;
      // Whole tiles per block, a divisor of the tiles (which divide the
      // outputs), so that every tile is a full vector tile.
      int64_t tileN = plan.sizes[n];
      int64_t tilesPerBlock = fitTile(
          outputs / tileN, kStripBytes / (rowsPerBlock * bytes) / tileN);
      plan.blockSizes.assign(ranges.size(), 0);
      for (unsigned d : dims->batch)
        plan.blockSizes[d] = 1;
      for (unsigned d : ArrayRef<unsigned>(dims->n).drop_back())
        plan.blockSizes[d] = 1;
      plan.blockSizes[n] = tilesPerBlock * tileN;
      plan.blockSizes[k] = rowsPerBlock;
      llvm::append_range(plan.blockInterchange, dims->batch);
      llvm::append_range(plan.blockInterchange, dims->n);
      plan.blockInterchange.push_back(k);
      llvm::append_range(plan.blockInterchange, dims->m);
      plan.copyOperand = weight->getOperandNumber();
    }
    append(dims->batch);
    append(ArrayRef<unsigned>(dims->n).drop_back());
    if (streamRows) {
      append(dims->m);
      append(dims->k);
      append(innerN);
    } else if (storedKN && !strips) {
      append(innerN);
      append(dims->m);
      append(dims->k);
    } else {
      append(dims->m);
      append(innerN);
      append(dims->k);
    }
    // Loops in no role (none for a contraction) keep their place at the end.
    for (unsigned d = 0; d < ranges.size(); ++d)
      if (!llvm::is_contained(plan.interchange, d))
        plan.interchange.push_back(d);
    return plan;
  }

  /// fitTile for a tile that becomes a vector of `op`'s elements: LLVM's
  /// x86 backend cannot legalize bf16 vectors longer than 8 whose length
  /// is not a multiple of 8 (9, 17, 33 lanes abort instruction selection:
  /// "Do not know how to soft promote"), so with bf16 operands the tile is
  /// the largest divisor that is 8 or less, or a multiple of 8.
  static int64_t fitVectorTile(linalg::LinalgOp op, int64_t size,
                               int64_t want) {
    bool bf16 = llvm::any_of(op->getOperandTypes(), [](Type t) {
      return getElementTypeOrSelf(t).isBF16();
    });
    int64_t t = fitTile(size, want);
    while (bf16 && t > 8 && t % 8)
      t = fitTile(size, t - 1);
    return t;
  }

  /// Tile sizes for `op`, or nothing if its sizes are dynamic or it mixes
  /// float and integer operands (f32 x i8 into i32: the vectorizer keeps
  /// them in a vector.contract that does not verify; i8 x i8 is fine).
  std::optional<TilePlan> planTiles(linalg::LinalgOp op) {
    SmallVector<int64_t> ranges = op.getStaticLoopRanges();
    auto isFloat = [](Value v) {
      return isa<FloatType>(getElementTypeOrSelf(v));
    };
    if (ranges.empty() || llvm::any_of(ranges, ShapedType::isDynamic) ||
        (linalg::isaContractionOpInterface(op) &&
         llvm::any_of(op->getOperands(), isFloat) &&
         !llvm::all_of(op->getOperands(), isFloat)))
      return std::nullopt;
    if (linalg::isaContractionOpInterface(op) && ranges.size() >= 3)
      if (std::optional<TilePlan> plan = planContraction(op, ranges))
        return plan;
    // Element-wise ops and row reductions: one row, a vector of the last dim.
    TilePlan plan;
    plan.sizes.assign(ranges.size(), 1);
    plan.sizes.back() = fitVectorTile(op, ranges.back(), width);
    return plan;
  }

  /// `op` as a generic whose narrow inputs other than `weight` are read from
  /// widened copies, made once before it in a buffer freed after it (as
  /// flashnorm-pack-weights widens a packed projection's activations): the
  /// micro-kernel then broadcasts them from memory rather than widening
  /// each at every k of every output tile.
  linalg::LinalgOp widenActivations(IRRewriter &rewriter, linalg::LinalgOp op,
                                    int64_t weight) {
    auto generic = dyn_cast<linalg::GenericOp>(op.getOperation());
    if (!generic) {
      DictionaryAttr attrs = op->getDiscardableAttrDictionary();
      rewriter.setInsertionPoint(op);
      FailureOr<linalg::GenericOp> general =
          linalg::generalizeNamedOp(rewriter, op);
      if (failed(general))
        return op;
      generic = *general;
      generic->setDiscardableAttrs(attrs);
    }
    Type wide = getElementTypeOrSelf(generic.getDpsInitOperand(0)->get());
    for (OpOperand *input : generic.getDpsInputOperands()) {
      auto type = dyn_cast<MemRefType>(input->get().getType());
      // Only the narrow floats narrowInputsWiden vouched for (an integer
      // input is read as it is).
      auto narrow = type ? dyn_cast<FloatType>(type.getElementType()) : nullptr;
      if (int64_t(input->getOperandNumber()) == weight || !narrow ||
          !type.hasStaticShape() ||
          narrow.getWidth() >= wide.getIntOrFloatBitWidth())
        continue;
      Location loc = generic.getLoc();
      rewriter.setInsertionPoint(generic);
      Value copy = memref::AllocOp::create(
          rewriter, loc, MemRefType::get(type.getShape(), wide),
          rewriter.getI64IntegerAttr(64));
      linalg::LinalgOp widen = copyWidened(rewriter, loc, input->get(), copy);
      rewriter.setInsertionPointAfter(generic);
      memref::DeallocOp::create(rewriter, loc, copy);
      rewriter.modifyOpInPlace(generic, [&] { input->set(copy); });
      readWidened(rewriter, generic, *input, wide);
      if (std::optional<TilePlan> plan = planTiles(widen))
        tileAndVectorize(rewriter, widen, *plan);
    }
    return generic;
  }

  /// Where copyBlock's buffers go.
  BlockBuffers blockBuffers;

  /// Copies the block `operand` of `op` reads into a contiguous buffer
  /// before `op`, which then reads the buffer, once for every block of the
  /// loops `blocks` (`chunks`, if not null, splits them over the cores);
  /// BlockBuffers says where the buffer lives.
  void copyBlock(IRRewriter &rewriter, linalg::LinalgOp op, OpOperand &operand,
                 Operation *blocks, scf::ForallOp chunks, bool widen) {
    auto type = dyn_cast<MemRefType>(operand.get().getType());
    if (!type || !type.hasStaticShape())
      return;
    Type acc = getElementTypeOrSelf(op.getDpsInitOperand(0)->get());
    // (An operand already in the accumulator's type is copied as it is: its
    // body reads it without an extension to remove.)
    widen = widen && isa<linalg::GenericOp>(op.getOperation()) &&
            type.getElementType() != acc;
    Location loc = op.getLoc();
    Type element = widen ? acc : type.getElementType();
    auto bufferType = MemRefType::get(type.getShape(), element);
    Value buffer = blockBuffers.get(rewriter, loc, bufferType, blocks, chunks);
    rewriter.setInsertionPoint(op);
    linalg::LinalgOp copy = copyWidened(rewriter, loc, operand.get(), buffer);
    rewriter.modifyOpInPlace(op, [&] { operand.set(buffer); });
    if (widen)
      readWidened(rewriter, cast<linalg::GenericOp>(*op), operand, element);
    if (std::optional<TilePlan> plan = planTiles(copy))
      tileAndVectorize(rewriter, copy, *plan);
  }

  /// Tiles `op` by `plan` (its chunks on the cores first, where the plan
  /// has them) and vectorizes each tile (`op` is erased); the outermost
  /// loop, or null where tiling fails and the op (or its chunk) stays.
  Operation *tileAndVectorize(IRRewriter &rewriter, linalg::LinalgOp op,
                              const TilePlan &plan) {
    if (plan.widen)
      op = widenActivations(rewriter, op, plan.copyOperand);
    Operation *chunks = nullptr;
    if (plan.chunkSize) {
      // The chunks on the cores first, then the tiles within a chunk.
      rewriter.setInsertionPoint(op);
      SmallVector<int64_t> sizes(plan.sizes.size(), 0);
      sizes[plan.chunkDim] = plan.chunkSize;
      scf::SCFTilingOptions options;
      options.setTileSizes(getAsIndexOpFoldResult(&getContext(), sizes));
      options.setLoopType(scf::SCFTilingOptions::LoopType::ForallOp);
      FailureOr<scf::SCFTilingResult> split = scf::tileUsingSCF(
          rewriter, cast<TilingInterface>(op.getOperation()), options);
      if (failed(split))
        return nullptr;
      rewriter.eraseOp(op);
      op = cast<linalg::LinalgOp>(split->tiledOps.front());
      chunks = split->loops.front().getOperation();
    }
    Operation *blocks = nullptr;
    if (!plan.blockSizes.empty()) {
      rewriter.setInsertionPoint(op);
      scf::SCFTilingOptions options;
      options.setTileSizes(
          getAsIndexOpFoldResult(&getContext(), plan.blockSizes));
      options.setInterchange(plan.blockInterchange);
      FailureOr<scf::SCFTilingResult> blocked = scf::tileUsingSCF(
          rewriter, cast<TilingInterface>(op.getOperation()), options);
      if (succeeded(blocked)) {
        rewriter.eraseOp(op);
        op = cast<linalg::LinalgOp>(blocked->tiledOps.front());
        if (!blocked->loops.empty())
          blocks = blocked->loops.front().getOperation();
        if (blocks && plan.copyOperand >= 0)
          copyBlock(rewriter, op, op->getOpOperand(plan.copyOperand), blocks,
                    cast_or_null<scf::ForallOp>(chunks), plan.widen);
      }
    }
    rewriter.setInsertionPoint(op);
    scf::SCFTilingOptions options;
    options.setTileSizes(getAsIndexOpFoldResult(&getContext(), plan.sizes));
    if (!plan.interchange.empty())
      options.setInterchange(plan.interchange);
    FailureOr<scf::SCFTilingResult> tiled = scf::tileUsingSCF(
        rewriter, cast<TilingInterface>(op.getOperation()), options);
    if (failed(tiled))
      return nullptr;
    rewriter.eraseOp(op);
    for (Operation *tile : tiled->tiledOps) {
      rewriter.setInsertionPoint(tile);
      FailureOr<linalg::VectorizationResult> vectorized = linalg::vectorize(
          rewriter, tile, /*inputVectorSizes=*/{},
          /*inputScalableVecDims=*/{},
          /*vectorizeNDExtract=*/false, /*flatten1DDepthwiseConv=*/false,
          /*assumeDynamicDimsMatchVecSizes=*/false,
          /*createNamedContraction=*/plan.contraction);
      if (failed(vectorized))
        continue;
      if (vectorized->replacements.empty())
        rewriter.eraseOp(tile);
      else
        rewriter.replaceOp(tile, vectorized->replacements);
    }
    Operation *outermost =
        chunks   ? chunks
        : blocks ? blocks
                 : (tiled->loops.empty() ? nullptr
                                         : tiled->loops.front().getOperation());
    // The generic a widened projection became vectorizes to a multiply and
    // a reduction over the unit k: one FMA (as vector.contract lowers).
    if (plan.widen && outermost)
      fuseDotMultiplyAdds(rewriter, outermost);
    return outermost;
  }

  void runOnOperation() override {
    if (!tileSizes.empty() && tileSizes.size() != 3) {
      getOperation()->emitError()
          << "flashnorm-cpu-codegen: tile-sizes needs 3 values (m, n, k), got "
          << tileSizes.size();
      return signalPassFailure();
    }
    if (llvm::any_of(tileSizes, [](int64_t t) { return t <= 0; }) ||
        vectorWidth < 0) {
      getOperation()->emitError()
          << "flashnorm-cpu-codegen: tile-sizes must be positive and "
             "vector-width must not be negative";
      return signalPassFailure();
    }
    if (threads < 0 || parallelMinBytes < 0) {
      getOperation()->emitError() << "flashnorm-cpu-codegen: threads and "
                                     "parallel-min-bytes must not be negative";
      return signalPassFailure();
    }
    FailureOr<RegisterTile> resolved = registerTileFor(vectorBits);
    if (failed(resolved)) {
      getOperation()->emitError()
          << "flashnorm-cpu-codegen: " << kVectorBitsValues << ", not "
          << vectorBits.getValue();
      return signalPassFailure();
    }
    tile = *resolved;
    width = vectorWidth ? vectorWidth.getValue() : tile.lanes;
    blockBuffers.clear();
    numThreads = panelThreads(threads);
    DotOptions dotOptions;
    dotOptions.lanes = width;
    dotOptions.registers = tile;
    dotOptions.tiles.assign(tileSizes.begin(), tileSizes.end());
    dotOptions.threads = numThreads;
    dotOptions.parallelMinBytes = parallelMinBytes;
    // Every plan is made before anything is rewritten.
    SmallVector<std::pair<linalg::LinalgOp, TilePlan>, 8> work;
    SmallVector<DotPlan, 4> dots;
    getOperation()->walk([&](linalg::LinalgOp op) {
      if (!op.hasPureBufferSemantics())
        return;
      if (linalg::isaContractionOpInterface(op)) {
        std::string why;
        FailureOr<DotPlan> dot = planDotProduct(op, dotOptions, why);
        LLVM_DEBUG(llvm::dbgs() << "dot product for " << op->getName() << ": "
                                << (succeeded(dot) ? "yes" : why) << "\n");
        if (succeeded(dot)) {
          dots.push_back(std::move(*dot));
          return;
        }
      }
      if (std::optional<TilePlan> plan = planTiles(op))
        work.emplace_back(op, std::move(*plan));
    });
    IRRewriter rewriter(&getContext());
    for (auto &[op, plan] : work)
      tileAndVectorize(rewriter, op, plan);
    for (const DotPlan &dot : dots) {
      FailureOr<DotOps> ops = buildDotProduct(rewriter, dot);
      if (failed(ops)) {
        if (std::optional<TilePlan> plan = planTiles(dot.op))
          tileAndVectorize(rewriter, dot.op, *plan);
        continue;
      }
      TilePlan plan{dot.tileSizes, dot.interchange, /*contraction=*/false};
      if (Operation *loops = tileAndVectorize(rewriter, ops->partial, plan))
        fuseDotMultiplyAdds(rewriter, loops);
      for (linalg::LinalgOp other : ops->others)
        if (std::optional<TilePlan> otherPlan = planTiles(other))
          tileAndVectorize(rewriter, other, *otherPlan);
    }
    // Mixed precision (bf16 or f16 weights, f32 accumulator): the operands
    // are widened explicitly, which the contract lowering needs. Operands
    // wider than the accumulator (f64 into f32) are narrowed first, as the
    // named op's body casts them.
    getOperation()->walk([&](vector::ContractionOp contract) {
      Type acc = getElementTypeOrSelf(contract.getAccType());
      if (!isa<FloatType>(acc))
        return;
      rewriter.setInsertionPoint(contract);
      for (OpOperand *operand :
           {&contract.getLhsMutable(), &contract.getRhsMutable()}) {
        auto type = cast<VectorType>(operand->get().getType());
        if (type.getElementType() == acc ||
            !isa<FloatType>(type.getElementType()))
          continue;
        Location loc = contract.getLoc();
        Value cast = operand->get();
        unsigned from = type.getElementTypeBitWidth(),
                 to = acc.getIntOrFloatBitWidth();
        // (bf16 into f16, of one width, goes through f32.)
        if (from == to)
          cast = arith::ExtFOp::create(rewriter, loc,
                                       type.clone(rewriter.getF32Type()), cast);
        cast = from < to ? Value(arith::ExtFOp::create(rewriter, loc,
                                                       type.clone(acc), cast))
                         : Value(arith::TruncFOp::create(
                               rewriter, loc, type.clone(acc), cast));
        rewriter.modifyOpInPlace(contract, [&] { operand->set(cast); });
      }
    });
    // Transfers on the tiles' subviews index the buffers themselves, and
    // the index arithmetic of one tile is one value (CSE): then the
    // accumulator's read and write name the same element and can leave the
    // k loop. (A panel written back onto itself, as bufferization leaves a
    // forall's insert, is a self-copy that folds away. A loop over an
    // activation's blocks, flashnorm-pack-weights, carries its buffer: the
    // ownership-based deallocation leaves an `scf.if false` that frees it,
    // whose view of the buffer would stop the hoisting below.)
    RewritePatternSet patterns(&getContext());
    memref::populateFoldMemRefAliasOpPatterns(patterns);
    affine::AffineApplyOp::getCanonicalizationPatterns(patterns, &getContext());
    memref::SubViewOp::getCanonicalizationPatterns(patterns, &getContext());
    memref::CopyOp::getCanonicalizationPatterns(patterns, &getContext());
    scf::ForOp::getCanonicalizationPatterns(patterns, &getContext());
    scf::IfOp::getCanonicalizationPatterns(patterns, &getContext());
    (void)applyPatternsGreedily(getOperation(), std::move(patterns));
    DominanceInfo dominance;
    eliminateCommonSubExpressions(rewriter, dominance, getOperation());
    {
      RewritePatternSet copies(&getContext());
      memref::CopyOp::getCanonicalizationPatterns(copies, &getContext());
      scf::ForOp::getCanonicalizationPatterns(copies, &getContext());
      (void)applyPatternsGreedily(getOperation(), std::move(copies));
    }
    // Keep accumulators in registers across the k loop.
    linalg::hoistRedundantVectorTransfers(getOperation());
    // Panels of packed projections: a loop on one core for small weights
    // and within a chunk, else parallel (OpenMP threads, in the pipeline);
    // the split-k blocks that run on the cores are parallel too.
    SmallVector<scf::ForallOp> foralls;
    getOperation()->walk([&](scf::ForallOp op) { foralls.push_back(op); });
    for (scf::ForallOp op : foralls) {
      rewriter.setInsertionPoint(op);
      if (failed(op->hasAttr(kSerialPanelsAttr)
                     ? scf::forallToForLoop(rewriter, op)
                     : scf::forallToParallelLoop(rewriter, op)))
        return signalPassFailure();
    }
  }
};
} // namespace
