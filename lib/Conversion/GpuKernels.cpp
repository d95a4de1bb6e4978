//===- GpuKernels.cpp - Linalg on buffers to GPU kernels ------------------===//
//
// Every linalg op of a device function becomes one `gpu.launch`, named after
// its role so that PTX and traces read like the model:
// - row reductions (the statistics, softmax sums, means) are one block per
//   row, threads striding over the row and a block `gpu.all_reduce` that the
//   NVVM lowering turns into warp shuffles;
// - in fused mode, each deferred projection with its statistic and
//   post-scale becomes one kernel that accumulates the sum of squares from
//   the activations it loads anyway and applies 1/RMS in its epilogue;
// - projections whose weight is contiguous in k (N x K, what
//   flashnorm-gpu-weight-layout gives them) are row reductions too: a block
//   per output, 16-byte vector loads of the activation and the weight row,
//   several in flight per thread;
// - everything else (element-wise ops, fills, K x N projections) is
//   parallel loops tiled onto blocks and threads, the innermost dimension on
//   threads x so loads along it coalesce (for a projection: threads along N
//   read W[k, n] side by side, one output each, k in registers).
//
//===----------------------------------------------------------------------===//

#include "flashnorm/Analysis/HappensBefore.h"
#include "flashnorm/Conversion/Passes.h"
#include "flashnorm/Dialect/FlashNorm/IR/FlashNormOps.h"
#include "flashnorm/Utils/Remarks.h"

#include "mlir/Conversion/SCFToGPU/SCFToGPU.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/ParallelLoopMapper.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/Transforms/Transforms.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "mlir/Transforms/DialectConversion.h"

namespace mlir::flashnorm {
#define GEN_PASS_DEF_GPUKERNELS
#include "flashnorm/Conversion/Passes.h.inc"
} // namespace mlir::flashnorm

using namespace mlir;
using namespace mlir::flashnorm;

bool flashnorm::isGpuDeviceFunction(func::FuncOp fn) {
  if (fn.isExternal())
    return false;
  // Drivers that call other functions stay on the host; so does anything
  // already holding GPU code.
  WalkResult calls = fn.walk([](Operation *op) {
    return isa<CallOpInterface, gpu::LaunchOp, gpu::LaunchFuncOp>(op)
               ? WalkResult::interrupt()
               : WalkResult::advance();
  });
  return !calls.wasInterrupted();
}

namespace {
constexpr StringLiteral kPass = "flashnorm-gpu-kernels";

/// The value of `map` at `ivs`, one index per result.
SmallVector<Value> applyMap(OpBuilder &b, Location loc, AffineMap map,
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

/// Clones the body of `op` (all but the yield) at `b` with its block
/// arguments bound to `args` and `linalg.index d` to `ivs[d]`; returns the
/// yielded values. Named ops carry their body too: nothing is generalized.
SmallVector<Value> inlineBody(OpBuilder &b, linalg::LinalgOp op,
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

/// Whether `buffer` is one contiguous row-major block (a memcpy copies it).
bool isContiguous(Value buffer) {
  auto type = dyn_cast<MemRefType>(buffer.getType());
  return type && type.getLayout().isIdentity();
}

/// The trip count of each loop of `op`, as index values at `b`.
SmallVector<Value> loopSizes(OpBuilder &b, Location loc, linalg::LinalgOp op) {
  return llvm::map_to_vector(op.createLoopRanges(b, loc), [&](Range r) {
    return getValueOrCreateConstantIndexOp(b, loc, r.size);
  });
}

/// Whether an op after `from` and before `to` (in one block) other than
/// `skip` may write `buffer`.
bool writtenBetween(Value buffer, Operation *from, Operation *to,
                    Operation *skip = nullptr) {
  Value root = HappensBefore::getRoot(buffer);
  for (Operation *op = from->getNextNode(); op && op != to;
       op = op->getNextNode())
    if (op != skip && mayWrite(op, root))
      return true;
  return false;
}

/// Whether `op`'s body is `out + ext(a) * ext(b)`, the extensions optional
/// (contraction interfaces also accept other unary ops on the inputs).
bool isPlainProduct(linalg::LinalgOp op) {
  Block &body = op->getRegion(0).front();
  if (body.getNumArguments() != 3)
    return false;
  auto add = body.getTerminator()->getOperand(0).getDefiningOp<arith::AddFOp>();
  if (!add)
    return false;
  Value out = body.getArgument(2);
  Value product = add.getLhs() == out ? add.getRhs() : add.getLhs();
  if (add.getLhs() != out && add.getRhs() != out)
    return false;
  auto mul = product.getDefiningOp<arith::MulFOp>();
  if (!mul)
    return false;
  auto input = [&](Value v) -> Value {
    if (auto ext = v.getDefiningOp<arith::ExtFOp>())
      return ext.getIn();
    return v;
  };
  Value a = body.getArgument(0), b = body.getArgument(1);
  Value lhs = input(mul.getLhs()), rhs = input(mul.getRhs());
  return (lhs == a && rhs == b) || (lhs == b && rhs == a);
}

/// Whether `op` reduces its last loop into an output indexed by the other
/// loops, as `out = out + f(ins)`.
bool isRowReduction(linalg::LinalgOp op) {
  unsigned n = op.getNumLoops();
  if (n < 2 || op.getNumDpsInits() != 1 || op.getNumReductionLoops() != 1 ||
      !linalg::isReductionIterator(op.getIteratorTypesArray().back()))
    return false;
  // The block all-reduce shuffles 32-bit values.
  if (!getElementTypeOrSelf(op.getDpsInitOperand(0)->get().getType()).isF32())
    return false;
  AffineMap outMap = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
  if (outMap != AffineMap::getMultiDimIdentityMap(n, op.getContext())
                    .getMajorSubMap(n - 1))
    return false;
  Block &body = *op.getBlock();
  BlockArgument out = body.getArguments().back();
  auto add = body.getTerminator()->getOperand(0).getDefiningOp<arith::AddFOp>();
  return add && out.hasOneUse() && (add.getLhs() == out || add.getRhs() == out);
}

/// A projection's `acc + a * b` step may become one FMA (`fma.rn`, as
/// cuBLAS computes it): the multiply and the add of the inlined body get
/// the `contract` flag; the sum is rounded once instead of twice.
void allowContraction(Value acc) {
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

/// Whether contraction `op` is a prefill for `gemm=auto`: more than
/// kGemmLtMinRows rows (the product of its m dimensions), or a row count
/// known only at run time.
bool isPrefill(linalg::LinalgOp op) {
  FailureOr<linalg::ContractionDimensions> dims =
      linalg::inferContractionDims(op);
  if (failed(dims))
    return false;
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  int64_t rows = 1;
  for (unsigned m : dims->m) {
    if (ShapedType::isDynamic(ranges[m]))
      return true;
    rows *= ranges[m];
  }
  return rows >= kGemmLtMinRows;
}

/// For a projection taking the row-reduction kernel: how many elements of
/// each input a thread loads at once along k (the last loop), so that the
/// widest input is read 16 bytes at a time (`ld.global.v4`); 1 where an
/// input is not contiguous along k or its rows are not multiples of that
/// (a view with an offset, a dynamic or odd K). Device buffers come from the
/// driver 256-byte aligned and their rows are then 16-byte aligned.
int64_t vectorWidthAlongK(linalg::LinalgOp op) {
  unsigned k = op.getNumLoops() - 1;
  int64_t widest = 0;
  SmallVector<MemRefType> types;
  for (OpOperand *in : op.getDpsInputOperands()) {
    auto type = dyn_cast<MemRefType>(in->get().getType());
    if (!type || type.getRank() == 0 || !type.getLayout().isIdentity() ||
        !type.getElementType().isIntOrFloat() ||
        type.getElementTypeBitWidth() % 8 ||
        !llvm::isPowerOf2_64(type.getElementTypeBitWidth() / 8))
      return 1;
    AffineMap map = op.getMatchingIndexingMap(in);
    AffineExpr dk = getAffineDimExpr(k, op.getContext());
    if (map.getResults().back() != dk || llvm::count(map.getResults(), dk) != 1)
      return 1;
    widest = std::max<int64_t>(widest, type.getElementTypeBitWidth() / 8);
    types.push_back(type);
  }
  int64_t width = 16 / widest;
  for (MemRefType type : types)
    if (width < 2 || type.isDynamicDim(type.getRank() - 1) ||
        type.getShape().back() % width)
      return 1;
  return width;
}

/// Threads per block for a projection's row reduction: a warp for short
/// rows, up to four so that each thread still loads about four vectors
/// (K = 4096 bf16: 128 threads, four 16-byte loads each, in flight at once).
int64_t projectionThreads(int64_t k, int64_t width) {
  int64_t vectors = k / width;
  return vectors >= 512 ? 128 : vectors >= 256 ? 64 : 32;
}

class KernelBuilder {
public:
  KernelBuilder(func::FuncOp fn, int64_t threads, PassReporter &reporter)
      : fn(fn), threads(threads), reporter(reporter) {}

  /// One block per row; threads stride over the row; a block all-reduce.
  /// With `zeroFill` (the zero fill of the output just before) and
  /// `epilogue` (an element-wise op of the rows just after, reading the sums
  /// only), all three are one kernel: thread 0 applies the epilogue to the
  /// block's total.
  ///
  /// With `width` > 1 (vectorWidthAlongK) each thread loads `width`
  /// consecutive elements of every input per step, one vector load each,
  /// and applies the body to them in turn. With `weightRowsOuter` (a
  /// projection) blocks that share a weight row are adjacent in the grid:
  /// the rows of the activation vary fastest, so a decode step's few rows
  /// read each weight row while it is in L2.
  void buildRowReduction(linalg::LinalgOp op, StringRef role,
                         int64_t blockThreads, linalg::FillOp zeroFill = {},
                         linalg::GenericOp epilogue = {}, int64_t width = 1,
                         bool weightRowsOuter = false) {
    // At the epilogue: what it uses is defined there, and only ops without
    // memory effects stand between it and the reduction.
    OpBuilder b(epilogue ? epilogue.getOperation() : op.getOperation());
    Location loc = op.getLoc();
    auto [launch, ivs] =
        launchPerRow(b, loc, op, blockThreads, weightRowsOuter);
    Value tid = launch.getThreadIds().x;
    Type elementType =
        getElementTypeOrSelf(op.getDpsInitOperand(0)->get().getType());
    Value zero = arith::ConstantOp::create(b, loc, b.getZeroAttr(elementType));
    scf::ForOp loop =
        buildKLoop(b, loc, op, ivs, tid, blockThreads, width, ValueRange{zero},
                   [&](OpBuilder &nb, Location l, ArrayRef<Value> args,
                       ArrayRef<Value> at, ValueRange acc) {
                     SmallVector<Value> all(args);
                     all.push_back(acc[0]);
                     SmallVector<Value> next = inlineBody(nb, op, all, at);
                     if (linalg::isaContractionOpInterface(op))
                       allowContraction(next[0]);
                     return next;
                   });
    auto total = gpu::AllReduceOp::create(
        b, loc, loop.getResult(0),
        gpu::AllReduceOperationAttr::get(b.getContext(),
                                         gpu::AllReduceOperation::ADD),
        b.getUnitAttr());
    Value first =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, tid,
                              arith::ConstantIndexOp::create(b, loc, 0));
    auto store = scf::IfOp::create(b, loc, first, /*withElse=*/false);
    b.setInsertionPointToStart(store.thenBlock());
    Value out = op.getDpsInitOperand(0)->get();
    Value sum = total.getResult();
    if (!zeroFill)
      sum = arith::AddFOp::create(
          b, loc, memref::LoadOp::create(b, loc, out, ivs), sum);
    // The sums themselves are stored only if something else reads them.
    bool sumsRead =
        !epilogue || llvm::any_of(out.getUsers(), [&](Operation *u) {
          return u != op && u != zeroFill && u != epilogue;
        });
    if (sumsRead)
      memref::StoreOp::create(b, loc, sum, out, ivs);
    if (epilogue) {
      Value result = epilogue.getDpsInitOperand(0)->get();
      // The epilogue reads only the sums and not its output (checked).
      Value y = inlineBody(b, epilogue, {sum, sum}, ivs)[0];
      memref::StoreOp::create(b, loc, y, result, ivs);
      epilogue->erase();
    }
    b.setInsertionPointToEnd(&launch.getBody().front());
    gpu::TerminatorOp::create(b, loc);
    name(launch, role);
    op->erase();
    if (zeroFill)
      zeroFill->erase();
  }

  /// A launch of one block of `blockThreads` threads per output row of `op`
  /// (every loop but the last), the builder inside it; returns it with the
  /// row's indices (blockIndices).
  std::pair<gpu::LaunchOp, SmallVector<Value>>
  launchPerRow(OpBuilder &b, Location loc, linalg::LinalgOp op,
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

  /// The k loop of a row-reduction kernel: thread `tid` of `blockThreads`
  /// visits the last loop of `op` (in vectors of `width` elements where
  /// `width` > 1, several per step so that all of a step's loads are in
  /// flight at once: the hardware issues in order, so a multiply waiting on a
  /// load would hold back the next load), loading each input of `op` at
  /// `ivs` and k. `body` gets the inputs' values at one k, the indices
  /// (`ivs`, k) and the carried values, and returns the new ones.
  scf::ForOp buildKLoop(
      OpBuilder &b, Location loc, linalg::LinalgOp op, ArrayRef<Value> ivs,
      Value tid, int64_t blockThreads, int64_t width, ValueRange inits,
      function_ref<SmallVector<Value>(OpBuilder &, Location, ArrayRef<Value>,
                                      ArrayRef<Value>, ValueRange)>
          body) {
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
    Value stride =
        arith::ConstantIndexOp::create(b, loc, blockThreads * unroll);
    return scf::ForOp::create(
        b, loc, tid, steps, stride, inits,
        [&](OpBuilder &nb, Location l, Value step, ValueRange iter) {
          SmallVector<Value> at(ivs);
          auto inputs = op.getDpsInputOperands();
          if (width == 1) {
            at.push_back(step);
            SmallVector<Value> args;
            for (OpOperand *in : inputs)
              args.push_back(
                  load(nb, l, in->get(), op.getMatchingIndexingMap(in), at));
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

  /// Fused mode, weights contiguous in k: the statistic, the projection
  /// and the post-scale of one output as one block, built like the
  /// projection's row reduction (vector loads along k); each thread sums
  /// the products and the squares of the activation it loaded anyway, two
  /// block all-reduces give the row's dot product and sum of squares, and
  /// thread 0 applies the init, 1/RMS (`finalize`) and the post-scale.
  /// Inserted before `post`.
  void buildFusedRowReduction(linalg::LinalgOp proj, unsigned activation,
                              linalg::GenericOp reduce,
                              linalg::GenericOp finalize,
                              linalg::GenericOp post, unsigned rows) {
    OpBuilder b(post);
    Location loc = proj.getLoc();
    int64_t width = vectorWidthAlongK(proj);
    int64_t k = proj.getStaticLoopRanges().back();
    int64_t blockThreads =
        ShapedType::isDynamic(k) ? 32 : projectionThreads(k, width);
    auto [launch, ivs] =
        launchPerRow(b, loc, proj, blockThreads, /*weightRowsOuter=*/true);
    SmallVector<Value> rowIvs(ivs.begin(), ivs.begin() + rows);
    Value tid = launch.getThreadIds().x;
    Type statType =
        getElementTypeOrSelf(reduce.getDpsInitOperand(0)->get().getType());
    Value acc0 = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0));
    Value ss0 = arith::ConstantOp::create(b, loc, b.getZeroAttr(statType));
    scf::ForOp loop = buildKLoop(
        b, loc, proj, ivs, tid, blockThreads, width, ValueRange{acc0, ss0},
        [&](OpBuilder &nb, Location l, ArrayRef<Value> args, ArrayRef<Value> at,
            ValueRange iter) {
          SmallVector<Value> all(args);
          all.push_back(iter[0]);
          Value acc = inlineBody(nb, proj, all, at)[0];
          allowContraction(acc);
          SmallVector<Value> rowAt(rowIvs);
          rowAt.push_back(at.back());
          Value ss =
              inlineBody(nb, reduce, {args[activation], iter[1]}, rowAt)[0];
          return SmallVector<Value>{acc, ss};
        });
    auto sum = [&](Value v) {
      return gpu::AllReduceOp::create(
                 b, loc, v,
                 gpu::AllReduceOperationAttr::get(b.getContext(),
                                                  gpu::AllReduceOperation::ADD),
                 b.getUnitAttr())
          .getResult();
    };
    Value dot = sum(loop.getResult(0)), ss = sum(loop.getResult(1));
    Value first =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, tid,
                              arith::ConstantIndexOp::create(b, loc, 0));
    auto store = scf::IfOp::create(b, loc, first, /*withElse=*/false);
    b.setInsertionPointToStart(store.thenBlock());
    // The product's init (a zero fill, or a bias copied in) plus the sum.
    Value product = proj.getDpsInitOperand(0)->get();
    Value total = arith::AddFOp::create(
        b, loc, memref::LoadOp::create(b, loc, product, ivs), dot);
    Value scale = inlineBody(b, finalize, {ss, ss0}, rowIvs)[0];
    // The post-scale does not read its output (checked by the caller).
    Value y = inlineBody(b, post, {total, scale, total}, ivs)[0];
    memref::StoreOp::create(b, loc, y, post.getDpsInitOperand(0)->get(), ivs);
    b.setInsertionPointToEnd(&launch.getBody().front());
    gpu::TerminatorOp::create(b, loc);
    name(launch, "fused_norm_proj");
  }

  /// Parallel loops onto blocks and threads (sequential loops for
  /// reductions inside each thread).
  LogicalResult buildParallel(linalg::LinalgOp op, StringRef role) {
    // Without a parallel loop (a full reduction, a 0-d op) one thread runs
    // the whole nest: lower it inside a 1 x 1 launch.
    if (op.getNumParallelLoops() == 0) {
      OpBuilder b(op);
      Location loc = op.getLoc();
      Value one = arith::ConstantIndexOp::create(b, loc, 1);
      auto launch = gpu::LaunchOp::create(b, loc, one, one, one, one, one, one);
      b.setInsertionPointToStart(&launch.getBody().front());
      op->moveBefore(gpu::TerminatorOp::create(b, loc));
      name(launch, role);
    }
    IRRewriter rewriter(op);
    // A reduction outside a parallel loop (a column sum: iterators
    // [reduction, parallel], as a LayerNorm's prepare function writes) would
    // leave that loop on the host: move every reduction innermost, so each
    // thread owns an output and loops over what it reduces.
    if (auto generic = dyn_cast<linalg::GenericOp>(op.getOperation())) {
      SmallVector<utils::IteratorType> iters = op.getIteratorTypesArray();
      SmallVector<unsigned> order;
      for (auto kind :
           {utils::IteratorType::parallel, utils::IteratorType::reduction})
        for (auto [i, it] : llvm::enumerate(iters))
          if (it == kind)
            order.push_back(i);
      if (!llvm::equal(order, llvm::seq<unsigned>(0, iters.size()))) {
        FailureOr<linalg::GenericOp> moved =
            linalg::interchangeGenericOp(rewriter, generic, order);
        if (failed(moved))
          return op->emitError("flashnorm-gpu-kernels: cannot move this op's "
                               "reductions innermost");
        op = *moved;
      }
    }
    FailureOr<linalg::LinalgLoops> loops =
        linalg::linalgOpToParallelLoops(rewriter, op);
    if (failed(loops))
      return op->emitError("flashnorm-gpu-kernels: cannot lower this op to "
                           "loops");
    rewriter.eraseOp(op);
    if (auto parallel = dyn_cast_or_null<scf::ParallelOp>(
            loops->empty() ? nullptr : loops->front()))
      if (!parallel->getParentOfType<gpu::LaunchOp>())
        return launchParallel(parallel, role);
    return success();
  }

  /// Tiles `loop` (threads x on its innermost dimension), maps it and
  /// converts it to a launch.
  LogicalResult launchParallel(scf::ParallelOp loop, StringRef role) {
    unsigned rank = loop.getNumLoops();
    SmallVector<int64_t> tile(rank, 1);
    std::optional<int64_t> inner =
        getConstantIntValue(loop.getUpperBound()[rank - 1]);
    // (A 0-sized dimension still takes one thread: its grid is empty, and
    // the runtime launches nothing.)
    tile.back() = inner ? std::clamp<int64_t>(*inner, 1, threads) : threads;
    auto [outerLoop, innerLoop] =
        scf::tileParallelLoop(loop, tile, /*noMinMaxBounds=*/true);
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

private:
  /// Innermost dimension on x, then y, z; the rest run sequentially.
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

  /// The indices of the output row block `linear` computes: row-major over
  /// `sizes`, or with `weightRowsOuter` over the loops the weight (the
  /// projection's second input) reads first, the others fastest.
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

  static SmallVector<Value> delinearize(OpBuilder &b, Location loc,
                                        Value linear, ArrayRef<Value> sizes) {
    SmallVector<Value> ivs(sizes.size());
    for (int i = sizes.size() - 1; i >= 0; --i) {
      ivs[i] =
          i == 0 ? linear : arith::RemUIOp::create(b, loc, linear, sizes[i]);
      if (i > 0)
        linear = arith::DivUIOp::create(b, loc, linear, sizes[i]);
    }
    return ivs;
  }

public:
  static Value load(OpBuilder &b, Location loc, Value buffer, AffineMap map,
                    ValueRange ivs) {
    return memref::LoadOp::create(b, loc, buffer, applyMap(b, loc, map, ivs));
  }

  void name(gpu::LaunchOp launch, StringRef role) {
    MLIRContext *ctx = fn.getContext();
    std::string module = (fn.getSymName() + "_kernels").str();
    std::string kernel =
        (fn.getSymName() + "_" + role + "_" + Twine(count++)).str();
    launch.setModuleAttr(FlatSymbolRefAttr::get(ctx, module));
    launch.setFunctionAttr(FlatSymbolRefAttr::get(ctx, kernel));
    reporter.applied(launch, "kernel @" + kernel);
  }

private:
  func::FuncOp fn;
  int64_t threads;
  PassReporter &reporter;
  unsigned count = 0;
};

/// A deferred norm's pieces on buffers, from the async marks.
struct Group {
  SmallVector<Operation *> stat;
  DenseMap<int64_t, Operation *> proj, post;
  SmallVector<Operation *> unpairedPost;
};

/// Whether `value` is used by `op`'s body (beyond being passed in).
bool usesOutput(linalg::GenericOp op) {
  return !op.getRegion().front().getArguments().back().use_empty();
}

struct GpuKernelsPass : flashnorm::impl::GpuKernelsBase<GpuKernelsPass> {
  using GpuKernelsBase::GpuKernelsBase;

  /// Set when a fused kernel's loop nest could not be mapped (an error was
  /// emitted): the pass fails.
  bool mappingFailed = false;

  void runOnOperation() override {
    func::FuncOp fn = getOperation();
    for (auto [name, value] :
         {std::pair<StringRef, int64_t>{"threads", threads},
          {"reduce-threads", reduceThreads}})
      if (value < 1 || value > 1024) {
        fn.emitError() << kPass << ": " << name
                       << " must be between 1 and 1024, not " << value;
        return signalPassFailure();
      }
    if (!isGpuDeviceFunction(fn))
      return;
    PassReporter reporter(fn, kPass);
    KernelBuilder builder(fn, threads, reporter);
    // Copies between contiguous buffers are plain device copies
    // (flashnorm-gpu-streams); others (views into a concatenation) need a
    // kernel.
    SmallVector<memref::CopyOp> strided;
    fn.walk([&](memref::CopyOp copy) {
      if (!isContiguous(copy.getSource()) || !isContiguous(copy.getTarget()))
        strided.push_back(copy);
    });
    for (memref::CopyOp copy : strided) {
      OpBuilder b(copy);
      linalg::CopyOp::create(b, copy.getLoc(), copy.getSource(),
                             copy.getTarget());
      copy->erase();
    }
    if (fused)
      fuseGroups(fn, builder, reporter);
    if (mappingFailed) // launchParallel said why
      return signalPassFailure();
    fusePostScales(fn, reporter);
    if (gemm != GemmPath::Codegen) {
      // Before any kernel exists: the zero fill of each accumulator is
      // still visible.
      SmallVector<linalg::LinalgOp> projections;
      fn.walk([&](linalg::LinalgOp op) {
        if (linalg::isaContractionOpInterface(op) &&
            (gemm == GemmPath::CuBlasLt || isPrefill(op)))
          projections.push_back(op);
      });
      for (linalg::LinalgOp op : projections) {
        Location loc = op.getLoc();
        std::string why = toGemmLt(op);
        if (why.empty())
          reporter.applied(fn, "projection at " + formatLoc(loc) +
                                   " through cuBLASLt");
        else
          reporter.refused(op, "projection kept as a generated kernel: " + why);
      }
    }
    if (tensorCores) {
      SmallVector<linalg::LinalgOp> projections;
      fn.walk([&](linalg::LinalgOp op) {
        if (linalg::isaContractionOpInterface(op))
          projections.push_back(op);
      });
      for (linalg::LinalgOp op : projections) {
        bool f16 =
            getElementTypeOrSelf(op.getDpsInputOperand(0)->get().getType())
                .isF16();
        std::string why = toTensorCoreKernel(op, builder, "proj_mma");
        if (!why.empty() && f16)
          reporter.refused(op, "projection not on tensor cores: " + why);
      }
    }
    // Row reductions first, with the zero fill before and the element-wise
    // epilogue after them (a statistic: fill, sum of squares, rsqrt) in the
    // same kernel.
    // Projections are row reductions too (over k): they take this kernel,
    // one warp per output, only where lanes striding k read the weight
    // contiguously (N x K, PyTorch's layout); with K x N weights a thread
    // per output, threads along n, reads it contiguously instead.
    SmallVector<linalg::LinalgOp> candidates;
    fn.walk([&](linalg::LinalgOp op) { candidates.push_back(op); });
    SmallVector<linalg::LinalgOp> reductions;
    for (linalg::LinalgOp op : candidates) {
      bool projection = linalg::isaContractionOpInterface(op);
      if (projection ? weightContiguousInK(op)
                     : isa<linalg::GenericOp>(op.getOperation()))
        if (isRowReduction(op))
          reductions.push_back(op);
    }
    for (linalg::LinalgOp op : reductions) {
      StringRef role = roleOf(op);
      if (!linalg::isaContractionOpInterface(op)) {
        builder.buildRowReduction(op, role.empty() ? kindOf(op) : role,
                                  reduceThreads, zeroFillBefore(op),
                                  epilogueAfter(op));
        continue;
      }
      // Projections: 16-byte loads along k where the rows allow it, a warp
      // to four per output, the weight's rows outermost in the grid.
      int64_t width = vectorWidthAlongK(op);
      int64_t k = op.getStaticLoopRanges().back();
      int64_t blockThreads =
          ShapedType::isDynamic(k) ? 32 : projectionThreads(k, width);
      builder.buildRowReduction(op, role.empty() ? kindOf(op) : role,
                                blockThreads, zeroFillBefore(op),
                                epilogueAfter(op), width,
                                /*weightRowsOuter=*/true);
    }
    SmallVector<linalg::LinalgOp> ops;
    fn.walk([&](linalg::LinalgOp op) { ops.push_back(op); });
    for (linalg::LinalgOp op : ops) {
      StringRef role = roleOf(op);
      if (failed(builder.buildParallel(op, role.empty() ? kindOf(op) : role)))
        return signalPassFailure();
    }
    fn.walk([](Operation *op) {
      op->removeAttr(kAsyncGroupAttr);
      op->removeAttr(kAsyncRoleAttr);
      op->removeAttr(kAsyncPairAttr);
    });
  }

  /// Each post-scale whose result only feeds one element-wise op (a bias
  /// add, a residual add, a SwiGLU gate) is computed inside that op's
  /// kernel instead of a kernel of its own.
  void fusePostScales(func::FuncOp fn, PassReporter &reporter) {
    SmallVector<linalg::GenericOp> posts;
    fn.walk([&](linalg::GenericOp op) {
      if (roleOf(op) == "post_scale")
        posts.push_back(op);
    });
    // Last first: fusing a post-scale erases its consumer, which may be a
    // later post-scale (a LayerNorm's after an RMSNorm's); processed
    // already, it is no longer in the list's future.
    for (linalg::GenericOp post : llvm::reverse(posts)) {
      std::string why = fusePostScale(post);
      if (!why.empty())
        reporter.refused(post, "post-scale kept as its own kernel: " + why);
    }
  }

  static bool isElementwise(linalg::GenericOp op) {
    return op.getNumReductionLoops() == 0 && op.getNumDpsInits() == 1 &&
           op.getMatchingIndexingMap(op.getDpsInitOperand(0)).isIdentity();
  }

  /// Merges `post` into the element-wise consumer of its result; returns
  /// why not, or "".
  static std::string fusePostScale(linalg::GenericOp post) {
    if (!isElementwise(post) || usesOutput(post))
      return "it is not element-wise";
    Value result = post.getDpsInitOperand(0)->get();
    linalg::GenericOp consumer;
    OpOperand *use = nullptr;
    // One element-wise reader, which may also write its result in place
    // (then later readers see the consumer's result, not the post-scale's).
    auto writesInPlace = [&] {
      return consumer && consumer.getDpsInitOperand(0)->get() == result;
    };
    SmallVector<Operation *> laterReaders;
    for (OpOperand &u : result.getUses()) {
      if (u.getOwner() == post)
        continue;
      auto user = dyn_cast<linalg::GenericOp>(u.getOwner());
      if (!user || (consumer && user != consumer)) {
        laterReaders.push_back(u.getOwner());
        continue;
      }
      consumer = user;
      if (!user.isDpsInput(&u))
        continue;
      if (use)
        return "its consumer reads it twice";
      use = &u;
    }
    if (!use)
      return "nothing consumes it element-wise";
    for (Operation *reader : laterReaders)
      if (!writesInPlace() || reader->getBlock() != consumer->getBlock() ||
          !consumer->isBeforeInBlock(reader))
        return "its result has other users";
    // On buffers an earlier op may read the same buffer (reused, or carried
    // around a loop): only a consumer after the post-scale reads its value.
    if (consumer->getBlock() != post->getBlock() ||
        !post->isBeforeInBlock(consumer))
      return "its consumer does not come after it";
    if (!isElementwise(consumer) || usesOutput(consumer) ||
        consumer->getBlock() != post->getBlock() ||
        consumer.getNumLoops() != post.getNumLoops() ||
        !consumer.getMatchingIndexingMap(use).isIdentity())
      return "its consumer is not element-wise over the same rows";
    // The post-scale's inputs must hold the same values at the consumer.
    for (Value input : post.getDpsInputs())
      if (writtenBetween(input, post, consumer))
        return "its inputs are written before its consumer runs";
    // ins: the post-scale's, then the consumer's but the fused one.
    SmallVector<Value> ins(post.getDpsInputs());
    SmallVector<AffineMap> maps;
    for (OpOperand *in : post.getDpsInputOperands())
      maps.push_back(post.getMatchingIndexingMap(in));
    for (OpOperand *in : consumer.getDpsInputOperands())
      if (in != use) {
        ins.push_back(in->get());
        maps.push_back(consumer.getMatchingIndexingMap(in));
      }
    maps.push_back(
        consumer.getMatchingIndexingMap(consumer.getDpsInitOperand(0)));
    OpBuilder b(consumer);
    auto merged = linalg::GenericOp::create(
        b, consumer.getLoc(), TypeRange{}, ins, consumer.getDpsInits(), maps,
        consumer.getIteratorTypesArray(),
        [&](OpBuilder &nb, Location loc, ValueRange args) {
          unsigned nPost = post.getNumDpsInputs();
          SmallVector<Value> postArgs(args.take_front(nPost));
          postArgs.push_back(args.back()); // unused (checked)
          SmallVector<Value> ivs;
          for (unsigned d = 0; d < post.getNumLoops(); ++d)
            ivs.push_back(linalg::IndexOp::create(nb, loc, d));
          Value scaled = inlineBody(nb, post, postArgs, ivs)[0];
          SmallVector<Value> consumerArgs;
          unsigned next = nPost;
          for (OpOperand *in : consumer.getDpsInputOperands())
            consumerArgs.push_back(in == use ? scaled : args[next++]);
          consumerArgs.push_back(args.back());
          linalg::YieldOp::create(nb, loc,
                                  inlineBody(nb, consumer, consumerArgs, ivs));
        });
    merged->setAttr(kAsyncRoleAttr, b.getStringAttr("post_fused"));
    consumer->erase();
    post->erase();
    return "";
  }

  /// The nearest op before or after `op` in its block that touches memory.
  static Operation *neighbour(Operation *op, bool before) {
    for (Operation *n = before ? op->getPrevNode() : op->getNextNode(); n;
         n = before ? n->getPrevNode() : n->getNextNode())
      if (!isMemoryEffectFree(n) &&
          !isa<ViewLikeOpInterface, memref::AllocOp>(n))
        return n;
    return nullptr;
  }

  /// The zero fill of `reduce`'s output, if it is the op just before.
  static linalg::FillOp zeroFillBefore(linalg::LinalgOp reduce) {
    auto fill = dyn_cast_or_null<linalg::FillOp>(neighbour(reduce, true));
    Value out = reduce.getDpsInitOperand(0)->get();
    return fill && isZeroFill(fill) && fill.getOutputs()[0] == out
               ? fill
               : linalg::FillOp();
  }

  /// The element-wise op of the rows just after `reduce` that reads its sums
  /// and nothing else, if there is one.
  static linalg::GenericOp epilogueAfter(linalg::LinalgOp reduce) {
    auto next = dyn_cast_or_null<linalg::GenericOp>(neighbour(reduce, false));
    Value out = reduce.getDpsInitOperand(0)->get();
    if (!next || !isElementwise(next) || usesOutput(next) ||
        next.getNumDpsInputs() != 1 || next.getDpsInputs()[0] != out ||
        !next.getIndexingMapsArray()[0].isIdentity() ||
        next.getNumLoops() != reduce.getNumLoops() - 1)
      return {};
    return next;
  }

  /// Whether `buffer` holds zeros when `user` runs: its last writer in the
  /// block is a zero fill, or a copy from a buffer that holds zeros.
  static bool startsAtZero(Value buffer, Operation *user) {
    Value root = HappensBefore::getRoot(buffer);
    // A fill or copy counts only if it covers the whole buffer.
    auto isWhole = [&](Value v) {
      return HappensBefore::getRoot(v) == root && v.getType() == root.getType();
    };
    for (Operation *op = user->getPrevNode(); op; op = op->getPrevNode()) {
      if (auto fill = dyn_cast<linalg::FillOp>(op);
          fill && isWhole(fill.getOutputs()[0]))
        return isZeroFill(fill);
      if (auto copy = dyn_cast<memref::CopyOp>(op);
          copy && isWhole(copy.getTarget()))
        return startsAtZero(copy.getSource(), copy);
      if (mayWrite(op, root))
        return false;
    }
    return false;
  }

  /// The zero fill that last wrote all of `buffer` before `user`, if nothing
  /// touches the buffer in between: it can go when `user` overwrites it.
  static linalg::FillOp deadZeroFill(Value buffer, Operation *user) {
    Value root = HappensBefore::getRoot(buffer);
    for (Operation *op = user->getPrevNode(); op; op = op->getPrevNode()) {
      auto fill = dyn_cast<linalg::FillOp>(op);
      if (fill && HappensBefore::getRoot(fill.getOutputs()[0]) == root)
        return fill.getOutputs()[0].getType() == root.getType() &&
                       isZeroFill(fill)
                   ? fill
                   : linalg::FillOp();
      bool touches = false;
      forEachMemoryEffect(op, [&](Value v, BufferAccess::Kind) {
        touches |= mayAliasRoots(HappensBefore::getRoot(v), root);
      });
      if (touches)
        return {};
    }
    return {};
  }

  /// A projection over row-major 2-D buffers (unit batch dimensions
  /// aside): C[M, N] (f32) += A[M, K] * B with B K x N or N x K.
  struct RowMajorProjection {
    Value a, b, c;
    bool transposeB;
  };

  /// Matches `op` as a RowMajorProjection with f32, f16 or bf16 inputs;
  /// returns why not, or "".
  static std::string matchRowMajor(linalg::LinalgOp op,
                                   RowMajorProjection &result) {
    FailureOr<linalg::ContractionDimensions> dims =
        linalg::inferContractionDims(op);
    if (failed(dims) || dims->m.size() != 1 || dims->n.size() != 1 ||
        dims->k.size() != 1 || op.getNumDpsInputs() != 2)
      return "not a single M x K by K x N contraction";
    SmallVector<int64_t> ranges = op.getStaticLoopRanges();
    for (unsigned b : dims->batch)
      if (ranges[b] != 1)
        return "a batch dimension is not 1";
    unsigned m = dims->m[0], n = dims->n[0], k = dims->k[0];
    auto results = [&](OpOperand *operand) {
      SmallVector<unsigned> positions;
      for (AffineExpr e : op.getMatchingIndexingMap(operand).getResults())
        if (auto d = dyn_cast<AffineDimExpr>(e);
            d && !llvm::is_contained(dims->batch, d.getPosition()))
          positions.push_back(d.getPosition());
      return positions;
    };
    using V = SmallVector<unsigned>;
    // Unit batch dimensions must lead (to2d drops the leading ones).
    for (OpOperand &operand : op->getOpOperands()) {
      ArrayRef<AffineExpr> exprs =
          op.getMatchingIndexingMap(&operand).getResults();
      for (auto [i, e] : llvm::enumerate(exprs)) {
        auto d = dyn_cast<AffineDimExpr>(e);
        if (!d || (llvm::is_contained(dims->batch, d.getPosition()) &&
                   i >= dims->batch.size()))
          return "batch dimensions do not lead";
      }
    }
    if (!isPlainProduct(op))
      return "the body is not out + a * b (with extensions)";
    V aDims = results(op.getDpsInputOperand(0));
    V bDims = results(op.getDpsInputOperand(1));
    V cDims = results(op.getDpsInitOperand(0));
    result = {op.getDpsInputOperand(0)->get(), op.getDpsInputOperand(1)->get(),
              op.getDpsInitOperand(0)->get(), bDims == V{n, k}};
    if (aDims != V{m, k} || (bDims != V{k, n} && !result.transposeB) ||
        cDims != V{m, n})
      return "operands are not row-major M x K, K x N (or N x K), M x N";
    auto type = [](Value v) { return cast<MemRefType>(v.getType()); };
    Type element = type(result.a).getElementType();
    if (element != type(result.b).getElementType() ||
        !isa<Float32Type, Float16Type, BFloat16Type>(element) ||
        !type(result.c).getElementType().isF32())
      return "element types are not f32/f16/bf16 with an f32 result";
    for (Value v : {result.a, result.b, result.c})
      if (!type(v).getLayout().isIdentity())
        return "a buffer is strided";
    return "";
  }

  /// `buffer` without its unit batch dimensions (they lead).
  static Value to2d(OpBuilder &b, Location loc, Value buffer) {
    auto type = cast<MemRefType>(buffer.getType());
    if (type.getRank() == 2)
      return buffer;
    SmallVector<ReassociationIndices> groups{{}, {type.getRank() - 1}};
    for (int64_t d = 0; d < type.getRank() - 1; ++d)
      groups[0].push_back(d);
    return memref::CollapseShapeOp::create(b, loc, buffer, groups);
  }

  /// Replaces a projection by flashnorm.gemm_lt; returns why not, or "".
  static std::string toGemmLt(linalg::LinalgOp op) {
    RowMajorProjection p;
    if (std::string why = matchRowMajor(op, p); !why.empty())
      return why;
    // cuBLASLt overwrites c: it must hold zeros.
    if (!startsAtZero(p.c, op))
      return "the accumulator does not start at zero";
    // cuBLASLt writes all of c: a zero fill just before is dead.
    linalg::FillOp deadFill = deadZeroFill(p.c, op);
    OpBuilder b(op);
    Location loc = op.getLoc();
    GemmLtOp::create(b, loc, gpu::AsyncTokenType::get(b.getContext()),
                     ValueRange{}, to2d(b, loc, p.a), to2d(b, loc, p.b),
                     to2d(b, loc, p.c), p.transposeB);
    if (deadFill)
      deadFill->erase();
    op->erase();
    return "";
  }

  /// Tensor cores for f16 projections whose sizes are multiples of the
  /// m16n8k16 MMA tile: one warp per 16 x 8 output tile (up to four warps
  /// per block), the k loop as a
  /// vector.contract of 16 x 16 by 8 x 16 fragments, which
  /// convert-vector-to-gpu turns into nvgpu.mma.sync (upstream does not
  /// convert bf16). No shared memory: each warp loads its fragments from
  /// global memory. Returns why not, or "".
  static std::string toTensorCoreKernel(linalg::LinalgOp op,
                                        KernelBuilder &builder,
                                        StringRef role) {
    RowMajorProjection p;
    if (std::string why = matchRowMajor(op, p); !why.empty())
      return why;
    if (!cast<MemRefType>(p.a.getType()).getElementType().isF16())
      return "only f16 runs on tensor cores here";
    // Each warp writes its tile once, from zero: the accumulator must start
    // at zero (deferred projections do).
    if (!startsAtZero(p.c, op))
      return "the accumulator does not start at zero";
    // The warps write every tile of c from zero: a zero fill just before is
    // dead.
    linalg::FillOp deadFill = deadZeroFill(p.c, op);
    OpBuilder b(op);
    Location loc = op.getLoc();
    Value a = to2d(b, loc, p.a), w = to2d(b, loc, p.b), c = to2d(b, loc, p.c);
    ArrayRef<int64_t> shapeA = cast<MemRefType>(a.getType()).getShape();
    ArrayRef<int64_t> shapeC = cast<MemRefType>(c.getType()).getShape();
    int64_t m = shapeA[0], k = shapeA[1], n = shapeC[1];
    if (ShapedType::isDynamic(m) || ShapedType::isDynamic(n) ||
        ShapedType::isDynamic(k) || m % 16 || n % 8 || k % 16)
      return "sizes are not static multiples of the 16 x 8 x 16 tile";
    auto index = [&](int64_t v) -> Value {
      return arith::ConstantIndexOp::create(b, loc, v);
    };
    Value one = index(1);
    // Up to four warps per block, side by side along n (warp = thread y).
    int64_t warps = (n / 8) % 4 == 0 ? 4 : (n / 8) % 2 == 0 ? 2 : 1;
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
      return vector::TransferReadOp::create(
          fb, loc, type, buffer, at, AffineMapAttr::get(map), pad, Value(),
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
                  ? fragment(lb, w, {n0, kk}, VectorType::get({8, 16}, f16),
                             id2)
                  : fragment(lb, w, {kk, n0}, VectorType::get({8, 16}, f16),
                             AffineMap::getPermutationMap(
                                 ArrayRef<unsigned>{1, 0}, ctx));
          Value next = vector::ContractionOp::create(lb, l, va, vb, acc[0],
                                                     maps, iterators);
          scf::YieldOp::create(lb, l, next);
        });
    vector::TransferWriteOp::create(b, loc, loop.getResult(0), c,
                                    ValueRange{m0, n0}, inBounds);
    gpu::TerminatorOp::create(b, loc);
    builder.name(launch, role);
    if (deadFill)
      deadFill->erase();
    op->erase();
    return "";
  }

  static StringRef roleOf(Operation *op) {
    auto role = op->getAttrOfType<StringAttr>(kAsyncRoleAttr);
    if (!role)
      return "";
    return llvm::StringSwitch<StringRef>(role.getValue())
        .Case("stat", "norm_stat")
        .Case("proj", "proj")
        .Case("post", "post_scale")
        .Case("post_fused", "post_scale_fused")
        .Default("");
  }

  /// Whether the second input of contraction `op` (the weight) has the
  /// reduction dimension innermost.
  static bool weightContiguousInK(linalg::LinalgOp op) {
    FailureOr<linalg::ContractionDimensions> dims =
        linalg::inferContractionDims(op);
    if (failed(dims) || dims->k.size() != 1 || op.getNumDpsInputs() != 2)
      return false;
    AffineMap map = op.getMatchingIndexingMap(op.getDpsInputOperand(1));
    auto last = dyn_cast<AffineDimExpr>(map.getResults().back());
    return last && last.getPosition() == dims->k[0];
  }

  static StringRef kindOf(linalg::LinalgOp op) {
    if (isa<linalg::FillOp>(op))
      return "fill";
    if (linalg::isaContractionOpInterface(op))
      return "proj";
    return op.getNumReductionLoops() ? "reduce" : "elementwise";
  }

  /// Fused mode: each (statistic, projection, post-scale) of an RMS norm
  /// becomes one kernel; the statistic is dropped once nothing else reads it.
  void fuseGroups(func::FuncOp fn, KernelBuilder &builder,
                  PassReporter &reporter) {
    llvm::MapVector<int64_t, Group> groups;
    fn.walk([&](Operation *op) {
      auto group = op->getAttrOfType<IntegerAttr>(kAsyncGroupAttr);
      auto role = op->getAttrOfType<StringAttr>(kAsyncRoleAttr);
      if (!group || !role || op->getNumResults() != 0)
        return;
      Group &g = groups[group.getInt()];
      auto pair = op->getAttrOfType<IntegerAttr>(kAsyncPairAttr);
      if (role.getValue() == "stat")
        g.stat.push_back(op);
      else if (pair && role.getValue() == "proj")
        g.proj[pair.getInt()] = op;
      else if (pair && role.getValue() == "post")
        g.post[pair.getInt()] = op;
      else
        g.unpairedPost.push_back(op);
    });
    for (auto &[id, g] : groups)
      fuseGroup(g, builder, reporter);
  }

  void fuseGroup(Group &g, KernelBuilder &builder, PassReporter &reporter) {
    // An RMS statistic lowers to a zero fill, the sum of squares and the
    // element-wise rsqrt; a LayerNorm's two passes stay unfused.
    auto *fill = g.stat.size() == 3 ? g.stat[0] : nullptr;
    auto reduce = fill ? dyn_cast<linalg::GenericOp>(g.stat[1]) : nullptr;
    auto finalize = fill ? dyn_cast<linalg::GenericOp>(g.stat[2]) : nullptr;
    Operation *anchor = g.stat.empty() ? nullptr : g.stat.front();
    if (!anchor)
      return;
    if (!isa_and_nonnull<linalg::FillOp>(fill) || !reduce || !finalize ||
        !isRowReduction(reduce) || reduce.getNumDpsInputs() != 1 ||
        usesOutput(finalize) || !isZeroFill(cast<linalg::FillOp>(fill))) {
      reporter.refused(anchor, "not fused: only an RMS statistic (zero fill, "
                               "sum of squares, rsqrt) fuses into the "
                               "projection");
      return;
    }
    unsigned fusedCount = 0;
    for (auto &[pair, projOp] : g.proj) {
      Operation *postOp = g.post.lookup(pair);
      Location loc = projOp->getLoc();
      std::string why =
          postOp ? fusePair(reduce, finalize, projOp, postOp, builder)
                 : "its post-scale was not found";
      if (why.empty())
        ++fusedCount;
      else
        reporter.refused(projOp ? projOp : fill,
                         "not fused: " + why + " (" + formatLoc(loc) + ")");
    }
    if (fusedCount == 0)
      return;
    // The statistic is dead once every post-scale reading it is fused.
    Value scale = finalize.getDpsInitOperand(0)->get();
    bool dead = llvm::all_of(scale.getUsers(), [&](Operation *user) {
      return user == finalize.getOperation();
    });
    if (dead && g.unpairedPost.empty())
      for (Operation *op : llvm::reverse(g.stat))
        op->erase();
  }

  static bool isZeroFill(linalg::FillOp fill) {
    return matchPattern(fill.getInputs()[0], m_AnyZeroFloat());
  }

  /// Builds the fused kernel for one projection and its post-scale; returns
  /// why not, or "".
  std::string fusePair(linalg::GenericOp reduce, linalg::GenericOp finalize,
                       Operation *projOp, Operation *postOp,
                       KernelBuilder &builder) {
    auto post = dyn_cast<linalg::GenericOp>(postOp);
    if (!post || post.getNumDpsInputs() != 2 || usesOutput(post) ||
        post.getNumReductionLoops() != 0)
      return "the post-scale is not an element-wise row scale";
    auto proj = dyn_cast<linalg::LinalgOp>(projOp);
    if (!proj)
      return "the projection is not a linalg op";
    unsigned n = proj.getNumLoops();
    unsigned rows = reduce.getNumLoops() - 1;
    Value x = reduce.getDpsInputOperand(0)->get();
    // The activation: the projection input that is the statistic's input,
    // indexed by the statistic's rows and the projection's last (k) loop.
    OpOperand *activation = nullptr;
    for (OpOperand *in : proj.getDpsInputOperands())
      if (in->get() == x)
        activation = in;
    if (!activation || proj.getNumReductionLoops() != 1 ||
        !linalg::isReductionIterator(proj.getIteratorTypesArray().back()) ||
        rows > n - 1)
      return "the projection does not contract the statistic's input over "
             "its last loop";
    AffineMap actMap = proj.getMatchingIndexingMap(activation);
    SmallVector<AffineExpr> expected;
    for (unsigned d = 0; d < rows; ++d)
      expected.push_back(getAffineDimExpr(d, proj.getContext()));
    expected.push_back(getAffineDimExpr(n - 1, proj.getContext()));
    if (actMap.getResults() != ArrayRef(expected))
      return "the projection's rows are not the statistic's rows";
    // The post-scale reads the raw product element-wise and the scale by
    // row, and the product buffer has no other reader.
    Value product = proj.getDpsInitOperand(0)->get();
    Value scale = finalize.getDpsInitOperand(0)->get();
    MLIRContext *ctx = proj.getContext();
    AffineMap identity = AffineMap::getMultiDimIdentityMap(n - 1, ctx);
    if (post.getDpsInputOperand(0)->get() != product ||
        post.getDpsInputOperand(1)->get() != scale ||
        post.getIndexingMapsArray()[0] != identity ||
        post.getIndexingMapsArray()[1] != identity.getMajorSubMap(rows) ||
        post.getIndexingMapsArray()[2] != identity)
      return "the post-scale does not read the product and the scale "
             "element-wise by row";
    // Besides the projection and the post-scale, only initializations of
    // the product (a fill or a copy into it, before both) may touch it.
    if (llvm::any_of(product.getUsers(), [&](Operation *user) {
          if (user == proj.getOperation() || user == post)
            return false;
          if (auto copy = dyn_cast<memref::CopyOp>(user))
            return copy.getTarget() != product || !copy->isBeforeInBlock(proj);
          return !isa<linalg::FillOp>(user) || !user->isBeforeInBlock(proj);
        }))
      return "the raw product has other readers";

    // The kernel runs at the post-scale: what the statistic and the
    // projection read must still be there then (nothing updates it in place
    // after they read it).
    if (reduce->getBlock() != post->getBlock() ||
        proj->getBlock() != post->getBlock())
      return "the statistic, projection and post-scale are not in one block";
    Operation *firstRead = reduce->isBeforeInBlock(proj) ? reduce.getOperation()
                                                         : proj.getOperation();
    for (OpOperand *in : proj.getDpsInputOperands())
      if (writtenBetween(in->get(),
                         in == activation ? firstRead : proj.getOperation(),
                         post, /*skip=*/proj.getOperation()))
        return "the projection's inputs are written before its post-scale";

    // Weights contiguous in k (N x K): a block per output with vector loads;
    // otherwise a thread per output.
    unsigned activationIndex = activation->getOperandNumber();
    AffineMap productMap =
        proj.getMatchingIndexingMap(proj.getDpsInitOperand(0));
    if (weightContiguousInK(proj) &&
        productMap == AffineMap::getMultiDimIdentityMap(n, proj.getContext())
                          .getMajorSubMap(n - 1) &&
        getElementTypeOrSelf(product.getType()).isF32() &&
        getElementTypeOrSelf(reduce.getDpsInitOperand(0)->get().getType())
            .isF32()) {
      builder.buildFusedRowReduction(proj, activationIndex, reduce, finalize,
                                     post, rows);
      proj->erase();
      post->erase();
      return "";
    }
    OpBuilder b(post);
    Location loc = proj.getLoc();
    SmallVector<Value> ubs = loopSizes(b, loc, proj);
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    Value one = arith::ConstantIndexOp::create(b, loc, 1);
    SmallVector<Value> lbs(n - 1, zero), steps(n - 1, one);
    Value out = post.getDpsInitOperand(0)->get();
    auto loop = scf::ParallelOp::create(
        b, loc, lbs, ArrayRef(ubs).drop_back(), steps,
        [&](OpBuilder &nb, Location l, ValueRange ivs) {
          Value acc0 = memref::LoadOp::create(nb, l, product, ivs);
          Type statType = getElementTypeOrSelf(
              reduce.getDpsInitOperand(0)->get().getType());
          Value ss0 =
              arith::ConstantOp::create(nb, l, nb.getZeroAttr(statType));
          auto kLoop = scf::ForOp::create(
              nb, l, zero, ubs.back(), one, ValueRange{acc0, ss0},
              [&](OpBuilder &kb, Location kl, Value k, ValueRange iter) {
                SmallVector<Value> at(ivs);
                at.push_back(k);
                SmallVector<Value> args, xValue;
                for (OpOperand *in : proj.getDpsInputOperands()) {
                  args.push_back(KernelBuilder::load(
                      kb, kl, in->get(), proj.getMatchingIndexingMap(in), at));
                  if (in == activation)
                    xValue.push_back(args.back());
                }
                args.push_back(iter[0]);
                Value acc = inlineBody(kb, proj, args, at)[0];
                SmallVector<Value> rowAt(ivs.take_front(rows));
                rowAt.push_back(k);
                Value ss =
                    inlineBody(kb, reduce, {xValue[0], iter[1]}, rowAt)[0];
                scf::YieldOp::create(kb, kl, ValueRange{acc, ss});
              });
          // Epilogue: 1/RMS from the row's sum of squares, then the
          // post-scale.
          SmallVector<Value> rowIvs(ivs.take_front(rows));
          Value s =
              inlineBody(nb, finalize, {kLoop.getResult(1), ss0}, rowIvs)[0];
          // The post-scale does not read its output (checked): any value
          // stands in for it.
          Value acc = kLoop.getResult(0);
          Value y = inlineBody(nb, post, {acc, s, acc}, ivs)[0];
          memref::StoreOp::create(nb, l, y, out, ivs);
        });
    // The projection and post-scale go only once their kernel exists (a
    // refusal is reported on the projection).
    if (failed(builder.launchParallel(loop, "fused_norm_proj"))) {
      mappingFailed = true;
      return "the fused loop nest could not be mapped to a kernel";
    }
    proj->erase();
    post->erase();
    return "";
  }
};
} // namespace
