#include "flashnorm/Utils/WeightFolder.h"
#include "flashnorm/Utils/Remarks.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/Threading.h"
#include "llvm/ADT/bit.h"

#include <cstring>

using namespace mlir;
using namespace mlir::flashnorm;

std::optional<FloatKind> flashnorm::getFloatKind(Type type) {
  if (type.isF16())
    return FloatKind::F16;
  if (type.isBF16())
    return FloatKind::BF16;
  if (type.isF32())
    return FloatKind::F32;
  if (type.isF64())
    return FloatKind::F64;
  return std::nullopt;
}

static size_t byteWidth(FloatKind kind) {
  switch (kind) {
  case FloatKind::F16:
  case FloatKind::BF16:
    return 2;
  case FloatKind::F32:
    return 4;
  case FloatKind::F64:
    return 8;
  }
  llvm_unreachable("unknown float kind");
}

//===----------------------------------------------------------------------===//
// Bit-level conversions
//===----------------------------------------------------------------------===//

double flashnorm::decodeHalf(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  if (exp == 0) { // Zero or subnormal: mant * 2^-24 is exact in float.
    float v = static_cast<float>(mant) * 0x1p-24f;
    return sign ? -v : v;
  }
  uint32_t bits = exp == 31 ? (sign | 0x7f800000u | (mant << 13))
                            : (sign | ((exp + 112) << 23) | (mant << 13));
  return llvm::bit_cast<float>(bits);
}

double flashnorm::decodeBFloat(uint16_t b) {
  return llvm::bit_cast<float>(static_cast<uint32_t>(b) << 16);
}

/// Rounds a double to a binary format with `expBits` exponent and `mantBits`
/// fraction bits (IEEE layout, subnormals, ties to even) straight from the
/// double's bits, so the result is rounded exactly once.
template <int expBits, int mantBits>
static uint16_t encodeFromDouble(double d) {
  constexpr int bias = (1 << (expBits - 1)) - 1;
  constexpr uint32_t expMask = (1u << expBits) - 1;
  uint64_t bits = llvm::bit_cast<uint64_t>(d);
  uint16_t sign = static_cast<uint16_t>((bits >> 63) << (expBits + mantBits));
  int exp = static_cast<int>((bits >> 52) & 0x7ff);
  uint64_t frac = bits & ((uint64_t(1) << 52) - 1);
  if (exp == 0x7ff) // Inf or NaN (NaN stays a quiet NaN).
    return sign | (expMask << mantBits) | (frac ? (1u << (mantBits - 1)) : 0u);
  if (exp == 0) // Double subnormals are far below the target's range.
    return sign;
  int targetExp = exp - 1023 + bias;
  uint64_t significand = frac | (uint64_t(1) << 52);
  int shift = 52 - mantBits;
  if (targetExp < 1) { // Target subnormal: shift the extra distance.
    shift += 1 - targetExp;
    targetExp = 0;
    if (shift > 63)
      return sign;
  }
  uint64_t q = significand >> shift;
  uint64_t rest = significand & ((uint64_t(1) << shift) - 1);
  uint64_t half = uint64_t(1) << (shift - 1);
  if (rest > half || (rest == half && (q & 1)))
    ++q;
  // For normals q carries the implicit bit, which adds one to (targetExp-1);
  // a carry out of the fraction bumps the exponent the same way.
  uint64_t out = targetExp == 0 ? q : (uint64_t(targetExp - 1) << mantBits) + q;
  if (out >= (uint64_t(expMask) << mantBits))
    out = uint64_t(expMask) << mantBits; // Overflow to infinity.
  return sign | static_cast<uint16_t>(out);
}

uint16_t flashnorm::encodeHalf(double v) { return encodeFromDouble<5, 10>(v); }
uint16_t flashnorm::encodeBFloat(double v) { return encodeFromDouble<8, 7>(v); }

//===----------------------------------------------------------------------===//
// The kernel
//===----------------------------------------------------------------------===//

namespace {
template <FloatKind K> struct Codec;
template <> struct Codec<FloatKind::F16> {
  using Storage = uint16_t;
  static double load(Storage s) { return decodeHalf(s); }
  static Storage store(double v) { return encodeHalf(v); }
};
template <> struct Codec<FloatKind::BF16> {
  using Storage = uint16_t;
  static double load(Storage s) { return decodeBFloat(s); }
  static Storage store(double v) { return encodeBFloat(v); }
};
template <> struct Codec<FloatKind::F32> {
  using Storage = float;
  static double load(Storage s) { return s; }
  static Storage store(double v) { return static_cast<float>(v); }
};
template <> struct Codec<FloatKind::F64> {
  using Storage = double;
  static double load(Storage s) { return s; }
  static Storage store(double v) { return v; }
};
} // namespace

/// Elements [begin, end) of the flat [outer, K, inner] tensor.
template <FloatKind Kind>
static void scaleRange(const char *inBytes, bool splat, char *outBytes,
                       ArrayRef<double> scale, int64_t inner, int64_t begin,
                       int64_t end) {
  using C = Codec<Kind>;
  using S = typename C::Storage;
  const S *in = reinterpret_cast<const S *>(inBytes);
  S *out = reinterpret_cast<S *>(outBytes);
  int64_t numK = scale.size();
  int64_t row = begin / inner, i = begin % inner;
  int64_t k = row % numK;
  double splatValue = splat ? C::load(in[0]) : 0.0;
  for (int64_t pos = begin; pos < end;) {
    int64_t run = std::min(inner - i, end - pos);
    double s = scale[k];
    if (splat) {
      S v = C::store(splatValue * s);
      std::fill(out + pos, out + pos + run, v);
    } else {
      for (int64_t j = 0; j < run; ++j)
        out[pos + j] = C::store(C::load(in[pos + j]) * s);
    }
    pos += run;
    i = 0;
    if (++k == numK)
      k = 0;
  }
}

void flashnorm::scaleRawAlongAxis(FloatKind kind, const char *in, bool inSplat,
                                  char *out, int64_t outer,
                                  ArrayRef<double> scale, int64_t inner,
                                  MLIRContext *ctx) {
  int64_t total = outer * static_cast<int64_t>(scale.size()) * inner;
  auto kernel = [&](int64_t b, int64_t e) {
    switch (kind) {
    case FloatKind::F16:
      return scaleRange<FloatKind::F16>(in, inSplat, out, scale, inner, b, e);
    case FloatKind::BF16:
      return scaleRange<FloatKind::BF16>(in, inSplat, out, scale, inner, b, e);
    case FloatKind::F32:
      return scaleRange<FloatKind::F32>(in, inSplat, out, scale, inner, b, e);
    case FloatKind::F64:
      return scaleRange<FloatKind::F64>(in, inSplat, out, scale, inner, b, e);
    }
  };
  // Chunks of 1M elements amortize the thread-pool hand-off.
  constexpr int64_t chunk = 1 << 20;
  int64_t numChunks = (total + chunk - 1) / chunk;
  if (!ctx || numChunks <= 1) {
    kernel(0, total);
    return;
  }
  parallelFor(ctx, 0, numChunks, [&](size_t c) {
    int64_t b = static_cast<int64_t>(c) * chunk;
    kernel(b, std::min(total, b + chunk));
  });
}

//===----------------------------------------------------------------------===//
// Attributes
//===----------------------------------------------------------------------===//

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
  size_t width = byteWidth(*kind);
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

FailureOr<ElementsAttr> flashnorm::scaleAlongAxis(ElementsAttr weight,
                                                  int64_t axis,
                                                  ArrayRef<double> scale,
                                                  std::string *whyNot) {
  ShapedType type = weight.getShapedType();
  if (!type.hasStaticShape())
    return fail(whyNot, "weight shape is not static");
  if (axis < 0 || axis >= type.getRank() ||
      type.getDimSize(axis) != static_cast<int64_t>(scale.size()))
    return fail(whyNot, "weight dimension " + Twine(axis) + " does not have " +
                            Twine(scale.size()) + " elements");
  FailureOr<RawView> view = getRawView(weight, whyNot);
  if (failed(view))
    return failure();

  ArrayRef<int64_t> shape = type.getShape();
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d)
    outer *= shape[d];
  for (int64_t d = axis + 1; d < type.getRank(); ++d)
    inner *= shape[d];
  size_t bytes = byteWidth(view->kind) * type.getNumElements();
  MLIRContext *ctx = type.getContext();

  if (auto resource = dyn_cast<DenseResourceElementsAttr>(weight)) {
    AsmResourceBlob blob =
        HeapAsmResourceBlob::allocate(bytes, alignof(double));
    scaleRawAlongAxis(view->kind, view->data.data(), view->splat,
                      blob.getMutableData().data(), outer, scale, inner, ctx);
    std::string name = (resource.getRawHandle().getKey() + "_folded").str();
    return cast<ElementsAttr>(
        DenseResourceElementsAttr::get(type, name, std::move(blob)));
  }
  std::vector<char> buffer(bytes);
  scaleRawAlongAxis(view->kind, view->data.data(), view->splat, buffer.data(),
                    outer, scale, inner, ctx);
  return cast<ElementsAttr>(DenseElementsAttr::getFromRawBuffer(type, buffer));
}

FailureOr<SmallVector<double>> flashnorm::readAsDoubles(ElementsAttr attr,
                                                        std::string *whyNot) {
  FailureOr<RawView> view = getRawView(attr, whyNot);
  if (failed(view))
    return failure();
  int64_t n = attr.getShapedType().getNumElements();
  SmallVector<double> values(n);
  for (int64_t i = 0; i < n; ++i) {
    const char *src =
        view->data.data() + (view->splat ? 0 : i * byteWidth(view->kind));
    switch (view->kind) {
    case FloatKind::F16: {
      uint16_t h;
      std::memcpy(&h, src, 2);
      values[i] = decodeHalf(h);
      break;
    }
    case FloatKind::BF16: {
      uint16_t h;
      std::memcpy(&h, src, 2);
      values[i] = decodeBFloat(h);
      break;
    }
    case FloatKind::F32: {
      float f;
      std::memcpy(&f, src, 4);
      values[i] = f;
      break;
    }
    case FloatKind::F64:
      std::memcpy(&values[i], src, 8);
      break;
    }
  }
  return values;
}

FailureOr<SmallVector<double>>
flashnorm::readConstantAsDoubles(Value v, std::string *whyNot) {
  Attribute attr;
  if (!matchPattern(v, m_Constant(&attr)) || !isa<ElementsAttr>(attr)) {
    if (whyNot)
      *whyNot = "it is not a constant tensor";
    return failure();
  }
  return readAsDoubles(cast<ElementsAttr>(attr), whyNot);
}
