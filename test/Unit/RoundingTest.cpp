//===- RoundingTest.cpp - The weight folder's conversions vs APFloat ------===//
//
// The folder converts f64 products to f16/bf16 with its own bit arithmetic
// (APFloat per element is too slow for multi-GB weights). This checks it
// against APFloat's round-to-nearest-even on edge cases and random doubles.
//
//===----------------------------------------------------------------------===//

#include "flashnorm/Utils/WeightFolder.h"

#include "llvm/ADT/APFloat.h"
#include "llvm/ADT/bit.h"

#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <tuple>
#include <vector>

using namespace mlir::flashnorm;

static uint16_t viaAPFloat(double d, const llvm::fltSemantics &sem) {
  llvm::APFloat f(d);
  bool lost;
  f.convert(sem, llvm::APFloat::rmNearestTiesToEven, &lost);
  return static_cast<uint16_t>(f.bitcastToAPInt().getZExtValue());
}

static bool same(uint16_t a, uint16_t b, int expBits, int mantBits) {
  uint16_t expMask = ((1 << expBits) - 1) << mantBits;
  bool aNan = (a & expMask) == expMask && (a & ((1 << mantBits) - 1));
  bool bNan = (b & expMask) == expMask && (b & ((1 << mantBits) - 1));
  return aNan ? bNan : a == b;
}

int main() {
  std::mt19937_64 rng(42);
  std::vector<double> values = {0.0,
                                -0.0,
                                1.0,
                                -1.0,
                                65504.0,
                                65519.99,
                                65520.0,
                                1e300,
                                -1e300,
                                5.96e-8,
                                2.98e-8,
                                2.99e-8,
                                1e-320,
                                3.0e38,
                                3.4e38,
                                3.5e38,
                                std::numeric_limits<double>::infinity(),
                                std::numeric_limits<double>::quiet_NaN(),
                                1.0 + 1.0 / 2048,
                                1.0 + 3.0 / 2048,
                                1.0 + 1.0 / 256,
                                1.0 + 3.0 / 256};
  std::uniform_int_distribution<uint64_t> bits;
  std::uniform_real_distribution<double> mag(-30.0, 20.0);
  for (int i = 0; i < 2000000; ++i) {
    // Log-uniform magnitudes across f16's range, plus raw random bit
    // patterns (NaNs, infinities, subnormals).
    values.push_back((i & 1 ? -1 : 1) * std::exp2(mag(rng)));
    if (i % 8 == 0)
      values.push_back(llvm::bit_cast<double>(bits(rng)));
  }
  // Exact ties between neighbours of both formats.
  for (uint32_t h = 0; h < 0x7c00; ++h) {
    values.push_back(decodeHalf(h) + (decodeHalf(h + 1) - decodeHalf(h)) / 2);
    values.push_back(decodeBFloat(h) +
                     (decodeBFloat(h + 1) - decodeBFloat(h)) / 2);
  }
  unsigned failures = 0;
  for (double d : values) {
    uint16_t h = encodeHalf(d), hRef = viaAPFloat(d, llvm::APFloat::IEEEhalf());
    uint16_t b = encodeBFloat(d), bRef = viaAPFloat(d, llvm::APFloat::BFloat());
    if (!same(h, hRef, 5, 10) && failures++ < 10)
      std::printf("f16 mismatch for %.17g: got 0x%04x, APFloat 0x%04x\n", d, h,
                  hRef);
    if (!same(b, bRef, 8, 7) && failures++ < 10)
      std::printf("bf16 mismatch for %.17g: got 0x%04x, APFloat 0x%04x\n", d, b,
                  bRef);
  }
  // The folding kernel's vectorizable fast path (with its exact fallback):
  // a weight of ones scaled by each value must round like APFloat too.
  for (auto [kind, one, sem] :
       {std::make_tuple(FloatKind::F16, uint16_t(0x3c00),
                        &llvm::APFloat::IEEEhalf()),
        std::make_tuple(FloatKind::BF16, uint16_t(0x3f80),
                        &llvm::APFloat::BFloat())}) {
    // One call per value: a run falls back to the exact encoder as a whole,
    // so runs of one keep every in-range value on the fast path.
    std::vector<uint16_t> out(values.size());
    for (size_t i = 0; i < values.size(); ++i)
      scaleRawAlongAxis(kind, reinterpret_cast<const char *>(&one),
                        /*inSplat=*/false, reinterpret_cast<char *>(&out[i]),
                        /*outer=*/1, values[i], /*inner=*/1, /*ctx=*/nullptr);
    bool isHalf = kind == FloatKind::F16;
    for (size_t i = 0; i < values.size(); ++i) {
      uint16_t ref = viaAPFloat(values[i], *sem);
      if (!same(out[i], ref, isHalf ? 5 : 8, isHalf ? 10 : 7) &&
          failures++ < 10)
        std::printf("%s kernel mismatch for %.17g: got 0x%04x, APFloat "
                    "0x%04x\n",
                    isHalf ? "f16" : "bf16", values[i], out[i], ref);
    }
  }
  // bf16 weights times factors f32 holds exactly take the kernel's f32
  // path (an FMA error-free product, odd then even rounding) in rows of
  // 4096 vector lanes, one f32 factor per row, against APFloat on the exact
  // f64 product: rows of weights whose products stay normal (the fast path
  // throughout; about one element in 2^15 is a double-rounding case, which
  // odd rounding gets right), then rows of any bit pattern (NaNs,
  // infinities, subnormals: the exact fallback).
  {
    std::uniform_int_distribution<uint32_t> half(0, 0xffff);
    std::uniform_int_distribution<uint32_t> moderate(0x2000, 0x5fff);
    std::uniform_real_distribution<double> exponent(-140.0, 140.0);
    std::vector<uint16_t> w(4096), out(4096);
    for (int row = 0; row < 1000; ++row) {
      for (uint16_t &x : w)
        x = static_cast<uint16_t>(
            row < 900 ? moderate(rng) | (half(rng) & 0x8000) : half(rng));
      float g = static_cast<float>(
          (row & 1 ? -1 : 1) *
          std::exp2(row < 900 ? exponent(rng) / 8 : exponent(rng)));
      double scale = g;
      scaleRawAlongAxis(FloatKind::BF16,
                        reinterpret_cast<const char *>(w.data()),
                        /*inSplat=*/false, reinterpret_cast<char *>(out.data()),
                        /*outer=*/1, scale, /*inner=*/w.size(),
                        /*ctx=*/nullptr);
      for (size_t i = 0; i < w.size(); ++i) {
        uint16_t ref =
            viaAPFloat(decodeBFloat(w[i]) * scale, llvm::APFloat::BFloat());
        if (!same(out[i], ref, 8, 7) && failures++ < 10)
          std::printf("bf16 f32-path mismatch for 0x%04x * %.9g: got 0x%04x, "
                      "APFloat 0x%04x\n",
                      w[i], g, out[i], ref);
      }
    }
  }
  // Decoding must be exact for every bit pattern.
  for (uint32_t h = 0; h < 0x10000; ++h) {
    double ref = llvm::APFloat(llvm::APFloat::IEEEhalf(), llvm::APInt(16, h))
                     .convertToDouble();
    double got = decodeHalf(h);
    if (!(got == ref || (std::isnan(got) && std::isnan(ref))) &&
        failures++ < 10)
      std::printf("f16 decode mismatch for 0x%04x\n", h);
    double refB = llvm::APFloat(llvm::APFloat::BFloat(), llvm::APInt(16, h))
                      .convertToDouble();
    double gotB = decodeBFloat(h);
    if (!(gotB == refB || (std::isnan(gotB) && std::isnan(refB))) &&
        failures++ < 10)
      std::printf("bf16 decode mismatch for 0x%04x\n", h);
  }
  std::printf("%zu values, %u mismatches\n", values.size(), failures);
  std::printf(failures ? "FAIL\n" : "PASS\n");
  return failures ? 1 : 0;
}
