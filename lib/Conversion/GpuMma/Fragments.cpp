//===- Fragments.cpp - A lane's part of the m16n8k16 fragments -----------===//
//
// Each lane's loads and stores of a warp's fragments are placed by
// upstream's fragment maps (nvgpu::getLaneIdAndValueIdToOperandCoord, the
// PTX ISA's layouts), a pair along k per aligned 32-bit load, not through
// upstream's vector-to-nvgpu conversion, which loads global memory 16 bits
// at a time (a memref.load per element) and converts no bf16 fragment (its
// register types are f16's; nvgpu.mma.sync has no bf16 lowering to NVVM).
// Fragments two steps wide (16 x 32, 8 x 32: TensorCoreTile's with an N x K
// weight) are placed by this file instead: each lane loads 16 contiguous
// bytes of every row it holds, and the two mma.sync take them in an order
// that permutes k within the 32 columns, the same for A and B
// (loadPairedPart), so that a lane's fragments are one 16-byte load per row
// where the PTX layout alone asks for a 4-byte load per register.
// Fragments of shared memory whose rows are 16-byte aligned are one
// ldmatrix (loadMatrix), as stored or transposed.
// The m16n8k16 layouts of f16 and bf16 are the same (PTX ISA, "Matrix
// Fragments for mma.m16n8k16 with floating point type": two 16-bit
// elements per 32-bit register, same positions), so a bf16 fragment is
// placed by the map of the f16 fragment of its shape: the lane mapping is
// upstream's, not restated here.
//
//===----------------------------------------------------------------------===//

#include "Fragments.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/IndexingUtils.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"

using namespace mlir;
using mlir::nvgpu::MatMulOperandRole;

namespace mlir::flashnorm::mma {

/// The m16n8k16 fragments of a warp, as the tensor-core kernels write them.
bool isFragment(Type type) {
  auto vector = dyn_cast<VectorType>(type);
  if (!vector || vector.getRank() != 2)
    return false;
  ArrayRef<int64_t> shape = vector.getShape();
  Type element = vector.getElementType();
  return ((element.isF16() || element.isBF16()) &&
          (shape[0] == 16 || shape[0] == 8) &&
          (shape[1] == 16 || shape[1] == 32)) ||
         (element.isF32() && shape == ArrayRef<int64_t>{16, 8});
}

/// An A or B fragment two steps wide along k (16 x 32 or 8 x 32).
bool isPaired(VectorType type) {
  return !type.getElementType().isF32() && type.getDimSize(1) == 32;
}

/// A or B by the fragment's shape (16 x 16 or 8 x 16).
MatMulOperandRole roleOf(VectorType type) {
  if (type.getElementType().isF32())
    return MatMulOperandRole::C;
  return type.getDimSize(0) == 16 ? MatMulOperandRole::A : MatMulOperandRole::B;
}

/// Whether a fragment's transfer is a 2-D block of a 2-D buffer, in
/// bounds but possibly along the rows of an identity read or write
/// (TensorCoreTile's padded rows).
bool placeable(VectorTransferOpInterface transfer, std::string &why) {
  auto type = cast<MemRefType>(transfer.getBase().getType());
  AffineMap map = transfer.getPermutationMap();
  if (type.getRank() != 2 || !map.isPermutation()) {
    why = "a fragment that is not a 2-D block of a 2-D buffer";
    return false;
  }
  if (!transfer.isDimInBounds(1) ||
      (!transfer.isDimInBounds(0) &&
       (!map.isIdentity() || type.isDynamicDim(0)))) {
    why = "a fragment past its buffer's edge other than along static rows";
    return false;
  }
  return true;
}

/// The buffer's rows when `transfer` may run past the last of them (its
/// rows padded), else nullopt.
std::optional<int64_t> maskedRows(VectorTransferOpInterface transfer) {
  if (transfer.isDimInBounds(0))
    return std::nullopt;
  return cast<MemRefType>(transfer.getBase().getType()).getDimSize(0);
}

/// Which half (0 or 1: rows 0-7 or 8-15) of a 16 x 16 or 16 x 32 fragment
/// `split` takes as an 8 x 16 or 8 x 32 weight fragment, or nullopt if it
/// is another slice. A 16 x 16 read of the weight is two n-tiles' fragments
/// in one ldmatrix.x4 where each alone is an x2 (TensorCoreBlock.cpp); an
/// A fragment times its own halves gives its rows' products with one
/// another (TensorCoreTile.cpp's sums of squares, on the diagonal).
std::optional<int64_t> splitHalf(vector::ExtractStridedSliceOp split) {
  VectorType source = split.getSourceVectorType();
  if (!isFragment(source) || source.getElementType().isF32() ||
      roleOf(source) != MatMulOperandRole::A || !isFragment(split.getType()) ||
      roleOf(split.getType()) != MatMulOperandRole::B ||
      isPaired(split.getType()) != isPaired(source) ||
      split.hasNonUnitStrides())
    return std::nullopt;
  SmallVector<int64_t> offsets = getI64SubArray(split.getOffsets());
  if (offsets.size() != 2 || offsets[1] != 0 ||
      (offsets[0] != 0 && offsets[0] != 8))
    return std::nullopt;
  return offsets[0] / 8;
}

/// This lane's part of half `half` of a 16 x 16 fragment whose part is
/// `part`: the A layout's registers hold (rows g, k 2t), (g + 8, 2t),
/// (g, 2t + 8), (g + 8, 2t + 8), and a weight fragment's (its row g, k 2t),
/// (g, 2t + 8) (PTX ISA, m16n8k16 fragments; B's n is the fragment's
/// row): half h is registers h and h + 2, whichever way the whole was
/// loaded (ldmatrix.x4 or the lane map). A paired part's rows are rows g
/// and g + 8 of the fragment, a paired weight part's row g, in the same
/// order along k (loadPairedPart): half h is row h.
Value halfOf(OpBuilder &b, Location loc, Value part, int64_t half) {
  auto type = cast<VectorType>(part.getType());
  if (type.getDimSize(1) != 2)
    return vector::ExtractStridedSliceOp::create(
        b, loc, part, ArrayRef<int64_t>{half, 0},
        ArrayRef<int64_t>{1, type.getDimSize(1)}, ArrayRef<int64_t>{1, 1});
  auto halfType = VectorType::get({2, 2}, type.getElementType());
  Value result =
      arith::ConstantOp::create(b, loc, halfType, b.getZeroAttr(halfType));
  for (int64_t r = 0; r < 2; ++r)
    result = vector::InsertOp::create(
        b, loc, vector::ExtractOp::create(b, loc, part, half + 2 * r), result,
        r);
  return result;
}

namespace {
/// The alignment in bytes of eight consecutive 16-bit values of `buffer`
/// from a column that is a multiple of 8: 16 when its offset and row
/// strides keep that (a paired fragment starts at a multiple of 32 along k,
/// a lane's values at 8 t past it), else the element's.
int64_t rowAlignment(Value buffer) {
  auto type = cast<MemRefType>(buffer.getType());
  int64_t element = type.getElementTypeBitWidth() / 8;
  if (gpu::GPUDialect::hasWorkgroupMemoryAddressSpace(type))
    return element;
  auto [strides, offset] = type.getStridesAndOffset();
  if (strides.empty() || strides.back() != 1 || ShapedType::isDynamic(offset) ||
      offset % 8)
    return element;
  for (int64_t stride : ArrayRef(strides).drop_back())
    if (ShapedType::isDynamic(stride) || stride % 8)
      return element;
  return 8 * element;
}

/// The static alignment in bytes of `buffer`'s elements at even offsets
/// along its last dimension: pairs of 16-bit values or of f32 load as one
/// register only when the pair is aligned to its size (a GPU's allocations
/// are 256-byte aligned; the offset and the row stride must keep that).
/// A lane's pairs start at even columns of its fragment, and fragments at
/// multiples of the tile (TensorCoreTile's m, n and k offsets: 16, 8, 16).
/// Shared memory is not known to be: a workgroup buffer's alignment is the
/// NVVM lowering's choice.
std::optional<int64_t> pairAlignment(Value buffer) {
  auto type = cast<MemRefType>(buffer.getType());
  if (gpu::GPUDialect::hasWorkgroupMemoryAddressSpace(type))
    return std::nullopt;
  auto [strides, offset] = type.getStridesAndOffset();
  if (strides.empty() || strides.back() != 1 || ShapedType::isDynamic(offset) ||
      offset % 2)
    return std::nullopt;
  for (int64_t stride : ArrayRef(strides).drop_back())
    if (ShapedType::isDynamic(stride) || stride % 2)
      return std::nullopt;
  return 2 * type.getElementTypeBitWidth() / 8;
}

/// Whether the shared buffer starts 16 bytes aligned: a workgroup
/// attribution (aligned by flashnorm-gpu-align-workgroup), or a view of
/// the block's dynamic shared memory (aligned to 16 by the NVVM lowering)
/// at a constant multiple of 16 bytes.
bool startsAligned(Value buffer) {
  if (auto arg = dyn_cast<BlockArgument>(buffer)) {
    auto launch = dyn_cast<gpu::LaunchOp>(arg.getOwner()->getParentOp());
    return launch &&
           llvm::is_contained(launch.getWorkgroupAttributions(), buffer);
  }
  auto view = buffer.getDefiningOp<memref::ViewOp>();
  std::optional<int64_t> shift =
      view ? getConstantIntValue(view.getByteShift()) : std::nullopt;
  return shift && *shift % 16 == 0 &&
         view.getSource().getDefiningOp<gpu::DynamicSharedMemoryOp>();
}

/// Whether `read` reads its fragment transposed: the buffer's last two
/// dimensions are the fragment's columns (k) and rows.
bool readsTransposed(vector::TransferReadOp read) {
  unsigned rank = read.getBase().getType().getRank();
  return rank >= 2 &&
         read.getPermutationMap() ==
             AffineMap::get(rank, 0,
                            {getAffineDimExpr(rank - 1, read.getContext()),
                             getAffineDimExpr(rank - 2, read.getContext())},
                            read.getContext());
}

VectorType accType(OpBuilder &b) {
  return VectorType::get({4}, b.getF32Type());
}

/// A lane's part of an A or B fragment: a row of two values per 32-bit
/// register (32 lanes share the fragment), or for a paired fragment a row
/// of eight values per row of the fragment the lane holds.
VectorType lanePart(VectorType fragment) {
  if (isPaired(fragment))
    return VectorType::get({fragment.getDimSize(0) / 8, 8},
                           fragment.getElementType());
  return VectorType::get({fragment.getNumElements() / 64, 2},
                         fragment.getElementType());
}

/// The register NVVM's mma.sync takes for a pair: vector<2xf16> for f16,
/// i32 for bf16.
Value asRegister(OpBuilder &b, Location loc, Value pair) {
  if (!cast<VectorType>(pair.getType()).getElementType().isBF16())
    return pair;
  return vector::ExtractOp::create(
      b, loc,
      vector::BitCastOp::create(b, loc, VectorType::get({1}, b.getI32Type()),
                                pair),
      0);
}

/// The registers of a lane's part of an A or B fragment for the mma of
/// step `step` of it: a row per register, or for a paired part (see
/// loadPairedPart) the step's pairs of each row, the first pair of every
/// row before the second (the fragment map's register order: k = 2t
/// before 2t + 8, rows g before g + 8 within each).
SmallVector<Value> mmaRegisters(OpBuilder &b, Location loc, Value part,
                                int64_t step) {
  auto type = cast<VectorType>(part.getType());
  SmallVector<Value> registers;
  if (type.getDimSize(1) == 2) {
    for (int64_t r = 0; r < type.getDimSize(0); ++r)
      registers.push_back(
          asRegister(b, loc, vector::ExtractOp::create(b, loc, part, r)));
    return registers;
  }
  for (int64_t half = 0; half < 2; ++half)
    for (int64_t r = 0; r < type.getDimSize(0); ++r) {
      Value row = vector::ExtractOp::create(b, loc, part, r);
      Value pair = vector::ExtractStridedSliceOp::create(
          b, loc, row, ArrayRef<int64_t>{4 * step + 2 * half},
          ArrayRef<int64_t>{2}, ArrayRef<int64_t>{1});
      registers.push_back(asRegister(b, loc, pair));
    }
  return registers;
}

/// acc + a * b, one m16n8k16 mma.sync on registers.
Value mmaStep(OpBuilder &b, Location loc, Value acc, ValueRange a,
              ValueRange bRegisters, NVVM::MMATypes type) {
  SmallVector<Value> c;
  for (int64_t i = 0; i < 4; ++i)
    c.push_back(vector::ExtractOp::create(b, loc, acc, i));
  Type f32 = b.getF32Type();
  auto result =
      LLVM::LLVMStructType::getLiteral(b.getContext(), {f32, f32, f32, f32});
  Value d = NVVM::MmaOp::create(
      b, loc, result, a, bRegisters, c, {16, 8, 16}, std::nullopt, std::nullopt,
      std::array<NVVM::MMATypes, 2>{type, type},
      std::array<NVVM::MMALayout, 2>{NVVM::MMALayout::row,
                                     NVVM::MMALayout::col});
  SmallVector<Value> sums;
  for (int64_t i = 0; i < 4; ++i)
    sums.push_back(LLVM::ExtractValueOp::create(b, loc, d, i));
  return vector::FromElementsOp::create(b, loc, accType(b), sums);
}

/// This lane's parts of the fragments a kernel reads and writes.
class Lane {
public:
  explicit Lane(Value lane) : lane(lane) {}

  /// This lane's part of an A or B fragment, a row per register: pairs
  /// along the fragment's rows, one 4-byte load each where the pair is
  /// contiguous.
  Value loadLanePart(OpBuilder &b, vector::TransferReadOp read,
                     ValueRange origin) {
    Location loc = read.getLoc();
    VectorType type = read.getVectorType();
    if (isPaired(type))
      return loadPairedPart(b, read, origin);
    if (readsAsMatrix(read))
      return loadMatrix(b, read, origin);
    AffineMap lanes = laneMap(b, loc, type, roleOf(type));
    AffineMap permutation = read.getPermutationMap();
    Value buffer = read.getBase();
    std::optional<int64_t> aligned = pairAlignment(buffer);
    bool contiguous = permutation.isIdentity() && aligned;
    auto pairType = VectorType::get({2}, type.getElementType());
    VectorType partType = lanePart(type);
    Value part =
        arith::ConstantOp::create(b, loc, partType, b.getZeroAttr(partType));
    // Padded rows (A only, checked) read the last row again: a row of A
    // only reaches the same row of the product, which is never stored.
    std::optional<int64_t> rows = maskedRows(read);
    auto at = [&](int64_t v) {
      SmallVector<Value> indices =
          indicesOf(b, loc, lanes, v, origin, permutation);
      if (rows)
        indices[0] = arith::MinUIOp::create(
            b, loc, indices[0],
            arith::ConstantIndexOp::create(b, loc, *rows - 1));
      return indices;
    };
    for (int64_t v = 0; v < type.getNumElements() / 32; v += 2) {
      Value pair;
      if (contiguous) {
        pair = vector::LoadOp::create(b, loc, pairType, buffer, at(v),
                                      /*nontemporal=*/false,
                                      llvm::MaybeAlign(*aligned));
      } else {
        SmallVector<Value> elements;
        for (int64_t e = 0; e < 2; ++e)
          elements.push_back(memref::LoadOp::create(b, loc, buffer, at(v + e)));
        pair = vector::FromElementsOp::create(b, loc, pairType, elements);
      }
      part = vector::InsertOp::create(b, loc, pair, part, v / 2);
    }
    return part;
  }

  /// This lane's part of a fragment two steps wide (16 x 32 or 8 x 32): of
  /// its group g = lane / 4, rows g and g + 8 (A) or row g (B), eight
  /// values from column 8 t (t = lane % 4) of each, one 16-byte load per
  /// row. The mma of step s (mmaRegisters) takes values 4s, 4s + 1 of a row
  /// as the pair the fragment map places at k = 2t, 2t + 1 and 4s + 2,
  /// 4s + 3 as the one at 2t + 8, 2t + 9: a permutation of k within the 32
  /// columns, the same for A and B, so that the two mma.sync sum the same
  /// products as two 16-wide steps, in another order.
  Value loadPairedPart(OpBuilder &b, vector::TransferReadOp read,
                       ValueRange origin) {
    Location loc = read.getLoc();
    VectorType type = read.getVectorType();
    Value buffer = read.getBase();
    AffineExpr d0, d1;
    bindDims(b.getContext(), d0, d1);
    Value column = withLane(b, loc, d0 + (d1 % 4) * 8, origin[1]);
    // Padded rows (A only, checked) read the last row again, as above.
    std::optional<int64_t> rows = maskedRows(read);
    auto rowType = VectorType::get({8}, type.getElementType());
    VectorType partType = lanePart(type);
    Value part =
        arith::ConstantOp::create(b, loc, partType, b.getZeroAttr(partType));
    for (int64_t r = 0; r < partType.getDimSize(0); ++r) {
      Value row = withLane(b, loc, d0 + d1.floorDiv(4) + 8 * r, origin[0]);
      if (rows)
        row = arith::MinUIOp::create(
            b, loc, row, arith::ConstantIndexOp::create(b, loc, *rows - 1));
      Value values = vector::LoadOp::create(
          b, loc, rowType, buffer, ValueRange{row, column},
          /*nontemporal=*/false, llvm::MaybeAlign(rowAlignment(buffer)));
      part = vector::InsertOp::create(b, loc, values, part, r);
    }
    return part;
  }

  /// This lane's four sums stored where the fragment map puts them.
  void store(OpBuilder &b, vector::TransferWriteOp write, ValueRange origin,
             Value acc) {
    Location loc = write.getLoc();
    auto type = cast<VectorType>(write.getVector().getType());
    AffineMap lanes = laneMap(b, loc, type, MatMulOperandRole::C);
    Value buffer = write.getBase();
    std::optional<int64_t> aligned = pairAlignment(buffer);
    AffineMap permutation = write.getPermutationMap();
    std::optional<int64_t> rows = maskedRows(write);
    for (int64_t v = 0; v < 4; v += 2) {
      // A lane's pair shares its row: padded rows are not stored.
      OpBuilder::InsertionGuard guard(b);
      if (rows) {
        Value row = indicesOf(b, loc, lanes, v, origin, permutation)[0];
        Value real = arith::CmpIOp::create(
            b, loc, arith::CmpIPredicate::ult, row,
            arith::ConstantIndexOp::create(b, loc, *rows));
        auto inside = scf::IfOp::create(b, loc, real, /*withElseRegion=*/false);
        b.setInsertionPoint(inside.thenBlock()->getTerminator());
      }
      if (permutation.isIdentity() && aligned) {
        Value pair = vector::ExtractStridedSliceOp::create(
            b, loc, acc, ArrayRef<int64_t>{v}, ArrayRef<int64_t>{2},
            ArrayRef<int64_t>{1});
        vector::StoreOp::create(
            b, loc, pair, buffer,
            indicesOf(b, loc, lanes, v, origin, permutation),
            /*nontemporal=*/false, llvm::MaybeAlign(*aligned));
        continue;
      }
      for (int64_t e = v; e < v + 2; ++e)
        memref::StoreOp::create(
            b, loc, vector::ExtractOp::create(b, loc, acc, e), buffer,
            indicesOf(b, loc, lanes, e, origin, permutation));
    }
  }

private:
  /// This lane's part of a fragment of shared memory by one ldmatrix: x4
  /// for 16 x 16 (its 8 x 8 matrices rows 0-7 and 8-15 at k 0-7, then at k
  /// 8-15, the order of A's registers), x2 for B (8 x 16: k 0-7, then
  /// 8-15). Lane l gives the address of a row of matrix i = l / 8 in
  /// memory, row l % 8 of it, and receives from each matrix the pair the
  /// fragment map gives it (fragment row l / 4, columns 2 (l % 4) and
  /// 2 (l % 4) + 1): the registers mma.sync takes, in order. Read as
  /// stored, a row in memory is a fragment row; read transposed, a column
  /// (k), and ldmatrix.trans hands each lane its pair of the column it
  /// holds.
  Value loadMatrix(OpBuilder &b, vector::TransferReadOp read,
                   ValueRange origin) {
    Location loc = read.getLoc();
    VectorType type = read.getVectorType();
    int64_t blocks = type.getDimSize(0) / 8, matrices = 2 * blocks;
    bool transposed = readsTransposed(read);
    AffineExpr d0, d1;
    bindDims(b.getContext(), d0, d1);
    // Matrix i's block of the fragment: rows 8 (i % blocks), columns
    // 8 (i / blocks); this lane's offset into it.
    AffineExpr matrix = d1.floorDiv(8), inMatrix = d1 % 8;
    AffineExpr fragmentRow = (matrix % blocks) * 8,
               fragmentColumn = (matrix.floorDiv(blocks) % 2) * 8;
    if (transposed)
      fragmentColumn = fragmentColumn + inMatrix;
    else
      fragmentRow = fragmentRow + inMatrix;
    SmallVector<Value> at(origin);
    AffineMap permutation = read.getPermutationMap();
    Value &row = at[permutation.getDimPosition(0)];
    Value &column = at[permutation.getDimPosition(1)];
    row = withLane(b, loc, d0 + fragmentRow, row);
    column = withLane(b, loc, d0 + fragmentColumn, column);
    return nvgpu::LdMatrixOp::create(b, loc, lanePart(type), read.getBase(), at,
                                     transposed, matrices);
  }

  /// The lane map (lane, value) -> (row, column) of a fragment of `type`.
  AffineMap laneMap(OpBuilder &b, Location loc, VectorType type,
                    MatMulOperandRole role) {
    Type element = type.getElementType();
    if (element.isBF16())
      element = b.getF16Type(); // the same layout, see the file header
    FailureOr<AffineMap> map = nvgpu::getLaneIdAndValueIdToOperandCoord(
        b, loc, {VectorType::get(type.getShape(), element), role});
    assert(succeeded(map) && "m16n8k16 fragments have lane maps");
    return *map;
  }

  /// The indices into `buffer` of value `v` of this lane's part of the
  /// fragment at `origin` read or written through `permutation`.
  SmallVector<Value> indicesOf(OpBuilder &b, Location loc, AffineMap lanes,
                               int64_t v, ValueRange origin,
                               AffineMap permutation) {
    SmallVector<Value> indices(origin);
    for (unsigned dim = 0; dim < 2; ++dim) {
      AffineMap at = lanes.getSubMap({dim}).replace(
          getAffineDimExpr(1, b.getContext()),
          getAffineConstantExpr(v, b.getContext()), 2, 0);
      unsigned memoryDim = permutation.getDimPosition(dim);
      AffineExpr d0, d1;
      bindDims(b.getContext(), d0, d1);
      // origin + the lane's offset, in one apply.
      AffineMap plus = AffineMap::get(
          2, 0, d0 + at.getResult(0).replaceDims({d1, d1}), b.getContext());
      indices[memoryDim] = affine::AffineApplyOp::create(
          b, loc, plus, ValueRange{indices[memoryDim], lane});
    }
    return indices;
  }

  /// `e` of (`at`, this lane's id), as d0 and d1: one affine.apply.
  Value withLane(OpBuilder &b, Location loc, AffineExpr e, Value at) {
    return affine::AffineApplyOp::create(
               b, loc, AffineMap::get(2, 0, e, b.getContext()),
               ValueRange{at, lane})
        .getResult();
  }

  Value lane;
};
} // namespace

/// Whether the lanes' parts of the fragment `read` reads are one
/// ldmatrix: a 16-wide fragment of the last two dimensions of a shared
/// buffer, read as stored (k the last) or transposed (k the rows:
/// ldmatrix.trans), in bounds, every row it reads 16-byte aligned
/// whatever the leading indices (a stage of a ring): the buffer's offset
/// and strides but the last multiples of eight 16-bit elements, the
/// buffer itself starting aligned to 16 (startsAligned), and the
/// fragment at a multiple of 8 along the buffer's last dimension, as the
/// kernels place them.
bool readsAsMatrix(vector::TransferReadOp read) {
  auto type = cast<MemRefType>(read.getBase().getType());
  if (!gpu::GPUDialect::hasWorkgroupMemoryAddressSpace(type) ||
      !startsAligned(read.getBase()) || type.getRank() < 2 ||
      isPaired(read.getVectorType()) ||
      (read.getPermutationMap() != AffineMap::getMinorIdentityMap(
                                       type.getRank(), 2, read.getContext()) &&
       !readsTransposed(read)) ||
      !read.isDimInBounds(0) || !read.isDimInBounds(1))
    return false;
  auto [strides, offset] = type.getStridesAndOffset();
  if (strides.back() != 1 || ShapedType::isDynamic(offset) || offset % 8)
    return false;
  return llvm::all_of(ArrayRef(strides).drop_back(), [](int64_t stride) {
    return !ShapedType::isDynamic(stride) && stride % 8 == 0;
  });
}

Value loadPart(OpBuilder &b, Value lane, vector::TransferReadOp read,
               ValueRange origin) {
  return Lane(lane).loadLanePart(b, read, origin);
}

/// acc + a * b on this lane's registers: one m16n8k16 mma.sync per step
/// of 16 (two for paired fragments).
Value multiply(OpBuilder &b, Location loc, Value acc, Value lhs, Value rhs,
               VectorType lhsType) {
  NVVM::MMATypes type = lhsType.getElementType().isBF16() ? NVVM::MMATypes::bf16
                                                          : NVVM::MMATypes::f16;
  int64_t steps = lhsType.getDimSize(1) / 16;
  for (int64_t step = 0; step < steps; ++step)
    acc = mmaStep(b, loc, acc, mmaRegisters(b, loc, lhs, step),
                  mmaRegisters(b, loc, rhs, step), type);
  return acc;
}

void storePart(OpBuilder &b, Value lane, vector::TransferWriteOp write,
               ValueRange origin, Value acc) {
  Lane(lane).store(b, write, origin, acc);
}

/// A zero accumulator: this lane's four sums.
Value zeroAccumulator(OpBuilder &b, Location loc) {
  return arith::ConstantOp::create(
      b, loc, accType(b),
      DenseElementsAttr::get(accType(b), b.getF32FloatAttr(0)));
}
} // namespace mlir::flashnorm::mma
