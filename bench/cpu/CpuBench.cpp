//===- CpuBench.cpp - Norm + projection on the CPU against its limits
//-------===//
//
// For each shape (hidden K, output N, tokens M) times, in one process:
//   serial     rms_norm(x) g, then the projection (the unrewritten program)
//   flashnorm  the rewritten program: rms_inv(x) beside x W*, then the
//              post-scale (flashnorm-cpu-pipeline, concurrent)
//   limit      the projection alone, x W (same code generator)
//   openblas   cblas_sgemm / cblas_sgemv on one thread (our code is one
//              thread too, apart from the concurrent statistic)
// all JIT-compiled through flashnorm-cpu-pipeline (tiled, vectorized), and
// prints medians, the ratios, and one summary line. A benchmark: exit 0.
//
//===----------------------------------------------------------------------===//

#include "flashnorm/InitAll.h"
#include "flashnorm/Pipelines/Pipelines.h"

#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
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
enum class Mode { Serial, FlashNorm, Limit };
const char *modeName(Mode m) {
  return m == Mode::Serial      ? "serial"
         : m == Mode::FlashNorm ? "flashnorm"
                                : "limit";
}

std::string tensor(std::initializer_list<int64_t> dims) {
  std::string s = "tensor<";
  for (int64_t d : dims)
    s += std::to_string(d) + "x";
  return s + "f32>";
}

/// @f(x: MxK, g: K, w: KxN) -> MxN in the form each mode measures.
std::string program(Mode mode, int64_t m, int64_t k, int64_t n) {
  std::string x = tensor({m, k}), g = tensor({k}), w = tensor({k, n}),
              y = tensor({m, n});
  std::string s = "func.func @f(%x: " + x + ", %g: " + g + ", %w: " + w +
                  ") -> " + y + " {\n";
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
         tensor({m}) + "\n  %p = " + matmul("%x") +
         "  %y = flashnorm.post_scale %p, %s : " + y + ", " + tensor({m}) +
         " -> " + y + "\n";
    break;
  case Mode::Limit:
    s += "  %y = " + matmul("%x");
    break;
  }
  return s + "  return %y : " + y + "\n}\n";
}

std::unique_ptr<ExecutionEngine> compile(MLIRContext &ctx, Mode mode, int64_t m,
                                         int64_t k, int64_t n) {
  OwningOpRef<ModuleOp> module =
      parseSourceString<ModuleOp>(program(mode, m, k, n), &ctx);
  if (!module)
    return nullptr;
  PassManager pm(&ctx);
  flashnorm::CpuPipelineOptions options;
  options.concurrent = mode == Mode::FlashNorm;
  if (failed(flashnorm::buildCpuPipeline(pm, options, llvm::errs())) ||
      failed(pm.run(*module)))
    return nullptr;
  ExecutionEngineOptions engineOptions;
  auto transformer = makeOptimizingTransformer(3, 0, nullptr);
  engineOptions.transformer = transformer;
  SmallVector<StringRef> libs;
  if (mode == Mode::FlashNorm)
    libs.push_back(FLASHNORM_MLIR_LIB_DIR "/libmlir_async_runtime.so");
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
  float *ptr;
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

double runJit(ExecutionEngine &engine, float *x, float *g, float *w, int64_t m,
              int64_t k, int64_t n) {
  Descriptor dx{x, 0, {m, k}, {k, 1}, 2}, dg{g, 0, {k, 0}, {1, 0}, 1},
      dw{w, 0, {k, n}, {n, 1}, 2};
  std::vector<void *> args;
  for (Descriptor *d : {&dx, &dg, &dw}) {
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
  openblas_set_num_threads(1);

  std::printf("flashnorm-cpu-bench: medians in ms; f32; one thread except the "
              "concurrent statistic\n");
  std::printf("%-6s %6s %6s %10s %10s %10s %10s %8s %8s %8s\n", "tokens", "K",
              "N", "serial", "flashnorm", "limit", "openblas", "fn/lim",
              "ser/lim", "lim/blas");
  double worstFn = 0, worstSerial = 0, worstBlas = 0;
  std::vector<std::unique_ptr<ExecutionEngine>> engines;
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> dist(-1, 1);
  for (int64_t k :
       quick ? std::vector<int64_t>{2048} : std::vector<int64_t>{2048, 4096})
    for (int64_t n : {k, k * 11 / 4})
      for (int64_t m : {int64_t(1), int64_t(128)}) {
        std::vector<float> x(m * k), g(k), w(k * n), y(m * n);
        for (float &v : x)
          v = dist(rng);
        for (float &v : g)
          v = 1 + dist(rng) / 2;
        for (float &v : w)
          v = dist(rng) / 64;
        double t[3];
        for (Mode mode : {Mode::Serial, Mode::FlashNorm, Mode::Limit}) {
          std::unique_ptr<ExecutionEngine> engine = compile(ctx, mode, m, k, n);
          if (!engine) {
            std::fprintf(stderr, "cannot compile %s\n", modeName(mode));
            return 1;
          }
          t[int(mode)] = runJit(*engine, x.data(), g.data(), w.data(), m, k, n);
          // Destroying an engine that loaded the async runtime tears the
          // runtime down for the next one: keep them all until exit.
          engines.push_back(std::move(engine));
        }
        double blas = timeIt([&] {
          if (m == 1)
            cblas_sgemv(CblasRowMajor, CblasTrans, k, n, 1.0f, w.data(), n,
                        x.data(), 1, 0.0f, y.data(), 1);
          else
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k,
                        1.0f, x.data(), k, w.data(), n, 0.0f, y.data(), n);
        });
        double fn = t[1] / t[2], ser = t[0] / t[2], lim = t[2] / blas;
        worstFn = std::max(worstFn, fn);
        worstSerial = std::max(worstSerial, ser);
        worstBlas = std::max(worstBlas, lim);
        std::printf("%-6lld %6lld %6lld %10.3f %10.3f %10.3f %10.3f %8.2f "
                    "%8.2f %8.2f\n",
                    (long long)m, (long long)k, (long long)n, t[0] * 1e3,
                    t[1] * 1e3, t[2] * 1e3, blas * 1e3, fn, ser, lim);
        std::fflush(stdout);
      }
  std::printf("targets: flashnorm_vs_limit <= 1.05; limit_vs_openblas <= 1.5 "
              "(decode), 2 (prefill)\n");
  std::printf("flashnorm_vs_limit=%.2f serial_vs_limit=%.2f "
              "limit_vs_openblas=%.2f\n",
              worstFn, worstSerial, worstBlas);
  std::fflush(stdout);
  std::_Exit(0); // Skip the engines' teardown (see above).
}
