//===- GemmLt.cpp - Projections through cuBLASLt --------------------------===//
//
// A projection over row-major 2-D buffers (unit batch dimensions leading)
// with an f32 accumulator that starts at zero becomes `flashnorm.gemm_lt`:
// cuBLASLt on the op's stream, lowered by the dialect's LLVM interface.
// cuBLASLt overwrites the whole output, so the zero fill before it goes.
//
// The product's only reader, where it rounds the f32 sum to its output
// type or also scales its rows, is taken in: the GEMM runs in the reader's
// place and writes its output, and the f32 product is never written (at
// 4096 tokens of a 4096 x 4096 bf16 projection: 67 MB written and read
// back, and a GEMM with an f32 result, 1.45-1.5x cuBLAS's bf16 GEMM on an
// H200).
//
// A row scale, `round(product * rinv[row])` (a deferred norm's
// post-scale), moves before the GEMM: a kernel writes `a' = a * rinv[row]`
// (rounded to a's type) and the GEMM reads a'. At prefill sizes the GEMM
// is bound by its arithmetic and the statistic's overlap worth little, so
// the norm's divide goes back before the projection there, the gain still
// folded and the sum still rounded once: the numbers of the unrewritten
// program (its normalized activation rounded to a's type). The pre-scale
// moves the activation once more (16.5 us at 4096 x 4096 bf16 on an H200,
// where the whole call went from 288.6 to 217.2 us). Where the scale is
// the 1/RMS of the same activation's rows, the statistic's kernel writes a'
// itself from the row it has just read: the activation is read from memory
// once, not twice (33.5 MB fewer at 4096 x 4096 bf16), one launch fewer.
// GEMMs of one activation and scale (Q, K and V) share one pre-scale.
// cuBLASLt's alpha vector would scale the sum itself, but cuBLASLt offers
// no algorithm for that pointer mode with f32, f16 or bf16 operands on an
// H200. The contract's zero scale (`select(s == 0, 0, p * s)`: a row whose
// mean square overflowed) holds: the pre-scale writes a zero row there.
// The GEMM runs after the statistic: nothing runs beside the statistic,
// which flashnorm-gpu-streams then does not fork.
//
//===----------------------------------------------------------------------===//

#include "KernelBuilder.h"

#include "flashnorm/Analysis/HappensBefore.h"
#include "flashnorm/Conversion/Passes.h"
#include "flashnorm/Dialect/FlashNorm/IR/FlashNormOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Matchers.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "flashnorm-gpu-kernels"

using namespace mlir;
using namespace mlir::flashnorm;
using namespace mlir::flashnorm::kernels;

/// How the product's reader rounds it, `round(product)`, or scales it too,
/// `round(product * scale)` (either order), where the rounding is a truncf
/// to nearest even to the output type or nothing for f32; with `zeroRows`,
/// the product of a row whose scale is 0 is 0 first (flashnorm.post_scale's
/// contract: `select(scale == 0, 0, product * scale)`), so the pre-scale's
/// is.
struct ReaderBody {
  bool zeroRows = false;
};
static FailureOr<ReaderBody>
matchReaderBody(linalg::GenericOp post, unsigned productInput, bool scaled) {
  Block &body = post.getRegion().front();
  Value product = body.getArgument(productInput);
  Value v = body.getTerminator()->getOperand(0);
  if (auto trunc = v.getDefiningOp<arith::TruncFOp>()) {
    std::optional<arith::RoundingMode> mode = trunc.getRoundingmode();
    if (mode && *mode != arith::RoundingMode::to_nearest_even)
      return failure();
    v = trunc.getIn();
  }
  ReaderBody match;
  if (!scaled) {
    if (v != product)
      return failure();
    return match;
  }
  Value scale = body.getArgument(1 - productInput);
  if (auto select = v.getDefiningOp<arith::SelectOp>()) {
    auto isZero = [](Value x) { return matchPattern(x, m_PosZeroFloat()); };
    auto cmp = select.getCondition().getDefiningOp<arith::CmpFOp>();
    if (!cmp || cmp.getPredicate() != arith::CmpFPredicate::OEQ ||
        !((cmp.getLhs() == scale && isZero(cmp.getRhs())) ||
          (cmp.getRhs() == scale && isZero(cmp.getLhs()))) ||
        !isZero(select.getTrueValue()))
      return failure();
    match.zeroRows = true;
    v = select.getFalseValue();
  }
  auto mul = v.getDefiningOp<arith::MulFOp>();
  if (!mul || !((mul.getLhs() == product && mul.getRhs() == scale) ||
                (mul.getLhs() == scale && mul.getRhs() == product)))
    return failure();
  return match;
}

/// The reader of `proj`'s product that the GEMM can take in (a rounding to
/// its output type; a post-scale, moved before the GEMM), or why not.
static LogicalResult planReader(GemmLtPlan &plan, std::string &why) {
  linalg::LinalgOp proj = plan.op;
  const RowMajorProjection &p = plan.projection;
  linalg::FillOp deadFill = plan.deadFill;
  auto fail = [&](const Twine &msg) {
    why = msg.str();
    return failure();
  };
  // Cheap checks first: the product's users.
  if (!p.c.getDefiningOp<memref::AllocOp>())
    return fail("the product is not a buffer of its own");
  linalg::GenericOp post;
  for (Operation *user : p.c.getUsers()) {
    if (user == proj.getOperation() || user == deadFill.getOperation() ||
        isa<memref::DeallocOp>(user))
      continue;
    auto generic = dyn_cast<linalg::GenericOp>(user);
    if (!generic || post)
      return fail("the product has another reader");
    post = generic;
  }
  if (!post)
    return fail("nothing reads the product");
  if (post->getBlock() != proj->getBlock() || post->isBeforeInBlock(proj))
    return fail("the product's reader is not after the projection in its "
                "block");
  unsigned inputs = post.getNumDpsInputs();
  if (!isElementwise(post) || usesOutput(post) || inputs > 2)
    return fail("the product's reader is not an element-wise op of the "
                "product and at most one other input");
  bool scaled = inputs == 2;
  unsigned productInput = post.getDpsInputOperand(0)->get() == p.c ? 0 : 1;
  OpOperand *product = post.getDpsInputOperand(productInput);
  OpOperand *scale =
      scaled ? post.getDpsInputOperand(1 - productInput) : nullptr;
  OpOperand *out = post.getDpsInitOperand(0);
  unsigned rank = post.getNumLoops();
  MLIRContext *ctx = post.getContext();
  auto outType = dyn_cast<MemRefType>(out->get().getType());
  if (!post.getMatchingIndexingMap(product).isIdentity() || !outType ||
      !outType.getLayout().isIdentity() ||
      !isa<Float32Type, Float16Type, BFloat16Type>(outType.getElementType()))
    return fail("the reader does not write the product's elements into a "
                "row-major f32, f16 or bf16 buffer");
  if (scale) {
    auto scaleType = dyn_cast<MemRefType>(scale->get().getType());
    if (!scaleType ||
        post.getMatchingIndexingMap(scale) !=
            AffineMap::getMultiDimIdentityMap(rank, ctx).getMajorSubMap(rank -
                                                                        1) ||
        !scaleType.getElementType().isF32() ||
        !scaleType.getLayout().isIdentity())
      return fail("the reader's other input is not an f32 scale per row");
  }
  FailureOr<ReaderBody> body = matchReaderBody(post, productInput, scaled);
  if (failed(body))
    return fail(scaled ? "the reader's body is not round(product * scale)"
                       : "the reader's body is not round(product)");
  // The pre-scale and the GEMM run in the post-scale's place: the inputs
  // must hold there what the projection read, and the GEMM must not write
  // what they read.
  for (Value input : {p.a, p.b})
    if (writtenBetween(input, proj, post))
      return fail("an input of the projection is written before the "
                  "product's reader");
  Value outRoot = HappensBefore::getRoot(out->get());
  SmallVector<Value, 3> read{p.a, p.b};
  if (scale)
    read.push_back(scale->get());
  for (Value input : read)
    if (mayAliasRoots(HappensBefore::getRoot(input), outRoot))
      return fail("the product's reader writes a buffer the GEMM reads");
  plan.postScale = post;
  plan.scale = scale ? scale->get() : Value();
  plan.zeroRows = body->zeroRows;
  return success();
}

/// The statistic that computes the post-scale's scale from the rows of the
/// activation the projection reads (a row reduction of it and its
/// epilogue), so that its kernel can write the scaled activation too, or
/// why not.
static FailureOr<RowReductionPlan>
planStatistic(const GemmLtPlan &plan, int64_t reduceThreads, std::string &why) {
  auto fail = [&](const Twine &msg) {
    why = msg.str();
    return failure();
  };
  Value a = plan.projection.a;
  linalg::GenericOp post = plan.postScale;
  // The scale's last writer ends a row reduction (its epilogue); its other
  // writers are that reduction and its zero fill (the sums and the scale
  // may share a buffer).
  SmallVector<linalg::LinalgOp> writers;
  for (Operation *user : plan.scale.getUsers()) {
    if (isa<memref::DeallocOp>(user))
      continue;
    auto linalgOp = dyn_cast<linalg::LinalgOp>(user);
    if (!linalgOp)
      return fail("the scale has a user that is not a linalg op");
    if (llvm::is_contained(linalgOp.getDpsInits(), plan.scale))
      writers.push_back(linalgOp);
  }
  linalg::GenericOp epilogue;
  for (linalg::LinalgOp writer : writers) {
    if (writer->getBlock() != writers.front()->getBlock())
      return fail("the scale is written in more than one block");
    if (!epilogue || epilogue->isBeforeInBlock(writer))
      epilogue = dyn_cast<linalg::GenericOp>(writer.getOperation());
  }
  // The reduction whose epilogue it is (epilogueAfter: the element-wise op
  // of its sums after it, only allocations and pure ops between).
  linalg::GenericOp reduce;
  if (epilogue && epilogue.getNumDpsInputs() == 1)
    for (Operation *user : epilogue.getDpsInputOperand(0)->get().getUsers())
      if (auto generic = dyn_cast<linalg::GenericOp>(user);
          generic && generic != epilogue && epilogueAfter(generic) == epilogue)
        reduce = generic;
  if (!reduce)
    return fail("the scale is not the epilogue of a row reduction");
  if (reduce.getNumDpsInputs() != 1 ||
      reduce.getDpsInputOperand(0)->get() != a ||
      !reduce.getMatchingIndexingMap(reduce.getDpsInputOperand(0)).isIdentity())
    return fail("the statistic does not read the projection's activation "
                "row by row");
  FailureOr<RowReductionPlan> statistic =
      planRowReduction(reduce, reduceThreads, why);
  if (failed(statistic))
    return failure();
  for (linalg::LinalgOp writer : writers)
    if (writer != epilogue && writer != reduce &&
        writer.getOperation() != statistic->zeroFill.getOperation())
      return fail("the scale has another writer than its statistic");
  // Its kernel runs where the statistic runs (in its task, in streams
  // mode): the activation must hold there what the GEMM would have read.
  Operation *at = post->getBlock()->findAncestorOpInBlock(*epilogue);
  if (!at || !at->isBeforeInBlock(post))
    return fail("the statistic does not run before the post-scale in its "
                "block");
  if (writtenBetween(a, at, post) ||
      (at != epilogue.getOperation() &&
       writtenBetween(a, epilogue, epilogue->getBlock()->getTerminator())))
    return fail("the activation is written between the statistic and the "
                "post-scale");
  statistic->zeroRows = plan.zeroRows;
  return statistic;
}

bool flashnorm::takesGemmLt(linalg::LinalgOp op, GemmPath gemm) {
  return linalg::isaContractionOpInterface(op) && gemm != GemmPath::Codegen &&
         (gemm == GemmPath::CuBlasLt || isPrefill(op));
}

FailureOr<GemmLtPlan> kernels::planGemmLt(linalg::LinalgOp op,
                                          int64_t reduceThreads,
                                          std::string &why) {
  FailureOr<RowMajorProjection> p = matchRowMajor(op, why);
  if (failed(p))
    return failure();
  // cuBLASLt overwrites c: it must hold zeros.
  if (!startsAtZero(p->c, op)) {
    why = "the accumulator does not start at zero";
    return failure();
  }
  GemmLtPlan plan{op, *p, deadZeroFill(p->c, op)};
  if (failed(planReader(plan, plan.readerWhy))) {
    LLVM_DEBUG(llvm::dbgs() << "[gemm-lt] " << op->getLoc()
                            << ": the GEMM writes the f32 product: "
                            << plan.readerWhy << "\n");
    return plan;
  }
  if (!plan.scale)
    return plan;
  FailureOr<RowReductionPlan> statistic =
      planStatistic(plan, reduceThreads, plan.statisticWhy);
  if (succeeded(statistic))
    plan.statistic = *statistic;
  else
    LLVM_DEBUG(llvm::dbgs() << "[gemm-lt] " << op->getLoc()
                            << ": a pre-scale kernel of its own: "
                            << plan.statisticWhy << "\n");
  return plan;
}

/// `buffer` (rows, unit ones leading) as one dimension.
static Value to1d(OpBuilder &b, Location loc, Value buffer) {
  auto type = cast<MemRefType>(buffer.getType());
  if (type.getRank() == 1)
    return buffer;
  SmallVector<ReassociationIndices> all(1);
  for (int64_t d = 0; d < type.getRank(); ++d)
    all[0].push_back(d);
  return memref::CollapseShapeOp::create(b, loc, buffer, all);
}

/// A new buffer of `a`'s shape and element type, row-major.
static memref::AllocOp allocLike(OpBuilder &b, Location loc, Value a) {
  auto type = cast<MemRefType>(a.getType());
  SmallVector<Value> sizes;
  for (int64_t d = 0; d < type.getRank(); ++d)
    if (type.isDynamicDim(d))
      sizes.push_back(memref::DimOp::create(b, loc, a, d));
  return memref::AllocOp::create(
      b, loc, MemRefType::get(type.getShape(), type.getElementType()), sizes);
}

/// A new buffer `a'` (a's shape and type) holding `a * scale[row]`, rounded
/// once to a's type, or 0 where the scale is 0 and `zeroRows`. A thread per
/// 16 bytes where a's rows are whole 16-byte vectors (the driver's
/// allocations are 256-byte aligned): at 4096 tokens of 4096 bf16 features
/// an element per thread moved these 67 MB at 0.8 TB/s on an H200 (81 us,
/// most of the time in issuing 2-byte loads and stores). One loop over
/// all of them, not rows x columns: rows (tokens) would take the grid's y
/// dimension, which stops at 65535. Null when the loop could not be mapped
/// (an error was emitted). (Where the statistic's kernel can write a'
/// itself, from the row it has just read, it does instead: buildGemmLt.)
static memref::AllocOp buildPreScale(KernelBuilder &builder, OpBuilder &b,
                                     Location loc, Value a, Value scale,
                                     bool zeroRows) {
  auto type = cast<MemRefType>(a.getType());
  int64_t bytes = type.getElementTypeBitWidth() / 8;
  int64_t cols = type.getDimSize(1);
  int64_t width = type.getLayout().isIdentity() &&
                          !ShapedType::isDynamic(cols) && cols * bytes % 16 == 0
                      ? 16 / bytes
                      : 1;
  memref::AllocOp scaled = allocLike(b, loc, a);
  auto index = [&](OpBuilder &nb, int64_t v) -> Value {
    return arith::ConstantIndexOp::create(nb, loc, v);
  };
  Value numCols = memref::DimOp::create(b, loc, a, 1);
  Value count = arith::DivUIOp::create(
      b, loc,
      arith::MulIOp::create(b, loc, memref::DimOp::create(b, loc, a, 0),
                            numCols),
      index(b, width));
  auto loop = scf::ParallelOp::create(
      b, loc, ValueRange{index(b, 0)}, ValueRange{count},
      ValueRange{index(b, 1)}, [&](OpBuilder &nb, Location l, ValueRange ivs) {
        Value first = arith::MulIOp::create(nb, l, ivs[0], index(nb, width));
        Value row = arith::DivUIOp::create(nb, l, first, numCols);
        Value col = arith::RemUIOp::create(nb, l, first, numCols);
        SmallVector<Value> at{row, col};
        Value s = memref::LoadOp::create(nb, l, scale, row);
        Value x = loadElements(nb, l, a, at, width);
        storeElements(nb, l, scaleElements(nb, l, x, s, zeroRows), scaled, at,
                      width);
      });
  if (failed(builder.launchParallel(loop, "pre_scale")))
    return nullptr;
  return scaled;
}

/// A pre-scale of `a` by `scale` that an earlier GEMM's kernel wrote and
/// that still holds at `at`, or null.
static PreScaled *findPreScaled(SmallVectorImpl<PreScaled> &preScaled, Value a,
                                Value scale, bool zeroRows, Operation *at) {
  for (PreScaled &done : preScaled)
    if (done.a == a && done.scale == scale && done.zeroRows == zeroRows &&
        done.from->getBlock() == at->getBlock() &&
        done.from->isBeforeInBlock(at) && !writtenBetween(a, done.from, at) &&
        !writtenBetween(scale, done.from, at))
      return &done;
  return nullptr;
}

FailureOr<PreScale>
kernels::buildGemmLt(KernelBuilder &builder, const GemmLtPlan &plan,
                     SmallVectorImpl<PreScaled> &preScaled) {
  linalg::LinalgOp op = plan.op;
  const RowMajorProjection &p = plan.projection;
  linalg::GenericOp post = plan.postScale;
  OpBuilder b(post ? post.getOperation() : op.getOperation());
  Location loc = op.getLoc();
  PreScaled *shared = plan.scale ? findPreScaled(preScaled, p.a, plan.scale,
                                                 plan.zeroRows, post)
                                 : nullptr;
  PreScale how = PreScale::None;
  memref::AllocOp scaled;
  // From the end of `from` (in the GEMM's block) on, `scaled` holds a'.
  Operation *from = nullptr;
  if (shared) {
    how = PreScale::Shared;
  } else if (plan.statistic) {
    // The statistic's kernel writes a' from the row it has just read (one
    // read of the activation from memory instead of two, one launch fewer),
    // a' allocated before it (before its task, in streams mode).
    RowReductionPlan statistic = *plan.statistic;
    Operation *at =
        post->getBlock()->findAncestorOpInBlock(*statistic.epilogue);
    OpBuilder before(at);
    scaled = allocLike(before, loc, p.a);
    statistic.scaledRows = scaled;
    statistic.role = "norm_stat_scale";
    from = post->getBlock()->findAncestorOpInBlock(
        *buildRowReduction(builder, statistic));
    how = PreScale::Statistic;
  } else if (plan.scale) {
    scaled = buildPreScale(builder, b, loc, to2d(b, loc, p.a),
                           to1d(b, loc, plan.scale), plan.zeroRows);
    if (!scaled)
      return failure();
    from = scaled;
    how = PreScale::Kernel;
  }
  Value a = shared   ? to2d(b, loc, shared->buffer)
            : scaled ? to2d(b, loc, scaled)
                     : to2d(b, loc, p.a);
  Value out = to2d(b, loc, post ? post.getDpsInitOperand(0)->get() : p.c);
  auto gemm =
      GemmLtOp::create(b, loc, gpu::AsyncTokenType::get(b.getContext()),
                       ValueRange{}, a, to2d(b, loc, p.b), out, p.transposeB);
  if (shared)
    shared->dealloc->moveAfter(gemm);
  else if (scaled)
    preScaled.push_back({p.a, plan.scale, plan.zeroRows, scaled, from,
                         memref::DeallocOp::create(b, loc, scaled)});
  if (post)
    post->erase();
  if (plan.deadFill)
    plan.deadFill->erase();
  op->erase();
  return how;
}
