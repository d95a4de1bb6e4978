//===- CpuBench.cpp - Norm + projection on the CPU against OpenBLAS -------===//
//
// For each shape (hidden K, output N, tokens M) and weight type (f32, bf16)
// times, in one process, programs whose weight is a constant (as after
// fold-gains), compiled by flashnorm-cpu-pipeline (weights packed at compile
// time, register-blocked micro-kernels):
//   limit-1t   the projection alone, x W, on one core (panels in a loop)
//   limit      the projection alone on both cores (panels split)
//   flashnorm  the rewritten program: rms_inv(x) beside x W*, the post-scale
//   serial     rms_norm(x) g, then the projection (the unrewritten program)
// against OpenBLAS's cblas_sgemv / cblas_sgemm on one and on two threads on
// an f32 copy of the weights (Debian's OpenBLAS has no bf16 GEMM: a user
// with bf16 weights runs them in f32). Activations are in the weight's type,
// outputs f32 (the accumulator). Prints medians, the ratios and one summary
// line. A benchmark: exit 0.
//
//===----------------------------------------------------------------------===//

#include "flashnorm/InitAll.h"
#include "flashnorm/Pipelines/Pipelines.h"
#include "flashnorm/Utils/WeightFolder.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

extern "C" {
#include <cblas.h>
void openblas_set_num_threads(int);
}

using namespace mlir;

namespace {
enum class Mode { LimitOneCore, Limit, FlashNorm, Serial };
constexpr Mode kModes[] = {Mode::LimitOneCore, Mode::Limit, Mode::FlashNorm,
                           Mode::Serial};

std::string tensor(std::initializer_list<int64_t> dims, const char *elt) {
  std::string s = "tensor<";
  for (int64_t d : dims)
    s += std::to_string(d) + "x";
  return s + elt + ">";
}

/// @f(x: MxK, g: K) -> MxN with the weight the constant blob `blob`.
std::string program(Mode mode, int64_t m, int64_t k, int64_t n, const char *elt,
                    const std::string &blob) {
  std::string x = tensor({m, k}, elt), g = tensor({k}, elt),
              w = tensor({k, n}, elt), y = tensor({m, n}, "f32");
  std::string s = "func.func @f(%x: " + x + ", %g: " + g + ") -> " + y +
                  " {\n  %w = arith.constant dense_resource<" + blob +
                  "> : " + w + "\n";
  s += "  %c0 = arith.constant 0.0 : f32\n  %e = tensor.empty() : " + y +
       "\n  %z = linalg.fill ins(%c0 : f32) outs(%e : " + y + ") -> " + y +
       "\n";
  auto matmul = [&](const std::string &in) {
    return "linalg.matmul ins(" + in + ", %w : " + x + ", " + w +
           ") outs(%z : " + y + ") -> " + y + "\n";
  };
  switch (mode) {
  case Mode::Serial:
    s += "  %n = flashnorm.rms_norm %x gain(%g : " + g +
         ") eps(1.0e-05) : " + x + "\n  %y = " + matmul("%n");
    break;
  case Mode::FlashNorm:
    s += "  %s = flashnorm.rms_inv %x eps(1.0e-05) : " + x + " -> " +
         tensor({m}, "f32") + "\n  %p = " + matmul("%x") +
         "  %y = flashnorm.post_scale %p, %s : " + y + ", " +
         tensor({m}, "f32") + " -> " + y + "\n";
    break;
  case Mode::Limit:
  case Mode::LimitOneCore:
    s += "  %y = " + matmul("%x");
    break;
  }
  return s + "  return %y : " + y + "\n}\n";
}

std::unique_ptr<ExecutionEngine> compile(MLIRContext &ctx, Mode mode, int64_t m,
                                         int64_t k, int64_t n, bool bf16,
                                         const std::vector<char> &weight) {
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(
      program(mode, m, k, n, bf16 ? "bf16" : "f32", "w"), &ctx);
  if (!module)
    return nullptr;
  // The weight's bytes, without a copy into the IR text: the blob of the
  // resource the parser made for it.
  module->walk([&](arith::ConstantOp c) {
    if (auto r = dyn_cast<DenseResourceElementsAttr>(c.getValue()))
      r.getRawHandle().getResource()->setBlob(
          UnmanagedAsmResourceBlob::allocateInferAlign(
              ArrayRef<char>(weight.data(), weight.size())));
  });
  PassManager pm(&ctx);
  flashnorm::CpuPipelineOptions options;
  options.concurrent = mode == Mode::FlashNorm;
  if (failed(flashnorm::buildCpuPipeline(pm, options, llvm::errs())))
    return nullptr;
  if (mode == Mode::LimitOneCore) {
    // The same pipeline with the panels kept on one core.
    pm.clear();
    if (failed(parsePassPipeline(
            "func.func(flashnorm-pack-weights{parallel-min-bytes="
            "9223372036854775807})",
            pm, llvm::errs())))
      return nullptr;
    flashnorm::CpuPipelineOptions rest;
    rest.concurrent = false;
    rest.packWeights = false;
    if (failed(flashnorm::buildCpuPipeline(pm, rest, llvm::errs())))
      return nullptr;
  }
  if (failed(pm.run(*module)))
    return nullptr;
  ExecutionEngineOptions engineOptions;
  auto transformer = makeOptimizingTransformer(3, 0, nullptr);
  engineOptions.transformer = transformer;
  SmallVector<StringRef> libs{
      FLASHNORM_MLIR_LIB_DIR "/libmlir_async_runtime.so",
      FLASHNORM_MLIR_LIB_DIR "/libmlir_c_runner_utils.so",
      FLASHNORM_MLIR_LIB_DIR "/libomp.so"};
  engineOptions.sharedLibPaths = libs;
  auto engine = ExecutionEngine::create(*module, engineOptions);
  if (!engine) {
    llvm::errs() << llvm::toString(engine.takeError()) << "\n";
    return nullptr;
  }
  return std::move(*engine);
}

/// A memref descriptor argument list for one buffer (rank 1 or 2).
struct Descriptor {
  void *ptr;
  int64_t offset = 0, sizes[2], strides[2];
  int rank;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

/// Median seconds of `fn` over enough calls to fill ~0.3 s (at least 5).
template <typename Fn> double timeIt(Fn &&fn) {
  using clock = std::chrono::steady_clock;
  for (int i = 0; i < 2; ++i)
    fn();
  std::vector<double> times;
  auto start = clock::now();
  while (times.size() < 5 ||
         (std::chrono::duration<double>(clock::now() - start).count() < 0.3 &&
          times.size() < 200)) {
    auto t0 = clock::now();
    fn();
    times.push_back(std::chrono::duration<double>(clock::now() - t0).count());
  }
  return median(times);
}

double runJit(ExecutionEngine &engine, void *x, void *g, int64_t m, int64_t k) {
  Descriptor dx{x, 0, {m, k}, {k, 1}, 2}, dg{g, 0, {k, 0}, {1, 0}, 1};
  std::vector<void *> args;
  for (Descriptor *d : {&dx, &dg}) {
    args.push_back(&d->ptr);
    args.push_back(&d->ptr);
    args.push_back(&d->offset);
    for (int i = 0; i < d->rank; ++i)
      args.push_back(&d->sizes[i]);
    for (int i = 0; i < d->rank; ++i)
      args.push_back(&d->strides[i]);
  }
  int64_t result[7]; // allocated, aligned, offset, sizes[2], strides[2]
  args.push_back(result);
  return timeIt([&] {
    if (llvm::Error err = engine.invokePacked("f", args)) {
      llvm::errs() << llvm::toString(std::move(err)) << "\n";
      std::exit(1);
    }
    std::free(reinterpret_cast<void *>(result[0]));
  });
}

/// f32 values as the weight type's bytes (bf16: rounded once), and back.
std::vector<char> encode(const std::vector<float> &v, bool bf16) {
  std::vector<char> out(v.size() * (bf16 ? 2 : 4));
  if (!bf16) {
    std::memcpy(out.data(), v.data(), out.size());
    return out;
  }
  for (size_t i = 0; i < v.size(); ++i) {
    uint16_t b = flashnorm::encodeBFloat(v[i]);
    std::memcpy(&out[2 * i], &b, 2);
  }
  return out;
}
std::vector<float> decode(const std::vector<char> &bytes, bool bf16) {
  std::vector<float> v(bytes.size() / (bf16 ? 2 : 4));
  for (size_t i = 0; i < v.size(); ++i) {
    if (!bf16) {
      std::memcpy(&v[i], &bytes[4 * i], 4);
      continue;
    }
    uint16_t b;
    std::memcpy(&b, &bytes[2 * i], 2);
    v[i] = static_cast<float>(flashnorm::decodeBFloat(b));
  }
  return v;
}
} // namespace

int main(int argc, char **argv) {
  bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  DialectRegistry registry;
  registerAllDialects(registry);
  registerAllExtensions(registry);
  registerAllToLLVMIRTranslations(registry);
  flashnorm::registerAllDialects(registry);
  registerAllPasses();
  flashnorm::registerAllPasses();
  MLIRContext ctx(registry);
  ctx.disableMultithreading(); // The JIT-compiled code owns the cores.

  std::printf("flashnorm-cpu-bench: medians in ms; weights constant, "
              "packed at compile time; 1t = one core\n");
  std::printf("%-5s %-4s %5s %6s %9s %9s %9s %9s %9s %9s %7s %7s %7s %7s\n",
              "dtype", "M", "K", "N", "limit-1t", "blas-1t", "limit", "blas-2t",
              "flashnorm", "serial", "lim/bl1", "lim/bl2", "fn/lim", "ser/lim");
  double worstFn = 0, worstSerial = 0, worstDecode = 0, worstPrefill = 0,
         worstMt = 0;
  std::vector<std::unique_ptr<ExecutionEngine>> engines;
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> dist(-1, 1);
  std::vector<int64_t> ks =
      quick ? std::vector<int64_t>{2048} : std::vector<int64_t>{2048, 4096};
  std::vector<int64_t> ms =
      quick ? std::vector<int64_t>{1, 128} : std::vector<int64_t>{1, 16, 128};
  for (bool bf16 : {false, true})
    for (int64_t k : ks)
      for (int64_t n : {k, k * 11 / 4}) {
        std::vector<float> wf(k * n);
        for (float &v : wf)
          v = dist(rng) / 64;
        std::vector<char> w = encode(wf, bf16);
        wf = decode(w, bf16); // OpenBLAS multiplies the same numbers.
        for (int64_t m : ms) {
          std::vector<float> xf(m * k), gf(k), y(m * n);
          for (float &v : xf)
            v = dist(rng);
          for (float &v : gf)
            v = 1 + dist(rng) / 2;
          std::vector<char> x = encode(xf, bf16), g = encode(gf, bf16);
          xf = decode(x, bf16);
          double t[4];
          for (Mode mode : kModes) {
            std::unique_ptr<ExecutionEngine> engine =
                compile(ctx, mode, m, k, n, bf16, w);
            if (!engine) {
              std::fprintf(stderr, "cannot compile mode %d\n", int(mode));
              return 1;
            }
            t[int(mode)] = runJit(*engine, x.data(), g.data(), m, k);
            // Destroying an engine that loaded the async runtime tears the
            // runtime down for the next one: keep them all until exit.
            engines.push_back(std::move(engine));
          }
          double blas[2];
          for (int threads : {1, 2}) {
            openblas_set_num_threads(threads);
            blas[threads - 1] = timeIt([&] {
              if (m == 1)
                cblas_sgemv(CblasRowMajor, CblasTrans, k, n, 1.0f, wf.data(), n,
                            xf.data(), 1, 0.0f, y.data(), 1);
              else
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k,
                            1.0f, xf.data(), k, wf.data(), n, 0.0f, y.data(),
                            n);
            });
          }
          double vs1 = t[0] / blas[0], vs2 = t[1] / blas[1], fn = t[2] / t[1],
                 ser = t[3] / t[1];
          (m == 1 ? worstDecode : worstPrefill) =
              std::max(m == 1 ? worstDecode : worstPrefill, vs1);
          worstMt = std::max(worstMt, vs2);
          worstFn = std::max(worstFn, fn);
          worstSerial = std::max(worstSerial, ser);
          std::printf("%-5s %-4lld %5lld %6lld %9.3f %9.3f %9.3f %9.3f %9.3f "
                      "%9.3f %7.2f %7.2f %7.2f %7.2f\n",
                      bf16 ? "bf16" : "f32", (long long)m, (long long)k,
                      (long long)n, t[0] * 1e3, blas[0] * 1e3, t[1] * 1e3,
                      blas[1] * 1e3, t[2] * 1e3, t[3] * 1e3, vs1, vs2, fn, ser);
          std::fflush(stdout);
        }
      }
  std::printf("targets: limit-1t <= 1.3x blas-1t at M = 1, <= 1.6x at "
              "M = 128; limit <= 1.3x blas-2t; flashnorm <= 1.03x limit\n");
  std::printf(
      "flashnorm_vs_limit=%.2f serial_vs_limit=%.2f "
      "limit_vs_openblas=%.2f (decode %.2f) limit_vs_openblas_mt=%.2f\n",
      worstFn, worstSerial, std::max(worstDecode, worstPrefill), worstDecode,
      worstMt);
  std::fflush(stdout);
  std::_Exit(0); // Skip the engines' teardown (see above).
}
