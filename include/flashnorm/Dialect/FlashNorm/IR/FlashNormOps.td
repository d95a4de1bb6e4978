#ifndef FLASHNORM_OPS_TD
#define FLASHNORM_OPS_TD

include "flashnorm/Dialect/FlashNorm/IR/FlashNormDialect.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/IR/CommonTypeConstraints.td"
include "mlir/Dialect/GPU/IR/GPUBase.td"

// A norm's input, gain and bias: the float types every pipeline compiles
// (isNormElementType); a post-scale rounds to any float.
def FlashNorm_NormTensor : RankedTensorOf<[F16, BF16, F32, F64]>;
def FlashNorm_Gain : 1DTensorOf<[F16, BF16, F32, F64]>;
def FlashNorm_FloatTensor : RankedTensorOf<[AnyFloat]>;
// A per-row statistic: f32, or f64 for f64 inputs (getStatisticType).
def FlashNorm_Scale : RankedTensorOf<[F32, F64]>;

def FlashNorm_RMSNormOp : FlashNorm_Op<"rms_norm",
    [Pure, AllTypesMatch<["input", "result"]>]> {
  let summary = "RMS normalization over the last dimension, with optional gain";
  let description = [{
    For every row `x` of `input` (all indices but the last),
    `result = x / sqrt(mean(x * x) + epsilon) * G`, where `G` is 1 without a
    gain, `gain` under `plain` and `1 + gain` under `one_plus` (Gemma,
    Qwen3.5). `gain` is 1-D with the size of the last dimension.

    Precision contract: the statistics (sum of squares, mean, 1/RMS) are
    computed in f32, or in f64 when the input is f64; the normalized value is
    multiplied by `G` in that same type (`1 + gain` is formed there, never in
    the gain's own type) and rounded once to the input element type.

    ```mlir
    %y = flashnorm.rms_norm %x gain(%g : tensor<4096xbf16>) eps(1.0e-06)
           convention one_plus : tensor<8x4096xbf16>
    ```
  }];
  let arguments = (ins FlashNorm_NormTensor:$input,
                       Optional<FlashNorm_Gain>:$gain,
                       F64Attr:$epsilon,
                       DefaultValuedAttr<FlashNorm_GainConventionAttr,
                         "::mlir::flashnorm::GainConvention::plain">:$gain_convention);
  let results = (outs FlashNorm_NormTensor:$result);
  let assemblyFormat = [{
    $input (`gain` `(` $gain^ `:` type($gain) `)`)?
    custom<EpsilonAndConvention>($epsilon, $gain_convention) attr-dict `:`
    type($input)
  }];
  let hasVerifier = 1;
  let builders = [
    OpBuilder<(ins "::mlir::Value":$input, "::mlir::Value":$gain,
                   "double":$epsilon,
                   CArg<"::mlir::flashnorm::GainConvention",
                        "::mlir::flashnorm::GainConvention::plain">:$convention)>
  ];
  let extraClassDeclaration = [{
    /// Size of the normalized (last) dimension; dynamic if unknown.
    int64_t getFeatureSize() {
      return getInput().getType().getShape().back();
    }
  }];
}

def FlashNorm_RMSInvOp : FlashNorm_Op<"rms_inv", [Pure]> {
  let summary = "Per-row 1/RMS of a tensor, in f32 (f64 for f64 inputs)";
  let description = [{
    `result[r] = 1 / sqrt(mean_k(input[r, k]^2) + epsilon)`, one value per row
    (all indices of `input` but the last). The statistics are accumulated in
    f32 or wider; the result is f32, or f64 for an f64 input (rounded to f32,
    its 1/RMS would lose f64's precision and range). This is the half of a
    deferred RMS norm that runs concurrently with the projection of the raw
    input.

    ```mlir
    %s = flashnorm.rms_inv %x eps(1.0e-06) : tensor<8x4096xf16> -> tensor<8xf32>
    ```
  }];
  let arguments = (ins FlashNorm_NormTensor:$input, F64Attr:$epsilon);
  let results = (outs FlashNorm_Scale:$result);
  let assemblyFormat = [{
    $input `eps` `(` $epsilon `)` attr-dict `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
  let builders = [
    OpBuilder<(ins "::mlir::Value":$input, "double":$epsilon)>
  ];
}

def FlashNorm_PostScaleOp : FlashNorm_Op<"post_scale", [Pure]> {
  let summary = "Multiplies each row of a tensor by that row's scale";
  let description = [{
    `result[r, n] = round(input[r, n] * scale[r])`: the product is formed in
    f32 (f64 for an f64 input or scale) and rounded once to the result
    element type, so an unnormalized f32 accumulator can be scaled before it
    is narrowed.
    A row whose scale is 0 is 0, whatever its input: a statistic is 0 only
    where the row's mean square overflowed f32, where the normalize-first
    original is 0 too, while the raw product may have overflowed to inf
    (inf * 0 would be NaN).
    `scale` has the shape of `input` without its last dimension; `result` has
    the shape of `input` and any float element type.

    ```mlir
    %z = flashnorm.post_scale %acc, %s : tensor<8x1024xf32>, tensor<8xf32>
           -> tensor<8x1024xf16>
    ```
  }];
  let arguments = (ins FlashNorm_FloatTensor:$input, FlashNorm_Scale:$scale);
  let results = (outs FlashNorm_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $scale attr-dict `:` type($input) `,` type($scale) `->`
    type($result)
  }];
  let hasVerifier = 1;
}

def FlashNorm_LayerNormOp : FlashNorm_Op<"layer_norm",
    [Pure, AttrSizedOperandSegments, AllTypesMatch<["input", "result"]>]> {
  let summary = "Layer normalization over the last dimension";
  let description = [{
    For every row `x` of `input`,
    `result = (x - mean(x)) / sqrt(var(x) + epsilon) * gain + bias` with
    `var(x) = mean((x - mean(x))^2)`; `gain` and `bias` are optional 1-D
    tensors of the last dimension's size.

    Precision contract: mean and variance are computed in two passes in f32
    (f64 for f64 inputs), never as E[x^2] - E[x]^2; gain and bias are applied
    in that type and the result is rounded once to the input element type.

    ```mlir
    %y = flashnorm.layer_norm %x gain(%g : tensor<768xf32>)
           bias(%b : tensor<768xf32>) eps(1.0e-05) : tensor<8x768xf32>
    ```
  }];
  let arguments = (ins FlashNorm_NormTensor:$input,
                       Optional<FlashNorm_Gain>:$gain,
                       Optional<FlashNorm_Gain>:$bias,
                       F64Attr:$epsilon);
  let results = (outs FlashNorm_NormTensor:$result);
  let assemblyFormat = [{
    $input (`gain` `(` $gain^ `:` type($gain) `)`)?
    (`bias` `(` $bias^ `:` type($bias) `)`)? `eps` `(` $epsilon `)`
    attr-dict `:` type($input)
  }];
  let hasVerifier = 1;
  let builders = [
    OpBuilder<(ins "::mlir::Value":$input, "::mlir::Value":$gain,
                   "::mlir::Value":$bias, "double":$epsilon)>
  ];
  let extraClassDeclaration = [{
    int64_t getFeatureSize() {
      return getInput().getType().getShape().back();
    }
  }];
}

def FlashNorm_LayerInvOp : FlashNorm_Op<"layer_inv", [Pure]> {
  let summary =
      "Per-row 1/standard deviation of a tensor, in f32 (f64 for f64 inputs)";
  let description = [{
    `result[r] = 1 / sqrt(var_k(input[r, k]) + epsilon)` with the variance
    computed in two passes (mean first) in f32 or wider; the result is f32,
    or f64 for an f64 input, as rms_inv's. The statistic a
    deferred layer norm applies after a projection whose weights were
    mean-centered.

    ```mlir
    %s = flashnorm.layer_inv %x eps(1.0e-05) : tensor<8x768xf16> -> tensor<8xf32>
    ```
  }];
  let arguments = (ins FlashNorm_NormTensor:$input, F64Attr:$epsilon);
  let results = (outs FlashNorm_Scale:$result);
  let assemblyFormat = [{
    $input `eps` `(` $epsilon `)` attr-dict `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
  let builders = [
    OpBuilder<(ins "::mlir::Value":$input, "double":$epsilon)>
  ];
}

def FlashNorm_LayerStatsOp : FlashNorm_Op<"layer_stats",
    [Pure, AllTypesMatch<["mean", "inv"]>]> {
  let summary = "Per-row mean and 1/standard deviation of a tensor";
  let description = [{
    `mean[r] = mean_k(input[r, k])` and
    `inv[r] = 1 / sqrt(var_k(input[r, k]) + epsilon)`, computed as layer_inv
    computes its result (two passes, in f32 or wider; f64 for an f64 input):
    `inv` is layer_inv's. The statistics of a deferred LayerNorm whose
    weights cannot carry the mean-centering (f16, bf16): its post-scale
    (`flashnorm.centered_post_scale`) subtracts the mean's share of the
    product instead.

    ```mlir
    %mean, %inv = flashnorm.layer_stats %x eps(1.0e-05)
                    : tensor<8x768xbf16> -> tensor<8xf32>
    ```
  }];
  let arguments = (ins FlashNorm_NormTensor:$input, F64Attr:$epsilon);
  let results = (outs FlashNorm_Scale:$mean, FlashNorm_Scale:$inv);
  let assemblyFormat = [{
    $input `eps` `(` $epsilon `)` attr-dict `:` type($input) `->` type($mean)
  }];
  let hasVerifier = 1;
  let builders = [
    OpBuilder<(ins "::mlir::Value":$input, "double":$epsilon)>
  ];
}

def FlashNorm_CenteredPostScaleOp : FlashNorm_Op<"centered_post_scale",
    [Pure, AllTypesMatch<["scale", "mean"]>]> {
  let summary = "A post-scale that also centers each row of a product";
  let description = [{
    `result[r, n] = round((input[r, n] - mean[r] * colsum[n]) * scale[r])`,
    formed in the type of `scale` (f32, or f64) and rounded once to the
    result element type. With `input = x W` (the projection of the raw rows,
    accumulated in f32) and `colsum[n] = sum_k W[k, n]` (the column sums of
    the weight exactly as stored), `input[r, n] - mean[r] * colsum[n]` is
    `(x - mean(x)) W`: the mean-centering of a deferred LayerNorm applied
    after the projection, for weights that cannot carry it (docs/MATH.md
    §4). As for post_scale, a row whose scale is 0 is 0.
    `scale` and `mean` have the shape of `input` without its last dimension,
    `colsum` the size of that dimension; the three have one element type.

    ```mlir
    %z = flashnorm.centered_post_scale %acc, %inv, %mean, %colsum
           : tensor<8x1024xf32>, tensor<8xf32>, tensor<1024xf32>
           -> tensor<8x1024xbf16>
    ```
  }];
  let arguments = (ins FlashNorm_FloatTensor:$input, FlashNorm_Scale:$scale,
                       FlashNorm_Scale:$mean,
                       1DTensorOf<[F32, F64]>:$colsum);
  let results = (outs FlashNorm_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $scale `,` $mean `,` $colsum attr-dict `:` type($input) `,`
    type($scale) `,` type($colsum) `->` type($result)
  }];
  let hasVerifier = 1;
}

def FlashNorm_GemmLtOp : FlashNorm_Op<"gemm_lt", [GPU_AsyncOpInterface]> {
  let summary = "A projection on a GPU stream through cuBLASLt";
  let description = [{
    `c = a * b` (or `a * b^T` with `transpose_b`, the PyTorch Linear layout)
    on device buffers, run by cuBLASLt on the stream of its async dependency:
    `a` is M x K, `b` is K x N (N x K), both f32, f16 or bf16; `c` is M x N
    and is overwritten. The products are summed in f32 and rounded once to
    `c`'s element type: f32, the accumulator type of a deferred projection
    (docs/MATH.md §2), or f16/bf16 when the GEMM writes the projection's
    post-scaled output from an activation `flashnorm-gpu-kernels` scaled
    first. Built by `flashnorm-gpu-kernels{gemm=...}`; lowered by
    `gpu-to-llvm` (through the dialect's LLVM conversion interface) to a
    call of `mgpuFlashNormGemmLt` in the `flashnorm_cublaslt` runtime
    library.

    ```mlir
    %t1 = flashnorm.gemm_lt [%t0] %x, %w, %y
            : memref<16x576xf16>, memref<576x1536xf16>, memref<16x1536xf32>
    %t2 = flashnorm.gemm_lt [%t1] %xs, %w, %o transpose_b
            : memref<16x576xbf16>, memref<1536x576xbf16>, memref<16x1536xbf16>
    ```
  }];
  let arguments = (ins Variadic<GPU_AsyncToken>:$asyncDependencies,
                       Arg<MemRefRankOf<[F32, F16, BF16], [2]>, "",
                           [MemRead]>:$a,
                       Arg<MemRefRankOf<[F32, F16, BF16], [2]>, "",
                           [MemRead]>:$b,
                       Arg<MemRefRankOf<[F32, F16, BF16], [2]>, "",
                           [MemWrite]>:$c,
                       UnitAttr:$transpose_b);
  let results = (outs GPU_AsyncToken:$asyncToken);
  let assemblyFormat = [{
    (` ` `[` $asyncDependencies^ `]`)? $a `,` $b `,` $c
    (`transpose_b` $transpose_b^)? attr-dict `:` type($a) `,` type($b) `,`
    type($c)
  }];
  let hasVerifier = 1;
}

def FlashNorm_ResidentOp : FlashNorm_Op<"resident",
    [GPU_AsyncOpInterface, AllTypesMatch<["host", "device"]>]> {
  let summary = "The device copy of a constant, made once per process";
  let description = [{
    A device buffer holding the contents of the host buffer `host`, which must
    be a constant (a `memref.get_global` of a `constant` global: its address
    and contents never change). The first execution in a process allocates
    the device buffer and copies `host` into it; every later one returns the
    same buffer without moving a byte. The buffer belongs to the runtime and
    lives as long as the process: the program never writes or frees it.
    Built by `flashnorm-gpu-streams` for the constants (weights) a device
    function reads, so that repeated calls move no weight bytes; lowered by `gpu-to-llvm`
    (through the dialect's LLVM conversion interface) to a call of
    `mgpuFlashNormResident` in the `flashnorm_cuda_runtime` library, which
    completes the upload before it returns, so the token orders nothing new.

    ```mlir
    %w_dev, %t1 = flashnorm.resident [%t0] %w : memref<576x1536xbf16>
    ```
  }];
  let arguments = (ins Variadic<GPU_AsyncToken>:$asyncDependencies,
                       Arg<AnyStaticShapeMemRef, "", [MemRead]>:$host);
  let results = (outs AnyStaticShapeMemRef:$device,
                      GPU_AsyncToken:$asyncToken);
  let assemblyFormat = [{
    (` ` `[` $asyncDependencies^ `]`)? $host attr-dict `:` type($host)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Integers and floats of 8, 16, 32 or 64 bits: elements whose bytes
    /// the lowering counts as the runtime copies them.
    static bool isResidentElementType(::mlir::Type type);
  }];
}

def FlashNorm_CheckAlignmentOp : FlashNorm_Op<"check_alignment",
    [MemoryEffects<[MemWrite]>]> {
  let summary = "Aborts unless a caller's device buffer is aligned";
  let description = [{
    Checks on the host that the aligned pointer of `buffer` is a multiple of
    `alignment` bytes, and otherwise ends the process with a message on
    stderr naming `what`, the address and the alignment. Kernels read
    device buffers in vectors as wide as a driver allocation's alignment
    allows; a caller's view at an element offset would instead fault as a
    misaligned address in whichever kernel reads it first, an error the
    driver makes sticky for the whole context. Built by
    `flashnorm-gpu-streams` for the arguments of a function that takes
    device buffers (`host-buffers=false`), before any device work; lowered
    to a call of `mgpuFlashNormCheckAlignment` in the
    `flashnorm_cuda_runtime` library. (Its write effect, on no buffer, keeps
    it from being erased as unused.)

    ```mlir
    flashnorm.check_alignment %x, 16, "argument #0 of @decode" : memref<16x4096xbf16>
    ```
  }];
  let arguments = (ins AnyMemRef:$buffer,
                       ConfinedAttr<I64Attr, [IntPositive]>:$alignment,
                       StrAttr:$what);
  let assemblyFormat = [{
    $buffer `,` $alignment `,` $what attr-dict `:` type($buffer)
  }];
  let hasVerifier = 1;
}

#endif // FLASHNORM_OPS_TD
