#include "flashnorm/Transforms/ProjectionRewrites.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tosa/IR/TosaOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"

#include <functional>

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
  // Named as the load names the original: through the same nested
  // modules (`@weights::@w` becomes `@weights::@w.flashnorm`), where the
  // new global must be visible from above (nested visibility).
  auto loaded = source.constant->getAttrOfType<SymbolRefAttr>("global");
  bool fromAbove = loaded && !loaded.getNestedReferences().empty();
  rewriter.setInsertionPointAfter(original);
  auto global = ml_program::GlobalOp::create(
      rewriter, original.getLoc(), name, type, /*is_mutable=*/false, value,
      rewriter.getStringAttr(fromAbove ? "nested" : "private"));
  SymbolRefAttr ref = FlatSymbolRefAttr::get(global.getSymNameAttr());
  if (fromAbove) {
    SmallVector<FlatSymbolRefAttr> nested(
        loaded.getNestedReferences().drop_back());
    nested.push_back(cast<FlatSymbolRefAttr>(ref));
    ref = SymbolRefAttr::get(loaded.getRootReference(), nested);
  }
  rewriter.setInsertionPointAfter(source.constant);
  return ml_program::GlobalLoadConstOp::create(
      rewriter, source.constant->getLoc(), type, ref);
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

void flashnorm::redirectUsesThroughRowRegrouping(
    RewriterBase &rewriter, Value from, Value to,
    const llvm::SmallPtrSetImpl<OpOperand *> &keep) {
  OpBuilder::InsertionGuard guard(rewriter);
  DenseMap<Value, Value> copies{{from, to}};
  SmallVector<Operation *> copied;
  std::function<Value(Value)> copyOf = [&](Value view) -> Value {
    if (Value copy = copies.lookup(view))
      return copy;
    Operation *regrouping = view.getDefiningOp();
    Value source = copyOf(regrouping->getOperand(0));
    rewriter.setInsertionPointAfter(regrouping);
    IRMapping mapping;
    mapping.map(regrouping->getOperand(0), source);
    Value copy = rewriter.clone(*regrouping, mapping)->getResult(0);
    copies[view] = copy;
    copied.push_back(regrouping);
    return copy;
  };
  for (OpOperand *use : getUsesThroughRowRegrouping(from)) {
    if (keep.contains(use))
      continue;
    Value copy = copyOf(use->get());
    rewriter.modifyOpInPlace(use->getOwner(), [&] { use->set(copy); });
  }
  // A view copied later may read one copied before it: the later first.
  for (Operation *regrouping : llvm::reverse(copied))
    if (regrouping->use_empty())
      rewriter.eraseOp(regrouping);
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

/// A zero-filled f32 tensor shaped like `like`.
static Value createZeroF32Like(OpBuilder &b, Location loc, Value like) {
  SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, like);
  Value empty = tensor::EmptyOp::create(b, loc, sizes, b.getF32Type());
  Value zero = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0.0f));
  return linalg::FillOp::create(b, loc, zero, empty).getResult(0);
}

/// A multiply-accumulate generic that converts its operands to f32 first:
/// floats extended, integers (a quantized weight) converted as `op`'s body
/// converts them (isMultiplyAccumulate: the body is `out + c(a) * c(b)`).
static Value createWidenedContraction(OpBuilder &b, linalg::LinalgOp op,
                                      ValueRange inputs, Value init) {
  Type f32 = b.getF32Type();
  Block &original = op->getRegion(0).front();
  auto body = [&](OpBuilder &nb, Location loc, ValueRange args) {
    auto widen = [&](unsigned i) -> Value {
      Value v = args[i];
      if (v.getType() == f32)
        return v;
      if (isa<FloatType>(v.getType()))
        return arith::ExtFOp::create(nb, loc, f32, v);
      if (llvm::any_of(original.getArgument(i).getUsers(),
                       llvm::IsaPred<arith::UIToFPOp, arith::ExtUIOp>))
        return arith::UIToFPOp::create(nb, loc, f32, v);
      return arith::SIToFPOp::create(nb, loc, f32, v);
    };
    Value prod = arith::MulFOp::create(nb, loc, widen(0), widen(1));
    Value sum = arith::AddFOp::create(nb, loc, args[2], prod);
    linalg::YieldOp::create(nb, loc, sum);
  };
  return linalg::GenericOp::create(b, op.getLoc(), TypeRange{init.getType()},
                                   inputs, ValueRange{init},
                                   op.getIndexingMapsArray(),
                                   op.getIteratorTypesArray(), body)
      .getResult(0);
}

bool flashnorm::isRebuiltInF32(const Projection &p) {
  return isNarrowFloat(getElementTypeOrSelf(p.op->getResult(0)));
}

Value flashnorm::rebuildProjection(RewriterBase &rewriter, const Projection &p,
                                   Value x) {
  Operation *op = p.op;
  auto resultType = cast<RankedTensorType>(op->getResult(0).getType());
  if (!isRebuiltInF32(p)) {
    rewriter.modifyOpInPlace(op, [&] { op->setOperand(p.activationIndex, x); });
    return op->getResult(0);
  }
  rewriter.setInsertionPoint(op);
  Location loc = op->getLoc();
  auto wideType = resultType.clone(rewriter.getF32Type());
  if (auto matmul = dyn_cast<tosa::MatMulOp>(op))
    return tosa::MatMulOp::create(rewriter, loc, wideType, x, matmul.getB(),
                                  matmul.getAZp(), matmul.getBZp());

  auto linalgOp = cast<linalg::LinalgOp>(op);
  SmallVector<Value> inputs = linalgOp.getDpsInputs();
  inputs[p.activationIndex] = x;
  Value init = createZeroF32Like(rewriter, loc, linalgOp.getDpsInits()[0]);
  SmallVector<NamedAttribute> attrs;
  for (StringRef name : {"indexing_maps", "cast"})
    if (Attribute a = op->getAttr(name))
      attrs.emplace_back(rewriter.getStringAttr(name), a);
  if (isa<linalg::MatmulOp>(op))
    return linalg::MatmulOp::create(rewriter, loc, TypeRange{wideType}, inputs,
                                    ValueRange{init}, attrs)
        .getResult(0);
  if (isa<linalg::BatchMatmulOp>(op))
    return linalg::BatchMatmulOp::create(rewriter, loc, TypeRange{wideType},
                                         inputs, ValueRange{init}, attrs)
        .getResult(0);
  return createWidenedContraction(rewriter, linalgOp, inputs, init);
}

void flashnorm::bypassLogitScale(RewriterBase &rewriter,
                                 const LogitScale &scale,
                                 ArrayRef<ElementsAttr> scaledBiases) {
  for (auto [bias, scaled] : llvm::zip_equal(scale.biases, scaledBiases))
    replaceWeight(rewriter, bias.first, bias.second, scaled);
  rewriter.replaceOp(scale.site, scale.site->getOperand(scale.scaledOperand));
}
