#ifndef FLASHNORM_DIALECT_TD
#define FLASHNORM_DIALECT_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

def FlashNorm_Dialect : Dialect {
  let name = "flashnorm";
  let cppNamespace = "::mlir::flashnorm";
  let summary = "Normalization ops that FlashNorm rewrites make nearly free";
  let description = [{
    The `flashnorm` dialect holds RMS normalization and the two halves a
    deferred normalization is split into: the per-row statistic
    (`flashnorm.rms_inv`) and the per-row post-scale that applies it after a
    projection (`flashnorm.post_scale`). All ops work on ranked tensors whose
    last dimension is the normalized (feature) dimension; every other
    dimension indexes rows (tokens).
  }];
  let useDefaultAttributePrinterParser = 1;
  // gemm_lt returns a GPU async token.
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::gpu::GPUDialect"];
}

def FlashNorm_GainConvention : I32EnumAttr<"GainConvention",
    "how a norm's gain multiplies the normalized row", [
      I32EnumAttrCase<"plain", 0>,
      I32EnumAttrCase<"one_plus", 1>
    ]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::flashnorm";
}

def FlashNorm_GainConventionAttr
    : EnumAttr<FlashNorm_Dialect, FlashNorm_GainConvention, "gain_convention"> {
  let assemblyFormat = "$value";
}

class FlashNorm_Op<string mnemonic, list<Trait> traits = []>
    : Op<FlashNorm_Dialect, mnemonic, traits>;

#endif // FLASHNORM_DIALECT_TD
