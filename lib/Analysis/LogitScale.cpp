#include "flashnorm/Analysis/LogitScale.h"
#include "flashnorm/Dialect/FlashNorm/IR/FlashNormOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tosa/IR/TosaOps.h"
#include "mlir/IR/Matchers.h"

using namespace mlir;
using namespace mlir::flashnorm;

/// The value of a float scalar constant or a splat float tensor constant.
static std::optional<double> getSplatConstant(Value v) {
  FloatAttr scalar;
  if (matchPattern(v, m_Constant(&scalar)))
    return scalar.getValueAsDouble();
  Attribute attr;
  if (!matchPattern(v, m_Constant(&attr)))
    return std::nullopt;
  auto dense = dyn_cast<DenseFPElementsAttr>(attr);
  if (!dense || !dense.isSplat())
    return std::nullopt;
  return dense.getSplatValue<APFloat>().convertToDouble();
}

/// `op` as `operand * c` (or `operand / c`) of the value at `index`: the
/// factor, when the other operand is a nonzero finite constant.
static std::optional<double> getScaleBy(Operation *op, unsigned index) {
  if (!isa<arith::MulFOp, arith::DivFOp, tosa::MulOp>(op) ||
      op->getNumOperands() < 2 || index > 1)
    return std::nullopt;
  if (isa<arith::DivFOp>(op) && index != 0)
    return std::nullopt;
  std::optional<double> c = getSplatConstant(op->getOperand(1 - index));
  if (!c || *c == 0 || !std::isfinite(*c))
    return std::nullopt;
  // A scaled tensor op is bypassed: its result must be its operand's shape.
  if (isa<ShapedType>(op->getResult(0).getType()) &&
      op->getResult(0).getType() != op->getOperand(index).getType())
    return std::nullopt;
  return isa<arith::DivFOp>(op) ? 1.0 / *c : *c;
}

/// Where the value `use` reads is multiplied by a constant: the tensor op
/// itself, or (for an element-wise generic) the one multiply its block
/// argument feeds. What follows reads the product only, so multiplying the
/// value by the constant instead and bypassing the site is exact.
static std::optional<LogitScale> getScaleSite(OpOperand &use) {
  LogitScale ls;
  Operation *user = use.getOwner();
  if (std::optional<double> c = getScaleBy(user, use.getOperandNumber())) {
    ls.factor = *c;
    ls.site = user;
    ls.scaledOperand = use.getOperandNumber();
    return ls;
  }
  auto generic = dyn_cast<linalg::GenericOp>(user);
  if (!generic || !generic.hasPureTensorSemantics() ||
      !generic.isDpsInput(&use))
    return std::nullopt;
  BlockArgument arg = generic.getMatchingBlockArgument(&use);
  if (!arg.hasOneUse())
    return std::nullopt;
  OpOperand &inner = *arg.use_begin();
  std::optional<double> c =
      getScaleBy(inner.getOwner(), inner.getOperandNumber());
  if (!c)
    return std::nullopt;
  ls.factor = *c;
  ls.site = inner.getOwner();
  ls.scaledOperand = inner.getOperandNumber();
  return ls;
}

/// Whether `use` is the query operand of a contraction (the one indexed by
/// its m dimensions); sets `isContraction` if the owner is one at all.
static bool isQueryOperand(OpOperand &use, bool &isContraction) {
  Operation *owner = use.getOwner();
  if (isa<tosa::MatMulOp>(owner)) {
    isContraction = true;
    return use.getOperandNumber() == 0;
  }
  auto linalgOp = dyn_cast<linalg::LinalgOp>(owner);
  isContraction = linalgOp && linalg::isaContractionOpInterface(linalgOp) &&
                  linalgOp.isDpsInput(&use);
  if (!isContraction)
    return false;
  FailureOr<linalg::ContractionDimensions> dims =
      linalg::inferContractionDims(linalgOp);
  if (failed(dims) || dims->m.empty())
    return false;
  AffineMap map = linalgOp.getMatchingIndexingMap(&use);
  return llvm::all_of(dims->m,
                      [&](unsigned d) { return map.isFunctionOfDim(d); });
}

FailureOr<LogitScale> flashnorm::findLogitScale(const Projection &projection,
                                                std::string *whyNot) {
  auto fail = [&](const Twine &msg) -> FailureOr<LogitScale> {
    if (whyNot)
      *whyNot = msg.str();
    return failure();
  };
  LogitScale ls;
  Value v = projection.op->getResult(0);
  while (true) {
    if (!v.hasOneUse())
      return fail("its result has other users than the way to the logits");
    OpOperand &use = *v.use_begin();
    Operation *user = use.getOwner();
    unsigned n = use.getOperandNumber();
    // A scale on q itself (any element-wise use of it).
    if (std::optional<LogitScale> site = getScaleSite(use)) {
      site->biases = std::move(ls.biases);
      return *site;
    }
    bool isContraction = false;
    if (isQueryOperand(use, isContraction)) {
      // The logits: scaled by a constant next.
      Value logits = user->getResult(0);
      if (!logits.hasOneUse())
        return fail("its logits have more than one user");
      OpOperand &next = *logits.use_begin();
      if (std::optional<LogitScale> site = getScaleSite(next)) {
        site->biases = std::move(ls.biases);
        return *site;
      }
      return fail("its logits are not multiplied by a constant");
    }
    if (isContraction)
      return fail("it is the keys of its contraction, not the queries");
    auto generic = dyn_cast<linalg::GenericOp>(user);
    bool linear =
        (n == 0 &&
         isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp, tosa::ReshapeOp,
             linalg::TransposeOp, tosa::TransposeOp, arith::TruncFOp,
             arith::ExtFOp, tosa::CastOp, PostScaleOp>(user)) ||
        (generic && isLayoutGeneric(generic));
    if (linear) {
      v = user->getResult(0);
      continue;
    }
    // A constant bias added: c (xW + b) = x (cW) + cb.
    bool add = isa<arith::AddFOp, tosa::AddOp>(user);
    if (generic && generic.getNumDpsInputs() == 2 &&
        generic.getNumParallelLoops() == generic.getNumLoops() &&
        generic.getMatchingIndexingMap(&use).isIdentity()) {
      Operation *body = &generic.getBody()->front();
      add = isa<arith::AddFOp>(body) &&
            body->getNextNode() == generic.getBody()->getTerminator() &&
            body->getResult(0) ==
                generic.getBody()->getTerminator()->getOperand(0) &&
            llvm::is_contained(body->getOperands(),
                               generic.getMatchingBlockArgument(&use));
    }
    if (add && n < 2) {
      unsigned other = 1 - n;
      auto type = cast<ShapedType>(user->getOperand(other).getType());
      FailureOr<WeightSource> bias = traceWeightToConstant(
          user->getOperand(other), type.getRank() - 1, whyNot);
      if (failed(bias) || !bias->value)
        return fail("a bias on the way to the logits is not a constant");
      Projection biasUse;
      biasUse.op = user;
      biasUse.weightIndex = other;
      ls.biases.push_back({biasUse, *bias});
      v = user->getResult(0);
      continue;
    }
    return fail("'" + user->getName().getStringRef() +
                "' on the way to the logits is not linear in it");
  }
}
