//===- KernelQueries.cpp - What the GPU kernel strategies ask of the IR ---===//
//
// The pure half of KernelBuilder.h: queries on buffers and linalg ops that
// the strategies' plans use. Nothing here changes the IR.
//
//===----------------------------------------------------------------------===//

#include "KernelBuilder.h"

#include "flashnorm/Analysis/HappensBefore.h"
#include "flashnorm/Analysis/Projection.h"
#include "flashnorm/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

using namespace mlir;
using namespace mlir::flashnorm;
using namespace mlir::flashnorm::kernels;

bool kernels::isContiguous(Value buffer) {
  auto type = dyn_cast<MemRefType>(buffer.getType());
  return type && type.getLayout().isIdentity();
}

bool kernels::writtenBetween(Value buffer, Operation *from, Operation *to,
                             Operation *skip) {
  Value root = HappensBefore::getRoot(buffer);
  for (Operation *op = from->getNextNode(); op && op != to;
       op = op->getNextNode())
    if (op != skip && mayWrite(op, root))
      return true;
  return false;
}

bool kernels::isSumOfSquares(linalg::GenericOp op) {
  Block &body = op.getRegion().front();
  if (body.getNumArguments() != 2)
    return false;
  auto add = body.getTerminator()->getOperand(0).getDefiningOp<arith::AddFOp>();
  Value out = body.getArgument(1);
  if (!add || (add.getLhs() != out && add.getRhs() != out))
    return false;
  auto mul = (add.getLhs() == out ? add.getRhs() : add.getLhs())
                 .getDefiningOp<arith::MulFOp>();
  Value x = body.getArgument(0);
  return mul &&
         throughWidening(mul.getLhs(), /*floatExtensionsOnly=*/true) == x &&
         throughWidening(mul.getRhs(), /*floatExtensionsOnly=*/true) == x;
}

bool kernels::isRowReduction(linalg::LinalgOp op) {
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

bool kernels::isElementwise(linalg::GenericOp op) {
  return op.getNumReductionLoops() == 0 && op.getNumDpsInits() == 1 &&
         op.getMatchingIndexingMap(op.getDpsInitOperand(0)).isIdentity();
}

bool kernels::usesOutput(linalg::GenericOp op) {
  return !op.getRegion().front().getArguments().back().use_empty();
}

bool kernels::isZeroFill(linalg::FillOp fill) {
  return matchPattern(fill.getInputs()[0], m_AnyZeroFloat());
}

bool kernels::startsAtZero(Value buffer, Operation *user) {
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

linalg::FillOp kernels::deadZeroFill(Value buffer, Operation *user) {
  Value root = HappensBefore::getRoot(buffer);
  // A fill of a larger buffer this one views initializes the rest too.
  if (buffer.getType() != root.getType())
    return {};
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

/// The nearest op before or after `op` in its block that touches memory.
static Operation *neighbour(Operation *op, bool before) {
  for (Operation *n = before ? op->getPrevNode() : op->getNextNode(); n;
       n = before ? n->getPrevNode() : n->getNextNode())
    if (!isMemoryEffectFree(n) && !isa<ViewLikeOpInterface, memref::AllocOp>(n))
      return n;
  return nullptr;
}

linalg::FillOp kernels::zeroFillBefore(linalg::LinalgOp reduce) {
  auto fill = dyn_cast_or_null<linalg::FillOp>(neighbour(reduce, true));
  Value out = reduce.getDpsInitOperand(0)->get();
  return fill && isZeroFill(fill) && fill.getOutputs()[0] == out
             ? fill
             : linalg::FillOp();
}

linalg::GenericOp kernels::epilogueAfter(linalg::LinalgOp reduce) {
  auto next = dyn_cast_or_null<linalg::GenericOp>(neighbour(reduce, false));
  Value out = reduce.getDpsInitOperand(0)->get();
  if (!next || !isElementwise(next) || usesOutput(next) ||
      next.getNumDpsInputs() != 1 || next.getDpsInputs()[0] != out ||
      !next.getIndexingMapsArray()[0].isIdentity() ||
      next.getNumLoops() != reduce.getNumLoops() - 1)
    return {};
  // Fused, each block stores its row's results while other blocks still
  // read the reduction's inputs: the epilogue must not write them.
  Value written = HappensBefore::getRoot(next.getDpsInitOperand(0)->get());
  for (Value input : reduce.getDpsInputs())
    if (mayAliasRoots(HappensBefore::getRoot(input), written))
      return {};
  return next;
}

bool kernels::isPrefill(linalg::LinalgOp op) {
  FailureOr<ContractionRoles> roles = classifyContraction(op);
  return succeeded(roles) &&
         (ShapedType::isDynamic(roles->rows) || roles->rows >= kGemmLtMinRows);
}

bool kernels::weightContiguousInK(linalg::LinalgOp op) {
  FailureOr<ContractionRoles> roles = classifyContraction(op);
  return succeeded(roles) && roles->weightKInnermost;
}

// Device buffers come from the driver 256-byte aligned and their rows are
// then 16-byte aligned when a row's bytes are a multiple of 16.
int64_t kernels::vectorWidthAlongK(linalg::LinalgOp op) {
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

// A warp for short rows, up to four so that each thread still loads about
// four vectors (K = 4096 bf16: 128 threads, four 16-byte loads each, in
// flight at once).
int64_t kernels::projectionThreads(int64_t k, int64_t width) {
  int64_t vectors = k / width;
  return vectors >= 512 ? 128 : vectors >= 256 ? 64 : 32;
}

StringRef kernels::roleOf(Operation *op) {
  std::optional<AsyncRole> role = getAsyncRole(op);
  if (!role)
    return "";
  switch (*role) {
  case AsyncRole::stat:
    return "norm_stat";
  case AsyncRole::proj:
    return "proj";
  case AsyncRole::post:
    return "post_scale";
  case AsyncRole::post_fused:
    return "post_scale_fused";
  }
  llvm_unreachable("an async role without a kernel name");
}

StringRef kernels::kindOf(linalg::LinalgOp op) {
  if (isa<linalg::FillOp>(op))
    return "fill";
  if (linalg::isaContractionOpInterface(op))
    return "proj";
  return op.getNumReductionLoops() ? "reduce" : "elementwise";
}

FailureOr<RowMajorProjection> kernels::matchRowMajor(linalg::LinalgOp op,
                                                     std::string &why) {
  auto fail = [&](const Twine &msg) {
    why = msg.str();
    return failure();
  };
  FailureOr<ContractionRoles> roles = classifyContraction(op);
  if (failed(roles) || roles->dims.m.size() != 1 || !roles->n)
    return fail("not a single M x K by K x N contraction");
  const linalg::ContractionDimensions &dims = roles->dims;
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  for (unsigned b : dims.batch)
    if (ranges[b] != 1)
      return fail("a batch dimension is not 1");
  unsigned m = dims.m.front(), n = *roles->n, k = roles->k;
  auto results = [&](OpOperand *operand) {
    SmallVector<unsigned> positions;
    for (AffineExpr e : op.getMatchingIndexingMap(operand).getResults())
      if (auto d = dyn_cast<AffineDimExpr>(e);
          d && !llvm::is_contained(dims.batch, d.getPosition()))
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
      if (!d || (llvm::is_contained(dims.batch, d.getPosition()) &&
                 i >= dims.batch.size()))
        return fail("batch dimensions do not lead");
    }
  }
  if (!isMultiplyAccumulate(op, /*floatExtensionsOnly=*/true))
    return fail("the body is not out + a * b (with extensions)");
  V aDims = results(op.getDpsInputOperand(0));
  V bDims = results(op.getDpsInputOperand(1));
  V cDims = results(op.getDpsInitOperand(0));
  RowMajorProjection p;
  p.a = op.getDpsInputOperand(0)->get();
  p.b = op.getDpsInputOperand(1)->get();
  p.c = op.getDpsInitOperand(0)->get();
  p.transposeB = bDims == V{n, k};
  p.m = ranges[m];
  p.n = ranges[n];
  p.k = ranges[k];
  if (aDims != V{m, k} || (bDims != V{k, n} && !p.transposeB) ||
      cDims != V{m, n})
    return fail("operands are not row-major M x K, K x N (or N x K), M x N");
  auto type = [](Value v) { return cast<MemRefType>(v.getType()); };
  Type element = type(p.a).getElementType();
  if (element != type(p.b).getElementType() ||
      !isa<Float32Type, Float16Type, BFloat16Type>(element) ||
      !type(p.c).getElementType().isF32())
    return fail("element types are not f32/f16/bf16 with an f32 result");
  for (Value v : {p.a, p.b, p.c})
    if (!type(v).getLayout().isIdentity())
      return fail("a buffer is strided");
  return p;
}

FailureOr<RowMajorProjection>
kernels::matchTensorCoreProjection(linalg::LinalgOp op, std::string &why) {
  FailureOr<RowMajorProjection> p = matchRowMajor(op, why);
  if (failed(p))
    return failure();
  Type type = cast<MemRefType>(p->a.getType()).getElementType();
  if (!type.isF16() && !type.isBF16())
    why = "only f16 and bf16 run on tensor cores";
  else if (cast<MemRefType>(p->b.getType()).getElementType() != type)
    why = "the weight's type is not the activations'";
  else if (!startsAtZero(p->c, op))
    why = "the accumulator does not start at zero";
  else if (ShapedType::isDynamic(p->m) || ShapedType::isDynamic(p->n) ||
           ShapedType::isDynamic(p->k))
    why = "sizes are not static";
  else
    return p;
  return failure();
}
