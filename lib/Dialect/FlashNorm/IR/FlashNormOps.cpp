#include "flashnorm/Dialect/FlashNorm/IR/FlashNormOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/TypeUtilities.h"

using namespace mlir;
using namespace mlir::flashnorm;

/// Checks that `rows` has the shape of `full` without its last dimension:
/// the same sizes where `exact` (a result, which the lowering builds from
/// its input's shape), else dynamic sizes compatible with anything.
static LogicalResult verifyRowShape(Operation *op, RankedTensorType full,
                                    RankedTensorType rows, StringRef fullName,
                                    StringRef rowsName, bool exact) {
  ArrayRef<int64_t> f = full.getShape(), r = rows.getShape();
  if (r.size() + 1 != f.size())
    return op->emitOpError()
           << rowsName << " must have rank " << f.size() - 1 << " (the rank of "
           << fullName << " without its normalized dimension), got " << rows;
  for (auto [i, pair] : llvm::enumerate(llvm::zip(f.drop_back(), r))) {
    auto [a, b] = pair;
    if (a != b &&
        (exact || (!ShapedType::isDynamic(a) && !ShapedType::isDynamic(b))))
      return op->emitOpError()
             << rowsName << " dimension " << i << " is "
             << (ShapedType::isDynamic(b) ? "?" : std::to_string(b)) << " but "
             << fullName << " has "
             << (ShapedType::isDynamic(a) ? "?" : std::to_string(a))
             << " rows there";
  }
  return success();
}

/// Epsilon is added in the statistic's type (isNormEpsilon): out of f32's
/// normal range it would silently change the norm.
static LogicalResult verifyEpsilon(Operation *op, double eps, Type input) {
  if (!(eps >= 0.0) || std::isinf(eps))
    return op->emitOpError() << "epsilon must be finite and >= 0, got " << eps;
  if (!isNormEpsilon(eps, getElementTypeOrSelf(input)))
    return op->emitOpError()
           << "epsilon must be 0 or a normal f32 (the statistic adds it in "
              "f32 for a non-f64 input), got "
           << eps;
  return success();
}

/// A statistic is f32, or f64 for an f64 input (getStatisticType).
static LogicalResult verifyStatisticType(Operation *op, RankedTensorType input,
                                         RankedTensorType result) {
  Type expected = getStatisticType(input.getElementType());
  if (result.getElementType() != expected)
    return op->emitOpError()
           << "result must be of " << expected << " for an input of "
           << input.getElementType() << ", got " << result.getElementType();
  return success();
}

static LogicalResult verifyHasRows(Operation *op, RankedTensorType t) {
  if (t.getRank() < 1)
    return op->emitOpError()
           << "input must have rank >= 1 (its last dimension is normalized)";
  return success();
}

/// A per-row statistic of `input` (1/RMS, 1/std or the mean): rows to
/// normalize, a valid epsilon, and one value per row in the statistic's type.
static LogicalResult verifyStatistic(Operation *op, RankedTensorType input,
                                     const APFloat &epsilon,
                                     RankedTensorType result) {
  if (failed(verifyHasRows(op, input)) ||
      failed(verifyEpsilon(op, epsilon.convertToDouble(), input)) ||
      failed(verifyStatisticType(op, input, result)))
    return failure();
  return verifyRowShape(op, input, result, "input", "result",
                        /*exact=*/true);
}

/// A post-scale's rows: the result has the input's shape and `scale` one
/// value per row of it.
static LogicalResult verifyScaledRows(Operation *op, RankedTensorType input,
                                      RankedTensorType result,
                                      RankedTensorType scale) {
  if (failed(verifyHasRows(op, input)))
    return failure();
  if (input.getShape() != result.getShape())
    return op->emitOpError() << "result shape " << result
                             << " differs from the input shape " << input;
  return verifyRowShape(op, input, scale, "input", "scale", /*exact=*/false);
}

/// A per-feature operand (gain or bias) must match the normalized size.
static LogicalResult verifyFeatureOperand(Operation *op, Value v,
                                          int64_t features, StringRef name) {
  if (!v)
    return success();
  int64_t n = cast<RankedTensorType>(v.getType()).getDimSize(0);
  if (!ShapedType::isDynamic(features) && !ShapedType::isDynamic(n) &&
      n != features)
    return op->emitOpError()
           << name << " has " << n
           << " elements but the normalized dimension has " << features;
  return success();
}

//===----------------------------------------------------------------------===//
// RMSNormOp
//===----------------------------------------------------------------------===//

/// `eps(<f64>)`, then `convention one_plus` unless the convention is the
/// default (plain).
static ParseResult parseEpsilonAndConvention(OpAsmParser &parser,
                                             FloatAttr &epsilon,
                                             GainConventionAttr &convention) {
  double eps;
  if (parser.parseKeyword("eps") || parser.parseLParen() ||
      parser.parseFloat(eps) || parser.parseRParen())
    return failure();
  epsilon = parser.getBuilder().getF64FloatAttr(eps);
  if (failed(parser.parseOptionalKeyword("convention")))
    return success();
  StringRef word;
  SMLoc loc = parser.getCurrentLocation();
  if (parser.parseKeyword(&word))
    return failure();
  std::optional<GainConvention> value = symbolizeGainConvention(word);
  if (!value)
    return parser.emitError(loc) << "unknown gain convention '" << word
                                 << "' (expected plain or one_plus)";
  convention = GainConventionAttr::get(parser.getContext(), *value);
  return success();
}

static void printEpsilonAndConvention(OpAsmPrinter &p, Operation *,
                                      FloatAttr epsilon,
                                      GainConventionAttr convention) {
  p << "eps(";
  p.printAttributeWithoutType(epsilon);
  p << ")";
  if (convention && convention.getValue() != GainConvention::plain)
    p << " convention " << stringifyGainConvention(convention.getValue());
}

void RMSNormOp::build(OpBuilder &b, OperationState &state, Value input,
                      Value gain, double epsilon, GainConvention convention) {
  build(b, state, input.getType(), input, gain, b.getF64FloatAttr(epsilon),
        GainConventionAttr::get(b.getContext(), convention));
}

LogicalResult RMSNormOp::verify() {
  RankedTensorType type = getInput().getType();
  if (failed(verifyHasRows(*this, type)) ||
      failed(verifyEpsilon(*this, getEpsilon().convertToDouble(),
                           getInput().getType())))
    return failure();
  if (!getGain()) {
    if (getGainConvention() != GainConvention::plain)
      return emitOpError("gain_convention one_plus requires a gain");
    return success();
  }
  return verifyFeatureOperand(*this, getGain(), getFeatureSize(), "gain");
}

//===----------------------------------------------------------------------===//
// LayerNormOp
//===----------------------------------------------------------------------===//

void LayerNormOp::build(OpBuilder &b, OperationState &state, Value input,
                        Value gain, Value bias, double epsilon) {
  build(b, state, input.getType(), input, gain, bias,
        b.getF64FloatAttr(epsilon));
}

LogicalResult LayerNormOp::verify() {
  if (failed(verifyHasRows(*this, getInput().getType())) ||
      failed(verifyEpsilon(*this, getEpsilon().convertToDouble(),
                           getInput().getType())) ||
      failed(
          verifyFeatureOperand(*this, getGain(), getFeatureSize(), "gain")) ||
      failed(verifyFeatureOperand(*this, getBias(), getFeatureSize(), "bias")))
    return failure();
  // Where K is dynamic each is checked against nothing: at least against
  // each other (no K fits a gain of 64 and a bias of 32).
  if (getGain() && getBias()) {
    int64_t g = getGain().getType().getDimSize(0),
            b = getBias().getType().getDimSize(0);
    if (!ShapedType::isDynamic(g) && !ShapedType::isDynamic(b) && g != b)
      return emitOpError() << "bias has " << b << " elements but the gain has "
                           << g;
  }
  return success();
}

//===----------------------------------------------------------------------===//
// LayerInvOp
//===----------------------------------------------------------------------===//

void LayerInvOp::build(OpBuilder &b, OperationState &state, Value input,
                       double epsilon) {
  auto type = cast<RankedTensorType>(input.getType());
  build(b, state,
        RankedTensorType::get(type.getShape().drop_back(),
                              getStatisticType(type.getElementType())),
        input, b.getF64FloatAttr(epsilon));
}

LogicalResult LayerInvOp::verify() {
  return verifyStatistic(*this, getInput().getType(), getEpsilon(),
                         getResult().getType());
}

//===----------------------------------------------------------------------===//
// RMSInvOp
//===----------------------------------------------------------------------===//

void RMSInvOp::build(OpBuilder &b, OperationState &state, Value input,
                     double epsilon) {
  auto type = cast<RankedTensorType>(input.getType());
  auto resultType = RankedTensorType::get(
      type.getShape().drop_back(), getStatisticType(type.getElementType()));
  build(b, state, resultType, input, b.getF64FloatAttr(epsilon));
}

LogicalResult RMSInvOp::verify() {
  return verifyStatistic(*this, getInput().getType(), getEpsilon(),
                         getResult().getType());
}

//===----------------------------------------------------------------------===//
// PostScaleOp
//===----------------------------------------------------------------------===//

LogicalResult PostScaleOp::verify() {
  return verifyScaledRows(*this, getInput().getType(), getResult().getType(),
                          getScale().getType());
}

//===----------------------------------------------------------------------===//
// LayerStatsOp
//===----------------------------------------------------------------------===//

void LayerStatsOp::build(OpBuilder &b, OperationState &state, Value input,
                         double epsilon) {
  auto type = cast<RankedTensorType>(input.getType());
  auto rows = RankedTensorType::get(type.getShape().drop_back(),
                                    getStatisticType(type.getElementType()));
  build(b, state, rows, rows, input, b.getF64FloatAttr(epsilon));
}

LogicalResult LayerStatsOp::verify() {
  // (1/std has the mean's type: AllTypesMatch.)
  return verifyStatistic(*this, getInput().getType(), getEpsilon(),
                         getMean().getType());
}

//===----------------------------------------------------------------------===//
// CenteredPostScaleOp
//===----------------------------------------------------------------------===//

LogicalResult CenteredPostScaleOp::verify() {
  RankedTensorType in = getInput().getType();
  if (failed(verifyScaledRows(*this, in, getResult().getType(),
                              getScale().getType())))
    return failure();
  Type scale = getScale().getType().getElementType();
  if (getColsum().getType().getElementType() != scale)
    return emitOpError() << "colsum must be of the scale's type " << scale
                         << ", got " << getColsum().getType();
  int64_t n = in.getShape().back(), sums = getColsum().getType().getDimSize(0);
  if (!ShapedType::isDynamic(n) && !ShapedType::isDynamic(sums) && n != sums)
    return emitOpError() << "colsum has " << sums
                         << " elements but the input's last dimension has "
                         << n;
  // (The mean has the scale's type: AllTypesMatch.)
  return success();
}

#define GET_OP_CLASSES
#include "flashnorm/Dialect/FlashNorm/IR/FlashNormOps.cpp.inc"

/// The runtime's GPU calls take a buffer's aligned pointer alone: the
/// identity layout, in the default memory space.
static LogicalResult verifyPlainBuffer(Operation *op, MemRefType type) {
  if (!type.getLayout().isIdentity())
    return op->emitOpError("needs a buffer with the identity layout, not ")
           << type;
  if (type.getMemorySpace())
    return op->emitOpError("needs a buffer in the default memory space, not ")
           << type;
  return success();
}

/// The stream a GPU call runs on: its lowering takes it from its async
/// dependency (a join makes one of several; flashnorm-gpu-streams gives
/// one to a call the kernels pass made without).
static LogicalResult verifyOneDependency(Operation *op, size_t count) {
  if (count > 1)
    return op->emitOpError("takes at most one async dependency (join first)");
  return success();
}

LogicalResult GemmLtOp::verify() {
  auto a = getA().getType(), b = getB().getType(), c = getC().getType();
  if (a.getElementType() != b.getElementType())
    return emitOpError("a and b must have one element type, not ")
           << a.getElementType() << " and " << b.getElementType();
  // cuBLASLt sums in f32 and writes f32 or the inputs' type (f32 inputs
  // into f16, or f16 into bf16, find no algorithm: an abort at run time).
  if (!c.getElementType().isF32() && c.getElementType() != a.getElementType())
    return emitOpError("writes f32 or its inputs' type, not ")
           << c.getElementType() << " from " << a.getElementType();
  int64_t k = b.getDimSize(getTransposeB() ? 1 : 0);
  int64_t n = b.getDimSize(getTransposeB() ? 0 : 1);
  auto clash = [](int64_t x, int64_t y) {
    return !ShapedType::isDynamic(x) && !ShapedType::isDynamic(y) && x != y;
  };
  if (clash(a.getDimSize(1), k) || clash(a.getDimSize(0), c.getDimSize(0)) ||
      clash(n, c.getDimSize(1)))
    return emitOpError("shapes do not multiply: ")
           << a << " x " << b << (getTransposeB() ? "^T" : "") << " -> " << c;
  // The runtime takes dense row-major buffers in the default memory space
  // (no strides or offsets are passed).
  for (MemRefType t : {a, b, c})
    if (failed(verifyPlainBuffer(*this, t)))
      return failure();
  return verifyOneDependency(*this, getAsyncDependencies().size());
}

bool ResidentOp::isResidentElementType(Type type) {
  if (!type.isIntOrFloat())
    return false;
  unsigned bits = type.getIntOrFloatBitWidth();
  return bits == 8 || bits == 16 || bits == 32 || bits == 64;
}

LogicalResult CheckAlignmentOp::verify() {
  if (!llvm::isPowerOf2_64(getAlignment()))
    return emitOpError("needs a power of two alignment, not ")
           << getAlignment();
  if (auto type = cast<BaseMemRefType>(getBuffer().getType());
      type.getMemorySpace())
    return emitOpError("needs a buffer in the default memory space, not ")
           << type;
  return success();
}

LogicalResult ResidentOp::verify() {
  if (!isResidentElementType(getHost().getType().getElementType()))
    return emitOpError("needs integer or float elements of 8, 16, 32 or 64 "
                       "bits, not ")
           << getHost().getType().getElementType();
  if (failed(verifyPlainBuffer(*this, getHost().getType())))
    return failure();
  return verifyOneDependency(*this, getAsyncDependencies().size());
}
