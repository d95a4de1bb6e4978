//===- Fragments.h - A lane's part of the m16n8k16 fragments ----*- C++ -*-===//
//
// What flashnorm-gpu-mma (GpuMma.cpp) asks of a warp's fragments, as the
// tensor-core kernels write them (vector<16x16> and vector<8x16> of f16 or
// bf16 for A and B, vector<16x32> and vector<8x32> two steps wide,
// vector<16x8xf32> accumulators): which reads, slices and writes can be
// placed on the lanes, and each lane's part of them. A lane's part of an A
// or B fragment is a vector<4x2xT> or vector<2x2xT> (a row per 32-bit
// register), of a paired one a vector<2x8xT> or vector<1x8xT> (eight values
// of each row the lane holds), of an accumulator a vector<4xf32>.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHNORM_LIB_CONVERSION_GPUMMA_FRAGMENTS_H
#define FLASHNORM_LIB_CONVERSION_GPUMMA_FRAGMENTS_H

#include "mlir/Dialect/NVGPU/Utils/MMAUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <optional>
#include <string>

namespace mlir::flashnorm::mma {

//===----------------------------------------------------------------------===//
// What can be placed
//===----------------------------------------------------------------------===//

/// Whether `type` is an m16n8k16 fragment as the kernels write them.
bool isFragment(Type type);
/// Whether an A or B fragment spans two steps of k (16 x 32, 8 x 32).
bool isPaired(VectorType type);
/// A, B or C (the accumulator) by the fragment's shape and type.
nvgpu::MatMulOperandRole roleOf(VectorType type);
/// Whether a fragment's transfer has lanes that can be placed; `why` says
/// what is missing.
bool placeable(VectorTransferOpInterface transfer, std::string &why);
/// The buffer's rows when `transfer` may run past the last of them.
std::optional<int64_t> maskedRows(VectorTransferOpInterface transfer);
/// The half (0: rows 0-7, 1: rows 8-15) of a 16 x 16 or 16 x 32 fragment
/// `split` takes as a weight fragment, or nullopt for another slice.
std::optional<int64_t> splitHalf(vector::ExtractStridedSliceOp split);
/// Whether each lane's part of `read` is one ldmatrix.
bool readsAsMatrix(vector::TransferReadOp read);

//===----------------------------------------------------------------------===//
// Each lane's part (`lane`: gpu.lane_id)
//===----------------------------------------------------------------------===//

/// This lane's part of the fragment `read` reads at `origin`.
Value loadPart(OpBuilder &b, Value lane, vector::TransferReadOp read,
               ValueRange origin);
/// This lane's part of half `half` (splitHalf) of the fragment whose part
/// is `part`.
Value halfOf(OpBuilder &b, Location loc, Value part, int64_t half);
/// acc + lhs * rhs on this lane's parts (the A fragment's type `lhsType`).
Value multiply(OpBuilder &b, Location loc, Value acc, Value lhs, Value rhs,
               VectorType lhsType);
/// This lane's sums `acc` stored where `write` writes its fragment.
void storePart(OpBuilder &b, Value lane, vector::TransferWriteOp write,
               ValueRange origin, Value acc);
/// This lane's part of a zero accumulator.
Value zeroAccumulator(OpBuilder &b, Location loc);

} // namespace mlir::flashnorm::mma

#endif // FLASHNORM_LIB_CONVERSION_GPUMMA_FRAGMENTS_H
