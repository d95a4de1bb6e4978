//===- CpuCopies.cpp - Operands a CPU kernel reads from copies ------------===//
//
// See CpuCopies.h.
//
//===----------------------------------------------------------------------===//

#include "CpuCopies.h"

#include "flashnorm/Dialect/FlashNorm/IR/FlashNormDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Async/IR/Async.h"

using namespace mlir;
using namespace mlir::flashnorm;

bool flashnorm::narrowInputsWiden(linalg::LinalgOp op) {
  if (op.getNumDpsInits() != 1)
    return false;
  auto acc = dyn_cast<FloatType>(
      getElementTypeOrSelf(op.getDpsInitOperand(0)->get().getType()));
  if (!acc || op->getNumRegions() != 1 || op->getRegion(0).empty())
    return false;
  bool any = false;
  for (OpOperand *input : op.getDpsInputOperands()) {
    auto type = dyn_cast<FloatType>(getElementTypeOrSelf(input->get()));
    if (!type || type.getWidth() >= acc.getWidth())
      continue;
    any = true;
    BlockArgument arg = op.getMatchingBlockArgument(input);
    if (!llvm::all_of(arg.getUsers(), [&](Operation *user) {
          return isa<arith::ExtFOp>(user) && user->getResultTypes()[0] == acc;
        }))
      return false;
  }
  return any;
}

void flashnorm::readWidened(RewriterBase &rewriter, linalg::GenericOp op,
                            OpOperand &input, Type wide) {
  BlockArgument arg = op.getMatchingBlockArgument(&input);
  rewriter.modifyOpInPlace(op, [&] { arg.setType(wide); });
  for (Operation *user : llvm::make_early_inc_range(arg.getUsers()))
    rewriter.replaceOp(user, arg);
}

linalg::LinalgOp flashnorm::copyWidened(OpBuilder &b, Location loc, Value src,
                                        Value dst) {
  Type wide = getElementTypeOrSelf(dst);
  if (getElementTypeOrSelf(src) == wide)
    return linalg::CopyOp::create(b, loc, src, dst);
  auto type = cast<ShapedType>(dst.getType());
  SmallVector<Type> results;
  if (isa<RankedTensorType>(type))
    results.push_back(type);
  unsigned rank = type.getRank();
  AffineMap id = b.getMultiDimIdentityMap(rank);
  return linalg::GenericOp::create(
      b, loc, results, ValueRange{src}, ValueRange{dst},
      ArrayRef<AffineMap>{id, id},
      SmallVector<utils::IteratorType>(rank, utils::IteratorType::parallel),
      [&](OpBuilder &nb, Location l, ValueRange args) {
        Value ext = arith::ExtFOp::create(nb, l, wide, args[0]);
        linalg::YieldOp::create(nb, l, ext);
      });
}

/// The innermost loop around `op` whose iterations run on several threads
/// (an scf.parallel, or an scf.forall not made serial: both become OpenMP
/// loops) inside its function or async task.
static Block *parallelBodyAround(Operation *op) {
  for (Operation *p = op->getParentOp();
       p && !isa<async::ExecuteOp>(p) &&
       !p->hasTrait<OpTrait::IsIsolatedFromAbove>();
       p = p->getParentOp()) {
    if (auto forall = dyn_cast<scf::ForallOp>(p);
        forall && !forall->hasAttr(kSerialPanelsAttr))
      return forall.getBody();
    if (auto parallel = dyn_cast<scf::ParallelOp>(p))
      return parallel.getBody();
  }
  return nullptr;
}

Value BlockBuffers::get(RewriterBase &rewriter, Location loc, MemRefType type,
                        Operation *blocks, scf::ForallOp chunks) {
  if (Block *body = chunks ? chunks.getBody() : parallelBodyAround(blocks)) {
    rewriter.setInsertionPointToStart(body);
    Value buffer = memref::AllocOp::create(rewriter, loc, type,
                                           rewriter.getI64IntegerAttr(64));
    rewriter.setInsertionPoint(body->getTerminator());
    memref::DeallocOp::create(rewriter, loc, buffer);
    return buffer;
  }
  Region *home = blocks->getParentRegion();
  while (!isa<async::ExecuteOp>(home->getParentOp()) &&
         !home->getParentOp()->hasTrait<OpTrait::IsIsolatedFromAbove>())
    home = home->getParentOp()->getParentRegion();
  Value bytes = stackBytes(rewriter, home, type);
  rewriter.setInsertionPointAfterValue(bytes);
  return memref::ViewOp::create(
      rewriter, loc, type, bytes,
      arith::ConstantIndexOp::create(rewriter, loc, 0), ValueRange{});
}

Value BlockBuffers::stackBytes(RewriterBase &rewriter, Region *home,
                               MemRefType type) {
  int64_t bytes = type.getNumElements() * type.getElementTypeBitWidth() / 8;
  memref::AllocaOp &alloca = stack[home];
  if (alloca && alloca.getType().getNumElements() >= bytes)
    return alloca;
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPointToStart(&home->front());
  auto grown =
      memref::AllocaOp::create(rewriter, home->getParentOp()->getLoc(),
                               MemRefType::get({bytes}, rewriter.getI8Type()),
                               rewriter.getI64IntegerAttr(64));
  if (alloca)
    rewriter.replaceOp(alloca, grown);
  alloca = grown;
  return grown;
}
