//===- Projection.h - The one notion of "projection" ------------*- C++ -*-===//
//
// Fold, defer and drop all ask the same questions of a matmul-like op that
// consumes a normalized tensor: is the use the activation, is the contracted
// dimension the activation's last (normalized) one, which dimension of the
// weight is contracted, does the result keep the activation's rows, does it
// accumulate into zero, and is the weight a constant. They are answered here
// once, for linalg contractions (matmul with any maps, batch_matmul,
// contraction generics) and tosa.matmul (Projection.cpp), with the weights
// traced to where they live (a constant, a global, an argument, a
// dequantization's factor). The views a normalized tensor reaches its
// projections through (reshapes that regroup rows, slices of whole rows)
// are in RowViews.cpp.
//
//===----------------------------------------------------------------------===//
#ifndef FLASHNORM_ANALYSIS_PROJECTION_H
#define FLASHNORM_ANALYSIS_PROJECTION_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MLProgram/IR/MLProgram.h"
#include "mlir/IR/BuiltinAttributeInterfaces.h"
#include "mlir/IR/Operation.h"

#include <string>

namespace mlir::flashnorm {

/// A matmul-like op contracting the last dimension of its activation.
struct Projection {
  Operation *op = nullptr;
  /// Operand numbers of the activation and of the weight.
  unsigned activationIndex = 0, weightIndex = 0;
  /// Dimension of the weight operand that is contracted with the activation.
  int64_t weightAxis = 0;
  /// The result is [activation rows..., output features]: row r of the
  /// result depends on row r of the activation only.
  bool rowPreserving = false;
  /// The accumulator starts at zero (no bias fused into the init).
  bool zeroInit = false;

  Value getActivation() const { return op->getOperand(activationIndex); }
  Value getWeight() const { return op->getOperand(weightIndex); }
};

/// Whether `init` is a zero accumulator: a zero constant or a fill with
/// zero. A contraction into anything else adds its init (a fused bias, an
/// attention mask), which no scale of its inputs scales.
bool isZeroInit(Value init);

/// Whether `t` is a float narrower than f32 (f16, bf16): a projection of
/// unnormalized rows could overflow there where the normalized one did not
/// (residual streams carry outliers in the thousands; docs/MATH.md §2).
bool isNarrowFloat(Type t);

/// `v` read back through value-preserving conversions (extf, sitofp,
/// uitofp, extsi, extui; with `floatExtensionsOnly`, extf alone): the
/// conversions a multiply-accumulate's body may apply to its inputs.
Value throughWidening(Value v, bool floatExtensionsOnly = false);

/// Whether `op`'s body is `out + c(a) * c(b)` of its two inputs and one
/// init, each c a chain of value-preserving conversions (extf, sitofp,
/// uitofp, extsi, extui; with `floatExtensionsOnly`, extf alone, and the
/// arithmetic float): linear in each input. Upstream's contraction interface
/// also accepts any unary op around the product and the sum (exp(a) * b,
/// tanh(out + a * b), a truncf of the activation), through which no scale
/// moves (docs/MATH.md §2).
bool isMultiplyAccumulate(linalg::LinalgOp op,
                          bool floatExtensionsOnly = false);

/// Matches `use` as the activation operand of a projection; otherwise fails
/// and, if `whyNot` is given, says why in words fit for a remark.
FailureOr<Projection> matchProjection(OpOperand &use,
                                      std::string *whyNot = nullptr);

/// The roles of a two-input contraction's loops and operands, on tensors
/// or buffers, classified once from `linalg::inferContractionDims` (as
/// upstream's `specializeToNamedContraction` does): what fold-gains, the
/// passes that relayout weights and the GPU kernel strategies ask of a
/// projection's indexing.
struct ContractionRoles {
  /// m: the activation's (row) dimensions, n: the weight's, k: the one
  /// contracted dimension, batch: shared by all three operands.
  linalg::ContractionDimensions dims;
  unsigned k = 0;
  /// n, where there is exactly one.
  std::optional<unsigned> n;
  /// Operand numbers of the activation (indexed by m and k) and the weight
  /// (indexed by n and k).
  unsigned activation = 0, weight = 1;
  /// Position of k among the weight's indices: its contracted axis.
  int64_t weightAxis = 0;
  /// k is the weight's last index: a row-major weight is contiguous along
  /// k (N x K, as PyTorch's nn.Linear stores it).
  bool weightKInnermost = false;
  /// The weight is indexed by n and k only, or also by batch dimensions of
  /// extent one (TOSA's batched matmul): a matrix.
  bool weightIsMatrix = false;
  /// The activation's last index is k and the output's indices are the
  /// activation's others, then a dimension the activation does not have:
  /// row r of the result depends on row r of the activation only.
  bool rowsPreserved = false;
  /// The product of the m extents (the rows of a projection), or
  /// ShapedType::kDynamic.
  int64_t rows = 1;
};

/// Classifies `op` with input `activationInput` (0 or 1) as the activation;
/// fails, saying why, unless `op` is a contraction of two inputs into one
/// output over exactly one dimension.
FailureOr<ContractionRoles> classifyContraction(linalg::LinalgOp op,
                                                unsigned activationInput = 0,
                                                std::string *whyNot = nullptr);

/// classifyContraction for a contraction on tensors with one n dimension
/// (what a projection's weight is read by: the passes that relayout weights
/// ask it first); otherwise fails and says why.
FailureOr<ContractionRoles> inferProjectionDims(linalg::LinalgOp op,
                                                std::string *whyNot = nullptr);

/// What a weight is read from, through layout-only ops: a constant, an
/// immutable `ml_program` global, or (where asked for) a function argument.
struct WeightSource {
  /// `arith.constant`, `tosa.const` or the load of a global, and its value
  /// (null for an extern global, whose value is in a checkpoint).
  Operation *constant = nullptr;
  ElementsAttr value;
  /// The global `constant` loads, if it is a load.
  ml_program::GlobalOp global;
  /// Or: the entry-block argument the weight comes from.
  BlockArgument argument;
  /// The contracted dimension, in the constant's (argument's) own shape.
  int64_t axis = 0;
  /// Ops between the weight operand and the constant (`linalg.transpose`,
  /// `tosa.transpose`, `linalg.broadcast`, yield-only generics, unit reshapes),
  /// nearest to the projection first.
  SmallVector<Operation *> chain;
};

/// Whether the layout ops `chain` (a WeightSource's) only transpose and
/// reshape: the stored tensor holds the weight element for element. A
/// broadcast on the way (`linalg.broadcast`, or a generic whose input map
/// drops a dimension or reads a constant index, even of a tensor of full
/// shape) repeats stored elements; a gain folds through it, a relayout that
/// replaces the chain does not.
bool onlyRelayouts(ArrayRef<Operation *> chain);

/// The global an `ml_program` load or store (of any form) names, as it
/// resolves from `op`, or null.
ml_program::GlobalOp getAccessedGlobal(Operation *op);

/// The immutable global `op` loads (`ml_program.global_load_const`, or
/// `global_load` of an immutable global), or null.
ml_program::GlobalOp getLoadedGlobal(Operation *op);

/// Whether `global` is `#ml_program.extern`: its value is in a checkpoint.
bool isExternGlobal(ml_program::GlobalOp global);

/// Whether the sums over k of a stored weight (of shape `stored`, contracted
/// along `storedAxis`; the constant or global `p`'s weight is traced to)
/// are one per output of `p`, in the order of its last dimension: the
/// stored weight and `p`'s weight operand each have one dimension besides
/// k that is not a unit (none where `p` has one output), and the operand's
/// is the loop that indexes the result's last dimension. (A transpose or a
/// unit reshape between them keeps that order; a broadcast of another
/// dimension would add one, and is refused.) A LayerNorm's centered
/// post-scale subtracts the mean's share with these sums.
bool columnSumsFollowOutputs(const Projection &p, ArrayRef<int64_t> stored,
                             int64_t storedAxis);
/// Follows `weight` (contracted along `axis`) back to a constant or a global
/// or, with `allowArgument`, to a function argument.
FailureOr<WeightSource> traceWeight(Value weight, int64_t axis,
                                    bool allowArgument,
                                    std::string *whyNot = nullptr);
inline FailureOr<WeightSource>
traceWeightToConstant(Value weight, int64_t axis,
                      std::string *whyNot = nullptr) {
  return traceWeight(weight, axis, /*allowArgument=*/false, whyNot);
}

/// A weight dequantized from integers (weight-only quantization: extsi or
/// extui, sitofp or uitofp, zero point, scales) by a `linalg.generic` that
/// also multiplies by a per-input-channel factor `f[k]` (activation-aware
/// scaling), reached from the projection through layout-only ops: a gain
/// folds into `f` exactly as into a float weight.
struct KFactorSource {
  linalg::GenericOp dequant;
  /// The operand number of `f` in `dequant`, and the constant it is.
  unsigned factorOperand = 0;
  WeightSource factor;
  /// Layout ops between the weight operand and `dequant`, nearest first.
  SmallVector<Operation *> chain;
};
/// Follows `weight` (contracted along `axis`) to such a dequantization.
FailureOr<KFactorSource> traceWeightToKFactor(Value weight, int64_t axis,
                                              std::string *whyNot = nullptr);

/// A weight dequantized from a constant int8 tensor with one f32 scale per
/// output channel (`w = s[n] * sitofp(extsi(q[n, k]))`, optionally rounded
/// to the weight's type), reached through layout-only ops: what
/// fold-gains' `allow-requantize` can fold a gain into by requantizing.
struct Int8Dequant {
  linalg::GenericOp dequant;
  /// The operand numbers of q and s in `dequant`, and their constants (q's
  /// axis is its contracted one).
  unsigned qOperand = 0, scaleOperand = 0;
  WeightSource q, scale;
  SmallVector<Operation *> chain;
};
FailureOr<Int8Dequant> traceWeightToInt8Dequant(Value weight, int64_t axis,
                                                std::string *whyNot = nullptr);

/// Whether `g` only moves elements (one input, one init, all loops
/// parallel, a body that yields the input): how importers write transposes,
/// broadcasts and copies.
bool isLayoutGeneric(linalg::GenericOp g);

/// True for a reshape (`tensor.expand_shape`, `tensor.collapse_shape`,
/// `tosa.reshape`) that only regroups rows and keeps the last (feature)
/// dimension as it is, or a slice of whole rows (`tensor.extract_slice`,
/// `tosa.slice`: the last token before the LM head): a per-feature gain
/// commutes with it, and a per-row statistic of its result is that of its
/// rows.
bool isRowRegrouping(Operation *op);

/// The uses of `v`, looking through row-regrouping reshapes and row slices
/// (which are not listed themselves); `tensor.dim`s, which read only the
/// shape, are not listed either.
SmallVector<OpOperand *> getUsesThroughRowRegrouping(Value v);

/// A short description of where `v` comes from, for remarks.
std::string describeValue(Value v);

} // namespace mlir::flashnorm

#endif
