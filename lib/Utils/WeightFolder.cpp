//===- WeightFolder.cpp - Folds into constant weights, rounded once ------===//
//
// The attribute half of WeightFolder.h: reads a dense or dense_resource
// constant's bytes in place, hands them to the raw-buffer kernels
// (WeightFolderKernels.cpp) with the [outer, K, inner] view of the
// contracted axis, refuses a fold that overflowed or underflowed where the
// original did not, and wraps the bytes written once in a new attribute (a
// new resource for a resource). Relayouts and int8 requantization work the
// same way.
//
//===----------------------------------------------------------------------===//

#include "flashnorm/Utils/WeightFolder.h"
#include "flashnorm/Analysis/Projection.h"
#include "flashnorm/Utils/Remarks.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tosa/IR/TosaOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/Matchers.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

using namespace mlir;
using namespace mlir::flashnorm;

static LogicalResult fail(std::string *whyNot, const Twine &msg) {
  if (whyNot)
    *whyNot = msg.str();
  return failure();
}

namespace {
/// The raw bytes behind a dense or dense_resource attribute.
struct RawView {
  ArrayRef<char> data;
  bool splat = false;
  FloatKind kind;
};
} // namespace

static FailureOr<RawView> getRawView(ElementsAttr attr, std::string *whyNot) {
  ShapedType type = attr.getShapedType();
  std::optional<FloatKind> kind = getFloatKind(type.getElementType());
  if (!kind)
    return fail(whyNot, "element type " + printToString(type.getElementType()) +
                            " is not f16, bf16, f32 or f64");
  RawView view;
  view.kind = *kind;
  size_t width = getByteWidth(*kind);
  if (auto dense = dyn_cast<DenseElementsAttr>(attr)) {
    view.data = dense.getRawData();
    view.splat = dense.isSplat();
  } else if (auto resource = dyn_cast<DenseResourceElementsAttr>(attr)) {
    AsmResourceBlob *blob = resource.getRawHandle().getBlob();
    if (!blob)
      return fail(whyNot, "dense_resource '" +
                              resource.getRawHandle().getKey() +
                              "' has no data (elided or missing)");
    view.data = blob->getData();
    view.splat = view.data.size() == width && type.getNumElements() != 1;
  } else {
    return fail(whyNot, "constant is neither dense nor dense_resource");
  }
  size_t expected = view.splat ? width : width * type.getNumElements();
  if (view.data.size() != expected)
    return fail(whyNot, "constant holds " + Twine(view.data.size()) +
                            " bytes, expected " + Twine(expected));
  return view;
}

/// out = W * scale[k] - mean_k(W * scale[k]), per (o, i) column, in f64 and
/// rounded once (docs/MATH.md §4: mean-centering folded into the weights).
static void scaleAndCenter(FloatKind kind, const char *in, bool splat,
                           char *out, int64_t outer, ArrayRef<double> scale,
                           int64_t inner) {
  std::vector<double> mean(outer * inner, 0.0);
  sumAlongAxisRaw(kind, in, splat, outer, scale, inner, mean.data());
  for (double &m : mean)
    m /= static_cast<double>(scale.size());
  scaleAndShiftRaw(kind, in, splat, out, outer, scale, inner, mean.data());
}

namespace {
/// A weight's raw bytes seen as [outer, K, inner] around the axis K.
struct AxisView {
  RawView raw;
  int64_t outer = 1, inner = 1;
};
} // namespace

/// The [outer, K, inner] view of `weight` around `axis`, after checking that
/// the axis has `numK` elements and the data is readable.
static FailureOr<AxisView> getAxisView(ElementsAttr weight, int64_t axis,
                                       size_t numK, std::string *whyNot) {
  ShapedType type = weight.getShapedType();
  if (!type.hasStaticShape())
    return fail(whyNot, "weight shape is not static");
  if (axis < 0 || axis >= type.getRank() ||
      type.getDimSize(axis) != static_cast<int64_t>(numK))
    return fail(whyNot, "weight dimension " + Twine(axis) + " does not have " +
                            Twine(numK) + " elements");
  FailureOr<RawView> raw = getRawView(weight, whyNot);
  if (failed(raw))
    return failure();
  AxisView view{*raw};
  for (int64_t d = 0; d < axis; ++d)
    view.outer *= type.getDimSize(d);
  for (int64_t d = axis + 1; d < type.getRank(); ++d)
    view.inner *= type.getDimSize(d);
  return view;
}

static FailureOr<ElementsAttr> foldAlongAxis(ElementsAttr weight, int64_t axis,
                                             ArrayRef<double> scale,
                                             bool center, std::string *whyNot) {
  ShapedType type = weight.getShapedType();
  // An empty weight (a 0-sized dimension) folds to itself.
  if (type.hasStaticShape() && type.getNumElements() == 0)
    return weight;
  FailureOr<AxisView> axisView =
      getAxisView(weight, axis, scale.size(), whyNot);
  if (failed(axisView))
    return failure();
  const RawView *view = &axisView->raw;
  int64_t outer = axisView->outer, inner = axisView->inner;
  size_t bytes = getByteWidth(view->kind) * type.getNumElements();
  MLIRContext *ctx = type.getContext();
  // A fold that overflows the type is refused (the kernel counts them; the
  // centered fold is counted after).
  // So is one whose products fall below the type's normal range where
  // that costs more than its one rounding (countUnderflowedOutputs: an f16
  // gain of 1e-4 times weights of 1e-4 rounds every product to 0).
  auto fill = [&](char *out) -> LogicalResult {
    FoldLosses losses;
    if (!center) {
      losses = scaleRawAlongAxis(view->kind, view->data.data(), view->splat,
                                 out, outer, scale, inner, ctx);
    } else {
      scaleAndCenter(view->kind, view->data.data(), view->splat, out, outer,
                     scale, inner);
      losses.overflows =
          countOverflowsRaw(view->kind, view->data.data(), view->splat, out,
                            type.getNumElements());
    }
    std::string typeName;
    llvm::raw_string_ostream(typeName) << type.getElementType();
    if (losses.overflows)
      return fail(whyNot, Twine(losses.overflows) +
                              " folded element(s) overflow " + typeName +
                              " (the original stays finite)");
    if (!losses.underflows)
      return success();
    std::vector<double> magnitude(outer * inner, 0.0);
    std::vector<int64_t> underflowed(outer * inner, 0);
    tallyUnderflowRaw(view->kind, view->data.data(), view->splat, out, outer,
                      scale, inner, magnitude.data(), underflowed.data());
    int64_t lossy = countUnderflowedOutputs(view->kind, magnitude, underflowed);
    if (!lossy)
      return success();
    return fail(whyNot, Twine(lossy) + " output(s) of the folded weight fall " +
                            "mostly below " + typeName + "'s normal range (" +
                            Twine(losses.underflows) +
                            " product(s) underflow), where rounding them "
                            "loses more than the original's one rounding");
  };

  if (auto resource = dyn_cast<DenseResourceElementsAttr>(weight)) {
    AsmResourceBlob blob =
        HeapAsmResourceBlob::allocate(bytes, alignof(double));
    if (failed(fill(blob.getMutableData().data())))
      return failure();
    std::string name = (resource.getRawHandle().getKey() + "_folded").str();
    return cast<ElementsAttr>(
        DenseResourceElementsAttr::get(type, name, std::move(blob)));
  }
  // Uninitialized on purpose: the kernel writes every byte, and zero-filling
  // would cost as much as a copy.
  std::unique_ptr<char[]> buffer(new char[bytes]);
  if (failed(fill(buffer.get())))
    return failure();
  return cast<ElementsAttr>(DenseElementsAttr::getFromRawBuffer(
      type, ArrayRef<char>(buffer.get(), bytes)));
}

FailureOr<ElementsAttr> flashnorm::scaleAlongAxis(ElementsAttr weight,
                                                  int64_t axis,
                                                  ArrayRef<double> scale,
                                                  std::string *whyNot) {
  return foldAlongAxis(weight, axis, scale, /*center=*/false, whyNot);
}

bool flashnorm::canCarryCentering(Type elementType) {
  return elementType.isF32() || elementType.isF64();
}

FailureOr<ElementsAttr>
flashnorm::scaleAndCenterAlongAxis(ElementsAttr weight, int64_t axis,
                                   ArrayRef<double> scale,
                                   std::string *whyNot) {
  Type element = weight.getShapedType().getElementType();
  if (!canCarryCentering(element)) {
    std::string type;
    llvm::raw_string_ostream(type) << element;
    return fail(whyNot, "a " + type +
                            " weight cannot carry the mean-centering exactly "
                            "(its rounded columns do not sum to zero)");
  }
  return foldAlongAxis(weight, axis, scale, /*center=*/true, whyNot);
}

FailureOr<SmallVector<double>>
flashnorm::contractAlongAxis(ElementsAttr weight, int64_t axis,
                             ArrayRef<double> vec, std::string *whyNot) {
  FailureOr<AxisView> axisView = getAxisView(weight, axis, vec.size(), whyNot);
  if (failed(axisView))
    return failure();
  const RawView *view = &axisView->raw;
  int64_t outer = axisView->outer, inner = axisView->inner;
  SmallVector<double> result(outer * inner, 0.0);
  sumAlongAxisRaw(view->kind, view->data.data(), view->splat, outer, vec, inner,
                  result.data());
  return result;
}

FailureOr<SmallVector<double>> flashnorm::readAsDoubles(ElementsAttr attr,
                                                        std::string *whyNot) {
  FailureOr<RawView> view = getRawView(attr, whyNot);
  if (failed(view))
    return failure();
  int64_t n = attr.getShapedType().getNumElements();
  SmallVector<double> values(n);
  if (n == 0)
    return values;
  decodeRaw(view->kind, view->data.data(), view->splat ? 1 : n, values.data());
  if (view->splat)
    std::fill(values.begin() + 1, values.end(), values.front());
  return values;
}

FailureOr<SmallVector<double>>
flashnorm::readConstantAsDoubles(Value v, std::string *whyNot) {
  // Reshapes keep the values and their order.
  while (Operation *def = v.getDefiningOp()) {
    if (!isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp, tosa::ReshapeOp>(
            def))
      break;
    v = def->getOperand(0);
  }
  Attribute attr;
  if (ml_program::GlobalOp global = getLoadedGlobal(v.getDefiningOp()))
    attr = global.getValue().value_or(Attribute());
  else
    (void)matchPattern(v, m_Constant(&attr));
  if (!isa_and_nonnull<ElementsAttr>(attr)) {
    if (whyNot)
      *whyNot = isa_and_nonnull<ml_program::ExternAttr>(attr)
                    ? "it is an extern global (its value is in a checkpoint)"
                    : "it is not a constant tensor";
    return failure();
  }
  return readAsDoubles(cast<ElementsAttr>(attr), whyNot);
}

/// `weight` (2-D, contracted along `axis`) relaid by packPanelsRaw into
/// panels of `panel` outputs, typed `type` (its bytes are the panels'); a
/// `dense_resource` gets a new resource named with `suffix`.
static FailureOr<ElementsAttr> relayout(ElementsAttr weight, int64_t axis,
                                        int64_t panel, RankedTensorType type,
                                        StringRef suffix, std::string *whyNot) {
  ShapedType in = weight.getShapedType();
  int64_t numK = in.getDimSize(axis), numN = in.getDimSize(1 - axis);
  FailureOr<RawView> view = getRawView(weight, whyNot);
  if (failed(view))
    return failure();
  size_t width = getByteWidth(view->kind);
  if (view->splat)
    return cast<ElementsAttr>(DenseElementsAttr::getFromRawBuffer(
        type, view->data.take_front(width)));
  size_t bytes = width * in.getNumElements();
  auto pack = [&](char *out) {
    packPanelsRaw(width, view->data.data(), out, numK, numN, axis == 0, panel);
  };
  if (auto resource = dyn_cast<DenseResourceElementsAttr>(weight)) {
    AsmResourceBlob blob =
        HeapAsmResourceBlob::allocate(bytes, alignof(double));
    pack(blob.getMutableData().data());
    std::string name = (resource.getRawHandle().getKey() + suffix).str();
    return cast<ElementsAttr>(
        DenseResourceElementsAttr::get(type, name, std::move(blob)));
  }
  std::unique_ptr<char[]> buffer(new char[bytes]);
  pack(buffer.get());
  return cast<ElementsAttr>(DenseElementsAttr::getFromRawBuffer(
      type, ArrayRef<char>(buffer.get(), bytes)));
}

FailureOr<ElementsAttr> flashnorm::packPanels(ElementsAttr weight, int64_t axis,
                                              int64_t panel,
                                              std::string *whyNot) {
  ShapedType type = weight.getShapedType();
  if (!type.hasStaticShape() || type.getRank() != 2 || axis < 0 || axis > 1)
    return fail(whyNot, "the weight is not a static 2-D tensor");
  int64_t numK = type.getDimSize(axis), numN = type.getDimSize(1 - axis);
  if (panel <= 0 || numN % panel)
    return fail(whyNot, "its " + Twine(numN) +
                            " output features are not a multiple of the " +
                            Twine(panel) + "-wide panels");
  auto packed =
      RankedTensorType::get({numN / panel, numK, panel}, type.getElementType());
  return relayout(weight, axis, panel, packed, "_panels", whyNot);
}

FailureOr<ElementsAttr> flashnorm::storeRowsAlongK(ElementsAttr weight,
                                                   int64_t axis,
                                                   std::string *whyNot) {
  ShapedType type = weight.getShapedType();
  if (!type.hasStaticShape() || type.getRank() != 2 || axis < 0 || axis > 1)
    return fail(whyNot, "the weight is not a static 2-D tensor");
  int64_t numK = type.getDimSize(axis), numN = type.getDimSize(1 - axis);
  // Panels of one output: [N][K][1] is [N][K] in memory.
  auto rows = RankedTensorType::get({numN, numK}, type.getElementType());
  return relayout(weight, axis, /*panel=*/1, rows, "_nk", whyNot);
}

FailureOr<Requantized> flashnorm::requantizeInt8(ElementsAttr q, int64_t axis,
                                                 ElementsAttr scales,
                                                 ArrayRef<double> gain,
                                                 std::string *whyNot) {
  auto type = cast<RankedTensorType>(q.getShapedType());
  if (type.getRank() != 2 || !type.getElementType().isInteger(8) ||
      !type.hasStaticShape() || (axis != 0 && axis != 1))
    return fail(whyNot, "the integers are not a 2-D int8 tensor");
  int64_t numK = type.getDimSize(axis), numN = type.getDimSize(1 - axis);
  // The new scales replace the stored ones, in their type and shape (a
  // reshape on the way stays).
  if (!scales.getShapedType().getElementType().isF32())
    return fail(whyNot, "the scales are not stored as f32");
  FailureOr<SmallVector<double>> s = readAsDoubles(scales, whyNot);
  if (failed(s))
    return failure();
  if (static_cast<int64_t>(s->size()) != numN ||
      static_cast<int64_t>(gain.size()) != numK)
    return fail(whyNot, "scales or gain do not match the integers' shape");
  // The integers' raw bytes (dense or dense_resource, possibly a splat).
  ArrayRef<char> data;
  if (auto dense = dyn_cast<DenseElementsAttr>(q))
    data = dense.getRawData();
  else if (auto resource = dyn_cast<DenseResourceElementsAttr>(q)) {
    AsmResourceBlob *blob = resource.getRawHandle().getBlob();
    if (!blob)
      return fail(whyNot, "dense_resource '" +
                              resource.getRawHandle().getKey() +
                              "' has no data (elided or missing)");
    data = blob->getData();
  } else {
    return fail(whyNot, "the integers are neither dense nor dense_resource");
  }
  bool splat = data.size() == 1 && type.getNumElements() != 1;
  if (!splat && static_cast<int64_t>(data.size()) != type.getNumElements())
    return fail(whyNot, "the integers hold " + Twine(data.size()) + " bytes");
  auto at = [&](int64_t n, int64_t k) -> int64_t {
    return axis == 1 ? n * numK + k : k * numN + n;
  };
  std::vector<int8_t> out(type.getNumElements());
  SmallVector<float> newScales(numN);
  Requantized r;
  double sumSq = 0, sumErrSq = 0;
  for (int64_t n = 0; n < numN; ++n) {
    double maxAbs = 0;
    for (int64_t k = 0; k < numK; ++k) {
      double w = (*s)[n] * double(int8_t(data[splat ? 0 : at(n, k)])) * gain[k];
      // (A NaN would vanish from the maximum and an inf leave no scale to
      // quantize against: the requantized weight would hold neither.)
      if (!std::isfinite(w))
        return fail(whyNot, "a weight times its gain is not finite");
      maxAbs = std::max(maxAbs, std::abs(w));
    }
    // The new scale is stored as f32: quantize against that value.
    float scale = static_cast<float>(maxAbs / 127.0);
    if (!std::isfinite(scale))
      return fail(whyNot, "a channel's scale overflows f32");
    newScales[n] = scale;
    double rowErrSq = 0;
    for (int64_t k = 0; k < numK; ++k) {
      double w = (*s)[n] * double(int8_t(data[splat ? 0 : at(n, k)])) * gain[k];
      double v =
          scale == 0 ? 0 : std::clamp(std::round(w / scale), -127.0, 127.0);
      out[at(n, k)] = static_cast<int8_t>(v);
      double err = w - v * double(scale);
      r.maxAbsError = std::max(r.maxAbsError, std::abs(err));
      rowErrSq += err * err;
      sumSq += w * w;
    }
    sumErrSq += rowErrSq;
    r.outputBound = std::max(r.outputBound, std::sqrt(rowErrSq));
  }
  r.relRmsError = sumSq == 0 ? 0 : std::sqrt(sumErrSq / sumSq);
  r.outputBound *= std::sqrt(static_cast<double>(numK));
  ArrayRef<char> bytes(reinterpret_cast<const char *>(out.data()), out.size());
  if (auto resource = dyn_cast<DenseResourceElementsAttr>(q)) {
    AsmResourceBlob blob =
        HeapAsmResourceBlob::allocateAndCopyWithAlign(bytes, alignof(int64_t));
    r.q = cast<ElementsAttr>(DenseResourceElementsAttr::get(
        type, (resource.getRawHandle().getKey() + "_requantized").str(),
        std::move(blob)));
  } else {
    r.q = cast<ElementsAttr>(DenseElementsAttr::getFromRawBuffer(type, bytes));
  }
  r.scales = cast<ElementsAttr>(DenseElementsAttr::get(
      scales.getShapedType(), ArrayRef<float>(newScales)));
  return r;
}
