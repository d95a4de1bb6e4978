//===- GemmLt.cpp - cuBLASLt projections ----------------------------------===//
//
// mgpuFlashNormGemmLt: C[m,n] = A[m,k] * B, optionally times a per-row
// scale, summed in f32 and rounded once to C's type, on a runtime stream. Lives
// in libflashnorm_cublaslt so that the runtime itself does not depend on
// cuBLASLt.
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

// m, n, k, input and result types, bLayout, row-scaled, the pointers'
// common alignment.
using Key = std::tuple<int64_t, int64_t, int64_t, int32_t, int32_t, int32_t,
                       bool, uint32_t>;

struct Plan {
  cublasLtMatmulDesc_t operation;
  cublasLtMatrixLayout_t first, second, result;
  cublasLtMatmulAlgo_t algo;
  /// Whether the GEMM takes A first (the row-scaled forms) or B^T.
  bool aFirst = false;
  /// The column-major row-scaled form: the GEMM writes the product
  /// column-major into `scratch`, a transform transposes it into C. One per
  /// shape, like the workspace one per context: a program's GEMMs run on
  /// one stream (a deferred norm forks its statistic, never a GEMM).
  CUdeviceptr scratch = 0;
  cublasLtMatrixTransformDesc_t transpose = nullptr;
  cublasLtMatrixLayout_t scratchLayout = nullptr, cLayout = nullptr;
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
                              int64_t ld, bool rowOrder, CUstream stream) {
  cublasLtMatrixLayout_t layout;
  LT_CHECK(cublasLtMatrixLayoutCreate(&layout, type, rows, cols, ld), stream);
  if (rowOrder) {
    cublasLtOrder_t order = CUBLASLT_ORDER_ROW;
    LT_CHECK(cublasLtMatrixLayoutSetAttribute(
                 layout, CUBLASLT_MATRIX_LAYOUT_ORDER, &order, sizeof(order)),
             stream);
  }
  return layout;
}

void setTranspose(cublasLtMatmulDesc_t operation,
                  cublasLtMatmulDescAttributes_t attribute, bool transpose,
                  CUstream stream) {
  cublasOperation_t value = transpose ? CUBLAS_OP_T : CUBLAS_OP_N;
  LT_CHECK(cublasLtMatmulDescSetAttribute(operation, attribute, &value,
                                          sizeof(value)),
           stream);
}

void destroy(Plan &plan, CUstream stream) {
  LT_CHECK(cublasLtMatmulDescDestroy(plan.operation), stream);
  for (cublasLtMatrixLayout_t l : {plan.first, plan.second, plan.result})
    LT_CHECK(cublasLtMatrixLayoutDestroy(l), stream);
}

/// The heuristic's best algorithm for `plan`'s descriptors, or false.
bool chooseAlgorithm(cublasLtHandle_t handle, Plan &plan, uint32_t alignment,
                     CUstream stream) {
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
  // An unsupported combination is "not supported" or no result: either
  // way the caller tries the next form.
  cublasStatus_t status = cublasLtMatmulAlgoGetHeuristic(
      handle, plan.operation, plan.first, plan.second, plan.result, plan.result,
      preference, 1, &heuristic, &found);
  LT_CHECK(cublasLtMatmulPreferenceDestroy(preference), stream);
  if (status == CUBLAS_STATUS_NOT_SUPPORTED)
    return false;
  LT_CHECK(status, stream);
  if (found == 0)
    return false;
  plan.algo = heuristic.algo;
  return true;
}

cublasLtMatmulDesc_t operation(bool rowScaled, CUstream stream) {
  cublasLtMatmulDesc_t operation;
  LT_CHECK(cublasLtMatmulDescCreate(&operation, CUBLAS_COMPUTE_32F, CUDA_R_32F),
           stream);
  if (rowScaled) {
    cublasLtPointerMode_t mode =
        CUBLASLT_POINTER_MODE_ALPHA_DEVICE_VECTOR_BETA_ZERO;
    LT_CHECK(cublasLtMatmulDescSetAttribute(operation,
                                            CUBLASLT_MATMUL_DESC_POINTER_MODE,
                                            &mode, sizeof(mode)),
             stream);
  }
  return operation;
}

/// Which form a shape got: the trace says it once per shape.
void tracePlan(const Key &key, const char *form) {
  auto [m, n, k, abType, cType, bLayout, scaled, alignment] = key;
  FN_TRACE("gemmLt plan m=%lld n=%lld k=%lld dtype=%d cDtype=%d bLayout=%d "
           "alignment=%u: %s",
           static_cast<long long>(m), static_cast<long long>(n),
           static_cast<long long>(k), abType, cType, bLayout, alignment, form);
  (void)scaled;
}

// Three forms, all summing in f32 and rounding once to C's type:
// - unscaled: the row-major product as its column-major transpose,
//   C^T = B^T A^T, the layout every cuBLASLt kernel supports;
// - row-scaled: cuBLASLt's alpha vector scales rows of D, which in that
//   transposed form are the features, not the tokens. So the row-major
//   matrices are described as they are (CUBLASLT_ORDER_ROW);
// - row-scaled where no algorithm takes row-ordered layouts: the
//   column-major product D = A B (both operands transposed from their
//   row-major storage), its rows the tokens, into a scratch buffer, then a
//   cuBLASLt transform transposes it into C (in C's type: a copy, no
//   second rounding).
Plan makePlan(cublasLtHandle_t handle, const Key &key, CUstream stream) {
  auto [m, n, k, abType, cType, bLayout, scaled, alignment] = key;
  cudaDataType_t in = dataType(abType), out = dataType(cType);
  bool weightLayout = bLayout == 1;
  Plan plan;
  if (!scaled) {
    plan.operation = operation(false, stream);
    // First operand B^T: [n,k] from B[k,n] as is, or from W[n,k] transposed.
    plan.first = weightLayout ? layout(in, k, n, k, false, stream)
                              : layout(in, n, k, n, false, stream);
    plan.second = layout(in, k, m, k, false, stream);
    plan.result = layout(out, n, m, n, false, stream);
    setTranspose(plan.operation, CUBLASLT_MATMUL_DESC_TRANSA, weightLayout,
                 stream);
    if (chooseAlgorithm(handle, plan, alignment, stream)) {
      tracePlan(key, "transposed column-major");
      return plan;
    }
  } else {
    plan.aFirst = true;
    plan.operation = operation(true, stream);
    plan.first = layout(in, m, k, k, true, stream);
    plan.second = weightLayout ? layout(in, n, k, k, true, stream)
                               : layout(in, k, n, n, true, stream);
    plan.result = layout(out, m, n, n, true, stream);
    setTranspose(plan.operation, CUBLASLT_MATMUL_DESC_TRANSB, weightLayout,
                 stream);
    if (chooseAlgorithm(handle, plan, alignment, stream)) {
      tracePlan(key, "row-ordered, alpha vector");
      return plan;
    }
    destroy(plan, stream);
    // A [m,k] row-major is [k,m] column-major: transposed. B [k,n]
    // row-major is [n,k] column-major: transposed; W [n,k] row-major is
    // [k,n] column-major: as is.
    plan.operation = operation(true, stream);
    plan.first = layout(in, k, m, k, false, stream);
    plan.second = weightLayout ? layout(in, k, n, k, false, stream)
                               : layout(in, n, k, n, false, stream);
    plan.result = layout(out, m, n, m, false, stream);
    setTranspose(plan.operation, CUBLASLT_MATMUL_DESC_TRANSA, true, stream);
    setTranspose(plan.operation, CUBLASLT_MATMUL_DESC_TRANSB, !weightLayout,
                 stream);
    // (The GEMM writes the scratch buffer, aligned for any algorithm; C is
    // the transform's: `alignment` covers it too.)
    if (chooseAlgorithm(handle, plan, alignment, stream)) {
      FN_CHECK(cuMemAlloc(&plan.scratch, m * n * elementBytes(cType)), stream);
      LT_CHECK(cublasLtMatrixTransformDescCreate(&plan.transpose, CUDA_R_32F),
               stream);
      cublasOperation_t t = CUBLAS_OP_T;
      LT_CHECK(cublasLtMatrixTransformDescSetAttribute(
                   plan.transpose, CUBLASLT_MATRIX_TRANSFORM_DESC_TRANSA, &t,
                   sizeof(t)),
               stream);
      plan.scratchLayout = layout(out, m, n, m, false, stream);
      plan.cLayout = layout(out, n, m, n, false, stream);
      tracePlan(key, "column-major, alpha vector, into scratch + transpose");
      return plan;
    }
  }
  fatal("mgpuFlashNormGemmLt: no cuBLASLt algorithm for m=%lld n=%lld "
        "k=%lld dtype=%d result dtype=%d bLayout=%d%s",
        static_cast<long long>(m), static_cast<long long>(n),
        static_cast<long long>(k), abType, cType, bLayout,
        scaled ? " with a row scale" : "");
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
                                    int32_t bLayout, void *rowScale) {
  Entry entry;
  auto stream = static_cast<CUstream>(streamHandle);
  if (bLayout != 0 && bLayout != 1)
    fatal("mgpuFlashNormGemmLt: unknown bLayout %d (0 [k,n], 1 [n,k])",
          bLayout);
  // Both type codes known, or a fatal error.
  dataType(dtype);
  dataType(cDtype);
  Key key{m,
          n,
          k,
          dtype,
          cDtype,
          bLayout,
          rowScale != nullptr,
          commonAlignment({a, b, c})};
  // Shapes do not change a graph's topology: one tag for all.
  bool captured = beginStreamOp(stream, /*"GEMM"*/ 0x47454d4d);
  FN_TRACE("gemmLt m=%lld n=%lld k=%lld dtype=%d cDtype=%d bLayout=%d "
           "rowScale=%p stream=%p%s",
           static_cast<long long>(m), static_cast<long long>(n),
           static_cast<long long>(k), dtype, cDtype, bLayout, rowScale,
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
  const void *alpha = rowScale ? rowScale : &one;
  const void *first = plan.aFirst ? a : b;
  const void *second = plan.aFirst ? b : a;
  void *d = plan.scratch ? reinterpret_cast<void *>(plan.scratch) : c;
  LT_CHECK(cublasLtMatmul(context.handle, plan.operation, alpha, first,
                          plan.first, second, plan.second, &zero, d,
                          plan.result, d, plan.result, &plan.algo,
                          reinterpret_cast<void *>(context.workspace),
                          WorkspaceBytes, stream),
           stream);
  if (plan.scratch)
    LT_CHECK(cublasLtMatrixTransform(context.handle, plan.transpose, &one, d,
                                     plan.scratchLayout, &zero, nullptr,
                                     nullptr, c, plan.cLayout, stream),
             stream);
}
