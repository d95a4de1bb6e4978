//===- GemmLt.cpp - cuBLASLt projections ----------------------------------===//
//
// mgpuFlashNormGemmLt: C[m,n] = A[m,k] * B, summed in f32 and rounded once
// to C's type, on a runtime stream. Lives in libflashnorm_cublaslt so that
// the runtime itself does not depend on cuBLASLt.
//
//===----------------------------------------------------------------------===//

#include "Runtime.h"

#include <cublasLt.h>

#include <map>
#include <tuple>

using namespace flashnorm::cuda;

namespace {

void checkLt(cublasStatus_t status, const char *call, CUstream stream) {
  if (status != CUBLAS_STATUS_SUCCESS)
    fatal("%s failed: %s (%d), stream: %p", call, cublasLtGetStatusName(status),
          static_cast<int>(status), static_cast<void *>(stream));
}
#define LT_CHECK(call, stream) checkLt((call), #call, (stream))

// m, n, k, input and result types, bLayout, the pointers' common
// alignment.
using Key =
    std::tuple<int64_t, int64_t, int64_t, int32_t, int32_t, int32_t, uint32_t>;

struct Plan {
  cublasLtMatmulDesc_t operation;
  cublasLtMatrixLayout_t first, second, result;
  cublasLtMatmulAlgo_t algo;
};

struct LtContext {
  cublasLtHandle_t handle = nullptr;
  CUdeviceptr workspace = 0;
  std::map<Key, Plan> plans;
};

// What NVIDIA recommends for Hopper; plenty for the others.
constexpr size_t WorkspaceBytes = 32 << 20;

cudaDataType_t dataType(int32_t dtype) {
  switch (dtype) {
  case 0:
    return CUDA_R_32F;
  case 1:
    return CUDA_R_16F;
  case 2:
    return CUDA_R_16BF;
  }
  fatal("mgpuFlashNormGemmLt: unknown dtype %d (0 f32, 1 f16, 2 bf16)", dtype);
}

size_t elementBytes(int32_t dtype) { return dtype == 0 ? 4 : 2; }

cublasLtMatrixLayout_t layout(cudaDataType_t type, int64_t rows, int64_t cols,
                              int64_t ld, CUstream stream) {
  cublasLtMatrixLayout_t layout;
  LT_CHECK(cublasLtMatrixLayoutCreate(&layout, type, rows, cols, ld), stream);
  return layout;
}

/// The row-major product as its column-major transpose, C^T = B^T A^T, the
/// layout every cuBLASLt kernel supports, summing in f32 and rounding once
/// to C's type. (A deferred norm's post-scale cannot ride along as
/// cuBLASLt's alpha vector: on an H200 the heuristic offers no algorithm
/// for that pointer mode with f32, f16 or bf16 operands in any layout, so
/// flashnorm-gpu-kernels scales the activation before the GEMM instead.)
Plan makePlan(cublasLtHandle_t handle, const Key &key, CUstream stream) {
  auto [m, n, k, abType, cType, bLayout, alignment] = key;
  cudaDataType_t in = dataType(abType), out = dataType(cType);
  bool weightLayout = bLayout == 1;
  Plan plan;
  LT_CHECK(
      cublasLtMatmulDescCreate(&plan.operation, CUBLAS_COMPUTE_32F, CUDA_R_32F),
      stream);
  // First operand B^T: [n,k] from B[k,n] as is, or from W[n,k] transposed.
  plan.first =
      weightLayout ? layout(in, k, n, k, stream) : layout(in, n, k, n, stream);
  plan.second = layout(in, k, m, k, stream);
  plan.result = layout(out, n, m, n, stream);
  cublasOperation_t transpose = weightLayout ? CUBLAS_OP_T : CUBLAS_OP_N;
  LT_CHECK(cublasLtMatmulDescSetAttribute(plan.operation,
                                          CUBLASLT_MATMUL_DESC_TRANSA,
                                          &transpose, sizeof(transpose)),
           stream);

  cublasLtMatmulPreference_t preference;
  LT_CHECK(cublasLtMatmulPreferenceCreate(&preference), stream);
  size_t workspace = WorkspaceBytes;
  LT_CHECK(cublasLtMatmulPreferenceSetAttribute(
               preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace,
               sizeof(workspace)),
           stream);
  for (auto attribute : {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES,
                         CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                         CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES,
                         CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES})
    LT_CHECK(cublasLtMatmulPreferenceSetAttribute(
                 preference, attribute, &alignment, sizeof(alignment)),
             stream);
  cublasLtMatmulHeuristicResult_t heuristic;
  int found = 0;
  LT_CHECK(cublasLtMatmulAlgoGetHeuristic(handle, plan.operation, plan.first,
                                          plan.second, plan.result, plan.result,
                                          preference, 1, &heuristic, &found),
           stream);
  LT_CHECK(cublasLtMatmulPreferenceDestroy(preference), stream);
  if (found == 0)
    fatal("mgpuFlashNormGemmLt: no cuBLASLt algorithm for m=%lld n=%lld "
          "k=%lld dtype=%d result dtype=%d bLayout=%d",
          static_cast<long long>(m), static_cast<long long>(n),
          static_cast<long long>(k), abType, cType, bLayout);
  plan.algo = heuristic.algo;
  return plan;
}

LtContext &ltContext(CUstream stream) {
  // Never destroyed, like the runtime's state.
  static auto &contexts = *new std::map<CUcontext, LtContext>;
  CUcontext current;
  FN_CHECK(cuCtxGetCurrent(&current), stream);
  LtContext &context = contexts[current];
  if (!context.handle) {
    LT_CHECK(cublasLtCreate(&context.handle), stream);
    FN_CHECK(cuMemAlloc(&context.workspace, WorkspaceBytes), stream);
  }
  return context;
}

uint32_t commonAlignment(std::initializer_list<const void *> pointers) {
  uint32_t alignment = 16;
  for (const void *ptr : pointers)
    while (reinterpret_cast<uintptr_t>(ptr) % alignment)
      alignment /= 2;
  return alignment;
}

} // namespace

extern "C" void mgpuFlashNormGemmLt(void *streamHandle, int64_t m, int64_t n,
                                    int64_t k, void *a, void *b, void *c,
                                    int32_t dtype, int32_t cDtype,
                                    int32_t bLayout) {
  Entry entry;
  auto stream = static_cast<CUstream>(streamHandle);
  if (bLayout != 0 && bLayout != 1)
    fatal("mgpuFlashNormGemmLt: unknown bLayout %d (0 [k,n], 1 [n,k])",
          bLayout);
  // Both type codes known, or a fatal error.
  dataType(dtype);
  dataType(cDtype);
  Key key{m, n, k, dtype, cDtype, bLayout, commonAlignment({a, b, c})};
  // Shapes do not change a graph's topology: one tag for all.
  bool captured = beginStreamOp(stream, /*"GEMM"*/ 0x47454d4d);
  FN_TRACE("gemmLt m=%lld n=%lld k=%lld dtype=%d cDtype=%d bLayout=%d "
           "stream=%p%s",
           static_cast<long long>(m), static_cast<long long>(n),
           static_cast<long long>(k), dtype, cDtype, bLayout,
           static_cast<void *>(stream), captured ? " captured" : "");
  if (m == 0 || n == 0)
    return;
  if (k == 0) {
    // An empty sum (zero in every type); cuBLASLt rejects k == 0.
    size_t bytes = m * n * elementBytes(cDtype);
    FN_CHECK(
        cuMemsetD8Async(reinterpret_cast<CUdeviceptr>(c), 0, bytes, stream),
        stream);
    return;
  }
  LtContext &context = ltContext(stream);
  auto it = context.plans.find(key);
  if (it == context.plans.end())
    it =
        context.plans.emplace(key, makePlan(context.handle, key, stream)).first;
  const Plan &plan = it->second;
  const float one = 1.0f, zero = 0.0f;
  LT_CHECK(cublasLtMatmul(context.handle, plan.operation, &one, b, plan.first,
                          a, plan.second, &zero, c, plan.result, c, plan.result,
                          &plan.algo,
                          reinterpret_cast<void *>(context.workspace),
                          WorkspaceBytes, stream),
           stream);
}
