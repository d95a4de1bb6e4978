//===- FoldGainsQuantized.cpp - Gains into quantized weights --------------===//
//
// See FoldGainsQuantized.h.
//
//===----------------------------------------------------------------------===//

#include "FoldGainsQuantized.h"

#include "flashnorm/Transforms/ProjectionRewrites.h"
#include "flashnorm/Utils/Remarks.h"

using namespace mlir;
using namespace mlir::flashnorm;

namespace {
/// Whether a dequantized weight reaches only its projection (`dequant` and
/// the layout ops after it have one use each): folding changes what it
/// holds.
bool isUsedOnce(Operation *dequant, ArrayRef<Operation *> chain) {
  return dequant->getResult(0).hasOneUse() &&
         llvm::all_of(
             chain, [](Operation *op) { return op->getResult(0).hasOneUse(); });
}
} // namespace

FailureOr<std::optional<QuantizedFold>> flashnorm::planQuantizedFold(
    const Projection &p, const QuantizedFoldLimits &limits, std::string &why) {
  FailureOr<KFactorSource> kFactor =
      traceWeightToKFactor(p.getWeight(), p.weightAxis);
  if (succeeded(kFactor)) {
    if (limits.layer)
      why = "its weight is quantized: a LayerNorm's mean-centering cannot "
            "fold into the per-input-channel factor of its dequantization";
    else if (!limits.constantGain)
      why = "its weight's per-input-channel factor is a constant but the "
            "gain is not";
    else if (!isUsedOnce(kFactor->dequant, kFactor->chain))
      why = "its dequantized weight has other users";
    else {
      Projection factorUse;
      factorUse.op = kFactor->dequant;
      factorUse.weightIndex = kFactor->factorOperand;
      return std::optional<QuantizedFold>(
          FoldTarget{factorUse, kFactor->factor, std::nullopt});
    }
    return failure();
  }
  // Opt-in: requantizing is inexact.
  if (!limits.requantizeTolerance)
    return std::optional<QuantizedFold>();
  FailureOr<Int8Dequant> requant =
      traceWeightToInt8Dequant(p.getWeight(), p.weightAxis);
  if (failed(requant))
    return std::optional<QuantizedFold>();
  if (limits.layer)
    why = "its weight is quantized: a LayerNorm's mean-centering and bias "
          "are not requantized";
  else if (!limits.constantGain)
    why = "its weight is a constant int8 tensor but the gain is not a "
          "constant";
  else if (!isUsedOnce(requant->dequant, requant->chain))
    why = "its dequantized weight has other users";
  else
    return std::optional<QuantizedFold>(RequantTarget{p, *requant});
  return failure();
}

FailureOr<Requantized>
flashnorm::requantize(const RequantTarget &t, ArrayRef<double> gain,
                      double tolerance, std::string &errors, std::string &why) {
  const Int8Dequant &d = t.dequant;
  std::string what = "the int8 weight of '" +
                     t.projection.op->getName().getStringRef().str() + "'";
  FailureOr<Requantized> r =
      requantizeInt8(d.q.value, d.q.axis, d.scale.value, gain, &why);
  if (failed(r)) {
    why = what + " cannot be requantized: " + why;
    return failure();
  }
  std::string stats =
      "max abs error " + formatNumber(r->maxAbsError) + ", RMS error " +
      formatNumber(r->relRmsError) +
      " of the weight's RMS, output error <= " + formatNumber(r->outputBound) +
      " per unit-RMS row";
  std::string where = " at " + formatLoc(t.projection.op->getLoc());
  if (!(r->relRmsError <= tolerance)) {
    why = "requantizing " + what + where +
          " with the gain exceeds requantize-tolerance=" +
          formatNumber(tolerance) + " (" + stats + ")";
    return failure();
  }
  errors += "; '" + t.projection.op->getName().getStringRef().str() + "'" +
            where + ": " + stats;
  return r;
}

void flashnorm::replaceRequantized(
    RewriterBase &rewriter, const RequantTarget &t, const Requantized &r,
    llvm::SetVector<Operation *> &replacedGlobals) {
  const Int8Dequant &d = t.dequant;
  Projection qUse, scaleUse;
  qUse.op = scaleUse.op = d.dequant;
  qUse.weightIndex = d.qOperand;
  scaleUse.weightIndex = d.scaleOperand;
  replaceWeight(rewriter, qUse, d.q, r.q);
  replaceWeight(rewriter, scaleUse, d.scale, r.scales);
  for (const WeightSource *src : {&d.q, &d.scale})
    if (src->global)
      replacedGlobals.insert(src->global);
}
