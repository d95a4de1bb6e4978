#include "flashnorm/Analysis/Projection.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/IR/LinalgInterfaces.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tosa/IR/TosaOps.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::flashnorm;

static FailureOr<Projection> reject(std::string *whyNot, const Twine &msg) {
  if (whyNot)
    *whyNot = msg.str();
  return failure();
}

std::string flashnorm::describeValue(Value v) {
  if (auto arg = dyn_cast<BlockArgument>(v))
    return "block argument #" + std::to_string(arg.getArgNumber());
  return "'" + v.getDefiningOp()->getName().getStringRef().str() + "'";
}

bool flashnorm::isZeroInit(Value init) {
  if (matchPattern(init, m_AnyZeroFloat()))
    return true;
  if (auto fill = init.getDefiningOp<linalg::FillOp>())
    return matchPattern(fill.value(), m_AnyZeroFloat());
  return false;
}

bool flashnorm::isNarrowFloat(Type t) {
  return isa<FloatType>(t) && t.getIntOrFloatBitWidth() < 32;
}

Value flashnorm::throughWidening(Value v, bool floatExtensionsOnly) {
  while (Operation *def = v.getDefiningOp()) {
    if (floatExtensionsOnly
            ? !isa<arith::ExtFOp>(def)
            : !isa<arith::ExtFOp, arith::SIToFPOp, arith::UIToFPOp,
                   arith::ExtSIOp, arith::ExtUIOp>(def))
      break;
    v = def->getOperand(0);
  }
  return v;
}

bool flashnorm::isMultiplyAccumulate(linalg::LinalgOp op,
                                     bool floatExtensionsOnly) {
  if (op.getNumDpsInputs() != 2 || op.getNumDpsInits() != 1 ||
      op->getNumRegions() != 1 || op->getRegion(0).empty())
    return false;
  Block &body = op->getRegion(0).front();
  Operation *yield = body.getTerminator();
  if (body.getNumArguments() != 3 || yield->getNumOperands() != 1)
    return false;
  Operation *add = yield->getOperand(0).getDefiningOp();
  bool isFloat = isa_and_nonnull<arith::AddFOp>(add);
  if (!isFloat && (floatExtensionsOnly || !isa_and_nonnull<arith::AddIOp>(add)))
    return false;
  Value out = body.getArgument(2);
  Value product =
      add->getOperand(0) == out ? add->getOperand(1) : add->getOperand(0);
  if (add->getOperand(0) != out && add->getOperand(1) != out)
    return false;
  Operation *mul = product.getDefiningOp();
  if (!(isFloat ? isa_and_nonnull<arith::MulFOp>(mul)
                : isa_and_nonnull<arith::MulIOp>(mul)))
    return false;
  Value lhs = throughWidening(mul->getOperand(0), floatExtensionsOnly),
        rhs = throughWidening(mul->getOperand(1), floatExtensionsOnly);
  Value a = body.getArgument(0), b = body.getArgument(1);
  return (lhs == a && rhs == b) || (lhs == b && rhs == a);
}

static FailureOr<Projection> matchLinalg(linalg::LinalgOp op, OpOperand &use,
                                         std::string *whyNot) {
  if (!op.hasPureTensorSemantics())
    return reject(whyNot, "it works on buffers, not tensors");
  // What most often reads a norm besides its projections, said as what it
  // is (a QK-norm's head transpose, a residual add).
  if (op.getNumReductionLoops() == 0) {
    auto generic = dyn_cast<linalg::GenericOp>(op.getOperation());
    auto copy = dyn_cast<linalg::CopyOp>(op.getOperation());
    if (isa<linalg::TransposeOp, linalg::BroadcastOp>(op.getOperation()) ||
        (copy && getElementTypeOrSelf(copy.getInputs()[0]) ==
                     getElementTypeOrSelf(copy.getOutputs()[0])) ||
        (generic && isLayoutGeneric(generic)))
      return reject(whyNot, "it moves values (a transpose, broadcast or "
                            "copy) rather than contracting them");
    return reject(whyNot, "it reduces no dimension (element-wise, or an "
                          "outer product): not a contraction");
  }
  if (op.getNumDpsInputs() != 2 || op.getNumDpsInits() != 1)
    return reject(whyNot, "it is not a two-input, one-output linalg op");
  if (!op.isDpsInput(&use))
    return reject(whyNot, "the norm feeds its accumulator, not an input");
  if (!linalg::isaContractionOpInterface(op))
    return reject(whyNot, "it is not a multiply-accumulate contraction");
  if (!isMultiplyAccumulate(op))
    return reject(whyNot, "its body is not out + a * b (widening conversions "
                          "only): not linear in the activation");

  SmallVector<unsigned> reductions;
  op.getReductionDims(reductions);
  if (reductions.size() != 1)
    return reject(whyNot, "it contracts " + Twine(reductions.size()) +
                              " dimensions, not exactly one");
  FailureOr<ContractionRoles> roles =
      classifyContraction(op, op.getDpsInputOperand(0) == &use ? 0 : 1);
  if (failed(roles))
    return reject(whyNot, "it is not a multiply-accumulate contraction");
  AffineMap actMap = op.getMatchingIndexingMap(&use);
  if (actMap.getNumResults() == 0 ||
      actMap.getResults().back() != getAffineDimExpr(roles->k, op.getContext()))
    return reject(whyNot,
                  "it does not contract the normalized (last) dimension");

  Projection p;
  p.op = op;
  p.activationIndex = roles->activation;
  p.weightIndex = roles->weight;
  p.weightAxis = roles->weightAxis;
  p.rowPreserving = roles->rowsPreserved;
  OpOperand *init = op.getDpsInitOperand(0);
  p.zeroInit = isZeroInit(init->get());
  return p;
}

FailureOr<Projection> flashnorm::matchProjection(OpOperand &use,
                                                 std::string *whyNot) {
  Operation *owner = use.getOwner();
  if (auto linalgOp = dyn_cast<linalg::LinalgOp>(owner))
    return matchLinalg(linalgOp, use, whyNot);
  if (auto matmul = dyn_cast<tosa::MatMulOp>(owner)) {
    if (use.getOperandNumber() != 0)
      return reject(whyNot, "the norm is not its 'a' operand");
    Projection p;
    p.op = owner;
    p.activationIndex = 0;
    p.weightIndex = 1;
    p.weightAxis = 1; // b is [batch, K, N].
    p.rowPreserving = true;
    p.zeroInit = true;
    return p;
  }
  return reject(whyNot, "it is not a projection (matmul-like op)");
}

/// The dimension of `src` that dimension `axis` of `dst` is, when the two
/// shapes differ only by unit dimensions (and `axis` is not one of them).
static std::optional<int64_t>
mapAxisThroughUnitReshape(ShapedType src, ShapedType dst, int64_t axis) {
  if (!src.hasStaticShape() || !dst.hasStaticShape() ||
      dst.getDimSize(axis) == 1)
    return std::nullopt;
  auto nonUnit = [](ShapedType t) {
    SmallVector<int64_t> dims;
    for (int64_t d = 0; d < t.getRank(); ++d)
      if (t.getDimSize(d) != 1)
        dims.push_back(d);
    return dims;
  };
  SmallVector<int64_t> s = nonUnit(src), d = nonUnit(dst);
  if (s.size() != d.size())
    return std::nullopt;
  for (auto [a, b] : llvm::zip(s, d))
    if (src.getDimSize(a) != dst.getDimSize(b))
      return std::nullopt;
  return s[llvm::find(d, axis) - d.begin()];
}

/// Whether `g` only moves elements: one input, one init, all loops
/// parallel, a body that yields the input. Importers write transposes
/// (`aten.t`), broadcasts and copies this way.
bool flashnorm::isLayoutGeneric(linalg::GenericOp g) {
  if (!g.hasPureTensorSemantics() || g.getNumDpsInputs() != 1 ||
      g.getNumDpsInits() != 1 || g.getNumParallelLoops() != g.getNumLoops())
    return false;
  Block &body = g.getRegion().front();
  return body.getOperations().size() == 1 &&
         body.getTerminator()->getOperand(0) == body.getArgument(0);
}

ml_program::GlobalOp flashnorm::getAccessedGlobal(Operation *op) {
  SymbolRefAttr name =
      TypeSwitch<Operation *, SymbolRefAttr>(op)
          .Case<ml_program::GlobalLoadConstOp, ml_program::GlobalLoadOp,
                ml_program::GlobalStoreOp, ml_program::GlobalLoadGraphOp,
                ml_program::GlobalStoreGraphOp>(
              [](auto access) { return access.getGlobal(); })
          .Default([](Operation *) { return SymbolRefAttr(); });
  return name ? SymbolTable::lookupNearestSymbolFrom<ml_program::GlobalOp>(op,
                                                                           name)
              : nullptr;
}

ml_program::GlobalOp flashnorm::getLoadedGlobal(Operation *op) {
  if (!isa_and_nonnull<ml_program::GlobalLoadConstOp, ml_program::GlobalLoadOp>(
          op))
    return nullptr;
  ml_program::GlobalOp global = getAccessedGlobal(op);
  return global && !global.getIsMutable() ? global : nullptr;
}

bool flashnorm::isExternGlobal(ml_program::GlobalOp global) {
  return isa_and_nonnull<ml_program::ExternAttr>(
      global.getValue().value_or(Attribute()));
}

/// Follows `weight` back through layout-only ops (transposes, broadcasts,
/// yield-only generics, unit reshapes), keeping track of the contracted
/// `axis` and recording the ops in `chain`, nearest first. Returns the first
/// value that is not the result of one.
static FailureOr<Value> throughLayout(Value weight, int64_t &axis,
                                      SmallVectorImpl<Operation *> &chain,
                                      std::string *whyNot) {
  auto fail = [&](const Twine &msg) -> FailureOr<Value> {
    if (whyNot)
      *whyNot = msg.str();
    return failure();
  };
  while (Operation *def = weight.getDefiningOp()) {
    if (auto transpose = dyn_cast<linalg::TransposeOp>(def)) {
      axis = transpose.getPermutation()[axis];
      weight = transpose.getInput();
    } else if (auto transpose = dyn_cast<tosa::TransposeOp>(def)) {
      axis = transpose.getPerms()[axis];
      weight = transpose.getInput1();
    } else if (auto broadcast = dyn_cast<linalg::BroadcastOp>(def)) {
      ArrayRef<int64_t> dims = broadcast.getDimensions();
      if (llvm::is_contained(dims, axis))
        return fail("its weight is broadcast along the contracted dimension");
      axis -= llvm::count_if(dims, [&](int64_t d) { return d < axis; });
      weight = broadcast.getInput();
    } else if (auto generic = dyn_cast<linalg::GenericOp>(def);
               generic && isLayoutGeneric(generic)) {
      // out[outMap(i)] = in[inMap(i)]: the loop that writes dimension
      // `axis` of the result, and where the input reads it.
      AffineMap outMap = generic.getIndexingMapsArray()[1];
      AffineMap inMap = generic.getIndexingMapsArray()[0];
      if (!outMap.isPermutation() ||
          !inMap.isProjectedPermutation(/*allowZeroInResults=*/true))
        return fail("its weight is rearranged by a 'linalg.generic' that is "
                    "not a transpose, broadcast or copy");
      std::optional<unsigned> position =
          inMap.getResultPosition(outMap.getResult(axis));
      if (!position)
        return fail("its weight is broadcast along the contracted dimension");
      axis = *position;
      weight = generic.getDpsInputOperand(0)->get();
    } else if (isa<tosa::ReshapeOp, tensor::ExpandShapeOp,
                   tensor::CollapseShapeOp>(def)) {
      // Only reshapes that add or drop unit dimensions keep the contracted
      // axis a dimension of its own.
      std::optional<int64_t> mapped = mapAxisThroughUnitReshape(
          cast<ShapedType>(def->getOperand(0).getType()),
          cast<ShapedType>(def->getResult(0).getType()), axis);
      if (!mapped)
        return fail("its weight is reshaped beyond unit dimensions");
      axis = *mapped;
      weight = def->getOperand(0);
    } else {
      break;
    }
    chain.push_back(def);
  }
  return weight;
}

bool flashnorm::columnSumsFollowOutputs(const Projection &p,
                                        ArrayRef<int64_t> stored,
                                        int64_t storedAxis) {
  // The one dimension of `shape` besides `axis` that is not a unit, -1 if
  // there is none, or nothing if there are more.
  auto onlyOther = [](ArrayRef<int64_t> shape,
                      int64_t axis) -> std::optional<int64_t> {
    std::optional<int64_t> found = -1;
    for (auto [d, size] : llvm::enumerate(shape))
      if (int64_t(d) != axis && size != 1) {
        if (*found != -1)
          return std::nullopt;
        found = d;
      }
    return found;
  };
  auto result = dyn_cast<ShapedType>(p.op->getResult(0).getType());
  auto operand = dyn_cast<ShapedType>(p.getWeight().getType());
  if (!result || !operand || !result.hasRank() || result.getRank() == 0 ||
      !operand.hasStaticShape() || ShapedType::isDynamicShape(stored))
    return false;
  int64_t n = result.getShape().back();
  std::optional<int64_t> storedN = onlyOther(stored, storedAxis);
  std::optional<int64_t> operandN = onlyOther(operand.getShape(), p.weightAxis);
  if (!storedN || !operandN || (*storedN == -1) != (*operandN == -1))
    return false;
  if (*operandN == -1) // One output.
    return n == 1;
  if (stored[*storedN] != n || operand.getDimSize(*operandN) != n)
    return false;
  if (auto linalgOp = dyn_cast<linalg::LinalgOp>(p.op)) {
    AffineMap weightMap =
        linalgOp.getMatchingIndexingMap(&linalgOp->getOpOperand(p.weightIndex));
    AffineMap resultMap =
        linalgOp.getIndexingMapMatchingResult(linalgOp->getResult(0));
    auto w = dyn_cast<AffineDimExpr>(weightMap.getResult(*operandN));
    auto o = dyn_cast<AffineDimExpr>(resultMap.getResults().back());
    return w && o && w.getPosition() == o.getPosition();
  }
  // tosa.matmul: B x K x N, its N the result's last dimension.
  return isa<tosa::MatMulOp>(p.op) && *operandN == operand.getRank() - 1;
}

bool flashnorm::onlyRelayouts(ArrayRef<Operation *> chain) {
  return llvm::none_of(chain, [](Operation *layout) {
    if (isa<linalg::BroadcastOp>(layout))
      return true;
    auto generic = dyn_cast<linalg::GenericOp>(layout);
    return generic && !generic.getIndexingMapsArray()[0].isPermutation();
  });
}

FailureOr<WeightSource> flashnorm::traceWeight(Value weight, int64_t axis,
                                               bool allowArgument,
                                               std::string *whyNot) {
  WeightSource src;
  auto fail = [&](const Twine &msg) -> FailureOr<WeightSource> {
    if (whyNot)
      *whyNot = msg.str();
    return failure();
  };
  FailureOr<Value> stop = throughLayout(weight, axis, src.chain, whyNot);
  if (failed(stop))
    return failure();
  weight = *stop;
  Operation *def = weight.getDefiningOp();
  auto arg = dyn_cast<BlockArgument>(weight);
  if (arg && allowArgument && arg.getOwner()->isEntryBlock() &&
      isa<FunctionOpInterface>(arg.getOwner()->getParentOp())) {
    src.argument = arg;
    src.axis = axis;
    return src;
  }
  if (!def)
    return fail("its weight is not a constant (" + describeValue(weight) + ")");
  if (isa<arith::ConstantOp, tosa::ConstOp>(def)) {
    Attribute value = isa<arith::ConstantOp>(def)
                          ? cast<arith::ConstantOp>(def).getValue()
                          : cast<tosa::ConstOp>(def).getValues();
    auto elements = dyn_cast<ElementsAttr>(value);
    if (!elements || !isa<DenseElementsAttr, DenseResourceElementsAttr>(value))
      return fail("its weight constant is not dense or dense_resource");
    src.constant = def;
    src.value = elements;
    src.axis = axis;
    return src;
  }
  if (ml_program::GlobalOp global = getLoadedGlobal(def)) {
    Attribute value = global.getValue().value_or(Attribute());
    if (!isExternGlobal(global) &&
        !isa_and_nonnull<DenseElementsAttr, DenseResourceElementsAttr>(value))
      return fail("its weight global @" + global.getSymName() +
                  " is neither extern nor dense");
    src.constant = def;
    src.value = dyn_cast_or_null<ElementsAttr>(value);
    src.global = global;
    src.axis = axis;
    return src;
  }
  if (auto generic = dyn_cast<linalg::GenericOp>(def);
      generic && llvm::any_of(generic.getDpsInputs(), [](Value v) {
        return isa<IntegerType>(getElementTypeOrSelf(v.getType()));
      }))
    return fail("its weight is dequantized from integers by a "
                "'linalg.generic' (a gain folds only into a per-input-"
                "channel factor of the dequantization)");
  return fail("its weight is not a constant (defined by " +
              describeValue(weight) + ")");
}

/// Whether `arg` reaches the yield only as a factor: its one use a multiply,
/// and from there only multiplies and float casts, each used once.
static bool isFactorOfResult(BlockArgument arg) {
  Value v = arg;
  Operation *yield = arg.getOwner()->getTerminator();
  while (true) {
    if (!v.hasOneUse())
      return false;
    Operation *user = *v.getUsers().begin();
    if (user == yield)
      return v != arg;
    if (!isa<arith::MulFOp, arith::ExtFOp, arith::TruncFOp>(user))
      return false;
    v = user->getResult(0);
  }
}

/// Follows `weight` through layout ops to an element-wise generic that
/// reads integers (a dequantization), with `axis` mapped to its loops.
static FailureOr<linalg::GenericOp>
throughLayoutToDequant(Value weight, int64_t &axis,
                       SmallVectorImpl<Operation *> &chain,
                       std::string *whyNot) {
  FailureOr<Value> stop = throughLayout(weight, axis, chain, whyNot);
  if (failed(stop))
    return failure();
  auto generic = stop->getDefiningOp<linalg::GenericOp>();
  if (!generic || !generic.hasPureTensorSemantics() ||
      generic.getNumDpsInits() != 1 ||
      generic.getNumParallelLoops() != generic.getNumLoops() ||
      !generic.getIndexingMapsArray().back().isIdentity() ||
      llvm::none_of(generic.getDpsInputs(), [](Value v) {
        return isa<IntegerType>(getElementTypeOrSelf(v.getType()));
      })) {
    if (whyNot)
      *whyNot = "its weight is not a constant nor a dequantization";
    return failure();
  }
  return generic;
}

FailureOr<KFactorSource> flashnorm::traceWeightToKFactor(Value weight,
                                                         int64_t axis,
                                                         std::string *whyNot) {
  KFactorSource src;
  auto fail = [&](const Twine &msg) -> FailureOr<KFactorSource> {
    if (whyNot)
      *whyNot = msg.str();
    return failure();
  };
  FailureOr<linalg::GenericOp> dequant =
      throughLayoutToDequant(weight, axis, src.chain, whyNot);
  if (failed(dequant))
    return failure();
  linalg::GenericOp generic = *dequant;
  AffineExpr k = getAffineDimExpr(axis, generic.getContext());
  for (OpOperand *input : generic.getDpsInputOperands()) {
    AffineMap map = generic.getMatchingIndexingMap(input);
    if (map.getNumResults() != 1 || map.getResult(0) != k ||
        !isa<FloatType>(getElementTypeOrSelf(input->get().getType())) ||
        !isFactorOfResult(generic.getMatchingBlockArgument(input)))
      continue;
    FailureOr<WeightSource> factor =
        traceWeightToConstant(input->get(), /*axis=*/0, whyNot);
    if (failed(factor) || !factor->value)
      return fail("the per-input-channel factor of its dequantization is "
                  "not a constant");
    src.dequant = generic;
    src.factorOperand = input->getOperandNumber();
    src.factor = *factor;
    return src;
  }
  return fail("its weight is dequantized from integers by a "
              "'linalg.generic' without a per-input-channel factor to fold "
              "the gain into (deferred without folding)");
}

FailureOr<Int8Dequant>
flashnorm::traceWeightToInt8Dequant(Value weight, int64_t axis,
                                    std::string *whyNot) {
  Int8Dequant src;
  auto fail = [&](const Twine &msg) -> FailureOr<Int8Dequant> {
    if (whyNot)
      *whyNot = msg.str();
    return failure();
  };
  FailureOr<linalg::GenericOp> dequant =
      throughLayoutToDequant(weight, axis, src.chain, whyNot);
  if (failed(dequant))
    return failure();
  linalg::GenericOp generic = *dequant;
  if (generic.getNumDpsInputs() != 2 || generic.getNumLoops() != 2)
    return fail("its weight is not a 2-D int8 dequantization");
  // Body: yield [truncf] (mulf (sitofp (extsi q)), s), either order.
  Block *body = generic.getBody();
  Value y = body->getTerminator()->getOperand(0);
  if (auto trunc = y.getDefiningOp<arith::TruncFOp>())
    y = trunc.getIn();
  auto mul = y.getDefiningOp<arith::MulFOp>();
  if (!mul || mul->getBlock() != body)
    return fail("its dequantization is not q * s");
  for (unsigned side = 0; side < 2; ++side) {
    Value conv = mul->getOperand(side);
    auto scaleArg = dyn_cast<BlockArgument>(mul->getOperand(1 - side));
    auto sitofp = conv.getDefiningOp<arith::SIToFPOp>();
    if (!sitofp || !scaleArg || scaleArg.getOwner() != body)
      continue;
    Value in = sitofp.getIn();
    if (auto ext = in.getDefiningOp<arith::ExtSIOp>())
      in = ext.getIn();
    auto qArg = dyn_cast<BlockArgument>(in);
    if (!qArg || qArg.getOwner() != body || !qArg.getType().isInteger(8) ||
        qArg.getArgNumber() >= 2 || scaleArg.getArgNumber() >= 2 ||
        qArg == scaleArg)
      continue;
    OpOperand *qOp = generic.getDpsInputOperand(qArg.getArgNumber());
    OpOperand *sOp = generic.getDpsInputOperand(scaleArg.getArgNumber());
    AffineMap qMap = generic.getMatchingIndexingMap(qOp);
    AffineMap sMap = generic.getMatchingIndexingMap(sOp);
    unsigned n = 1 - axis;
    if (!qMap.isPermutation() || sMap.getNumResults() != 1 ||
        sMap.getResult(0) != getAffineDimExpr(n, generic.getContext()) ||
        !getElementTypeOrSelf(sOp->get().getType()).isF32())
      return fail("its int8 dequantization does not scale per output channel");
    std::optional<unsigned> qAxis =
        qMap.getResultPosition(getAffineDimExpr(axis, generic.getContext()));
    FailureOr<WeightSource> q =
        traceWeightToConstant(qOp->get(), *qAxis, whyNot);
    FailureOr<WeightSource> scale =
        traceWeightToConstant(sOp->get(), /*axis=*/0, whyNot);
    if (failed(q) || failed(scale) || !q->value || !scale->value)
      return fail("the integers or scales of its dequantization are not "
                  "constants");
    src.dequant = generic;
    src.qOperand = qOp->getOperandNumber();
    src.scaleOperand = sOp->getOperandNumber();
    src.q = *q;
    src.scale = *scale;
    return src;
  }
  return fail("its dequantization is not sitofp(q) * s of an int8 q");
}

FailureOr<ContractionRoles>
flashnorm::classifyContraction(linalg::LinalgOp op, unsigned activationInput,
                               std::string *whyNot) {
  auto fail = [&](const Twine &msg) -> FailureOr<ContractionRoles> {
    if (whyNot)
      *whyNot = msg.str();
    return failure();
  };
  if (op.getNumDpsInputs() != 2 || op.getNumDpsInits() != 1 ||
      activationInput > 1 || !linalg::isaContractionOpInterface(op) ||
      !isMultiplyAccumulate(op))
    return fail("not a two-input multiply-accumulate contraction");
  FailureOr<linalg::ContractionDimensions> dims =
      linalg::inferContractionDims(op);
  if (failed(dims) || dims->k.size() != 1)
    return fail("not a contraction over one dimension");
  ContractionRoles roles;
  roles.dims = *dims;
  // inferContractionDims names the first input's dimensions m.
  if (activationInput == 1)
    std::swap(roles.dims.m, roles.dims.n);
  roles.k = roles.dims.k.front();
  if (roles.dims.n.size() == 1)
    roles.n = roles.dims.n.front();
  roles.activation = op.getDpsInputOperand(activationInput)->getOperandNumber();
  roles.weight = op.getDpsInputOperand(1 - activationInput)->getOperandNumber();

  MLIRContext *ctx = op.getContext();
  AffineExpr dk = getAffineDimExpr(roles.k, ctx);
  AffineMap act =
      op.getMatchingIndexingMap(&op->getOpOperand(roles.activation));
  AffineMap weight = op.getMatchingIndexingMap(&op->getOpOperand(roles.weight));
  AffineMap out = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
  std::optional<unsigned> axis = weight.getResultPosition(dk);
  if (!axis)
    return fail("the weight is not indexed by the contracted dimension");
  roles.weightAxis = *axis;
  roles.weightKInnermost = weight.getResults().back() == dk;
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  roles.weightIsMatrix =
      roles.n && weight.isProjectedPermutation() &&
      weight.isFunctionOfDim(*roles.n) &&
      llvm::all_of(weight.getResults(), [&](AffineExpr e) {
        unsigned d = cast<AffineDimExpr>(e).getPosition();
        return d == *roles.n || d == roles.k ||
               (llvm::is_contained(roles.dims.batch, d) && ranges[d] == 1);
      });
  unsigned rank = act.getNumResults();
  roles.rowsPreserved =
      rank > 0 && act.getResults().back() == dk &&
      out.getNumResults() == rank &&
      llvm::equal(out.getResults().drop_back(), act.getResults().drop_back()) &&
      !llvm::is_contained(act.getResults(), out.getResults().back());
  for (unsigned m : roles.dims.m) {
    if (ShapedType::isDynamic(ranges[m])) {
      roles.rows = ShapedType::kDynamic;
      break;
    }
    roles.rows *= ranges[m];
  }
  return roles;
}

FailureOr<ContractionRoles>
flashnorm::inferProjectionDims(linalg::LinalgOp op, std::string *whyNot) {
  if (!op.hasPureTensorSemantics()) {
    if (whyNot)
      *whyNot = "not a two-input contraction on tensors";
    return failure();
  }
  FailureOr<ContractionRoles> roles = classifyContraction(op, 0, whyNot);
  if (succeeded(roles) && !roles->n) {
    if (whyNot)
      *whyNot = "not one n and one k dimension";
    return failure();
  }
  return roles;
}
