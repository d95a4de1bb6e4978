//===- GemmLt.cpp - Projections through cuBLASLt --------------------------===//
//
// A projection over row-major 2-D buffers (unit batch dimensions leading)
// with an f32 accumulator that starts at zero becomes `flashnorm.gemm_lt`:
// cuBLASLt on the op's stream, lowered by the dialect's LLVM interface.
// cuBLASLt overwrites the whole output, so the zero fill before it goes.
//
// A deferred projection's post-scale, `out = round(product * rinv[row])`,
// goes into the GEMM's epilogue where it is the product's only reader:
// cuBLASLt's alpha vector scales each row of the f32 sum, which is rounded
// once to the post-scale's output type. The f32 product is then never
// written (at 4096 tokens of a 4096 x 4096 bf16 projection, 67 MB written
// and read back, plus a GEMM with an f32 result, 1.4-1.5x cuBLAS's bf16
// GEMM on an H200). The GEMM runs where the post-scale ran, after the
// statistic: in streams mode the fork then overlaps nothing of this
// projection, which the epilogue repays many times over at prefill sizes.
// The alpha vector would turn an overflowed product (inf) of a row whose
// scale is 0 into NaN where the post-scale's contract says 0: a kernel
// after the GEMM zeroes those rows (a thread per row reads its scale and
// writes nothing else unless it is 0).
//
//===----------------------------------------------------------------------===//

#include "KernelBuilder.h"

#include "flashnorm/Analysis/HappensBefore.h"
#include "flashnorm/Conversion/Passes.h"
#include "flashnorm/Dialect/FlashNorm/IR/FlashNormOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Matchers.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "flashnorm-gpu-kernels"

using namespace mlir;
using namespace mlir::flashnorm;
using namespace mlir::flashnorm::kernels;

/// How a post-scale's body scales the product: `round(product * scale)`
/// (either order), where the rounding is a truncf to nearest even to the
/// output type or nothing for f32; with `zeroRows`, the product of a row
/// whose scale is 0 is 0 first (flashnorm.post_scale's contract:
/// `select(scale == 0, 0, product * scale)`).
struct RowScaleBody {
  bool zeroRows = false;
};
static FailureOr<RowScaleBody> matchRowScaleBody(linalg::GenericOp post,
                                                 unsigned productInput) {
  Block &body = post.getRegion().front();
  Value product = body.getArgument(productInput);
  Value scale = body.getArgument(1 - productInput);
  Value v = body.getTerminator()->getOperand(0);
  if (auto trunc = v.getDefiningOp<arith::TruncFOp>()) {
    std::optional<arith::RoundingMode> mode = trunc.getRoundingmode();
    if (mode && *mode != arith::RoundingMode::to_nearest_even)
      return failure();
    v = trunc.getIn();
  }
  RowScaleBody match;
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

/// The post-scale of `proj`'s product that cuBLASLt can apply, or why not.
static LogicalResult planRowScale(GemmLtPlan &plan, std::string &why) {
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
    return fail("the post-scale is not after the projection in its block");
  if (!isElementwise(post) || usesOutput(post) || post.getNumDpsInputs() != 2)
    return fail("the product's reader is not an element-wise op of the "
                "product and one other input");
  unsigned productInput = post.getDpsInputOperand(0)->get() == p.c ? 0 : 1;
  OpOperand *product = post.getDpsInputOperand(productInput);
  OpOperand *scale = post.getDpsInputOperand(1 - productInput);
  OpOperand *out = post.getDpsInitOperand(0);
  unsigned rank = post.getNumLoops();
  MLIRContext *ctx = post.getContext();
  auto scaleType = dyn_cast<MemRefType>(scale->get().getType());
  auto outType = dyn_cast<MemRefType>(out->get().getType());
  if (!post.getMatchingIndexingMap(product).isIdentity() || !scaleType ||
      !outType ||
      post.getMatchingIndexingMap(scale) !=
          AffineMap::getMultiDimIdentityMap(rank, ctx).getMajorSubMap(rank -
                                                                      1) ||
      !scaleType.getElementType().isF32() ||
      !scaleType.getLayout().isIdentity() ||
      !outType.getLayout().isIdentity() ||
      !isa<Float32Type, Float16Type, BFloat16Type>(outType.getElementType()))
    return fail("the reader is not a row scale of the product into a "
                "row-major f32, f16 or bf16 buffer");
  FailureOr<RowScaleBody> body = matchRowScaleBody(post, productInput);
  if (failed(body))
    return fail("the reader's body is not round(product * scale)");
  // The GEMM runs in the post-scale's place: its inputs must hold there
  // what the projection read, and it must not write what it reads.
  for (Value input : {p.a, p.b})
    if (writtenBetween(input, proj, post))
      return fail("an input of the projection is written before the "
                  "post-scale");
  Value outRoot = HappensBefore::getRoot(out->get());
  for (Value input : {p.a, p.b, scale->get()})
    if (mayAliasRoots(HappensBefore::getRoot(input), outRoot))
      return fail("the post-scale writes a buffer the GEMM reads");
  plan.postScale = post;
  plan.scale = scale->get();
  plan.zeroRows = body->zeroRows;
  return success();
}

bool flashnorm::takesGemmLt(linalg::LinalgOp op, GemmPath gemm) {
  return linalg::isaContractionOpInterface(op) && gemm != GemmPath::Codegen &&
         (gemm == GemmPath::CuBlasLt || isPrefill(op));
}

FailureOr<GemmLtPlan> kernels::planGemmLt(linalg::LinalgOp op,
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
  if (failed(planRowScale(plan, plan.epilogueWhy)))
    LLVM_DEBUG(llvm::dbgs() << "[gemm-lt] " << op->getLoc()
                            << ": no post-scale in the epilogue: "
                            << plan.epilogueWhy << "\n");
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

/// Zeroes the rows of `out` (M x N) whose `scale` is 0, the rest untouched:
/// a thread per row, which reads its scale and, only in that rare case
/// (the row's mean square overflowed), writes the row.
static LogicalResult buildZeroRows(KernelBuilder &builder, OpBuilder &b,
                                   Location loc, Value scale, Value out) {
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  Value rows = memref::DimOp::create(b, loc, out, 0);
  Value cols = memref::DimOp::create(b, loc, out, 1);
  Type element = cast<MemRefType>(out.getType()).getElementType();
  auto loop = scf::ParallelOp::create(
      b, loc, ValueRange{zero}, ValueRange{rows}, ValueRange{one},
      [&](OpBuilder &nb, Location l, ValueRange ivs) {
        Value s = memref::LoadOp::create(nb, l, scale, ivs);
        Value isZero = arith::CmpFOp::create(
            nb, l, arith::CmpFPredicate::OEQ, s,
            arith::ConstantOp::create(nb, l, nb.getF32FloatAttr(0.0)));
        scf::IfOp::create(nb, l, isZero, [&](OpBuilder &ib, Location il) {
          Value fill =
              arith::ConstantOp::create(ib, il, ib.getFloatAttr(element, 0.0));
          scf::ForOp::create(
              ib, il, zero, cols, one, ValueRange{},
              [&](OpBuilder &fb, Location fl, Value j, ValueRange) {
                memref::StoreOp::create(fb, fl, fill, out,
                                        ValueRange{ivs[0], j});
                scf::YieldOp::create(fb, fl);
              });
          scf::YieldOp::create(ib, il);
        });
      });
  return builder.launchParallel(loop, "zero_rows");
}

LogicalResult kernels::buildGemmLt(KernelBuilder &builder,
                                   const GemmLtPlan &plan) {
  linalg::LinalgOp op = plan.op;
  const RowMajorProjection &p = plan.projection;
  linalg::GenericOp post = plan.postScale;
  OpBuilder b(post ? post.getOperation() : op.getOperation());
  Location loc = op.getLoc();
  Value out = to2d(b, loc, post ? post.getDpsInitOperand(0)->get() : p.c);
  Value rowScale = post ? to1d(b, loc, plan.scale) : Value();
  GemmLtOp::create(b, loc, gpu::AsyncTokenType::get(b.getContext()),
                   ValueRange{}, to2d(b, loc, p.a), to2d(b, loc, p.b), out,
                   rowScale, p.transposeB);
  if (post && plan.zeroRows &&
      failed(buildZeroRows(builder, b, loc, rowScale, out)))
    return failure();
  if (post)
    post->erase();
  if (plan.deadFill)
    plan.deadFill->erase();
  op->erase();
  return success();
}
