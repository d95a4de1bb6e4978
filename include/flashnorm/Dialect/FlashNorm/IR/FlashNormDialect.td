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
    The `flashnorm` dialect holds the two normalizations
    (`flashnorm.rms_norm`, `flashnorm.layer_norm`) and the two halves a
    deferred normalization is split into: the per-row statistic
    (`flashnorm.rms_inv`, 1/RMS; `flashnorm.layer_inv`, 1/std) and the
    per-row post-scale that applies it after a projection
    (`flashnorm.post_scale`); for a LayerNorm whose f16/bf16 weights cannot
    carry the mean-centering, its mean and 1/std (`flashnorm.layer_stats`)
    and a post-scale that also subtracts the mean's share of the product
    (`flashnorm.centered_post_scale`). These work on ranked tensors whose last
    dimension is the normalized (feature) dimension; every other dimension
    indexes rows (tokens). The GPU lowering adds three ops of its own:
    `flashnorm.gemm_lt` (a cuBLASLt GEMM on a stream),
    `flashnorm.resident` (weights uploaded once per process) and
    `flashnorm.check_alignment` (a caller's device buffer aligned as the
    kernels read it).
  }];
  let useDefaultAttributePrinterParser = 1;
  // gemm_lt returns a GPU async token.
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::gpu::GPUDialect"];
  // What the passes leave on ops for later passes (each a generated
  // <Name>AttrHelper: its name, typed get/set). The dialect verifies their
  // types, so that a malformed mark in the input is an error, not a crash
  // or a silent misreading of a later pass.
  let discardableAttrs = (ins
    // A deferred norm's ops (flashnorm-async-mark): the norm they belong to,
    // what each computes, and which post-scale reads which projection.
    // Kept through the lowering and bufferization; read by the async
    // schedule, the CPU packing and the GPU kernels.
    "::mlir::IntegerAttr":$async_group,
    "::mlir::flashnorm::AsyncRoleAttr":$async_role,
    "::mlir::IntegerAttr":$async_pair,
    // On an scf.forall over a projection's panels that runs as a loop on
    // one core (flashnorm-pack-weights); flashnorm-cpu-codegen makes the
    // others scf.parallel, on OpenMP threads.
    "::mlir::UnitAttr":$serial_panels,
    // On a projection whose weight fold-gains has mean-centered for a
    // LayerNorm, so that defer-scale does not again.
    "::mlir::UnitAttr":$centered_weights,
    // On a projection of a LayerNorm whose f16/bf16 weight fold-gains
    // folded into a checkpoint (fold-plan): the extern global the plan
    // writes the folded weight's column sums to, which defer-scale's
    // centered post-scale reads (a checkpoint's sums are not known before
    // it is read).
    "::mlir::SymbolRefAttr":$column_sums,
    // The same for an f16/bf16 argument weight folded by the prepare
    // function (prepare-function): the index of the argument of the
    // enclosing function, appended by fold-gains, that takes the folded
    // weight's column sums from the prepare function.
    "::mlir::IntegerAttr":$column_sums_argument
  );
  let hasOperationAttrVerify = 1;
  // flashnorm.folded, on function arguments (kFoldedArgAttr).
  let hasRegionArgAttrVerify = 1;
}

def FlashNorm_AsyncRole : I32EnumAttr<"AsyncRole",
    "what an op computes of a deferred norm", [
      // The statistic's ops (1/RMS, or 1/std, of each row).
      I32EnumAttrCase<"stat", 0>,
      // The projection on the raw input.
      I32EnumAttrCase<"proj", 1>,
      // The post-scale, which waits for both.
      I32EnumAttrCase<"post", 2>,
      // A post-scale fused with its element-wise reader
      // (flashnorm-gpu-fuse-post-scales): it schedules as the post-scale.
      I32EnumAttrCase<"post_fused", 3>
    ]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::flashnorm";
}

def FlashNorm_AsyncRoleAttr
    : EnumAttr<FlashNorm_Dialect, FlashNorm_AsyncRole, "async_role"> {
  let assemblyFormat = "`<` $value `>`";
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
