#include "flashnorm/Transforms/ProjectionRewrites.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tosa/IR/TosaOps.h"
#include "mlir/IR/IRMapping.h"

using namespace mlir;
using namespace mlir::flashnorm;

void flashnorm::replaceWeight(RewriterBase &rewriter,
                              const Projection &projection,
                              const WeightSource &source, ElementsAttr folded) {
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPointAfter(source.constant);
  Location loc = source.constant->getLoc();
  Operation *constant =
      isa<tosa::ConstOp>(source.constant)
          ? tosa::ConstOp::create(rewriter, loc, folded.getShapedType(), folded)
                .getOperation()
          : arith::ConstantOp::create(rewriter, loc, cast<TypedAttr>(folded))
                .getOperation();
  Value current = constant->getResult(0);
  for (Operation *layoutOp : llvm::reverse(source.chain)) {
    rewriter.setInsertionPoint(layoutOp);
    IRMapping mapping;
    mapping.map(layoutOp->getOperand(0), current);
    current = rewriter.clone(*layoutOp, mapping)->getResult(0);
  }
  rewriter.modifyOpInPlace(projection.op, [&] {
    projection.op->setOperand(projection.weightIndex, current);
  });
}

void flashnorm::addOutputBias(RewriterBase &rewriter, Operation *projection,
                              ArrayRef<double> bias) {
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPointAfter(projection);
  Location loc = projection->getLoc();
  Value result = projection->getResult(0);
  // Only the uses from before get the biased value: the new ops read the
  // projection (its dynamic sizes too).
  SmallVector<OpOperand *> uses =
      llvm::map_to_vector(result.getUses(), [](OpOperand &u) { return &u; });
  auto type = cast<RankedTensorType>(result.getType());
  Type elt = type.getElementType();
  auto biasType = RankedTensorType::get({type.getShape().back()}, elt);
  SmallVector<Attribute> values;
  for (double b : bias)
    values.push_back(rewriter.getFloatAttr(elt, b));
  Value biasValue = arith::ConstantOp::create(
      rewriter, loc, DenseElementsAttr::get(biasType, values));
  unsigned rank = type.getRank();
  MLIRContext *ctx = rewriter.getContext();
  AffineMap id = AffineMap::getMultiDimIdentityMap(rank, ctx);
  AffineMap feature = AffineMap::get(rank, 0, getAffineDimExpr(rank - 1, ctx));
  Value init = tensor::EmptyOp::create(
      rewriter, loc, tensor::getMixedSizes(rewriter, loc, result), elt);
  SmallVector<utils::IteratorType> par(rank, utils::IteratorType::parallel);
  auto add = linalg::GenericOp::create(
      rewriter, loc, TypeRange{type}, ValueRange{result, biasValue},
      ValueRange{init}, ArrayRef<AffineMap>{id, feature, id}, par,
      [](OpBuilder &b, Location l, ValueRange args) {
        linalg::YieldOp::create(
            b, l, Value(arith::AddFOp::create(b, l, args[0], args[1])));
      });
  for (OpOperand *use : uses)
    rewriter.modifyOpInPlace(use->getOwner(),
                             [&] { use->set(add.getResult(0)); });
}
