//===- WeightFolderKernels.cpp - Weight bytes, folded and counted -------===//
//
// The raw-buffer half of WeightFolder.h: the float codecs (f16 and bf16
// rounded to nearest even from f64, without APFloat), the fold's row kernel
// (vectorized for the host's AVX2 or AVX-512 where it can be, with an exact
// scalar pass where a product lands outside the fast path), and the exact
// passes that count what a fold lost. Nothing here knows attributes:
// WeightFolder.cpp hands these functions the bytes of a constant, and
// flashnorm-fold-checkpoint the bytes of a checkpoint's tensor.
//
//===----------------------------------------------------------------------===//

#include "flashnorm/Utils/WeightFolder.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Threading.h"
#include "llvm/ADT/bit.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
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
// Exact passes (centering, and counting what a fold lost)
//===----------------------------------------------------------------------===//

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
