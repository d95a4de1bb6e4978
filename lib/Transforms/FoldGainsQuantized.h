//===- FoldGainsQuantized.h - Gains into quantized weights ------*- C++ -*-===//
//
// The strategies of flashnorm-fold-gains for a projection whose weight is
// dequantized from integers, which no float fold can scale:
// - a per-input-channel factor of the dequantization (`w = q[n, k] * f[k]`,
//   the k-quant / SmoothQuant form) takes an RMSNorm's gain exactly: the
//   factor, a small constant, becomes the fold's target and the integers
//   stay as they are;
// - an int8 weight with one scale per output channel takes it only by
//   requantizing (allow-requantize): inexact, accepted within
//   requantize-tolerance (the RMS error relative to the weight's RMS) and
//   reported with its error.
// A LayerNorm's centering and bias go into neither, and both need the gain
// known now (a constant, not an argument or a checkpoint tensor). Plan,
// then apply, as for the other strategies: `planQuantizedFold` reads the
// IR, `requantize` computes new attributes, only `replaceRequantized`
// changes anything.
//
//===----------------------------------------------------------------------===//
#ifndef FLASHNORM_LIB_TRANSFORMS_FOLDGAINSQUANTIZED_H
#define FLASHNORM_LIB_TRANSFORMS_FOLDGAINSQUANTIZED_H

#include "FoldGainsCheckpoint.h"

#include "flashnorm/Analysis/Projection.h"
#include "flashnorm/Utils/WeightFolder.h"

#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/SetVector.h"

#include <optional>
#include <string>
#include <variant>

namespace mlir::flashnorm {

/// An int8 weight the gain goes into by requantizing (allow-requantize).
struct RequantTarget {
  Projection projection;
  Int8Dequant dequant;
};

/// What a quantized weight can take of one norm's fold.
struct QuantizedFoldLimits {
  /// A LayerNorm: its centering and bias go into no integers.
  bool layer = false;
  /// The gain is a constant (not an argument or a checkpoint tensor).
  bool constantGain = true;
  /// Set with allow-requantize: the largest RMS change (relative) allowed.
  std::optional<double> requantizeTolerance;
};

/// Where a quantized weight takes the gain: its dequantization's
/// per-input-channel factor (a target whose projection is the
/// dequantization, the factor its weight; no attention scale set), or its
/// int8 values, requantized.
using QuantizedFold = std::variant<FoldTarget, RequantTarget>;

/// How the weight of `p` takes the gain: std::nullopt where it is not
/// dequantized in a form these strategies know (the caller's other
/// strategies decide), a failure with `why` where it is but cannot take
/// this fold.
FailureOr<std::optional<QuantizedFold>>
planQuantizedFold(const Projection &p, const QuantizedFoldLimits &limits,
                  std::string &why);

/// `t`'s int8 weight and scales requantized with `gain` folded in, or why
/// not (beyond `tolerance`, with its errors). `errors` gets the errors of
/// an accepted one, for the remark.
FailureOr<Requantized> requantize(const RequantTarget &t, ArrayRef<double> gain,
                                  double tolerance, std::string &errors,
                                  std::string &why);

/// Replaces `t`'s int8 weight and scales with `r`'s; `replacedGlobals`
/// collects the globals they were loaded from.
void replaceRequantized(RewriterBase &rewriter, const RequantTarget &t,
                        const Requantized &r,
                        llvm::SetVector<Operation *> &replacedGlobals);

} // namespace mlir::flashnorm

#endif // FLASHNORM_LIB_TRANSFORMS_FOLDGAINSQUANTIZED_H
