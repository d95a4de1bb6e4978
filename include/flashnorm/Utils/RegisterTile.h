//===- RegisterTile.h - The CPU micro-kernels' register tiles ---*- C++ -*-===//
//
// flashnorm-pack-weights' panels and flashnorm-cpu-codegen's tiles are sized
// by one rule, from the vector register file the generated code runs on: a
// tile's accumulators take half of the registers (the other half holds the
// weight vectors and the broadcast activations), so that nothing spills.
// The code is compiled for the host's CPU features, so by default the
// register file is the host's: an AVX2 machine gets 8-lane tiles, an
// AVX-512 one 16-lane tiles twice as many.
//
//===----------------------------------------------------------------------===//
#ifndef FLASHNORM_UTILS_REGISTERTILE_H
#define FLASHNORM_UTILS_REGISTERTILE_H

#include "mlir/Support/LLVM.h"
#include "llvm/Support/LogicalResult.h"

#include <cstdint>

namespace mlir::flashnorm {

struct RegisterTile {
  /// f32 lanes per vector register, and vector registers.
  int64_t lanes = 16, registers = 32;

  /// A decode step's panel: 8 vectors of outputs, 8 independent FMA chains
  /// (128 outputs on AVX-512, 64 on AVX2).
  int64_t decodeOutputs() const { return 8 * lanes; }
  /// A decode tile on a weight nothing packed: half the registers of
  /// outputs (256 on AVX-512, 64 on AVX2).
  int64_t wideOutputs() const { return registers / 2 * lanes; }
  /// A prefill tile: rows by two vectors of outputs, half the registers of
  /// accumulators (8 x 32 on AVX-512, 4 x 16 on AVX2).
  int64_t prefillRows() const { return registers / 4; }
  int64_t prefillOutputs() const { return 2 * lanes; }
  /// The split-k kernel's tile (a weight contiguous along k): rows by
  /// outputs of one vector of partial sums each, half the registers of
  /// accumulators (4 x 4 on AVX-512, 2 x 4 on AVX2; a single row takes 8
  /// outputs).
  int64_t dotRows() const { return registers / 8; }
  int64_t dotAccumulators() const { return registers / 2; }
};

/// The bytes of activation a packed projection holds in cache at once
/// (the default of flashnorm-pack-weights' `activation-block-bytes`): half
/// of the 512 KiB L2 of the AVX2 machine measured (PERFORMANCE.md), a block
/// in L2 beside the panels that stream past it.
inline constexpr int64_t kActivationBlockBytes = 256 << 10;

/// What a pass says of a `vector-bits` that registerTileFor refuses.
inline constexpr const char *kVectorBitsValues =
    "vector-bits must be 0 (this machine's), 128, 256 or 512";

/// The tile for `bits`-wide vector registers: 512 (32 registers, as
/// AVX-512), 256 (16, as AVX2), 128 (16, as SSE); 0: the host's.
FailureOr<RegisterTile> registerTileFor(int64_t bits);

/// The width in bits of the host's vector registers (512, 256 or 128),
/// read once per process.
int64_t hostVectorBits();

/// Whether the host converts f32 to bf16 in vector registers (AVX512-BF16,
/// AVX-NE-CONVERT). Without them LLVM lowers each element's conversion to a
/// call of a runtime function (__truncsfbf2), even in a vector loop.
bool hostConvertsBF16();

} // namespace mlir::flashnorm

#endif
