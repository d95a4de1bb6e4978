//===- RunnerUtils.cpp - The printing helpers ahead-of-time programs call -===//
//
// Programs compiled ahead of time for a machine without LLVM/MLIR (the GPU
// kit, scripts/gpu-kit.sh) call the few helpers that MLIR's runner utility
// libraries provide: printMemref* for results, the vector.print family for
// recurrent checksums, memrefCopy for strided copies. Upstream's libraries
// link libLLVM and libMLIR (hundreds of MB), so this one reimplements those
// entry points with the same C ABI and depends on libc alone.
//
// Output format: what upstream prints, as far as test/compare-outputs.py
// reads it ("data =" followed by the numbers, nested in brackets), with
// 9 significant digits so that a float round-trips.
//
//===----------------------------------------------------------------------===//

#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstring>

namespace {

/// A ranked memref descriptor of any rank: allocated, aligned, offset, then
/// rank sizes followed by rank strides.
struct Descriptor {
  void *allocated;
  void *aligned;
  int64_t offset;
  int64_t sizesAndStrides[];
};

/// An unranked memref as the `_mlir_ciface_` entry points receive it.
struct Unranked {
  int64_t rank;
  Descriptor *descriptor;
};

/// One element, printed.
template <typename T> void printValue(T value) {
  if constexpr (sizeof(T) == 4 && T(0.5) != 0)
    std::printf("%.9g", double(value));
  else if constexpr (sizeof(T) == 8 && T(0.5) != 0)
    std::printf("%.17g", value);
  else
    std::printf("%" PRId64, int64_t(value));
}

template <typename T>
void printNested(const T *base, const int64_t *sizes, const int64_t *strides,
                 int64_t rank, int64_t dim, int64_t indent) {
  if (rank == 0) {
    std::printf("[");
    printValue(*base);
    std::printf("]");
    return;
  }
  std::printf("[");
  for (int64_t i = 0; i < sizes[dim]; ++i) {
    const T *at = base + i * strides[dim];
    if (dim + 1 == rank)
      printValue(*at);
    else
      printNested(at, sizes, strides, rank, dim + 1, indent + 1);
    if (i + 1 < sizes[dim]) {
      std::printf(", ");
      if (dim + 1 < rank)
        std::printf("\n%*s", int(indent + 1), "");
    }
  }
  std::printf("]");
}

template <typename T> void printMemref(int64_t rank, Descriptor *d) {
  const int64_t *sizes = d->sizesAndStrides, *strides = sizes + rank;
  std::printf("Unranked Memref base@ = %p rank = %" PRId64 " offset = %" PRId64
              " sizes = [",
              d->aligned, rank, d->offset);
  for (int64_t i = 0; i < rank; ++i)
    std::printf(i ? ", %" PRId64 : "%" PRId64, sizes[i]);
  std::printf("] strides = [");
  for (int64_t i = 0; i < rank; ++i)
    std::printf(i ? ", %" PRId64 : "%" PRId64, strides[i]);
  std::printf("] data = \n");
  bool empty = false;
  for (int64_t i = 0; i < rank; ++i)
    empty |= sizes[i] == 0;
  if (!empty)
    printNested(static_cast<const T *>(d->aligned) + d->offset, sizes, strides,
                rank, 0, 0);
  std::printf("\n");
  std::fflush(stdout);
}

} // namespace

#define FN_PRINT_MEMREF(SUFFIX, TYPE)                                          \
  extern "C" void printMemref##SUFFIX(int64_t rank, void *descriptor) {        \
    printMemref<TYPE>(rank, static_cast<Descriptor *>(descriptor));            \
  }                                                                            \
  extern "C" void _mlir_ciface_printMemref##SUFFIX(Unranked *m) {              \
    printMemref<TYPE>(m->rank, m->descriptor);                                 \
  }
FN_PRINT_MEMREF(F32, float)
FN_PRINT_MEMREF(F64, double)
FN_PRINT_MEMREF(I32, int32_t)
FN_PRINT_MEMREF(I64, int64_t)
#undef FN_PRINT_MEMREF

// vector.print lowers to these (mlir/ExecutionEngine/CRunnerUtils.h).
extern "C" void printF32(float f) { std::printf("%.9g", double(f)); }
extern "C" void printF64(double d) { std::printf("%.17g", d); }
extern "C" void printI64(int64_t i) { std::printf("%" PRId64, i); }
extern "C" void printU64(uint64_t u) { std::printf("%" PRIu64, u); }
extern "C" void printString(const char *s) { std::fputs(s, stdout); }
extern "C" void printOpen() { std::fputs("( ", stdout); }
extern "C" void printClose() { std::fputs(" )", stdout); }
extern "C" void printComma() { std::fputs(", ", stdout); }
extern "C" void printNewline() {
  std::fputc('\n', stdout);
  std::fflush(stdout);
}

/// memref.copy between layouts the lowering cannot copy with one memcpy:
/// element by element, odometer over the source's sizes.
extern "C" void memrefCopy(int64_t elementBytes, Unranked *src, Unranked *dst) {
  int64_t rank = src->rank;
  const int64_t *sizes = src->descriptor->sizesAndStrides;
  const int64_t *srcStrides = sizes + rank;
  const int64_t *dstStrides = dst->descriptor->sizesAndStrides + rank;
  for (int64_t i = 0; i < rank; ++i)
    if (sizes[i] == 0)
      return;
  auto *from = static_cast<const char *>(src->descriptor->aligned) +
               src->descriptor->offset * elementBytes;
  auto *to = static_cast<char *>(dst->descriptor->aligned) +
             dst->descriptor->offset * elementBytes;
  int64_t index[16] = {0};
  if (rank > 16) {
    std::fprintf(stderr, "memrefCopy: rank %" PRId64 " over 16\n", rank);
    return;
  }
  for (;;) {
    int64_t s = 0, d = 0;
    for (int64_t i = 0; i < rank; ++i) {
      s += index[i] * srcStrides[i];
      d += index[i] * dstStrides[i];
    }
    std::memcpy(to + d * elementBytes, from + s * elementBytes, elementBytes);
    int64_t axis = rank - 1;
    while (axis >= 0 && ++index[axis] == sizes[axis])
      index[axis--] = 0;
    if (axis < 0)
      return;
  }
}
