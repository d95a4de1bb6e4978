#include "flashnorm/Utils/WeightFolder.h"
#include "flashnorm/Analysis/Projection.h"
#include "flashnorm/Utils/Remarks.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tosa/IR/TosaOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/Threading.h"
#include "llvm/ADT/bit.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

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

/// f16 -> f32 for all 65536 bit patterns: a load instead of branches.
static const float *getHalfTable() {
  static const std::vector<float> table = [] {
    std::vector<float> t(1 << 16);
    for (uint32_t h = 0; h < t.size(); ++h)
      t[h] = static_cast<float>(decodeHalf(static_cast<uint16_t>(h)));
    return t;
  }();
  return table.data();
}

/// Branch-free round-to-nearest-even of `d` for results that are normal
/// numbers (or zero) of the target format; sets `slow` for everything else
/// (subnormal, overflow, Inf, NaN), which the exact encoder then handles.
template <int expBits, int mantBits>
LLVM_ATTRIBUTE_ALWAYS_INLINE static uint16_t encodeFast(double d, bool &slow) {
  constexpr int shift = 52 - mantBits;
  constexpr int64_t bias = (1 << (expBits - 1)) - 1;
  uint64_t bits = llvm::bit_cast<uint64_t>(d);
  uint64_t mag = bits & ~(uint64_t(1) << 63);
  uint64_t sign = (bits >> 63) << (expBits + mantBits);
  // Adding half an ulp minus one, plus the lowest kept bit, rounds ties to
  // even; a carry out of the fraction bumps the exponent as it should.
  uint64_t rounded =
      mag + ((uint64_t(1) << (shift - 1)) - 1) + ((mag >> shift) & 1);
  int64_t out =
      static_cast<int64_t>(rounded >> shift) - ((1023 - bias) << mantBits);
  bool zero = mag == 0;
  slow |= !zero && (out < (int64_t(1) << mantBits) ||
                    out >= (int64_t((1 << expBits) - 1) << mantBits));
  return static_cast<uint16_t>(sign | static_cast<uint64_t>(zero ? 0 : out));
}

namespace {
/// Element load/store for one storage type. Instances are cheap; the f16 one
/// holds the decode table so the hot loop does not re-check its guard.
template <FloatKind K> struct Codec;
template <> struct Codec<FloatKind::F16> {
  using Storage = uint16_t;
  const float *table = getHalfTable();
  LLVM_ATTRIBUTE_ALWAYS_INLINE double load(Storage s) const { return table[s]; }
  static Storage store(double v) { return encodeHalf(v); }
  LLVM_ATTRIBUTE_ALWAYS_INLINE static Storage storeFast(double v, bool &slow) {
    return encodeFast<5, 10>(v, slow);
  }
};
template <> struct Codec<FloatKind::BF16> {
  using Storage = uint16_t;
  LLVM_ATTRIBUTE_ALWAYS_INLINE static double load(Storage s) {
    return llvm::bit_cast<float>(static_cast<uint32_t>(s) << 16);
  }
  static Storage store(double v) { return encodeBFloat(v); }
  LLVM_ATTRIBUTE_ALWAYS_INLINE static Storage storeFast(double v, bool &slow) {
    return encodeFast<8, 7>(v, slow);
  }
};
template <> struct Codec<FloatKind::F32> {
  using Storage = float;
  LLVM_ATTRIBUTE_ALWAYS_INLINE static double load(Storage s) { return s; }
  static Storage store(double v) { return static_cast<float>(v); }
  /// Exact as it is; `slow` marks a result that is not finite (an
  /// overflow, counted by the exact pass).
  LLVM_ATTRIBUTE_ALWAYS_INLINE static Storage storeFast(double v, bool &slow) {
    float f = static_cast<float>(v);
    slow |= (llvm::bit_cast<uint32_t>(f) & 0x7f800000u) == 0x7f800000u;
    return f;
  }
};
template <> struct Codec<FloatKind::F64> {
  using Storage = double;
  LLVM_ATTRIBUTE_ALWAYS_INLINE static double load(Storage s) { return s; }
  static Storage store(double v) { return v; }
  LLVM_ATTRIBUTE_ALWAYS_INLINE static Storage storeFast(double v, bool &slow) {
    slow |= (llvm::bit_cast<uint64_t>(v) & 0x7ff0000000000000ull) ==
            0x7ff0000000000000ull;
    return v;
  }
};
} // namespace

/// Whether the element of storage `s` is finite, from its bits alone (the
/// overflow check reads every folded element: it must vectorize).
template <FloatKind Kind>
LLVM_ATTRIBUTE_ALWAYS_INLINE static bool
isFiniteBits(typename Codec<Kind>::Storage s) {
  if constexpr (Kind == FloatKind::F16)
    return (s & 0x7c00u) != 0x7c00u;
  else if constexpr (Kind == FloatKind::BF16)
    return (s & 0x7f80u) != 0x7f80u;
  else if constexpr (Kind == FloatKind::F32)
    return (llvm::bit_cast<uint32_t>(s) & 0x7f800000u) != 0x7f800000u;
  else
    return (llvm::bit_cast<uint64_t>(s) & 0x7ff0000000000000ull) !=
           0x7ff0000000000000ull;
}

/// The smallest normal magnitude of the storage type: below it a rounded
/// product keeps only an absolute precision (f16's 2^-24 steps).
template <FloatKind Kind>
constexpr double kMinNormal = Kind == FloatKind::F16   ? 0x1p-14
                              : Kind == FloatKind::F64 ? 0x1p-1022
                                                       : 0x1p-126;

/// The folder's one element-type dispatch: calls `fn` with a
/// std::integral_constant holding the FloatKind.
template <typename Fn> static void dispatchKind(FloatKind kind, Fn &&fn) {
  switch (kind) {
  case FloatKind::F16:
    return fn(std::integral_constant<FloatKind, FloatKind::F16>());
  case FloatKind::BF16:
    return fn(std::integral_constant<FloatKind, FloatKind::BF16>());
  case FloatKind::F32:
    return fn(std::integral_constant<FloatKind, FloatKind::F32>());
  case FloatKind::F64:
    return fn(std::integral_constant<FloatKind, FloatKind::F64>());
  }
}

/// out[j] = round(in[j] * s[j]) for j < n, with `in` a single element when
/// `splat` and `s` a single factor unless `perElement`. The fast pass is
/// branch-free so it vectorizes; a run with any value outside the fast
/// encoder's range (overflows and f16/bf16 subnormals included) is redone
/// exactly, which counts what the rounding lost there.
template <FloatKind Kind, bool splat, bool perElement>
LLVM_ATTRIBUTE_ALWAYS_INLINE static FoldLosses
scaleRun(const typename Codec<Kind>::Storage *in,
         typename Codec<Kind>::Storage *out, int64_t n, const double *s) {
  Codec<Kind> codec;
#define FLASHNORM_VALUE(j)                                                     \
  (codec.load(in[splat ? 0 : (j)]) * s[perElement ? (j) : 0])
  bool slow = false;
  for (int64_t j = 0; j < n; ++j)
    out[j] = Codec<Kind>::storeFast(FLASHNORM_VALUE(j), slow);
  if (!slow)
    return {};
  FoldLosses losses;
  for (int64_t j = 0; j < n; ++j) {
    double v = FLASHNORM_VALUE(j);
    out[j] = Codec<Kind>::store(v);
    losses.overflows +=
        isFiniteBits<Kind>(in[splat ? 0 : j]) && !isFiniteBits<Kind>(out[j]);
    losses.underflows += v != 0 && std::abs(v) < kMinNormal<Kind>;
  }
  return losses;
#undef FLASHNORM_VALUE
}

/// bf16 weights times factors that f32 holds exactly (a bf16 or f16 gain,
/// 1 + g of one, most merged corrections): the same values as scaleRun, in
/// f32 lanes, twice as many per vector. The exact product w * g (at most
/// 32 significant bits; the f64 path holds it exactly too) is p + e, an
/// error-free transformation with one FMA; rounding it to odd at f32's 24
/// bits and then to nearest even at bf16's 8 rounds the exact product once
/// (odd rounding leaves 16 spare bits, more than the 2 needed). A product
/// outside f32's normal range, or one that rounds to bf16's infinity, sends
/// the run to the exact path.
template <bool splat, bool perElement>
LLVM_ATTRIBUTE_ALWAYS_INLINE static FoldLosses
scaleRunBF16(const uint16_t *__restrict in, uint16_t *__restrict out, int64_t n,
             const double *s, const float *s32) {
  uint32_t slow = 0;
  for (int64_t j = 0; j < n; ++j) {
    float w = llvm::bit_cast<float>(uint32_t(in[splat ? 0 : j]) << 16);
    float g = s32[perElement ? j : 0];
    float p = w * g;
    float e = __builtin_fmaf(w, g, -p);
    uint32_t b = llvm::bit_cast<uint32_t>(p), mag = b & 0x7fffffffu;
    slow |= mag != 0 && (mag - 0x00800000u) >= (0x7f800000u - 0x00800000u);
    uint32_t eb = llvm::bit_cast<uint32_t>(e);
    uint32_t inexact = (eb & 0x7fffffffu) != 0;
    // Odd rounding: truncate towards zero (one ulp down when e shrinks
    // |p|), then set the last bit if anything was lost.
    b = (b - (((eb ^ b) >> 31) & inexact)) | inexact;
    uint32_t r = (b + 0x7fffu + ((b >> 16) & 1u)) >> 16;
    // A finite f32 product above bf16's largest value rounds to inf: the
    // exact path counts it as an overflow.
    slow |= (r & 0x7fffu) == 0x7f80u;
    out[j] = static_cast<uint16_t>(r);
  }
  if (!slow)
    return {};
  return scaleRun<FloatKind::BF16, splat, perElement>(in, out, n, s);
}

/// Rows [begin, end) of the weight viewed as [outer, K, inner]. With
/// inner > 1 a row is one (o, k) pair scaled by scale[k]; with inner == 1 a
/// row is one o, scaled element-wise by the whole scale vector. `scale32`,
/// when not null, is `scale` in f32, exactly; `fma` says the target has
/// FMA instructions (the bf16 lanes in f32 need one per element).
template <FloatKind Kind, bool splat, bool fma>
LLVM_ATTRIBUTE_ALWAYS_INLINE static FoldLosses
scaleRows(const char *inBytes, char *outBytes, ArrayRef<double> scale,
          const float *scale32, int64_t inner, int64_t begin, int64_t end) {
  using S = typename Codec<Kind>::Storage;
  const S *in = reinterpret_cast<const S *>(inBytes);
  S *out = reinterpret_cast<S *>(outBytes);
  int64_t numK = scale.size();
  FoldLosses losses;
  if constexpr (fma && Kind == FloatKind::BF16) {
    if (scale32) {
      if (inner == 1) {
        for (int64_t o = begin; o < end; ++o)
          losses += scaleRunBF16<splat, true>(in + (splat ? 0 : o * numK),
                                              out + o * numK, numK,
                                              scale.data(), scale32);
        return losses;
      }
      for (int64_t row = begin; row < end; ++row)
        losses += scaleRunBF16<splat, false>(
            in + (splat ? 0 : row * inner), out + row * inner, inner,
            &scale[row % numK], &scale32[row % numK]);
      return losses;
    }
  }
  if (inner == 1) {
    for (int64_t o = begin; o < end; ++o)
      losses += scaleRun<Kind, splat, true>(in + (splat ? 0 : o * numK),
                                            out + o * numK, numK, scale.data());
    return losses;
  }
  for (int64_t row = begin; row < end; ++row)
    losses += scaleRun<Kind, splat, false>(in + (splat ? 0 : row * inner),
                                           out + row * inner, inner,
                                           &scale[row % numK]);
  return losses;
}

template <FloatKind Kind, bool fma>
LLVM_ATTRIBUTE_ALWAYS_INLINE static FoldLosses
scaleRowsOf(bool splat, const char *in, char *out, ArrayRef<double> scale,
            const float *scale32, int64_t inner, int64_t begin, int64_t end) {
  if (splat)
    return scaleRows<Kind, true, fma>(in, out, scale, scale32, inner, begin,
                                      end);
  return scaleRows<Kind, false, fma>(in, out, scale, scale32, inner, begin,
                                     end);
}

// The row kernel compiled three times: for baseline x86-64 and, picked at
// run time where the CPU has them, for AVX2 with FMA and for AVX-512,
// which vectorize the f16/bf16 rounding 4, 8 and 16 lanes wide. Everything
// above is always-inline so that each copy is compiled for its own target;
// a macro because a target attribute cannot depend on a template parameter.
#define FLASHNORM_ROW_KERNEL(NAME, ATTRS, FMA)                                 \
  ATTRS static FoldLosses NAME(FloatKind kind, bool splat, const char *in,     \
                               char *out, ArrayRef<double> scale,              \
                               const float *scale32, int64_t inner,            \
                               int64_t begin, int64_t end) {                   \
    switch (kind) {                                                            \
    case FloatKind::F16:                                                       \
      return scaleRowsOf<FloatKind::F16, FMA>(splat, in, out, scale, scale32,  \
                                              inner, begin, end);              \
    case FloatKind::BF16:                                                      \
      return scaleRowsOf<FloatKind::BF16, FMA>(splat, in, out, scale, scale32, \
                                               inner, begin, end);             \
    case FloatKind::F32:                                                       \
      return scaleRowsOf<FloatKind::F32, FMA>(splat, in, out, scale, scale32,  \
                                              inner, begin, end);              \
    case FloatKind::F64:                                                       \
      return scaleRowsOf<FloatKind::F64, FMA>(splat, in, out, scale, scale32,  \
                                              inner, begin, end);              \
    }                                                                          \
    return {};                                                                 \
  }

FLASHNORM_ROW_KERNEL(scaleRowsBaseline, , false)
using RowKernel = decltype(&scaleRowsBaseline);
#if defined(__x86_64__) && defined(__GNUC__)
FLASHNORM_ROW_KERNEL(scaleRowsAvx2, __attribute__((target("avx2,fma"))), true)
FLASHNORM_ROW_KERNEL(scaleRowsAvx512,
                     __attribute__((target("avx512f,avx512bw,avx512vl,"
                                           "avx512dq,avx2,fma"))),
                     true)
/// The widest copy this CPU runs. FLASHNORM_FOLD_KERNEL=baseline or avx2
/// forces a narrower one (the tests run each).
static RowKernel getRowKernel() {
  static const RowKernel kernel = [] {
    const char *forcedText = std::getenv("FLASHNORM_FOLD_KERNEL");
    StringRef forced = forcedText ? forcedText : "";
    bool avx2 = forced != "baseline" && __builtin_cpu_supports("avx2") &&
                __builtin_cpu_supports("fma");
    bool avx512 = avx2 && forced != "avx2" &&
                  __builtin_cpu_supports("avx512f") &&
                  __builtin_cpu_supports("avx512bw") &&
                  __builtin_cpu_supports("avx512vl") &&
                  __builtin_cpu_supports("avx512dq");
    return avx512 ? scaleRowsAvx512 : avx2 ? scaleRowsAvx2 : scaleRowsBaseline;
  }();
  return kernel;
}
#else
static RowKernel getRowKernel() { return scaleRowsBaseline; }
#endif
#undef FLASHNORM_ROW_KERNEL

FoldLosses flashnorm::scaleRawAlongAxis(FloatKind kind, const char *in,
                                        bool inSplat, char *out, int64_t outer,
                                        ArrayRef<double> scale, int64_t inner,
                                        MLIRContext *ctx) {
  int64_t numK = scale.size();
  int64_t rows = inner == 1 ? outer : outer * numK;
  int64_t rowLength = inner == 1 ? numK : inner;
  if (rows == 0 || rowLength == 0)
    return {}; // Nothing to write (and no chunk size to divide by).
  RowKernel rowKernel = getRowKernel();
  // The factors in f32, if f32 holds them exactly (the bf16 fast path).
  SmallVector<float> scale32;
  if (kind == FloatKind::BF16 && llvm::all_of(scale, [](double g) {
        return static_cast<double>(static_cast<float>(g)) == g;
      }))
    scale32.assign(scale.begin(), scale.end());
  const float *s32 = scale32.empty() ? nullptr : scale32.data();
  auto kernel = [&](int64_t b, int64_t e) {
    return rowKernel(kind, inSplat, in, out, scale, s32, inner, b, e);
  };
  // Chunks of about 1M elements amortize the thread-pool hand-off.
  int64_t rowsPerChunk = std::max<int64_t>(1, (int64_t(1) << 20) / rowLength);
  int64_t numChunks = (rows + rowsPerChunk - 1) / rowsPerChunk;
  if (!ctx || numChunks <= 1)
    return kernel(0, rows);
  std::atomic<int64_t> overflows{0}, underflows{0};
  parallelFor(ctx, 0, numChunks, [&](size_t c) {
    int64_t b = static_cast<int64_t>(c) * rowsPerChunk;
    FoldLosses chunk = kernel(b, std::min(rows, b + rowsPerChunk));
    overflows += chunk.overflows;
    underflows += chunk.underflows;
  });
  return {overflows.load(), underflows.load()};
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

/// Element (o, k, i) of a weight viewed as [outer, K, inner].
template <FloatKind Kind>
static double loadAt(const char *in, bool splat, int64_t numK, int64_t inner,
                     int64_t o, int64_t k, int64_t i) {
  using S = typename Codec<Kind>::Storage;
  const S *data = reinterpret_cast<const S *>(in);
  return Codec<Kind>().load(data[splat ? 0 : (o * numK + k) * inner + i]);
}

void flashnorm::sumAlongAxisRaw(FloatKind kind, const char *in, bool inSplat,
                                int64_t outer, ArrayRef<double> vec,
                                int64_t inner, double *sums) {
  int64_t numK = vec.size();
  dispatchKind(kind, [&](auto k) {
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t j = 0; j < numK; ++j)
        for (int64_t i = 0; i < inner; ++i)
          sums[o * inner + i] +=
              loadAt<k.value>(in, inSplat, numK, inner, o, j, i) * vec[j];
  });
}

void flashnorm::scaleAndShiftRaw(FloatKind kind, const char *in, bool inSplat,
                                 char *outBytes, int64_t outer,
                                 ArrayRef<double> scale, int64_t inner,
                                 const double *shift) {
  int64_t numK = scale.size();
  dispatchKind(kind, [&](auto k) {
    using C = Codec<k.value>;
    auto *out = reinterpret_cast<typename C::Storage *>(outBytes);
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t j = 0; j < numK; ++j)
        for (int64_t i = 0; i < inner; ++i)
          out[(o * numK + j) * inner + i] = C::store(
              loadAt<k.value>(in, inSplat, numK, inner, o, j, i) * scale[j] -
              shift[o * inner + i]);
  });
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

size_t flashnorm::getByteWidth(FloatKind kind) { return byteWidth(kind); }

void flashnorm::decodeRaw(FloatKind kind, const char *in, int64_t n,
                          double *out) {
  dispatchKind(kind, [&](auto k) {
    using C = Codec<k.value>;
    const auto *data = reinterpret_cast<const typename C::Storage *>(in);
    C codec;
    for (int64_t i = 0; i < n; ++i)
      out[i] = codec.load(data[i]);
  });
}

void flashnorm::encodeRaw(FloatKind kind, const double *in, int64_t n,
                          char *out) {
  dispatchKind(kind, [&](auto k) {
    using C = Codec<k.value>;
    auto *data = reinterpret_cast<typename C::Storage *>(out);
    for (int64_t i = 0; i < n; ++i)
      data[i] = C::store(in[i]);
  });
}

/// How many of the `n` elements are finite in `in` but not in `out`: folded
/// products that overflowed the type (f16 tops out at 65504).
int64_t flashnorm::countOverflowsRaw(FloatKind kind, const char *in,
                                     bool inSplat, const char *out, int64_t n) {
  int64_t count = 0;
  dispatchKind(kind, [&](auto k) {
    using S = typename Codec<k.value>::Storage;
    const S *before = reinterpret_cast<const S *>(in);
    const S *after = reinterpret_cast<const S *>(out);
    for (int64_t j = 0; j < n; ++j)
      count += isFiniteBits<k.value>(before[inSplat ? 0 : j]) &&
               !isFiniteBits<k.value>(after[j]);
  });
  return count;
}

void flashnorm::tallyUnderflowRaw(FloatKind kind, const char *in, bool inSplat,
                                  const char *out, int64_t outer,
                                  ArrayRef<double> scale, int64_t inner,
                                  double *magnitude, int64_t *underflowed) {
  int64_t numK = scale.size();
  dispatchKind(kind, [&](auto k) {
    using C = Codec<k.value>;
    C codec;
    const auto *folded = reinterpret_cast<const typename C::Storage *>(out);
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t j = 0; j < numK; ++j)
        for (int64_t i = 0; i < inner; ++i) {
          double v =
              loadAt<k.value>(in, inSplat, numK, inner, o, j, i) * scale[j];
          underflowed[o * inner + i] +=
              v != 0 && std::abs(v) < kMinNormal<k.value>;
          magnitude[o * inner + i] +=
              std::abs(codec.load(folded[(o * numK + j) * inner + i]));
        }
  });
}

int64_t flashnorm::countUnderflowedOutputs(FloatKind kind,
                                           ArrayRef<double> magnitude,
                                           ArrayRef<int64_t> underflowed) {
  double m = 0;
  dispatchKind(kind, [&](auto k) { m = kMinNormal<k.value>; });
  int64_t lossy = 0;
  for (auto [sum, count] : llvm::zip(magnitude, underflowed))
    lossy += static_cast<double>(count) * m > sum;
  return lossy;
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
  size_t bytes = byteWidth(view->kind) * type.getNumElements();
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
  dispatchKind(view->kind, [&](auto kind) {
    using C = Codec<kind.value>;
    const auto *data =
        reinterpret_cast<const typename C::Storage *>(view->data.data());
    for (int64_t i = 0; i < n; ++i)
      values[i] = C().load(data[view->splat ? 0 : i]);
  });
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

//===----------------------------------------------------------------------===//
// Layout
//===----------------------------------------------------------------------===//

void flashnorm::packPanelsRaw(size_t width, const char *in, char *out,
                              int64_t numK, int64_t numN, bool kMajor,
                              int64_t panel) {
  int64_t panels = numN / panel;
  if (kMajor) {
    // in[k][n]: each panel row is a contiguous run of the input row.
    for (int64_t b = 0; b < panels; ++b)
      for (int64_t k = 0; k < numK; ++k)
        std::memcpy(out + ((b * numK + k) * panel) * width,
                    in + (k * numN + b * panel) * width, panel * width);
    return;
  }
  // in[n][k]: a transpose of each [panel, K] block, k in cache-sized steps.
  constexpr int64_t kStep = 64;
  for (int64_t b = 0; b < panels; ++b)
    for (int64_t k0 = 0; k0 < numK; k0 += kStep)
      for (int64_t j = 0; j < panel; ++j)
        for (int64_t k = k0; k < std::min(numK, k0 + kStep); ++k)
          std::memcpy(out + ((b * numK + k) * panel + j) * width,
                      in + ((b * panel + j) * numK + k) * width, width);
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
  size_t width = byteWidth(view->kind);
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
