//===- KernelBuilder.h - What the GPU kernel strategies share ---*- C++ -*-===//
//
// flashnorm-gpu-kernels turns the linalg ops of a device function (on
// buffers) into `gpu.launch` kernels. Each kernel strategy is one file with
// two halves: `plan*` reads the IR and returns a plan or why not, touching
// nothing; `build*` takes an accepted plan and is the only code that
// mutates. The pass (GpuKernels.cpp) tries the strategies in order, like
// IREE's KernelConfig tries its `set*Config`s.
//
// This header holds what the strategies share: queries on buffers and linalg
// bodies (pure; KernelQueries.cpp), the body cloning every builder uses, and
// KernelBuilder, which creates and names launches (KernelBuilder.cpp).
//
//===----------------------------------------------------------------------===//
#ifndef FLASHNORM_LIB_CONVERSION_GPUKERNELS_KERNELBUILDER_H
#define FLASHNORM_LIB_CONVERSION_GPUKERNELS_KERNELBUILDER_H

#include "flashnorm/Utils/Remarks.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Utils/Utils.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include <array>
#include <optional>
#include <string>

namespace mlir::flashnorm::kernels {

//===----------------------------------------------------------------------===//
// Queries (pure)
//===----------------------------------------------------------------------===//

/// Whether `buffer` is one contiguous row-major block (a memcpy copies it).
bool isContiguous(Value buffer);

/// Whether an op after `from` and before `to` (in one block) other than
/// `skip` may write `buffer`.
bool writtenBetween(Value buffer, Operation *from, Operation *to,
                    Operation *skip = nullptr);

/// Whether `op` reduces its last loop into an f32 output indexed by the
/// other loops, as `out = out + f(ins)`.
bool isRowReduction(linalg::LinalgOp op);

/// Whether `op`'s body is `out + ext(x) * ext(x)` of its one input (the
/// extension optional): a sum of squares.
bool isSumOfSquares(linalg::GenericOp op);
/// Whether `op` is element-wise: no reduction, one output read through the
/// identity.
bool isElementwise(linalg::GenericOp op);

/// Whether `op`'s body reads its output.
bool usesOutput(linalg::GenericOp op);

bool isZeroFill(linalg::FillOp fill);

/// Whether `buffer` holds zeros when `user` runs: its last writer in the
/// block is a zero fill, or a copy from a buffer that holds zeros.
bool startsAtZero(Value buffer, Operation *user);

/// The zero fill that last wrote all of `buffer` (a whole allocation, not a
/// view into one) before `user`, if nothing touches the buffer in between:
/// it can go when `user` overwrites it or starts from zero instead.
linalg::FillOp deadZeroFill(Value buffer, Operation *user);

/// The zero fill of `reduce`'s output, if it is the op just before.
linalg::FillOp zeroFillBefore(linalg::LinalgOp reduce);

/// The element-wise op of the rows just after `reduce` that reads its sums
/// and nothing else and writes no buffer `reduce` reads, if there is one.
linalg::GenericOp epilogueAfter(linalg::LinalgOp reduce);

/// Whether contraction `op` is a prefill for `gemm=auto`: at least
/// kGemmLtMinRows rows (the product of its m dimensions), or a row count
/// known only at run time.
bool isPrefill(linalg::LinalgOp op);

/// Whether contraction `op` reads its weight (the second input) with the
/// contracted dimension innermost.
bool weightContiguousInK(linalg::LinalgOp op);

/// For a row reduction (a statistic, or a projection taking the
/// row-reduction kernel): how many elements of each input a thread loads at
/// once along k (the last loop), so that the widest input is read 16 bytes
/// at a time (`ld.global.v4`); 1 where an input is not contiguous along k or
/// its rows are not multiples of that.
int64_t vectorWidthAlongK(linalg::LinalgOp op);

/// Threads per block for a projection's row reduction with `k` elements per
/// row loaded `width` at a time.
int64_t projectionThreads(int64_t k, int64_t width);

/// The kernel name's role for an op the async marks name ("norm_stat",
/// "proj", ...), or "".
StringRef roleOf(Operation *op);
/// The kernel name's role for an unmarked op ("fill", "reduce", ...).
StringRef kindOf(linalg::LinalgOp op);

/// A projection over row-major 2-D buffers (unit batch dimensions
/// aside): C[M, N] (f32) += A[M, K] * B with B K x N or N x K.
struct RowMajorProjection {
  Value a, b, c;
  bool transposeB = false;
  /// M, N and K (static or ShapedType::kDynamic).
  int64_t m = 0, n = 0, k = 0;
};
/// Matches `op` as a RowMajorProjection with f32, f16 or bf16 inputs.
FailureOr<RowMajorProjection> matchRowMajor(linalg::LinalgOp op,
                                            std::string &why);
/// Matches `op` as a RowMajorProjection tensor cores can take: f16 or bf16
/// activations and weight of one type, the f32 accumulator starting at
/// zero, static sizes (the tensor-core strategies' common checks).
FailureOr<RowMajorProjection> matchTensorCoreProjection(linalg::LinalgOp op,
                                                        std::string &why);

//===----------------------------------------------------------------------===//
// Building
//===----------------------------------------------------------------------===//

/// The value of `map` at `ivs`, one index per result.
SmallVector<Value> applyMap(OpBuilder &b, Location loc, AffineMap map,
                            ValueRange ivs);

/// Clones the body of `op` (all but the yield) at `b` with its block
/// arguments bound to `args` and `linalg.index d` to `ivs[d]`; returns the
/// yielded values. Named ops carry their body too: nothing is generalized.
SmallVector<Value> inlineBody(OpBuilder &b, linalg::LinalgOp op,
                              ValueRange args, ValueRange ivs);

/// The trip count of each loop of `op`, as index values at `b`.
SmallVector<Value> loopSizes(OpBuilder &b, Location loc, linalg::LinalgOp op);

/// A projection's `acc + a * b` step may become one FMA (`fma.rn`, as
/// cuBLAS computes it): the multiply and the add of the inlined body get
/// the `contract` flag; the sum is rounded once instead of twice.
void allowContraction(Value acc);

/// `buffer` loaded at `map` applied to `ivs`.
Value loadAt(OpBuilder &b, Location loc, Value buffer, AffineMap map,
             ValueRange ivs);

/// `buffer` without its leading unit batch dimensions.
Value to2d(OpBuilder &b, Location loc, Value buffer);

/// A warp's 16 x 8 f32 accumulator fragment of zeros.
Value zeroFragment(OpBuilder &b, Location loc);
/// `acc + a * w` on a warp's fragments, as flashnorm-gpu-mma takes it:
/// acc[m, n] += a[m, k] * w[n, k] (a 16 x 16 or 16 x 32, w 8 x 16 or
/// 8 x 32), one `vector.contract`.
Value multiplyFragments(OpBuilder &b, Location loc, Value a, Value w,
                        Value acc);

/// Rows 8 `half` to 8 `half` + 7 of an A fragment (16 x 16 or 16 x 32) as
/// a weight fragment (8 x 16 or 8 x 32), as flashnorm-gpu-mma takes it:
/// multiplied by the whole, the rows' products with one another.
Value halfFragment(OpBuilder &b, Location loc, Value a, int64_t half);
/// `x * scale` (x one element or a vector of a's element type, scale an
/// f32), computed in f32 and rounded once back to x's type; 0 where the
/// scale is 0 and `zeroRows`. The pre-scale of a cuBLASLt projection.
Value scaleElements(OpBuilder &b, Location loc, Value x, Value scale,
                    bool zeroRows);

/// `width` elements (a vector where `width` > 1, 16 bytes, aligned) of
/// `buffer` at `at`, loaded or stored.
Value loadElements(OpBuilder &b, Location loc, Value buffer, ValueRange at,
                   int64_t width);
void storeElements(OpBuilder &b, Location loc, Value value, Value buffer,
                   ValueRange at, int64_t width);

/// Creates the launches of one device function and names them
/// `<fn>_<role>_<n>`, reporting each.
class KernelBuilder {
public:
  KernelBuilder(func::FuncOp fn, int64_t threads, PassReporter &reporter)
      : fn(fn), threads(threads), reporter(reporter) {}

  /// A launch of one block of `blockThreads` threads per output row of `op`
  /// (every loop but the last), the builder inside it; returns it with the
  /// row's indices. With `weightRowsOuter` (a projection) blocks that share
  /// a weight row are adjacent in the grid.
  std::pair<gpu::LaunchOp, SmallVector<Value>>
  launchPerRow(OpBuilder &b, Location loc, linalg::LinalgOp op,
               int64_t blockThreads, bool weightRowsOuter);

  /// The k loop of a row-reduction kernel: thread `tid` of `blockThreads`
  /// visits the last loop of `op` (in vectors of `width` elements where
  /// `width` > 1, several per step so that all of a step's loads are in
  /// flight at once: the hardware issues in order, so a multiply waiting on
  /// a load would hold back the next load), loading each input of `op` at
  /// `ivs` and k. `body` gets the inputs' values at one k, the indices
  /// (`ivs`, k) and the carried values, and returns the new ones. With
  /// `loaded`, only the inputs it accepts are loaded and passed (those
  /// indexed along k; the caller stands in for the others).
  scf::ForOp buildKLoop(
      OpBuilder &b, Location loc, linalg::LinalgOp op, ArrayRef<Value> ivs,
      Value tid, int64_t blockThreads, int64_t width, ValueRange inits,
      function_ref<SmallVector<Value>(OpBuilder &, Location, ArrayRef<Value>,
                                      ArrayRef<Value>, ValueRange)>
          body,
      function_ref<bool(OpOperand *)> loaded = nullptr);

  /// A block all-reduce (sum) of `value`.
  Value blockSum(OpBuilder &b, Location loc, Value value);

  /// Tiles `loop` (threads x on its innermost dimension), maps it and
  /// converts it to a launch named after `role`.
  LogicalResult launchParallel(scf::ParallelOp loop, StringRef role);

  /// Names `launch` `<fn>_<role>_<n>` in the module `<fn>_kernels`.
  void name(gpu::LaunchOp launch, StringRef role);

  func::FuncOp getFunction() const { return fn; }
  PassReporter &getReporter() { return reporter; }

private:
  func::FuncOp fn;
  int64_t threads;
  PassReporter &reporter;
  unsigned count = 0;
};

//===----------------------------------------------------------------------===//
// Strategies: one file each
//===----------------------------------------------------------------------===//

/// RowReduction.cpp: a row reduction `out += f(ins)` over the last loop (a
/// statistic, or a projection whose weight is contiguous in k) as one block
/// per output row, the zero fill before and an element-wise epilogue after
/// in the same kernel.
struct RowReductionPlan {
  linalg::LinalgOp op;
  StringRef role;
  int64_t blockThreads = 0;
  /// Elements per vector load along k (1: scalar loads).
  int64_t width = 1;
  /// A projection: the blocks of one weight row adjacent in the grid.
  bool weightRowsOuter = false;
  linalg::FillOp zeroFill;
  linalg::GenericOp epilogue;
  /// A statistic whose epilogue computes a scale per row (1/RMS) may also
  /// write its input's row times that scale here (a buffer of the input's
  /// shape and type; GemmLt.cpp's pre-scale, from the row the kernel has
  /// just read). Null: the kernel writes the statistic alone.
  Value scaledRows;
  /// Rows whose scale is 0 are written as 0 (the post-scale's contract).
  bool zeroRows = false;
};
FailureOr<RowReductionPlan>
planRowReduction(linalg::LinalgOp op, int64_t reduceThreads, std::string &why);
gpu::LaunchOp buildRowReduction(KernelBuilder &builder,
                                const RowReductionPlan &plan);
/// GemmLt.cpp: a projection as `flashnorm.gemm_lt` (cuBLASLt), writing
/// the output of the reader of its product where that reader only rounds
/// it or scales its rows (a deferred norm's post-scale, moved before the
/// GEMM as a scale of the activation).
struct GemmLtPlan {
  linalg::LinalgOp op;
  RowMajorProjection projection;
  /// A zero fill of the output that the GEMM makes dead.
  linalg::FillOp deadFill;
  /// The product's only reader, which the GEMM takes in (GemmLt.cpp): a
  /// rounding to its output type, or a post-scale, which moves before the
  /// GEMM as a scale of the activation. The GEMM runs in its place and
  /// writes its output. Null: the GEMM writes the product, and `readerWhy`
  /// says why.
  linalg::GenericOp postScale;
  std::string readerWhy;
  /// The per-row f32 scale a post-scale reads; null for a rounding.
  Value scale;
  /// The post-scale makes a row whose scale is 0 zero: so does the
  /// pre-scale.
  bool zeroRows = false;
  /// The statistic that computes `scale` from the activation's rows (a row
  /// reduction of `reduceThreads` threads and its epilogue): its kernel
  /// writes the scaled activation too, from the row it has just read.
  /// Empty: a pre-scale kernel of its own, and `statisticWhy` says why.
  std::optional<RowReductionPlan> statistic;
  std::string statisticWhy;
};
FailureOr<GemmLtPlan> planGemmLt(linalg::LinalgOp op, int64_t reduceThreads,
                                 std::string &why);
/// An activation scaled by a post-scale's scale before its GEMM (by the
/// statistic's kernel, or by a pre-scale kernel of its own), which later
/// GEMMs of the same activation and scale read too (Q, K and V behind one
/// norm: one buffer for the three), where neither is written in between.
struct PreScaled {
  Value a, scale;
  bool zeroRows;
  /// The scaled activation (a's shape), allocated before its kernel.
  memref::AllocOp buffer;
  /// The op (in the GEMMs' block) from whose end on `buffer` holds a'
  /// (the kernel that writes it, or its task).
  Operation *from;
  /// After the last GEMM that reads it.
  memref::DeallocOp dealloc;
};
/// Who scaled the activation a GEMM reads.
enum class PreScale { None, Kernel, Statistic, Shared };
/// Fails when the pre-scale kernel could not be mapped (an error was
/// emitted). Reuses and extends `preScaled`.
FailureOr<PreScale> buildGemmLt(KernelBuilder &builder, const GemmLtPlan &plan,
                                SmallVectorImpl<PreScaled> &preScaled);

/// TensorCoreTile.cpp: an f16 or bf16 projection on tensor cores, each
/// 16 x 8 output tile computed by `slices` warps (one per slice of k) as
/// vector.contract fragments for flashnorm-gpu-mma, their partial tiles
/// summed through shared memory.
struct TensorCorePlan {
  linalg::LinalgOp op;
  RowMajorProjection projection;
  linalg::FillOp deadFill;
  /// Tiles per block, side by side along n (threads y).
  int64_t warps = 1;
  /// Warps per tile, each on K / slices of the k loop (threads z).
  int64_t slices = 1;
  /// k steps of 16 per loop iteration, loaded one iteration ahead.
  int64_t unroll = 1;
  /// Rows not a multiple of 16: A's rows past the last and the output's are
  /// masked (transfer ops not in bounds along the rows).
  bool paddedRows = false;
  /// Fragments two steps wide (16 x 32 and 8 x 32): with the weight N x K,
  /// each lane then loads 16 contiguous bytes of every row it holds, where
  /// two 16-wide fragments take four 4-byte loads (flashnorm-gpu-mma).
  bool pairedSteps = false;
};
/// The most k steps a tensor-core warp loads ahead: 8 x 256 bytes of weight
/// fragments in flight per warp; the group being multiplied and the next
/// take 2 x 8 x 6 registers (16 steps would spill).
constexpr int64_t kMaxUnroll = 8;
/// The most k steps a group takes in a tile kernel with a fused norm's
/// epilogue: its two more accumulators and three mma.sync per fragment
/// made ptxas take 78-82 registers at 8 (16 tokens of 4096 x 14336 and
/// 14336 x 4096: three blocks of 8 warps per SM, a second wave), 48-52 at
/// 4 (four or five blocks, one wave, as the projection alone).
constexpr int64_t kFusedMaxUnroll = 4;
/// The warps a tensor-core projection is split into (along k) until it has
/// that many: streaming a weight at an H200's 4.8 TB/s with ~0.8 us of
/// memory latency needs ~3.8 MB in flight, 29 KB on each of 132 SMs. ptxas
/// (CUDA 13, sm_90) unrolls a slice's k loop of paired fragments completely
/// and places two or three 16-byte loads before each mma.sync: a warp has
/// about one weight load (512 bytes) in flight, not its group's 2 KB, so
/// 32 warps per SM are asked for (measured on an H200, 16 tokens of 4096 x
/// 4096 bf16: 2048 warps streamed the weight at 31-33% of DRAM peak).
constexpr int64_t kTargetWarps = 132 * 32;
/// The fewest k steps a slice takes: four groups, so that its loop still
/// runs (a register prefetch of one group, three iterations).
constexpr int64_t kMinSliceSteps = 4 * kMaxUnroll;
/// The most warps per tensor-core block: at 66 registers a thread (ptxas;
/// 72 allocated) three blocks of 8 warps fit an SM's 64K registers, where
/// one of 16 would leave 12 warps' worth unused.
constexpr int64_t kMaxBlockWarps = 8;
/// `maxUnroll` caps the plan's unroll (kFusedMaxUnroll for a fused norm).
FailureOr<TensorCorePlan> planTensorCoreTile(linalg::LinalgOp op,
                                             std::string &why,
                                             int64_t maxUnroll = kMaxUnroll);
/// A fused norm's epilogue of a tensor-core tile kernel (fused mode,
/// FusedNormProjection.cpp).
struct TileEpilogue {
  /// Where the kernel goes: the post-scale, where all the epilogue reads
  /// is ready.
  Operation *at;
  /// Writes what the post-scale would of the output at `indices` (row and
  /// column of the 2-D product) from its `sum` and its row's sum of
  /// squares of A, in place of the product.
  function_ref<void(OpBuilder &, Location, ValueRange indices, Value sum,
                    Value squares)>
      store;
};
/// With `epilogue`, the warps also sum the squares of A's rows from the
/// fragments they load (on tensor cores: A times its own halves, whose
/// diagonal they are), and every output goes through it.
void buildTensorCoreTile(KernelBuilder &builder, const TensorCorePlan &plan,
                         StringRef role,
                         const TileEpilogue *epilogue = nullptr);
/// The kernel a projection would get unfused, as far as fused mode cares.
struct ProjectionKernel {
  /// A kernel faster than the fused SIMT GEMV that no statistic fuses
  /// into ("cuBLASLt", the staged tensor-core kernel), or empty.
  StringRef fasterPath;
  /// Tensor cores warp by warp (TensorCoreTile.cpp): the fused kernel is
  /// that one, with the norm's epilogue.
  std::optional<TensorCorePlan> tensorCoreTile;
};
/// FusedNormProjection.cpp: fused mode, each (statistic, projection,
/// post-scale) of a deferred norm as one kernel: a SIMT GEMV, or the
/// tensor-core tile kernel where `kernelOf` says the projection takes it;
/// where it names a faster kernel, the projection stays unfused. Fails
/// when a kernel's loop nest could not be mapped (an error was emitted).
LogicalResult
fuseNormProjections(KernelBuilder &builder,
                    function_ref<ProjectionKernel(linalg::LinalgOp)> kernelOf);

/// TensorCoreBlock.cpp: an f16 or bf16 prefill projection with its weight
/// N x K on tensor cores, block tiles of A and the weight staged through
/// a ring of shared-memory buffers (cp.async) and read as fragments by
/// eight warps (ldmatrix, in flashnorm-gpu-mma).
struct TensorCoreBlockPlan {
  linalg::LinalgOp op;
  RowMajorProjection projection;
  linalg::FillOp deadFill;
  /// The block's output tile (each of kBlockTiles).
  int64_t blockM = 0, blockN = 0;
  /// k tiles in the ring: in flight while one is multiplied, all but one.
  int64_t stages = 2;
  /// Rows are not a multiple of blockM: the last block copies the last row
  /// in place of those past it and does not write them.
  bool raggedRows = false;
};
/// Block tile sizes along m and n, largest first.
constexpr std::array<int64_t, 2> kBlockTiles = {128, 64};
/// k per shared-memory stage (two m16n8k16 steps), and the padding of each
/// shared row (in elements: 16 bytes) that keeps ldmatrix free of bank
/// conflicts.
constexpr int64_t kBlockK = 32, kBlockPad = 8;
/// The grid a block tile is halved to fill: an H200's 132 SMs.
constexpr int64_t kBlockMinGrid = 132;
/// The most stages in a ring, and the shared memory a block's rings may
/// take: two blocks per SM (as many as 128 x 128 tiles' registers allow)
/// within the 227 KB a block of an H200 may have. Dynamic shared memory:
/// past 48 KB the driver needs the kernel's opt-in, which the runtime's
/// launch gives.
constexpr int64_t kBlockMaxStages = 4, kBlockSharedBytes = 113 * 1024;
FailureOr<TensorCoreBlockPlan> planTensorCoreBlock(linalg::LinalgOp op,
                                                   std::string &why);
void buildTensorCoreBlock(KernelBuilder &builder,
                          const TensorCoreBlockPlan &plan, StringRef role);

/// HostLoops.cpp: host code that touches buffers (loops of loads and
/// stores: an importer's KV-cache update) as a kernel in its place: a
/// parallel one where the nest's iterations are independent, else one
/// thread.
struct HostLoopPlan {
  Operation *op = nullptr;
  /// The loops mapped onto threads, outermost first; empty: one thread.
  SmallVector<scf::ForOp> nest;
  /// Why the op runs on one thread, when `nest` is empty.
  std::string serialWhy;
};
/// Whether `op` stays on the host in a device function (memory management,
/// copies, views, tasks, calls, kernels, and ops that touch no memory or
/// can reach no buffer, such as a print of a host value).
bool isHostOp(Operation *op);
/// For an op that is not a host op: fails for one that cannot leave the
/// host (a value the host uses, kernels inside).
FailureOr<HostLoopPlan> planHostLoop(Operation *op, std::string &why);
LogicalResult buildHostLoop(KernelBuilder &builder, const HostLoopPlan &plan);

/// ParallelLoops.cpp: any other linalg op as parallel loops tiled onto
/// blocks and threads (the fallback: every op takes it).
LogicalResult buildParallelLoops(KernelBuilder &builder, linalg::LinalgOp op,
                                 StringRef role);

} // namespace mlir::flashnorm::kernels

#endif
