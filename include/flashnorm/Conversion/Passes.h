#ifndef FLASHNORM_CONVERSION_PASSES_H
#define FLASHNORM_CONVERSION_PASSES_H

#include "flashnorm/Dialect/FlashNorm/IR/FlashNormDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Pass/Pass.h"

namespace mlir::flashnorm {

#define GEN_PASS_DECL
#include "flashnorm/Conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "flashnorm/Conversion/Passes.h.inc"

/// Adds the patterns that lower flashnorm ops to linalg on tensors.
void populateLowerToLinalgPatterns(RewritePatternSet &patterns, bool statsF64);

} // namespace mlir::flashnorm

#endif
