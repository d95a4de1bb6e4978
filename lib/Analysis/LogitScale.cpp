//===- LogitScale.cpp - The attention scale a query projection can absorb -===//

#include "flashnorm/Analysis/LogitScale.h"
#include "flashnorm/Analysis/ScaleDegree.h"
#include "flashnorm/Dialect/FlashNorm/IR/FlashNormOps.h"

#include "flashnorm/Utils/IndexingMaps.h"
#include "flashnorm/Utils/Remarks.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tosa/IR/TosaOps.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;
using namespace mlir::flashnorm;

/// The value of a float scalar constant or a splat float tensor constant,
/// or of a float scalar constant converted (torch-mlir converts the f64
/// scalar of `aten.mul.Scalar` in the body): as the conversion rounds it.
static std::optional<double> getSplatConstant(Value v) {
  FloatAttr scalar;
  if (matchPattern(v, m_Constant(&scalar)))
    return scalar.getValueAsDouble();
  // (A truncf rounding otherwise than to nearest even is not read.)
  auto trunc = dyn_cast_or_null<arith::TruncFOp>(v.getDefiningOp());
  if (Operation *def = v.getDefiningOp();
      isa_and_nonnull<arith::TruncFOp, arith::ExtFOp>(def) &&
      !(trunc && trunc.getRoundingmodeAttr()) && isa<FloatType>(v.getType()) &&
      matchPattern(def->getOperand(0), m_Constant(&scalar)))
    return FloatAttr::get(v.getType(), scalar.getValueAsDouble())
        .getValueAsDouble();
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
                  isMultiplyAccumulate(linalgOp) && linalgOp.isDpsInput(&use);
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

/// The logits a contraction computes as what follows reads them: past the
/// reshapes they alone feed (torch-mlir computes a 4-D matmul as a
/// batch_matmul over [batch * heads, ...] and expands its result back).
/// A reshape keeps every value, so scaling past it is scaling before it.
static Value getReshapedLogits(Value logits) {
  while (
      logits.hasOneUse() &&
      isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp>(*logits.user_begin()))
    logits = logits.user_begin()->getResult(0);
  return logits;
}

FailureOr<LogitScale> flashnorm::findScaleOfLogits(OpOperand &query,
                                                   std::string *whyNot) {
  Value logits = getReshapedLogits(query.getOwner()->getResult(0));
  // c (q k^T + M) is not (c q) k^T + M: a mask or bias the contraction
  // accumulates into does not scale with q.
  if (auto contraction = dyn_cast<linalg::LinalgOp>(query.getOwner());
      contraction && !llvm::all_of(contraction.getDpsInits(), isZeroInit)) {
    if (whyNot)
      *whyNot = "its logits accumulate into a non-zero init (a mask or bias "
                "the scale does not scale)";
    return failure();
  }
  if (!logits.hasOneUse()) {
    if (whyNot)
      *whyNot = "its logits have more than one user";
    return failure();
  }
  if (std::optional<LogitScale> site = getScaleSite(*logits.use_begin()))
    return *site;
  if (whyNot)
    *whyNot = "its logits are not multiplied by a constant";
  return failure();
}

/// An op a query path may run through: one ranked tensor result; what it
/// does to q is checked by its degree and rows.
static bool isPathOp(Operation *op) {
  if (op->getNumResults() != 1 ||
      !isa<RankedTensorType>(op->getResult(0).getType()))
    return false;
  if (auto generic = dyn_cast<linalg::GenericOp>(op))
    return generic.hasPureTensorSemantics() && generic.getNumDpsInits() == 1 &&
           generic.getNumLoops() == generic.getNumParallelLoops() &&
           getUnitDimsMap(generic, generic.getDpsInitOperand(0))
               .isPermutation();
  return isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp,
             tensor::ExtractSliceOp, tensor::ConcatOp, linalg::TransposeOp,
             tosa::TransposeOp, tosa::ReshapeOp, arith::MulFOp, arith::DivFOp,
             arith::AddFOp, arith::SubFOp, arith::NegFOp, arith::ExtFOp,
             arith::TruncFOp, tosa::MulOp, tosa::AddOp, tosa::SubOp,
             tosa::NegateOp, tosa::CastOp>(op);
}

/// Where rows at `rowsIn` of a reshape's source are in its result, or
/// failure where the reshape splits a row dimension or merges it with
/// another that is not a unit.
static FailureOr<SmallVector<int64_t>>
getRowsPastReshape(Operation *reshape, ArrayRef<int64_t> rowsIn) {
  auto shape = [](Value v) {
    return cast<RankedTensorType>(v.getType()).getShape();
  };
  SmallVector<int64_t> r;
  if (auto expand = dyn_cast<tensor::ExpandShapeOp>(reshape)) {
    SmallVector<ReassociationIndices> groups = expand.getReassociationIndices();
    for (int64_t p : rowsIn) {
      if (p == kUnitRow) {
        r.push_back(p);
        continue;
      }
      // The row dimension stays one dimension (beside units).
      SmallVector<int64_t> wide;
      for (int64_t d : groups[p])
        if (shape(expand.getResult())[d] != 1)
          wide.push_back(d);
      if (wide.size() > 1)
        return failure();
      r.push_back(wide.empty() ? groups[p].back() : wide.front());
    }
    return r;
  }
  auto collapse = cast<tensor::CollapseShapeOp>(reshape);
  ArrayRef<int64_t> in = shape(collapse.getSrc());
  SmallVector<ReassociationIndices> groups = collapse.getReassociationIndices();
  for (int64_t p : rowsIn) {
    if (p == kUnitRow) {
      r.push_back(p);
      continue;
    }
    for (auto [g, group] : llvm::enumerate(groups))
      if (llvm::is_contained(group, p)) {
        // Merged only with unit dimensions.
        for (int64_t d : group)
          if (d != p && in[d] != 1)
            return failure();
        r.push_back(g);
      }
  }
  return r;
}

namespace {
/// Degrees and rows of a query path's values, op by op in block order.
class PathEvaluator {
public:
  PathEvaluator(Value q, unsigned rowDims)
      : key(q.getDefiningOp() ? q.getDefiningOp()
                              : q.getParentBlock()->getParentOp()),
        trackRows(rowDims > 0) {
    degrees[q] = Degree::scaledBy(key);
    ArrayRef<int64_t> shape = cast<ShapedType>(q.getType()).getShape();
    for (int64_t d : llvm::seq<int64_t>(0, rowDims))
      rows[q].push_back(shape[d] == 1 ? kUnitRow : d);
  }

  /// Evaluates `op`; fails, saying why, unless its result is linear in q
  /// with q's rows where they can be named.
  LogicalResult visit(Operation *op, std::string &why) {
    Degree d = degreeOf(op);
    if (!d.isLinearIn(key)) {
      why = "'" + op->getName().getStringRef().str() + "' at " +
            formatLoc(op->getLoc()) + " on the way to the logits is not " +
            "linear in it";
      return failure();
    }
    degrees[op->getResult(0)] = d;
    if (!trackRows)
      return success();
    FailureOr<SmallVector<int64_t>> r = rowsOf(op);
    if (failed(r)) {
      why = "'" + op->getName().getStringRef().str() + "' at " +
            formatLoc(op->getLoc()) + " moves q's rows";
      return failure();
    }
    rows[op->getResult(0)] = *r;
    return success();
  }

  bool isPath(Value v) const { return degrees.count(v); }
  /// The rows of `v`, a value on the path (isPath).
  ArrayRef<int64_t> rowsOfValue(Value v) const {
    auto it = rows.find(v);
    assert(it != rows.end() && "rows of a value off the path");
    return it->second;
  }

private:
  Degree degreeOfValue(Value v) const {
    auto it = degrees.find(v);
    if (it != degrees.end())
      return it->second;
    return isZeroConstant(v) ? Degree::zero() : Degree::unscaled();
  }

  Degree degreeOf(Operation *op) const {
    auto value = [&](Value v) { return degreeOfValue(v); };
    if (auto generic = dyn_cast<linalg::GenericOp>(op))
      return degreeOfGeneric(
          generic, [&](OpOperand &use) { return value(use.get()); },
          /*allowPermuted=*/true);
    // Layout ops move q's values: the degree of what they move.
    if (isa<tensor::ConcatOp>(op)) {
      Degree d = Degree::zero();
      for (Value v : op->getOperands())
        d = unify(d, value(v));
      return d;
    }
    if (isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp,
            tensor::ExtractSliceOp, linalg::TransposeOp, tosa::TransposeOp,
            tosa::ReshapeOp>(op)) {
      for (Value v : op->getOperands().drop_front())
        if (!value(v).isUnscaled())
          return Degree::none(); // q as a size or an index
      return value(op->getOperand(0));
    }
    // An element-wise tensor op: q's values must not be broadcast.
    for (Value v : op->getOperands())
      if (isPath(v) && v.getType() != op->getResult(0).getType() &&
          cast<ShapedType>(v.getType()).getShape() !=
              cast<ShapedType>(op->getResult(0).getType()).getShape())
        return Degree::none();
    return degreeOfElementwise(op, value);
  }

  /// Where q's rows are in `op`'s result.
  FailureOr<SmallVector<int64_t>> rowsOf(Operation *op) const {
    // The rows of the operands on the path, which must agree.
    std::optional<SmallVector<int64_t>> result;
    auto agree = [&](SmallVector<int64_t> r) {
      if (result && *result != r)
        return false;
      result = std::move(r);
      return true;
    };
    auto shape = [](Value v) {
      return cast<RankedTensorType>(v.getType()).getShape();
    };
    if (auto generic = dyn_cast<linalg::GenericOp>(op)) {
      AffineMap outMap = getUnitDimsMap(generic, generic.getDpsInitOperand(0));
      for (OpOperand &use : generic->getOpOperands()) {
        if (!isPath(use.get()))
          continue;
        AffineMap map = getUnitDimsMap(generic, &use);
        SmallVector<int64_t> r;
        for (int64_t p : rowsOfValue(use.get())) {
          if (p == kUnitRow) {
            r.push_back(p);
            continue;
          }
          std::optional<unsigned> at =
              outMap.getResultPosition(map.getResult(p));
          if (!at)
            return failure();
          r.push_back(*at);
        }
        if (!agree(r))
          return failure();
      }
      return *result;
    }
    // A layout op moves its first operand, which is on the path (q as a
    // size or an index has no degree: degreeOf); an element-wise op (the
    // last case) may have it anywhere.
    Value in = op->getOperand(0);
    ArrayRef<int64_t> rowsIn =
        isPath(in) ? rowsOfValue(in) : ArrayRef<int64_t>();
    SmallVector<int64_t> r;
    if (auto transpose = dyn_cast<linalg::TransposeOp>(op)) {
      for (int64_t p : rowsIn)
        r.push_back(p == kUnitRow ? p
                                  : llvm::find(transpose.getPermutation(), p) -
                                        transpose.getPermutation().begin());
      return r;
    }
    if (isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp>(op))
      return getRowsPastReshape(op, rowsIn);
    if (auto slice = dyn_cast<tensor::ExtractSliceOp>(op)) {
      // Whole rows: the slice cuts features only.
      if (slice.getSourceType().getRank() != slice.getResultType().getRank())
        return failure();
      for (int64_t p : rowsIn)
        if (p != kUnitRow && (slice.getStaticOffsets()[p] != 0 ||
                              slice.getStaticStrides()[p] != 1 ||
                              slice.getStaticSizes()[p] != shape(in)[p] ||
                              ShapedType::isDynamic(shape(in)[p])))
          return failure();
      return SmallVector<int64_t>(rowsIn);
    }
    if (auto concat = dyn_cast<tensor::ConcatOp>(op)) {
      for (Value v : concat.getInputs())
        if (isPath(v) &&
            (!agree(SmallVector<int64_t>(rowsOfValue(v))) ||
             llvm::is_contained(rowsOfValue(v), int64_t(concat.getDim()))))
          return failure();
      return *result;
    }
    if (isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp, tosa::TransposeOp,
            tosa::ReshapeOp>(op))
      return failure();
    // Element-wise: the same positions (operands of the result's shape).
    for (Value v : op->getOperands())
      if (isPath(v) && !agree(SmallVector<int64_t>(rowsOfValue(v))))
        return failure();
    return *result;
  }

  Operation *key;
  bool trackRows;
  DenseMap<Value, Degree> degrees;
  DenseMap<Value, SmallVector<int64_t>> rows;
};
} // namespace

/// Where `query`'s rows (`rows`, positions in the operand) are in the
/// contraction's result.
static FailureOr<SmallVector<int64_t>> logitRowsOf(OpOperand &query,
                                                   ArrayRef<int64_t> rows) {
  Operation *owner = query.getOwner();
  if (isa<tosa::MatMulOp>(owner)) {
    // [batch, m, k]: batch and m are the result's first two dimensions.
    if (llvm::is_contained(rows, 2))
      return failure();
    return SmallVector<int64_t>(rows);
  }
  auto op = cast<linalg::LinalgOp>(owner);
  AffineMap map = op.getMatchingIndexingMap(&query);
  AffineMap out = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
  SmallVector<int64_t> result;
  for (int64_t p : rows) {
    if (p == kUnitRow) {
      result.push_back(p);
      continue;
    }
    std::optional<unsigned> at = out.getResultPosition(map.getResult(p));
    if (!at)
      return failure(); // contracted
    result.push_back(*at);
  }
  return result;
}

FailureOr<QueryPath> flashnorm::traceQueryToLogits(Value q, unsigned rowDims,
                                                   std::string *whyNot) {
  auto fail = [&](const Twine &msg) -> FailureOr<QueryPath> {
    if (whyNot)
      *whyNot = msg.str();
    return failure();
  };
  QueryPath path;
  // Everything that reads q's values, up to the contraction.
  Block *block = q.getParentBlock();
  llvm::SetVector<Operation *> region;
  SmallVector<Value> worklist{q};
  while (!worklist.empty()) {
    Value v = worklist.pop_back_val();
    for (OpOperand &use : v.getUses()) {
      Operation *user = use.getOwner();
      bool isContraction = false;
      if (isQueryOperand(use, isContraction)) {
        if (path.query && path.query != &use)
          return fail("its values reach more than one contraction");
        path.query = &use;
        continue;
      }
      if (isContraction)
        return fail("it is the keys of its contraction, not the queries");
      if (user->getBlock() != block || !isPathOp(user))
        return fail("'" + user->getName().getStringRef() + "' at " +
                    formatLoc(user->getLoc()) +
                    " on the way to the logits is not linear in it");
      if (region.insert(user))
        worklist.push_back(user->getResult(0));
    }
  }
  if (!path.query)
    return fail("it reaches no contraction");
  if (path.query->getOwner()->getBlock() != block)
    return fail("its contraction is in another block");
  path.ops = region.takeVector();
  llvm::sort(path.ops,
             [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  PathEvaluator eval(q, rowDims);
  std::string why;
  for (Operation *op : path.ops)
    if (failed(eval.visit(op, why)))
      return fail(why);
  if (rowDims == 0)
    return path;
  FailureOr<SmallVector<int64_t>> logitRows =
      logitRowsOf(*path.query, eval.rowsOfValue(path.query->get()));
  if (failed(logitRows))
    return fail("its contraction sums over q's rows");
  path.logits = path.query->getOwner()->getResult(0);
  while (path.logits != getReshapedLogits(path.logits)) {
    Operation *reshape = *path.logits.user_begin();
    logitRows = getRowsPastReshape(reshape, *logitRows);
    if (failed(logitRows))
      return fail("a reshape of its logits moves q's rows");
    path.logits = reshape->getResult(0);
  }
  path.logitRows = std::move(*logitRows);
  return path;
}

FailureOr<LogitScale> flashnorm::findLogitScale(const Projection &projection,
                                                std::string *whyNot) {
  auto fail = [&](const Twine &msg) -> FailureOr<LogitScale> {
    if (whyNot)
      *whyNot = msg.str();
    return failure();
  };
  LogitScale ls;
  // Past the last single-use step: the rest of the way (a rotary embedding
  // reads q twice) as a query path, linear in q, to the logits.
  auto throughPath = [&](Value v) -> FailureOr<LogitScale> {
    FailureOr<QueryPath> path = traceQueryToLogits(v, 0, whyNot);
    if (failed(path))
      return failure();
    FailureOr<LogitScale> site = findScaleOfLogits(*path->query, whyNot);
    if (failed(site))
      return failure();
    // The path's degrees hold for positive scales (1/RMS): max, abs and
    // select commute with those alone.
    if (site->factor < 0)
      return fail("the logits' scale is negative, and the path to them is "
                  "linear only in positive scales");
    site->biases = std::move(ls.biases);
    return site;
  };
  // c (xW + b) = x (cW) + cb: a bias the projection accumulates into would
  // need scaling too.
  if (!projection.zeroInit)
    return fail("the query projection accumulates into a non-zero init");
  Value v = projection.op->getResult(0);
  while (true) {
    if (!v.hasOneUse())
      return throughPath(v);
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
      FailureOr<LogitScale> site = findScaleOfLogits(use, whyNot);
      if (failed(site))
        return failure();
      site->biases = std::move(ls.biases);
      return site;
    }
    if (isContraction)
      return fail("it is the keys of its contraction, not the queries");
    auto generic = dyn_cast<linalg::GenericOp>(user);
    // A cast to integers rounds: not linear.
    auto floatCast = [](Operation *op) {
      return !isa<tosa::CastOp>(op) ||
             (isa<FloatType>(getElementTypeOrSelf(op->getOperand(0))) &&
              isa<FloatType>(getElementTypeOrSelf(op->getResult(0))));
    };
    // q must be what a copy generic copies, not the tensor it writes into.
    bool linear =
        n == 0 &&
        ((isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp, tosa::ReshapeOp,
              linalg::TransposeOp, tosa::TransposeOp, arith::TruncFOp,
              arith::ExtFOp, tosa::CastOp, PostScaleOp>(user) &&
          floatCast(user)) ||
         (generic && isLayoutGeneric(generic)));
    if (linear) {
      v = user->getResult(0);
      continue;
    }
    // A constant bias added: c (xW + b) = x (cW) + cb.
    bool add = isa<arith::AddFOp, tosa::AddOp>(user);
    if (generic && generic.getNumDpsInputs() == 2 && n < 2 &&
        generic.getNumParallelLoops() == generic.getNumLoops() &&
        readsInOrder(generic, &use)) {
      // The body adds q and the other input, nothing else (not the init).
      Operation *body = &generic.getBody()->front();
      Value q = generic.getMatchingBlockArgument(&use);
      Value b =
          generic.getMatchingBlockArgument(generic.getDpsInputOperand(1 - n));
      add = isa<arith::AddFOp>(body) &&
            body->getNextNode() == generic.getBody()->getTerminator() &&
            body->getResult(0) ==
                generic.getBody()->getTerminator()->getOperand(0) &&
            ((body->getOperand(0) == q && body->getOperand(1) == b) ||
             (body->getOperand(0) == b && body->getOperand(1) == q));
    }
    if (add && n < 2) {
      unsigned other = 1 - n;
      auto type = dyn_cast<ShapedType>(user->getOperand(other).getType());
      // (A bias is traced along its feature axis, which a 0-d value lacks.)
      if (!type || type.getRank() == 0)
        return fail("a bias on the way to the logits is not a tensor of "
                    "features");
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
    return throughPath(v);
  }
}
