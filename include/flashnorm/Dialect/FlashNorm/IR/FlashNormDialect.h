//===- FlashNormDialect.h - The flashnorm dialect ---------------*- C++ -*-===//
//
// The dialect, its enums and attributes, the discardable attributes the
// passes exchange (declared in FlashNormDialect.td, verified by the
// dialect), and the two facts its ops' verifiers and the passes share: which
// epsilons a norm takes (isNormEpsilon) and the type its statistic is
// computed in (getStatisticType).
//
//===----------------------------------------------------------------------===//
#ifndef FLASHNORM_DIALECT_FLASHNORM_IR_FLASHNORMDIALECT_H
#define FLASHNORM_DIALECT_FLASHNORM_IR_FLASHNORMDIALECT_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/Dialect.h"

#include <cmath>
#include <limits>

// The enums and attributes first: the dialect's discardable attribute
// helpers name them.
#include "flashnorm/Dialect/FlashNorm/IR/FlashNormEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "flashnorm/Dialect/FlashNorm/IR/FlashNormAttrs.h.inc"

#include "flashnorm/Dialect/FlashNorm/IR/FlashNormDialect.h.inc"

namespace mlir::flashnorm {

/// The names of the discardable attributes the dialect declares
/// (FlashNormDialect.td says what each means and the dialect verifies
/// their types), for hasAttr / getAttrOfType / removeAttr.
inline constexpr llvm::StringLiteral kAsyncGroupAttr =
    FlashNormDialect::AsyncGroupAttrHelper::getNameStr();
inline constexpr llvm::StringLiteral kAsyncRoleAttr =
    FlashNormDialect::AsyncRoleAttrHelper::getNameStr();
inline constexpr llvm::StringLiteral kAsyncPairAttr =
    FlashNormDialect::AsyncPairAttrHelper::getNameStr();
inline constexpr llvm::StringLiteral kSerialPanelsAttr =
    FlashNormDialect::SerialPanelsAttrHelper::getNameStr();
inline constexpr llvm::StringLiteral kCenteredWeightsAttr =
    FlashNormDialect::CenteredWeightsAttrHelper::getNameStr();
inline constexpr llvm::StringLiteral kColumnSumsAttr =
    FlashNormDialect::ColumnSumsAttrHelper::getNameStr();
inline constexpr llvm::StringLiteral kColumnSumsArgumentAttr =
    FlashNormDialect::ColumnSumsArgumentAttrHelper::getNameStr();

/// A unit attribute on the arguments of `@f` that take the results of its
/// generated `@f_flashnorm_prepare` (fold-gains' prepare-function), in
/// argument order: folded weights (on the CPU, their panels), and values
/// derived from the weights (a LayerNorm's bias folded through a weight,
/// the column sums of a narrow one) in arguments fold-gains appended.
/// Verified by the dialect (verifyRegionArgAttribute).
inline constexpr llvm::StringLiteral kFoldedArgAttr = "flashnorm.folded";

/// The async role of `op`, or none when it carries no valid mark.
/// The element types a norm (its input, gain and bias) takes: those every
/// pipeline compiles (FlashNorm_NormTensor in the ops' definitions).
inline bool isNormElementType(Type t) {
  return t.isF16() || t.isBF16() || t.isF32() || t.isF64();
}

/// Whether a norm of `inputElt` elements can add `eps` as its statistic
/// does: in f32 but for f64 inputs, where it must be 0 or a normal f32 (past
/// f32's range it is inf, below it 0: GPUs flush subnormals).
inline bool isNormEpsilon(double eps, Type inputElt) {
  if (!(eps >= 0.0) || std::isinf(eps))
    return false;
  return inputElt.isF64() || eps == 0.0 ||
         (eps >= std::numeric_limits<float>::min() &&
          eps <= std::numeric_limits<float>::max());
}

/// The element type of a norm's statistic (rms_inv, layer_inv): f32, or f64
/// for an f64 input, whose 1/RMS rounded to f32 would lose its precision and
/// leave f32's range (a row of 1e-50 has 1/RMS 1e50).
inline Type getStatisticType(Type inputElt) {
  return inputElt.isF64() ? inputElt : Float32Type::get(inputElt.getContext());
}

inline std::optional<AsyncRole> getAsyncRole(Operation *op) {
  if (auto role = op->getAttrOfType<AsyncRoleAttr>(kAsyncRoleAttr))
    return role.getValue();
  return std::nullopt;
}

} // namespace mlir::flashnorm

#endif
