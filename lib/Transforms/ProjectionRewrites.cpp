#include "flashnorm/Transforms/ProjectionRewrites.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tosa/IR/TosaOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"

using namespace mlir;
using namespace mlir::flashnorm;

ml_program::GlobalLoadConstOp
flashnorm::createGlobalBeside(RewriterBase &rewriter,
                              const WeightSource &source, StringRef suffix,
                              RankedTensorType type, Attribute value) {
  OpBuilder::InsertionGuard guard(rewriter);
  ml_program::GlobalOp original = source.global;
  auto module = original->getParentOfType<ModuleOp>();
  std::string base = (original.getSymName() + suffix).str(), name = base;
  for (unsigned i = 1; SymbolTable::lookupSymbolIn(module, name); ++i)
    name = base + "." + std::to_string(i);
  rewriter.setInsertionPointAfter(original);
  auto global = ml_program::GlobalOp::create(rewriter, original.getLoc(), name,
                                             type, /*is_mutable=*/false, value,
                                             rewriter.getStringAttr("private"));
  rewriter.setInsertionPointAfter(source.constant);
  return ml_program::GlobalLoadConstOp::create(
      rewriter, source.constant->getLoc(), type,
      FlatSymbolRefAttr::get(global.getSymNameAttr()));
}

void flashnorm::replaceWeight(RewriterBase &rewriter,
                              const Projection &projection,
                              const WeightSource &source, ElementsAttr folded) {
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPointAfter(source.constant);
  Location loc = source.constant->getLoc();
  Operation *constant =
      source.global
          ? createGlobalBeside(rewriter, source, ".flashnorm",
                               cast<RankedTensorType>(folded.getShapedType()),
                               folded)
                .getOperation()
      : isa<tosa::ConstOp>(source.constant)
          ? tosa::ConstOp::create(rewriter, loc, folded.getShapedType(), folded)
                .getOperation()
          : arith::ConstantOp::create(rewriter, loc, cast<TypedAttr>(folded))
                .getOperation();
  replaceWeight(rewriter, projection, source, constant->getResult(0));
}

void flashnorm::replaceWeight(RewriterBase &rewriter,
                              const Projection &projection,
                              const WeightSource &source, Value replacement) {
  OpBuilder::InsertionGuard guard(rewriter);
  Value current = replacement;
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
  auto type = cast<RankedTensorType>(projection->getResult(0).getType());
  Type elt = type.getElementType();
  auto biasType = RankedTensorType::get({type.getShape().back()}, elt);
  SmallVector<Attribute> values;
  for (double b : bias)
    values.push_back(rewriter.getFloatAttr(elt, b));
  Value biasValue = arith::ConstantOp::create(
      rewriter, projection->getLoc(), DenseElementsAttr::get(biasType, values));
  addOutputBias(rewriter, projection, biasValue);
}

void flashnorm::addOutputBias(RewriterBase &rewriter, Operation *projection,
                              Value biasValue) {
  OpBuilder::InsertionGuard guard(rewriter);
  // After the projection and after the bias (made right after it, or
  // earlier).
  Operation *biasDef = biasValue.getDefiningOp();
  rewriter.setInsertionPointAfter(
      biasDef && biasDef->getBlock() == projection->getBlock() &&
              projection->isBeforeInBlock(biasDef)
          ? biasDef
          : projection);
  Location loc = projection->getLoc();
  Value result = projection->getResult(0);
  // Only the uses from before get the biased value: the new ops read the
  // projection (its dynamic sizes too).
  SmallVector<OpOperand *> uses =
      llvm::map_to_vector(result.getUses(), [](OpOperand &u) { return &u; });
  auto type = cast<RankedTensorType>(result.getType());
  Type elt = type.getElementType();
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
