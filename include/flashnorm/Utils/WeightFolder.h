//===- WeightFolder.h - Scale constant weights on their raw buffers -------===//
//
// The one place where flashnorm touches weight bytes: docs/MATH.md §1 folds a
// per-feature gain into a weight. Element types are dispatched once per
// tensor, the product is formed in f64 and rounded once (round to nearest
// even) to the weight's element type, without per-element APFloat.
//
//===----------------------------------------------------------------------===//
#ifndef FLASHNORM_UTILS_WEIGHTFOLDER_H
#define FLASHNORM_UTILS_WEIGHTFOLDER_H

#include "mlir/IR/BuiltinAttributeInterfaces.h"
#include "mlir/Support/LLVM.h"

#include <cstdint>
#include <string>

namespace mlir {
class MLIRContext;
namespace flashnorm {

/// Element types the folder reads and writes.
enum class FloatKind { F16, BF16, F32, F64 };

/// The kind of `type`, or nullopt if it is not a supported float type.
std::optional<FloatKind> getFloatKind(Type type);

/// Bit-exact conversions used by the folder (exposed for tests).
double decodeHalf(uint16_t bits);
double decodeBFloat(uint16_t bits);
/// Round `value` to the nearest f16 / bf16, ties to even, in one step.
uint16_t encodeHalf(double value);
uint16_t encodeBFloat(double value);

/// What a fold's one rounding lost: elements that overflowed the type
/// (finite in the input, not in the output), and nonzero products below its
/// normal range (rounded to a subnormal or to zero; counted for f16 and
/// bf16, whose fast encoder hands them to the exact one).
struct FoldLosses {
  int64_t overflows = 0, underflows = 0;
  FoldLosses &operator+=(const FoldLosses &o) {
    overflows += o.overflows;
    underflows += o.underflows;
    return *this;
  }
};

/// The raw-buffer kernel: `out[o, k, i] = round(in[o, k, i] * scale[k])` for
/// a tensor viewed as [outer, scale.size(), inner]. With `inSplat`, `in`
/// holds one element that stands for all. Runs on the context's thread pool
/// when `ctx` is given and threading is enabled.
FoldLosses scaleRawAlongAxis(FloatKind kind, const char *in, bool inSplat,
                             char *out, int64_t outer, ArrayRef<double> scale,
                             int64_t inner, MLIRContext *ctx);

/// The rest of the raw-buffer folder, on the same [outer, K, inner] view
/// (K = vec.size() or scale.size()), f64 throughout, one rounding. Callers
/// that stream a tensor (flashnorm-fold-checkpoint) call them on blocks of
/// consecutive k and get the same sums, in the same order, as one call.
///
/// sums[o * inner + i] += sum_k in[o, k, i] * vec[k]: a column's (scaled)
/// sum for its mean, or a bias folded through a weight.
void sumAlongAxisRaw(FloatKind kind, const char *in, bool inSplat,
                     int64_t outer, ArrayRef<double> vec, int64_t inner,
                     double *sums);
/// out[o, k, i] = round(in[o, k, i] * scale[k] - shift[o * inner + i]): the
/// centered fold, given each column's mean.
void scaleAndShiftRaw(FloatKind kind, const char *in, bool inSplat, char *out,
                      int64_t outer, ArrayRef<double> scale, int64_t inner,
                      const double *shift);
/// How many of `n` elements are finite in `in` but not in `out` (a fold
/// that overflowed the type).
int64_t countOverflowsRaw(FloatKind kind, const char *in, bool inSplat,
                          const char *out, int64_t n);
/// Where a fold underflowed (FoldLosses::underflows not zero), per output
/// (o, i) of `out`, the fold of `in` as scaleRawAlongAxis wrote it: adds
/// sum_k |out[o, k, i]| to magnitude[o * inner + i] and the count of its
/// nonzero products below the type's normal range to underflowed[...].
/// Streaming callers call it block by block, as sumAlongAxisRaw.
void tallyUnderflowRaw(FloatKind kind, const char *in, bool inSplat,
                       const char *out, int64_t outer, ArrayRef<double> scale,
                       int64_t inner, double *magnitude, int64_t *underflowed);
/// How many of those outputs lost more to underflow than one rounding at
/// the type's precision could: a product below the normal range m is kept
/// to within m 2^-(p+1) absolutely, a normal one to within 2^-(p+1) of
/// itself, so an output whose underflowed products outnumber its
/// magnitude / m errs more in its dot product (inputs of equal size) than
/// the rounding of its normal ones allows. The fold is refused then.
int64_t countUnderflowedOutputs(FloatKind kind, ArrayRef<double> magnitude,
                                ArrayRef<int64_t> underflowed);
/// Bytes per element; f64 values of `n` elements, and back (rounded once).
size_t getByteWidth(FloatKind kind);
void decodeRaw(FloatKind kind, const char *in, int64_t n, double *out);
void encodeRaw(FloatKind kind, const double *in, int64_t n, char *out);

/// Returns `weight` with every slice along `axis` multiplied by `scale[k]`.
/// Dense in, dense out; `dense_resource` in, a new `dense_resource` out
/// (named after the original blob). Fails, with the reason in `whyNot`, for
/// unsupported element types or missing resource data.
FailureOr<ElementsAttr> scaleAlongAxis(ElementsAttr weight, int64_t axis,
                                       ArrayRef<double> scale,
                                       std::string *whyNot = nullptr);

/// Whether weights of `elementType` can carry a LayerNorm's mean-centering.
/// Rounded to f16 or bf16, a centered column no longer sums to zero: the
/// product then keeps `mean(x)` times that residual, which dominates on rows
/// whose mean is large against their spread (2-94% off, measured). f32 and
/// f64 weights can (docs/NUMERICS.md gives the range).
bool canCarryCentering(Type elementType);

/// Like scaleAlongAxis, then makes each column (all indices but `axis`
/// fixed) sum to zero by subtracting its mean over `axis`, still rounding
/// once: a LayerNorm's mean-centering folded into the weight. Fails for
/// weights that cannot carry it (canCarryCentering).
FailureOr<ElementsAttr> scaleAndCenterAlongAxis(ElementsAttr weight,
                                                int64_t axis,
                                                ArrayRef<double> scale,
                                                std::string *whyNot = nullptr);

/// sum_k vec[k] * weight[..., k, ...] over `axis`, in f64: the values of the
/// remaining indices in row-major order (a bias folded through a weight).
FailureOr<SmallVector<double>> contractAlongAxis(ElementsAttr weight,
                                                 int64_t axis,
                                                 ArrayRef<double> vec,
                                                 std::string *whyNot = nullptr);

/// Weight layouts for the CPU kernels: `in` holds a 2-D weight of `numK` x
/// `numN` elements of `width` bytes, [K, N] when `kMajor`, else [N, K]
/// (PyTorch's); `out` gets it as panels [N / panel][K][panel], so that a
/// kernel that keeps `panel` outputs in registers reads its weights as one
/// contiguous stream (numN must be a multiple of `panel`). A pure
/// permutation: no rounding.
void packPanelsRaw(size_t width, const char *in, char *out, int64_t numK,
                   int64_t numN, bool kMajor, int64_t panel);

/// The panels of a constant 2-D weight contracted along `axis` (dense in,
/// dense out; `dense_resource` in, a new `dense_resource` out), typed
/// tensor<N/panel x K x panel x elt>.
FailureOr<ElementsAttr> packPanels(ElementsAttr weight, int64_t axis,
                                   int64_t panel,
                                   std::string *whyNot = nullptr);

/// A constant 2-D weight contracted along `axis` stored as [N, K], each
/// output's row contiguous along k (what a GPU GEMV reads with vector loads);
/// typed tensor<N x K x elt>, a new `dense_resource` for one. A permutation:
/// no rounding.
FailureOr<ElementsAttr> storeRowsAlongK(ElementsAttr weight, int64_t axis,
                                        std::string *whyNot = nullptr);

/// An int8 weight with one scale per output channel, `w = s[n] q`, with a
/// gain folded in along k and requantized per output channel (opt-in: the
/// integers change, so the fold is no longer exact):
/// `s'[n] = max_k |s[n] q[n, k] g[k]| / 127`, `q' = round(s q g / s')`.
struct Requantized {
  ElementsAttr q, scales;
  /// Against the exactly folded weight `s q g`: the largest error, the RMS
  /// error over the RMS of the folded weight, and a bound on the error of
  /// any output of a unit-RMS input row (`sqrt(K) max_n |dw[n, :]|_2`).
  double maxAbsError = 0, relRmsError = 0, outputBound = 0;
};
/// `q` is [N, K] or [K, N] (`axis` is its k dimension), `scales` [N].
FailureOr<Requantized> requantizeInt8(ElementsAttr q, int64_t axis,
                                      ElementsAttr scales,
                                      ArrayRef<double> gain,
                                      std::string *whyNot = nullptr);

/// Reads a constant float tensor into f64 values (exact).
FailureOr<SmallVector<double>> readAsDoubles(ElementsAttr attr,
                                             std::string *whyNot = nullptr);

} // namespace flashnorm
} // namespace mlir

#endif

namespace mlir::flashnorm {
/// Reads the value of `v` if it is a float constant (`arith.constant`,
/// `tosa.const`, or the load of an immutable global that holds its value;
/// dense or dense_resource) into f64 values.
FailureOr<SmallVector<double>> readConstantAsDoubles(Value v,
                                                     std::string *whyNot);
} // namespace mlir::flashnorm
