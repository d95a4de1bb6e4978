//===- FusedNormProjection.cpp - Statistic, projection, post-scale as one -===//
//
// Fused mode (`defer-mode=fused`; `auto`, the pipeline's default, is the
// async schedule's tasks and then this): each projection marked with its
// statistic and post-scale (flashnorm-async-mark) becomes one kernel
// that accumulates the row's sum of squares from the activation it loads for
// the product anyway and applies 1/RMS and the post-scale in its epilogue.
// With a weight contiguous in k (N x K) that is a block per output, built
// like the projection's row reduction (the same buildKLoop: vector loads,
// then two block all-reduces and thread 0's epilogue); otherwise a thread
// per output. A post-scale fused with its element-wise reader on tensors
// (flashnorm-gpu-fuse-post-scales: a residual add) is taken whole, the
// reader's other inputs loaded in the epilogue. The statistic's own
// kernels go away once every post-scale reading it is fused.
//
// A LayerNorm's statistic (its weights centered by fold-gains, so that the
// projection reads the raw row and 1/std is the post-scale's) takes two
// passes over the row, as its own kernels do: the k loop sums the row for
// the mean beside the products; once the block has the mean, each thread
// sums the squared deviations from it over the activation vectors it
// loaded (again, from L1; a thread per output loops over the row again),
// and one more block all-reduce gives their sum. Not E[x^2] - E[x]^2 in
// one pass: in f32 that cancels where the mean is large against the
// deviation. With f16/bf16 weights, which cannot carry the centering, the
// post-scale is centered (flashnorm.centered_post_scale: the mean times
// the weight's column sum subtracted from the product) and reads the mean
// too: the epilogue takes the one the kernel computed.
//
// The SIMT kernels read the weight once per row. A decode projection of
// f16 or bf16 (2-16 tokens) that tensor cores take warp by warp
// (TensorCoreTile.cpp) fuses into that kernel instead: its warps sum the
// squares of A's rows from the fragments they load for the product (on the
// tensor cores: A times its own halves), and the threads that add up the
// slices of k apply 1/RMS and the post-scale (an RMS statistic only: a
// LayerNorm's second pass would need A again). A prefill projection
// (cuBLASLt, the staged tensor-core kernel, or the tile kernel, whose
// tensor cores the product keeps busy there) stays unfused: its statistic,
// projection and post-scale run as in serial mode (in auto mode: on their
// forked stream, as in streams mode).
//
// In auto mode the statistic is in its task (async.execute); once a
// projection of its group is fused, what is left of the task (nothing, or
// a statistic a later post-scale reads) runs on the main stream: at decode
// an eager fork and join cost more host time than they hide.
//
// The kernel runs where the post-scale ran, so everything it reads must
// still hold the values the statistic and the projection read: the plan
// refuses if anything writes them in between (an in-place update).
//
//===----------------------------------------------------------------------===//

#include "KernelBuilder.h"

#include "flashnorm/Analysis/HappensBefore.h"
#include "flashnorm/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Async/IR/Async.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "llvm/ADT/MapVector.h"

using namespace mlir;
using namespace mlir::flashnorm;
using namespace mlir::flashnorm::kernels;

namespace {
/// A deferred norm's pieces on buffers, from the async marks.
struct Group {
  SmallVector<Operation *> stat;
  DenseMap<int64_t, Operation *> proj, post;
  SmallVector<Operation *> unpairedPost;
};

/// A norm's statistic on buffers: RMS (zero fill, sum of squares, rsqrt)
/// or LayerNorm (zero fill, sum, mean; zero fill, sum of the squared
/// deviations from the mean, rsqrt).
struct Statistic {
  linalg::FillOp fill;
  /// The sum the rsqrt is taken of (squares, or squared deviations).
  linalg::GenericOp reduce, finalize;
  /// A LayerNorm's first pass: the row's sum and the mean `reduce` reads.
  linalg::GenericOp sum, mean;
  /// The op that reads the row first: the sum a fused k loop accumulates
  /// (of squares, or a LayerNorm's of the row itself, for its mean).
  linalg::GenericOp first() const { return sum ? sum : reduce; }
};

/// One projection and its post-scale, to become one kernel.
struct FusedPlan {
  /// The statistic the kernel computes (planStatistic).
  Statistic stat;
  linalg::GenericOp post;
  linalg::LinalgOp proj;
  /// The projection's input that is the statistic's input.
  unsigned activation = 0;
  /// The statistic's row loops (the projection's leading ones).
  unsigned rows = 0;
  /// A block per output (weight contiguous in k), else a thread per output.
  bool blockPerOutput = false;
  /// The zero fill of the raw product, if that is its init: the kernel
  /// starts its sum from zero instead of reading the product back, and the
  /// fill (its own kernel, before the fused one) goes with the product
  /// buffer.
  linalg::FillOp productFill;
  /// The tensor-core tile kernel with the norm's epilogue, in place of the
  /// SIMT kernels.
  std::optional<TensorCorePlan> tensorCores;
};
} // namespace

/// Whether `buffer` is touched only by `ops` (a statistic's intermediate:
/// once fused, nothing else may expect it written).
static bool onlyUsedBy(Value buffer, ArrayRef<Operation *> ops) {
  return llvm::all_of(buffer.getUsers(), [&](Operation *user) {
    return llvm::is_contained(ops, user) || isa<memref::DeallocOp>(user);
  });
}

static FailureOr<Statistic> planStatistic(const Group &g, std::string &why) {
  auto fail = [&]() {
    why = "only an RMS statistic (zero fill, sum of squares, rsqrt) or a "
          "LayerNorm's (zero fill, sum, mean; zero fill, sum of squared "
          "deviations, rsqrt) fuses into the projection";
    return failure();
  };
  // The last three: the (deviations') sum and its rsqrt.
  if (g.stat.size() != 3 && g.stat.size() != 6)
    return fail();
  ArrayRef<Operation *> last = ArrayRef(g.stat).take_back(3);
  auto fill = dyn_cast<linalg::FillOp>(last[0]);
  auto reduce = dyn_cast<linalg::GenericOp>(last[1]);
  auto finalize = dyn_cast<linalg::GenericOp>(last[2]);
  if (!fill || !reduce || !finalize || !isRowReduction(reduce) ||
      !isElementwise(finalize) || usesOutput(finalize) || !isZeroFill(fill) ||
      fill.getOutputs()[0] != reduce.getDpsInitOperand(0)->get() ||
      finalize.getNumDpsInputs() != 1 ||
      finalize.getDpsInputOperand(0)->get() !=
          reduce.getDpsInitOperand(0)->get())
    return fail();
  Statistic stat{fill, reduce, finalize, nullptr, nullptr};
  if (g.stat.size() == 3) {
    if (reduce.getNumDpsInputs() != 1)
      return fail();
    return stat;
  }
  // A LayerNorm: the row's sum, the mean from it, and the deviations from
  // the mean (the deviations' pass reads the row and the mean by row).
  auto sumFill = dyn_cast<linalg::FillOp>(g.stat[0]);
  auto sum = dyn_cast<linalg::GenericOp>(g.stat[1]);
  auto mean = dyn_cast<linalg::GenericOp>(g.stat[2]);
  if (!sumFill || !sum || !mean || !isZeroFill(sumFill) ||
      !isRowReduction(sum) || sum.getNumDpsInputs() != 1 ||
      !isElementwise(mean) || usesOutput(mean) || mean.getNumDpsInputs() != 1 ||
      sumFill.getOutputs()[0] != sum.getDpsInitOperand(0)->get() ||
      mean.getDpsInputOperand(0)->get() != sum.getDpsInitOperand(0)->get() ||
      reduce.getNumDpsInputs() != 2)
    return fail();
  unsigned loops = reduce.getNumLoops();
  OpOperand *row = reduce.getDpsInputOperand(0);
  OpOperand *byRow = reduce.getDpsInputOperand(1);
  if (sum.getNumLoops() != loops ||
      row->get() != sum.getDpsInputOperand(0)->get() ||
      reduce.getMatchingIndexingMap(row) !=
          sum.getMatchingIndexingMap(sum.getDpsInputOperand(0)) ||
      byRow->get() != mean.getDpsInitOperand(0)->get() ||
      reduce.getMatchingIndexingMap(byRow) !=
          AffineMap::getMultiDimIdentityMap(loops, reduce.getContext())
              .getMajorSubMap(loops - 1) ||
      !onlyUsedBy(sum.getDpsInitOperand(0)->get(), {sumFill, sum, mean}))
    return fail();
  // The mean's readers: the deviations' pass, and the post-scales that
  // center a narrow weight's product (flashnorm.centered_post_scale), which
  // take it from the kernel.
  SmallVector<Operation *> meanReaders{mean, reduce};
  for (auto &[pair, post] : g.post)
    meanReaders.push_back(post);
  llvm::append_range(meanReaders, g.unpairedPost);
  if (!onlyUsedBy(mean.getDpsInitOperand(0)->get(), meanReaders))
    return fail();
  stat.sum = sum;
  stat.mean = mean;
  return stat;
}

static FailureOr<FusedPlan> planFusedPair(const Statistic &stat,
                                          Operation *projOp, Operation *postOp,
                                          std::string &why) {
  auto fail = [&](const Twine &msg) {
    why = msg.str();
    return failure();
  };
  linalg::GenericOp reduce = stat.reduce, finalize = stat.finalize;
  auto post = dyn_cast_or_null<linalg::GenericOp>(postOp);
  if (!postOp)
    return fail("its post-scale was not found");
  if (!post || post.getNumDpsInputs() < 2 || usesOutput(post) ||
      post.getNumReductionLoops() != 0)
    return fail("the post-scale is not an element-wise row scale");
  auto proj = dyn_cast<linalg::LinalgOp>(projOp);
  if (!proj)
    return fail("the projection is not a linalg op");
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
    return fail("the projection does not contract the statistic's input "
                "over its last loop");
  MLIRContext *ctx = proj.getContext();
  AffineMap actMap = proj.getMatchingIndexingMap(activation);
  SmallVector<AffineExpr> expected;
  for (unsigned d = 0; d < rows; ++d)
    expected.push_back(getAffineDimExpr(d, ctx));
  expected.push_back(getAffineDimExpr(n - 1, ctx));
  if (actMap.getResults() != ArrayRef(expected))
    return fail("the projection's rows are not the statistic's rows");
  // The post-scale reads the raw product element-wise and the scale by
  // row, once each (fused with its reader, it reads that reader's other
  // inputs too: the epilogue loads them), and the product buffer has no
  // other reader.
  Value product = proj.getDpsInitOperand(0)->get();
  Value scale = finalize.getDpsInitOperand(0)->get();
  AffineMap identity = AffineMap::getMultiDimIdentityMap(n - 1, ctx);
  auto readOnce = [&](Value v, AffineMap map) {
    return llvm::count_if(post.getDpsInputOperands(),
                          [&](OpOperand *in) { return in->get() == v; }) == 1 &&
           llvm::all_of(post.getDpsInputOperands(), [&](OpOperand *in) {
             return in->get() != v || post.getMatchingIndexingMap(in) == map;
           });
  };
  // A centered post-scale's mean, by row too (the kernel has it).
  linalg::GenericOp meanOp = stat.mean;
  Value mean = meanOp ? meanOp.getDpsInitOperand(0)->get() : Value();
  bool readsMean =
      mean && llvm::any_of(post.getDpsInputOperands(),
                           [&](OpOperand *in) { return in->get() == mean; });
  if (!readOnce(product, identity) ||
      !readOnce(scale, identity.getMajorSubMap(rows)) ||
      (readsMean && !readOnce(mean, identity.getMajorSubMap(rows))) ||
      post.getMatchingIndexingMap(post.getDpsInitOperand(0)) != identity)
    return fail("the post-scale does not read the product and the scale "
                "element-wise by row");
  // Besides the projection and the post-scale, only initializations of
  // the product (a fill or a copy into it, before both) may touch it.
  if (llvm::any_of(product.getUsers(), [&](Operation *user) {
        if (user == proj.getOperation() || user == post)
          return false;
        if (auto copy = dyn_cast<memref::CopyOp>(user))
          return copy.getTarget() != product || !copy->isBeforeInBlock(proj);
        return !isa<linalg::FillOp>(user) || !user->isBeforeInBlock(proj);
      }))
    return fail("the raw product has other readers");
  // The kernel runs at the post-scale: what the statistic and the
  // projection read must still be there then (nothing updates it in place
  // after they read it).
  // (In auto mode the statistic is in its task, an async.execute in that
  // block.)
  linalg::GenericOp firstStat = stat.first();
  Operation *statAt = post->getBlock()->findAncestorOpInBlock(*firstStat);
  if (!statAt || proj->getBlock() != post->getBlock())
    return fail("the statistic, projection and post-scale are not in one "
                "block");
  Operation *firstRead =
      statAt->isBeforeInBlock(proj) ? statAt : proj.getOperation();
  for (OpOperand *in : proj.getDpsInputOperands())
    if (writtenBetween(in->get(),
                       in == activation ? firstRead : proj.getOperation(), post,
                       /*skip=*/proj.getOperation()))
      return fail("the projection's inputs are written before its "
                  "post-scale");
  if (statAt != firstStat.getOperation() &&
      writtenBetween(x, firstStat, firstStat->getBlock()->getTerminator()))
    return fail("the statistic's task writes its input after reading it");
  // Each block (or warp) stores its outputs while the others still read
  // the rows and the weight: the post-scale must not write over them.
  Value written = HappensBefore::getRoot(post.getDpsInitOperand(0)->get());
  if (llvm::any_of(proj.getDpsInputs(), [&](Value v) {
        return mayAliasRoots(HappensBefore::getRoot(v), written);
      }))
    return fail("the post-scale writes a buffer the projection reads");
  FusedPlan plan{stat, post, proj,
                 static_cast<unsigned>(activation->getOperandNumber()), rows};
  AffineMap productMap = proj.getMatchingIndexingMap(proj.getDpsInitOperand(0));
  plan.blockPerOutput =
      weightContiguousInK(proj) &&
      productMap ==
          AffineMap::getMultiDimIdentityMap(n, ctx).getMajorSubMap(n - 1) &&
      getElementTypeOrSelf(product.getType()).isF32() &&
      getElementTypeOrSelf(reduce.getDpsInitOperand(0)->get().getType())
          .isF32();
  plan.productFill = deadZeroFill(product, proj);
  return plan;
}

/// Whether the tensor-core tile kernel `tile` of the projection can take
/// the plan's statistic: the sum of the squares of its A, by the rows of
/// its product (which the kernel's epilogue writes through the
/// post-scale).
static LogicalResult fitTensorCores(const FusedPlan &plan,
                                    const TensorCorePlan &tile,
                                    std::string &why) {
  linalg::LinalgOp proj = plan.proj;
  linalg::GenericOp reduce = plan.stat.reduce;
  if (plan.stat.mean)
    why = "takes an RMS statistic only (a LayerNorm's deviations need its "
          "row again)";
  else if (!isSumOfSquares(reduce))
    why = "takes a sum of squares only";
  else if (reduce.getDpsInputOperand(0)->get() != tile.projection.a ||
           plan.rows + 2 != proj.getNumLoops())
    why = "needs the statistic's rows to be the product's";
  else
    return success();
  return failure();
}

/// The post-scale's body arguments at the output `ivs`: the product's
/// `total`, the row's `scale` (and a LayerNorm's `mean`, which a centered
/// post-scale reads), the fused reader's other inputs loaded, and a
/// stand-in for the output (the plan checked it is not read).
static SmallVector<Value> epilogueArgs(OpBuilder &b, Location loc,
                                       const FusedPlan &plan, Value total,
                                       Value scale, Value mean,
                                       ValueRange ivs) {
  // (The op handles' methods are not const.)
  linalg::GenericOp post = plan.post, finalize = plan.stat.finalize,
                    meanOp = plan.stat.mean;
  linalg::LinalgOp proj = plan.proj;
  Value product = proj.getDpsInitOperand(0)->get();
  Value scaleBuffer = finalize.getDpsInitOperand(0)->get();
  Value meanBuffer = meanOp ? meanOp.getDpsInitOperand(0)->get() : Value();
  SmallVector<Value> args;
  for (OpOperand *in : post.getDpsInputOperands())
    args.push_back(
        in->get() == product       ? total
        : in->get() == scaleBuffer ? scale
        : mean && in->get() == meanBuffer
            ? mean
            : loadAt(b, loc, in->get(), post.getMatchingIndexingMap(in), ivs));
  args.push_back(total);
  return args;
}

/// The product's init at the output `ivs`: zero for a zero fill, else what
/// was stored there (a bias copied in).
static Value productInit(OpBuilder &b, Location loc, const FusedPlan &plan,
                         ValueRange ivs) {
  linalg::LinalgOp proj = plan.proj;
  Value product = proj.getDpsInitOperand(0)->get();
  if (plan.productFill)
    return arith::ConstantOp::create(
        b, loc, b.getZeroAttr(getElementTypeOrSelf(product.getType())));
  return memref::LoadOp::create(b, loc, product, ivs);
}

/// A block per output: thread `tid` sums the products and the squares of
/// the activation it loaded anyway, two block all-reduces give the row's
/// dot product and sum of squares, and thread 0 applies the init, 1/RMS
/// (`finalize`) and the post-scale. Inserted before the post-scale.
static void buildBlockPerOutput(KernelBuilder &builder, const FusedPlan &plan) {
  linalg::LinalgOp proj = plan.proj;
  linalg::GenericOp reduce = plan.stat.reduce, finalize = plan.stat.finalize,
                    post = plan.post;
  OpBuilder b(post);
  Location loc = proj.getLoc();
  int64_t width = vectorWidthAlongK(proj);
  int64_t k = proj.getStaticLoopRanges().back();
  int64_t blockThreads =
      ShapedType::isDynamic(k) ? 32 : projectionThreads(k, width);
  auto [launch, ivs] = builder.launchPerRow(b, loc, proj, blockThreads,
                                            /*weightRowsOuter=*/true);
  SmallVector<Value> rowIvs(ivs.begin(), ivs.begin() + plan.rows);
  Value tid = launch.getThreadIds().x;
  Type statType =
      getElementTypeOrSelf(reduce.getDpsInitOperand(0)->get().getType());
  Value acc0 = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0));
  Value ss0 = arith::ConstantOp::create(b, loc, b.getZeroAttr(statType));
  scf::ForOp loop = builder.buildKLoop(
      b, loc, proj, ivs, tid, blockThreads, width, ValueRange{acc0, ss0},
      [&](OpBuilder &nb, Location l, ArrayRef<Value> args, ArrayRef<Value> at,
          ValueRange iter) {
        SmallVector<Value> all(args);
        all.push_back(iter[0]);
        Value acc = inlineBody(nb, proj, all, at)[0];
        allowContraction(acc);
        SmallVector<Value> rowAt(rowIvs);
        rowAt.push_back(at.back());
        Value ss = inlineBody(nb, plan.stat.first(),
                              {args[plan.activation], iter[1]}, rowAt)[0];
        return SmallVector<Value>{acc, ss};
      });
  Value dot = builder.blockSum(b, loc, loop.getResult(0));
  Value ss = builder.blockSum(b, loc, loop.getResult(1));
  Value mean;
  if (plan.stat.mean) {
    // A LayerNorm: every thread has the row's sum, so the mean; the
    // deviations from it over the same elements as the k loop's (read
    // again, from L1), summed as the statistic sums them.
    mean = inlineBody(b, plan.stat.mean, {ss, ss0}, rowIvs)[0];
    scf::ForOp deviations = builder.buildKLoop(
        b, loc, reduce, rowIvs, tid, blockThreads, width, ValueRange{ss0},
        [&](OpBuilder &nb, Location l, ArrayRef<Value> args, ArrayRef<Value> at,
            ValueRange iter) {
          return inlineBody(nb, reduce, {args[0], mean, iter[0]}, at);
        },
        [](OpOperand *in) { return in->getOperandNumber() == 0; });
    ss = builder.blockSum(b, loc, deviations.getResult(0));
  }
  Value first =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, tid,
                            arith::ConstantIndexOp::create(b, loc, 0));
  auto store = scf::IfOp::create(b, loc, first, /*withElse=*/false);
  b.setInsertionPointToStart(store.thenBlock());
  // The product's init (a zero fill, or a bias copied in) plus the sum.
  Value total =
      arith::AddFOp::create(b, loc, productInit(b, loc, plan, ivs), dot);
  Value scale = inlineBody(b, finalize, {ss, ss0}, rowIvs)[0];
  Value y = inlineBody(
      b, post, epilogueArgs(b, loc, plan, total, scale, mean, ivs), ivs)[0];
  memref::StoreOp::create(b, loc, y, post.getDpsInitOperand(0)->get(), ivs);
  b.setInsertionPointToEnd(&launch.getBody().front());
  gpu::TerminatorOp::create(b, loc);
  builder.name(launch, "fused_norm_proj");
}

/// A thread per output: a parallel loop over the outputs whose k loop
/// carries the product and the sum of squares, mapped like any parallel
/// loop nest.
static LogicalResult buildThreadPerOutput(KernelBuilder &builder,
                                          const FusedPlan &plan) {
  linalg::LinalgOp proj = plan.proj;
  linalg::GenericOp reduce = plan.stat.reduce, finalize = plan.stat.finalize,
                    post = plan.post;
  unsigned n = proj.getNumLoops();
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
        Value acc0 = productInit(nb, l, plan, ivs);
        Type statType =
            getElementTypeOrSelf(reduce.getDpsInitOperand(0)->get().getType());
        Value ss0 = arith::ConstantOp::create(nb, l, nb.getZeroAttr(statType));
        auto kLoop = scf::ForOp::create(
            nb, l, zero, ubs.back(), one, ValueRange{acc0, ss0},
            [&](OpBuilder &kb, Location kl, Value k, ValueRange iter) {
              SmallVector<Value> at(ivs);
              at.push_back(k);
              SmallVector<Value> args;
              Value x;
              for (OpOperand *in : proj.getDpsInputOperands()) {
                args.push_back(loadAt(kb, kl, in->get(),
                                      proj.getMatchingIndexingMap(in), at));
                if (in->getOperandNumber() == plan.activation)
                  x = args.back();
              }
              args.push_back(iter[0]);
              Value acc = inlineBody(kb, proj, args, at)[0];
              SmallVector<Value> rowAt(ivs.take_front(plan.rows));
              rowAt.push_back(k);
              Value ss =
                  inlineBody(kb, plan.stat.first(), {x, iter[1]}, rowAt)[0];
              scf::YieldOp::create(kb, kl, ValueRange{acc, ss});
            });
        // Epilogue: 1/RMS (1/std) from the row's sum of squares (squared
        // deviations from the mean, a second pass over the row), then the
        // post-scale.
        SmallVector<Value> rowIvs(ivs.take_front(plan.rows));
        Value ss = kLoop.getResult(1);
        Value mean;
        if (plan.stat.mean) {
          mean = inlineBody(nb, plan.stat.mean, {ss, ss0}, rowIvs)[0];
          OpOperand *row = reduce.getDpsInputOperand(0);
          auto deviations = scf::ForOp::create(
              nb, l, zero, ubs.back(), one, ValueRange{ss0},
              [&](OpBuilder &kb, Location kl, Value k, ValueRange iter) {
                SmallVector<Value> at(rowIvs);
                at.push_back(k);
                Value x = loadAt(kb, kl, row->get(),
                                 reduce.getMatchingIndexingMap(row), at);
                scf::YieldOp::create(
                    kb, kl, inlineBody(kb, reduce, {x, mean, iter[0]}, at));
              });
          ss = deviations.getResult(0);
        }
        Value s = inlineBody(nb, finalize, {ss, ss0}, rowIvs)[0];
        Value acc = kLoop.getResult(0);
        Value y = inlineBody(
            nb, post, epilogueArgs(nb, l, plan, acc, s, mean, ivs), ivs)[0];
        memref::StoreOp::create(nb, l, y, out, ivs);
      });
  return builder.launchParallel(loop, "fused_norm_proj");
}

/// The tensor-core tile kernel whose epilogue takes 1/RMS (`finalize`) of
/// each row's sum of squares and applies the post-scale to the product's
/// sum, which starts at zero (matchTensorCoreProjection). Inserted before
/// the post-scale.
static void buildTensorCoreFused(KernelBuilder &builder,
                                 const FusedPlan &plan) {
  linalg::GenericOp finalize = plan.stat.finalize, post = plan.post;
  Value out = post.getDpsInitOperand(0)->get();
  int64_t rank = cast<MemRefType>(out.getType()).getRank();
  auto store = [&](OpBuilder &b, Location loc, ValueRange at, Value sum,
                   Value squares) {
    // The product's leading unit dimensions (dropped by to2d), then the
    // kernel's row and column.
    SmallVector<Value> ivs(rank - 2, arith::ConstantIndexOp::create(b, loc, 0));
    llvm::append_range(ivs, at);
    Value ss0 = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0));
    Value scale = inlineBody(b, finalize, {squares, ss0},
                             ArrayRef(ivs).take_front(plan.rows))[0];
    // (An RMS statistic: no mean.)
    Value y = inlineBody(
        b, post, epilogueArgs(b, loc, plan, sum, scale, Value(), ivs), ivs)[0];
    memref::StoreOp::create(b, loc, y, out, ivs);
  };
  TileEpilogue epilogue{post, store};
  buildTensorCoreTile(builder, *plan.tensorCores, "fused_norm_proj_mma",
                      &epilogue);
}

static LogicalResult buildFusedPair(KernelBuilder &builder,
                                    const FusedPlan &plan) {
  if (plan.tensorCores) {
    // The tile kernel takes the projection and its dead zero fill.
    buildTensorCoreFused(builder, plan);
    plan.post->erase();
    return success();
  }
  if (plan.blockPerOutput)
    buildBlockPerOutput(builder, plan);
  else if (failed(buildThreadPerOutput(builder, plan)))
    return failure();
  // The projection and post-scale go only once their kernel exists.
  plan.proj->erase();
  plan.post->erase();
  if (plan.productFill)
    plan.productFill->erase();
  return success();
}

/// Issues what is left of `task` (the async schedule's task of a statistic
/// whose projections were fused) in its place, on the main stream, and
/// drops its awaits: nothing, or the statistic a post-scale past the down
/// projection still reads. A fork and its join cost more host time on every
/// call (about 15 us eager on an H200) than a decode step's statistic (a
/// few us) that could hide behind the fused kernels. Kept where its token
/// orders other tasks.
static void runOnMainStream(async::ExecuteOp task) {
  if (!task || !task.getBodyResults().empty() ||
      !task.getDependencies().empty() ||
      !llvm::all_of(task.getToken().getUsers(),
                    [](Operation *user) { return isa<async::AwaitOp>(user); }))
    return;
  Block &body = task.getBodyRegion().front();
  task->getBlock()->getOperations().splice(task->getIterator(),
                                           body.getOperations(), body.begin(),
                                           body.getTerminator()->getIterator());
  for (Operation *await :
       llvm::make_early_inc_range(task.getToken().getUsers()))
    await->erase();
  task->erase();
}

/// Fuses what it can of one group; fails if a kernel could not be mapped.
static LogicalResult
fuseGroup(KernelBuilder &builder, const Group &g,
          function_ref<ProjectionKernel(linalg::LinalgOp)> kernelOf) {
  PassReporter &reporter = builder.getReporter();
  if (g.stat.empty())
    return success();
  std::string why;
  FailureOr<Statistic> stat = planStatistic(g, why);
  if (failed(stat)) {
    reporter.refused(g.stat.front(), "not fused: " + why);
    return success();
  }
  unsigned fusedCount = 0;
  for (auto &[pair, projOp] : g.proj) {
    Location loc = projOp->getLoc();
    // The SIMT kernels read the weight once per row: where the projection
    // has a kernel of its own that is faster (cuBLASLt, the staged
    // tensor-core kernel: many rows), it stays unfused (on an H200 the SIMT
    // fused kernel measured 3.2x the tensor-core projection at 16 tokens,
    // 11-12x at 512-4096 of 4096 x 4096 bf16). The tensor-core tile kernel
    // takes the statistic itself.
    ProjectionKernel kernel;
    if (auto proj = dyn_cast<linalg::LinalgOp>(projOp))
      kernel = kernelOf(proj);
    if (!kernel.fasterPath.empty()) {
      reporter.refused(projOp, "not fused: the projection runs faster on " +
                                   kernel.fasterPath + " (" + formatLoc(loc) +
                                   ")");
      continue;
    }
    FailureOr<FusedPlan> plan =
        planFusedPair(*stat, projOp, g.post.lookup(pair), why);
    if (failed(plan)) {
      reporter.refused(projOp,
                       "not fused: " + why + " (" + formatLoc(loc) + ")");
      continue;
    }
    if (kernel.tensorCoreTile) {
      if (failed(fitTensorCores(*plan, *kernel.tensorCoreTile, why))) {
        reporter.refused(projOp, "not fused: the projection runs faster on "
                                 "tensor cores, whose fused kernel " +
                                     why + " (" + formatLoc(loc) + ")");
        continue;
      }
      plan->tensorCores = kernel.tensorCoreTile;
    }
    if (failed(buildFusedPair(builder, *plan))) {
      reporter.refused(projOp, "not fused: the fused loop nest could not be "
                               "mapped to a kernel (" +
                                   formatLoc(loc) + ")");
      return failure();
    }
    ++fusedCount;
  }
  if (fusedCount == 0)
    return success();
  // The statistic is dead once every post-scale reading it is fused.
  Value scale = stat->finalize.getDpsInitOperand(0)->get();
  bool dead = llvm::all_of(scale.getUsers(), [&](Operation *user) {
    return user == stat->finalize.getOperation();
  });
  auto task = g.stat.front()->getParentOfType<async::ExecuteOp>();
  if (dead && g.unpairedPost.empty())
    for (Operation *op : llvm::reverse(g.stat))
      op->erase();
  runOnMainStream(task);
  return success();
}

LogicalResult kernels::fuseNormProjections(
    KernelBuilder &builder,
    function_ref<ProjectionKernel(linalg::LinalgOp)> kernelOf) {
  llvm::MapVector<int64_t, Group> groups;
  builder.getFunction().walk([&](Operation *op) {
    auto group = op->getAttrOfType<IntegerAttr>(kAsyncGroupAttr);
    std::optional<AsyncRole> role = getAsyncRole(op);
    if (!group || !role || op->getNumResults() != 0)
      return;
    Group &g = groups[group.getInt()];
    auto pair = op->getAttrOfType<IntegerAttr>(kAsyncPairAttr);
    if (*role == AsyncRole::stat)
      g.stat.push_back(op);
    else if (pair && *role == AsyncRole::proj)
      g.proj[pair.getInt()] = op;
    else if (pair &&
             (*role == AsyncRole::post || *role == AsyncRole::post_fused))
      g.post[pair.getInt()] = op;
    else
      g.unpairedPost.push_back(op);
  });
  for (auto &[id, g] : groups)
    if (failed(fuseGroup(builder, g, kernelOf)))
      return failure();
  return success();
}
