//===- CpuCopies.cpp - Operands a CPU kernel reads from copies ------------===//
//
// See CpuCopies.h.
//
//===----------------------------------------------------------------------===//

#include "CpuCopies.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

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
