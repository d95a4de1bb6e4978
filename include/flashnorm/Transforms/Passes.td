#ifndef FLASHNORM_TRANSFORMS_PASSES_TD
#define FLASHNORM_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def Raise : Pass<"flashnorm-raise", "func::FuncOp"> {
  let summary = "Recognize RMSNorm and LayerNorm in frontend IR";
  let description = [{
    Rewrites into `flashnorm.rms_norm` / `flashnorm.layer_norm` every
    normalization written with upstream ops: `arith`/`math` on tensors, TOSA
    (`tosa.mul`, `tosa.pow`, `tosa.reduce_sum`, `tosa.rsqrt`,
    `tosa.reciprocal`, ...), and linalg (`linalg.generic`, `linalg.reduce`,
    named element-wise ops, `linalg.broadcast`), in any mix, with f16/bf16
    inputs cast to f32 for the statistics and back before or after the gain,
    `one_plus` gains, and reshaped or broadcast gains and biases.

    Recognition is by symbolic interpretation: from a candidate input `x`
    (found behind each reduction over the last dimension) every derived
    value is given a closed form in `x`, and a value is raised only when its
    form is exactly `x / sqrt(mean(x^2) + eps) * G` (or the LayerNorm form,
    with a two-pass variance) with eps > 0 and no stray factor. Anything
    else is left alone; a computation that looks like a norm but is not one
    (no epsilon, an extra scale) is reported.

    Remarks: `--remarks-filter=flashnorm`.
  }];
  let dependentDialects = [
    "::mlir::flashnorm::FlashNormDialect",
    "::mlir::tensor::TensorDialect",
    "::mlir::arith::ArithDialect"
  ];
  let options = [
    Option<"scaleTolerance", "scale-tolerance", "double", /*default=*/"1e-5",
           "Relative tolerance on constant factors (1/K written as a rounded "
           "constant), in (0, 1e-2]; a factor further from 1 than this "
           "becomes part of the norm's gain">,
  ];
  let statistics = [
    Statistic<"numRaised", "raised-norms", "Norms raised">,
  ];
}

def FoldGains : Pass<"flashnorm-fold-gains", "ModuleOp"> {
  let summary = "Fold each norm's gain (and a LayerNorm's bias and "
                "centering) into the weights of its projections";
  let description = [{
    For a `flashnorm.rms_norm` or `flashnorm.layer_norm` with a constant
    gain whose every user is a projection with a constant weight, replaces
    each weight `W` by `W* = diag(G) W` (G = gain, or 1 + gain under
    `one_plus`) and drops the gain from the norm (docs/MATH.md §1); a
    LayerNorm's bias becomes a bias of each projection, and its
    mean-centering goes into f32 and f64 weights (§4). The product is formed
    in f64 from the raw buffers and rounded once to the weight's element
    type; `dense_resource` weights stay `dense_resource`. A weight that has
    other users is cloned, never changed in place. A fold that would
    overflow the weight's type, or fall mostly below its normal range, is
    refused (docs/NUMERICS.md).

    Projections: `linalg.matmul` (any indexing maps that contract the
    activation's last dimension), `linalg.batch_matmul`, contraction
    `linalg.generic`s, and `tosa.matmul`, read through reshapes that keep
    the feature dimension and slices of whole rows (the last token before
    the LM head); weights are `arith.constant`, `tosa.const` or immutable
    `ml_program` globals, possibly through `linalg.transpose`,
    `tosa.transpose` or `linalg.broadcast`, or the per-input-channel factor
    of an int8 dequantization. If a projection's weight cannot take the
    fold, nothing is folded for that norm and a remark names that user. A
    user that is not a projection of the norm at all (the residual add of a
    post-norm block, as in BERT) keeps the gained norm: the projections
    read a weightless copy of it instead, and the norm stays for that user
    (`partial`, on by default; with `partial=false` such a norm is not
    folded). A reshape or row slice that both read is copied onto the
    weightless norm for the projections (views: nothing is computed twice).

    Weights as function arguments (`prepare-function=true`): for a function
    `@f` whose projection weights are arguments (and whose gains are
    arguments or constants), the folding moves into a companion function
    `@f_flashnorm_prepare` that takes `@f`'s arguments and returns the
    folded weights, in increasing argument order. `@f` then expects the
    folded values at those argument positions, each marked with the argument
    attribute `flashnorm.folded`; gains stay in the signature, unused. Every
    `func.call @f` in the module is rewritten to call the prepare function
    first, so the module computes what it computed before; callers outside
    it call `@f_flashnorm_prepare` once and reuse its results. A weight
    argument with other users, and a LayerNorm bias, are not folded this
    way (reported).

    Weights in a checkpoint (`fold-plan=FILE`): a weight loaded from an
    immutable `ml_program.global` that holds its value is folded into a new
    global `<name>.flashnorm`. An extern one (`#ml_program.extern`, its
    bytes in a checkpoint) cannot be folded here: with `fold-plan`, the
    pass records the fold (source tensor, gain as a checkpoint tensor or
    values, axis, centering, dtype) in FILE, points the projection at a new
    extern global `<name>.flashnorm` (a LayerNorm bias at
    `<name>.flashnorm_bias`) and lists the tensors nothing loads any more;
    `flashnorm-fold-checkpoint` applies the plan to the checkpoint. No
    weight bytes enter the IR. Without `fold-plan` such norms are refused
    with a warning.

    Attention scale (`fold-attention-scale`, on by default): a query
    projection whose result reaches the attention logits only through
    linear single-use ops (reshapes, transposes, casts, a constant bias add)
    and then ops linear in it (a rotary embedding reads q twice) also takes
    the constant the logits (or q) are multiplied by, folded with the gain
    in one rounding (through a fold plan too: its gain vector is scaled);
    the multiply is removed and the biases on the way are scaled. The key
    side is never scaled (what a KV cache stores is unchanged); a norm on
    the way (QK-norm) stops it.

    Quantized weights (a `linalg.generic` dequantizing integers): a gain
    folds exactly into a per-input-channel factor of the dequantization;
    otherwise the norm is refused here and defer-scale defers it without
    folding. With `allow-requantize`, an int8 weight with one scale per
    output channel takes the gain by requantizing per channel
    (`s' = max |s q g| / 127`, `q' = round(s q g / s')`); the remark gives
    the largest and RMS errors against the exactly folded weight and a bound
    on the output error of a unit-RMS row, and a requantization whose RMS
    error exceeds `requantize-tolerance` of the weight's RMS is refused.

    Remarks: run with `--remarks-filter=flashnorm` (add
    `--remark-format=emitRemark` for compiler-style diagnostics).
  }];
  let dependentDialects = [
    "::mlir::flashnorm::FlashNormDialect",
    "::mlir::func::FuncDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::tensor::TensorDialect",
    "::mlir::arith::ArithDialect",
    "::mlir::ml_program::MLProgramDialect"
  ];
  let options = [
    Option<"cloneSharedWeights", "clone-shared-weights", "bool",
           /*default=*/"true",
           "Clone a weight that has users besides the projection (e.g. a "
           "tied embedding) and fold the clone; when false, such a norm is "
           "left unfolded so no weight memory is duplicated">,
    Option<"partial", "partial", "bool", /*default=*/"true",
           "Fold the gain of a norm that also has users that are not "
           "projections (those keep the gained norm); when false such norms "
           "are left alone">,
    Option<"prepareFunction", "prepare-function", "bool", /*default=*/"false",
           "Fold gains into weights that are function arguments through a "
           "companion @<fn>_flashnorm_prepare function">,
    Option<"foldPlan", "fold-plan", "std::string", /*default=*/"\"\"",
           "Fold weights that are extern ml_program globals by writing the "
           "folds to this file (a plan for flashnorm-fold-checkpoint) and "
           "loading new globals (default: none, such norms are refused)">,
    Option<"foldAttentionScaleOpt", "fold-attention-scale", "bool",
           /*default=*/"true",
           "Fold the constant attention scale that a query projection's "
           "logits (or q) are multiplied by into its weight, with the gain "
           "(one rounding)">,
    Option<"allowRequantize", "allow-requantize", "bool", /*default=*/"false",
           "Fold a gain into an int8 weight with per-output-channel scales "
           "by requantizing it (new scales and integers; inexact, each "
           "reported with its errors)">,
    Option<"requantizeTolerance", "requantize-tolerance", "double",
           /*default=*/"0.01",
           "With allow-requantize: refuse a requantization whose RMS error "
           "exceeds this fraction of the folded weight's RMS">,
  ];
  let statistics = [
    Statistic<"numFolded", "folded-norms", "Norms whose gain was folded">,
  ];
}

def DeferScale : Pass<"flashnorm-defer-scale", "func::FuncOp"> {
  let summary = "Run projections on the raw input and post-scale by 1/RMS "
                "(or 1/std)";
  let description = [{
    Rewrites `projection(rms_norm(x))` into `post_scale(projection(x),
    rms_inv(x))` (docs/MATH.md §2), and `projection(layer_norm(x))` into
    `post_scale(projection'(x), layer_inv(x))` on mean-centered weights
    (§4); f16 and bf16 weights cannot carry the centering, so their
    projections are followed by `centered_post_scale(projection(x), 1/std,
    mean, colsum)` with both statistics from one `layer_stats(x)` and the
    column sums of the weight as stored, summed at compile time (a constant
    weight) or by flashnorm-fold-checkpoint (a checkpoint's weight whose
    fold fold-gains planned: the projection's `flashnorm.column_sums` names
    their global). The projection no longer waits for
    the reduction. All projections
    of one norm share one statistic (one per input and epsilon). Reshapes
    that keep the feature dimension and slices of whole rows are read
    through; the statistic of a sliced row is taken of that row alone. A
    norm whose gain fold-gains left (argument weights without the prepare
    function) is deferred too: the projections read `x * g`, formed in f32
    and rounded once (not for f16 rows, where it could overflow). The
    post-scale replaces the projection's result, so it precedes any bias
    add. A projection whose result is f16 or
    bf16 is rebuilt to accumulate and return f32; the post-scale rounds to
    the original type, so the unnormalized product never overflows a narrow
    type. A projection that accumulates into a non-zero init (a fused bias)
    is not deferred.

    Remarks: `--remarks-filter=flashnorm`.
  }];
  let dependentDialects = [
    "::mlir::flashnorm::FlashNormDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::tensor::TensorDialect",
    "::mlir::arith::ArithDialect"
  ];
  let options = [
    Option<"partial", "partial", "bool", /*default=*/"true",
           "Defer the projections of a norm that also has other users (those "
           "keep the norm); when false such norms are left alone">,
  ];
  let statistics = [
    Statistic<"numDeferred", "deferred-norms", "Norms deferred">,
  ];
}

def MoveScale : Pass<"flashnorm-move-scale", "func::FuncOp"> {
  let summary = "Move post-scales past the next projection (gated MLPs)";
  let description = [{
    Where a projection's input is an element-wise function of post-scaled
    values (`flashnorm.post_scale` of a statistic) that is homogeneous in
    some of their scales, those post-scales are stripped and applied to the
    projection's result instead, exactly:
    `down(silu(s g) * (s u)) = s (.)row down(silu(s g) * u)`. SwiGLU and
    GeGLU move the up path's scale (the gate's stays before its
    non-homogeneous activation); ReLU and ReGLU, positively homogeneous,
    move every scale (`s^2` as two post-scales). The element-wise ops between
    must each have one use and compute in f32, f64 or bf16; the projection
    must preserve rows and accumulate into zero. A narrow projection is
    rebuilt to accumulate in f32, as in defer-scale. A move whose added
    post-scales would cost more element-wise bytes than the ones it removes
    is refused (a post-scale that rounds f32 to bf16 is stripped only where
    a generic reads it and can round in its body).

    A query's post-scale whose values reach the attention logits only
    through ops linear in q (reshapes, transposes, slices, concatenations,
    a rotary embedding `q cos + rotate_half(q) sin`) scales the logits' rows;
    where the logits are multiplied by a constant next, in an element-wise
    generic (the attention scale fold-gains could not fold into the query
    weight), that generic multiplies by the constant times the row's scale
    and the post-scale goes: `softmax(c (s q) k^T) = softmax((c s) q k^T)`.
    Keys, and so what a KV cache stores, are never touched.

    Remarks: `--remarks-filter=flashnorm`, with the scales moved and the
    element-wise bytes per call saved.
  }];
  let dependentDialects = [
    "::mlir::flashnorm::FlashNormDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::tensor::TensorDialect",
    "::mlir::arith::ArithDialect",
    "::mlir::tosa::TosaDialect"
  ];
  let statistics = [
    Statistic<"numMoved", "moved-scales",
              "Projections whose input's post-scales moved past them">,
  ];
}

def DropRedundant : Pass<"flashnorm-drop-redundant", "func::FuncOp"> {
  let summary = "Remove RMS norms whose effect a later norm subsumes";
  let description = [{
    Exact (always on), docs/MATH.md §3(a): `rms_norm(c * rms_norm(x, e1), g,
    e2)` with a weightless (or uniform constant gain) inner norm and an
    optional uniform constant multiply `c != 0` becomes `rms_norm(x, g', e')`
    with `e' = e1 e2 / (c^2 + e2)` and `g' = g c / sqrt(c^2 + e2)`.

    Cancellation, §3(b): a weightless norm feeding a bias-free projection
    whose output reaches a second norm only through row-preserving reshapes,
    transposes and slices. The first norm's scale cancels exactly when the
    second norm's epsilon is 0 (always rewritten); otherwise only with
    `allow-approximate`, each such rewrite reported with its error bound.

    Remarks: `--remarks-filter=flashnorm`.
  }];
  let dependentDialects = [
    "::mlir::flashnorm::FlashNormDialect",
    "::mlir::arith::ArithDialect"
  ];
  let options = [
    Option<"allowApproximate", "allow-approximate", "bool", /*default=*/"false",
           "Also cancel a norm before an eps > 0 norm (§3(b)); inexact, each "
           "rewrite is reported with its relative error bound">,
    Option<"reportRefusals", "report-refusals", "bool", /*default=*/"true",
           "Report each norm left as it is, and why, as a remark (--flashnorm "
           "runs the pass before and after fold-gains; only the second run, "
           "which sees the folded gains, reports them)">,
  ];
  let statistics = [
    Statistic<"numRewritten", "rewritten-norms",
              "Norms merged or cancelled">,
  ];
}

#endif
