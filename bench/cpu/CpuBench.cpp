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
// With --layer-norm the norm is a LayerNorm: serial layer_norm(x) g, then
// the projection; flashnorm layer_inv(x) beside x W* (f32: the weight
// carries the centering), or layer_stats(x) beside it and the centered
// post-scale (bf16: the mean times the weight's column sums subtracted).
// against OpenBLAS's cblas_sgemv / cblas_sgemm on one and on two threads on
// an f32 copy of the weights (Debian's OpenBLAS has no bf16 GEMM: a user
// with bf16 weights runs them in f32). Activations are in the weight's type,
// outputs f32 (the accumulator). All six are timed in interleaved rounds;
// prints medians, the ratios and one summary line. A second table measures
// the concurrent statistic's cost rule: the rewritten program on weights
// small enough for one core, its statistic beside the projection or serial,
// for statistics of 16 KiB to 16 MiB. A third measures weights left in
// their stored layout (as a checkpoint's globals or argument weights that
// nothing packs run), N x K as PyTorch stores them (the split-k kernel) and
// K x N (rows streamed in decode): the projection on one core and on both
// against OpenBLAS on as many threads on the same array. A benchmark: exit
// 0.
//
//===----------------------------------------------------------------------===//

#include "flashnorm/InitAll.h"
#include "flashnorm/Pipelines/Pipelines.h"
#include "flashnorm/Utils/RegisterTile.h"
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
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

extern "C" {
#include <cblas.h>
void openblas_set_num_threads(int);
}

using namespace mlir;

namespace {
enum class Mode {
  LimitOneCore,
  Limit,
  FlashNorm,
  Serial,
  StoredNK, // The projection alone, the weight N x K, not packed.
  StoredKN, // The projection alone, the weight K x N, not packed.
};
constexpr Mode kModes[] = {Mode::LimitOneCore, Mode::Limit, Mode::FlashNorm,
                           Mode::Serial};

std::string tensor(std::initializer_list<int64_t> dims, const char *elt) {
  std::string s = "tensor<";
  for (int64_t d : dims)
    s += std::to_string(d) + "x";
  return s + elt + ">";
}

/// Whether the norm is a LayerNorm (--layer-norm), not an RMSNorm.
bool layerNorm = false;

/// @f(x: MxK, g: K) -> MxN with the weight the constant blob `blob` (K x
/// N; N x K, as PyTorch stores it, for Mode::StoredNK).
std::string program(Mode mode, int64_t m, int64_t k, int64_t n, const char *elt,
                    const std::string &blob) {
  bool stored = mode == Mode::StoredNK;
  std::string x = tensor({m, k}, elt), g = tensor({k}, elt),
              w = stored ? tensor({n, k}, elt) : tensor({k, n}, elt),
              y = tensor({m, n}, "f32");
  std::string s = "func.func @f(%x: " + x + ", %g: " + g + ") -> " + y +
                  " {\n  %w = arith.constant dense_resource<" + blob +
                  "> : " + w + "\n";
  s += "  %c0 = arith.constant 0.0 : f32\n  %e = tensor.empty() : " + y +
       "\n  %z = linalg.fill ins(%c0 : f32) outs(%e : " + y + ") -> " + y +
       "\n";
  auto matmul = [&](const std::string &in) {
    std::string maps =
        stored ? "indexing_maps = [affine_map<(m, n, k) -> (m, k)>, "
                 "affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> "
                 "(m, n)>] "
               : "";
    return "linalg.matmul " + maps + "ins(" + in + ", %w : " + x + ", " + w +
           ") outs(%z : " + y + ") -> " + y + "\n";
  };
  std::string rows = tensor({m}, "f32");
  bool centered = layerNorm && std::string(elt) != "f32";
  switch (mode) {
  case Mode::Serial:
    s += std::string("  %n = flashnorm.") +
         (layerNorm ? "layer_norm" : "rms_norm") + " %x gain(%g : " + g +
         ") eps(1.0e-05) : " + x + "\n  %y = " + matmul("%n");
    break;
  case Mode::FlashNorm:
    if (centered)
      s += "  %c = arith.constant dense<0.5> : " + tensor({n}, "f32") +
           "\n  %m, %s = flashnorm.layer_stats %x eps(1.0e-05) : " + x +
           " -> " + rows + "\n  %p = " + matmul("%x") +
           "  %y = flashnorm.centered_post_scale %p, %s, %m, %c : " + y + ", " +
           rows + ", " + tensor({n}, "f32") + " -> " + y + "\n";
    else
      s += std::string("  %s = flashnorm.") +
           (layerNorm ? "layer_inv" : "rms_inv") + " %x eps(1.0e-05) : " + x +
           " -> " + rows + "\n  %p = " + matmul("%x") +
           "  %y = flashnorm.post_scale %p, %s : " + y + ", " + rows + " -> " +
           y + "\n";
    break;
  case Mode::Limit:
  case Mode::LimitOneCore:
  case Mode::StoredNK:
  case Mode::StoredKN:
    s += "  %y = " + matmul("%x");
    break;
  }
  return s + "  return %y : " + y + "\n}\n";
}

std::unique_ptr<ExecutionEngine> compile(MLIRContext &ctx, Mode mode, int64_t m,
                                         int64_t k, int64_t n, bool bf16,
                                         const std::vector<char> &weight,
                                         int64_t concurrentMinBytes = 16 << 20,
                                         int64_t threads = 0) {
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
  options.threads = threads;
  if (mode == Mode::LimitOneCore)
    options.threads = 1; // The panels in a loop.
  options.packWeights = mode != Mode::StoredNK && mode != Mode::StoredKN;
  options.concurrentMinBytes = concurrentMinBytes;
  if (failed(flashnorm::buildCpuPipeline(pm, options, llvm::errs())))
    return nullptr;
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

/// Median seconds per call of each of `fns`, timed in interleaved rounds
/// (calls of each in turn for ~0.1 s, `rounds` rounds): a shared machine's slow
/// and fast moments fall on all of them alike, so their ratios hold within
/// one run. A pause before each lets the previous one's idle threads (OpenMP
/// and OpenBLAS workers spin for a while after a parallel call) go to sleep
/// instead of competing for the cores.
std::vector<double> timeInterleaved(std::vector<std::function<void()>> fns,
                                    int rounds = 5) {
  using clock = std::chrono::steady_clock;
  std::vector<std::vector<double>> times(fns.size());
  for (int round = 0; round < rounds; ++round)
    for (size_t i = 0; i < fns.size(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(250));
      fns[i](); // Warm: caches, pages, the workers' wake-up.
      double spent = 0;
      for (int calls = 0; calls < 3 || (spent < 0.1 && calls < 300); ++calls) {
        auto t0 = clock::now();
        fns[i]();
        double t = std::chrono::duration<double>(clock::now() - t0).count();
        times[i].push_back(t);
        spent += t;
      }
    }
  std::vector<double> medians;
  for (auto &t : times)
    medians.push_back(median(t));
  return medians;
}

/// A call of @f(x, g) (its result freed).
std::function<void()> jitCall(ExecutionEngine &engine, void *x, void *g,
                              int64_t m, int64_t k) {
  auto dx = std::make_shared<Descriptor>(Descriptor{x, 0, {m, k}, {k, 1}, 2});
  auto dg = std::make_shared<Descriptor>(Descriptor{g, 0, {k, 0}, {1, 0}, 1});
  // allocated, aligned, offset, sizes[2], strides[2]
  auto result = std::make_shared<std::array<int64_t, 7>>();
  auto args = std::make_shared<std::vector<void *>>();
  for (Descriptor *d : {dx.get(), dg.get()}) {
    args->push_back(&d->ptr);
    args->push_back(&d->ptr);
    args->push_back(&d->offset);
    for (int i = 0; i < d->rank; ++i)
      args->push_back(&d->sizes[i]);
    for (int i = 0; i < d->rank; ++i)
      args->push_back(&d->strides[i]);
  }
  args->push_back(result->data());
  return [&engine, dx, dg, result, args] {
    if (llvm::Error err = engine.invokePacked("f", *args)) {
      llvm::errs() << llvm::toString(std::move(err)) << "\n";
      std::exit(1);
    }
    std::free(reinterpret_cast<void *>((*result)[0]));
  };
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

/// One row of the first table.
struct Shape {
  bool bf16;
  int64_t m, k, n;
};

/// `f32:M:K:N` or `bf16:M:K:N`.
std::optional<Shape> parseShape(const char *text) {
  char dtype[8];
  long long m, k, n;
  char end;
  if (std::sscanf(text, "%7[a-z0-9]:%lld:%lld:%lld%c", dtype, &m, &k, &n,
                  &end) != 4 ||
      m < 1 || k < 1 || n < 1)
    return std::nullopt;
  if (std::strcmp(dtype, "f32") && std::strcmp(dtype, "bf16"))
    return std::nullopt;
  return Shape{std::strcmp(dtype, "bf16") == 0, m, k, n};
}
} // namespace

int main(int argc, char **argv) {
  // --quick: fewer shapes; --stored: only the stored-layout table;
  // --layer-norm: LayerNorms instead of RMSNorms;
  // --shape=DTYPE:M:K:N (repeatable): only these rows of the first table, to
  // re-time a shape alone; --rounds=R: R interleaved rounds instead of 5.
  bool quick = false, storedOnly = false;
  int rounds = 5;
  std::vector<Shape> only;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--quick")) {
      quick = true;
    } else if (!std::strcmp(argv[i], "--stored")) {
      storedOnly = true;
    } else if (!std::strcmp(argv[i], "--layer-norm")) {
      layerNorm = true;
    } else if (!std::strncmp(argv[i], "--shape=", 8)) {
      std::optional<Shape> shape = parseShape(argv[i] + 8);
      if (!shape) {
        std::fprintf(stderr, "bad %s: expected --shape=f32|bf16:M:K:N\n",
                     argv[i]);
        return 2;
      }
      only.push_back(*shape);
    } else if (!std::strncmp(argv[i], "--rounds=", 9)) {
      char *end;
      long r = std::strtol(argv[i] + 9, &end, 10);
      if (*end || r < 1 || r > 1000) {
        std::fprintf(stderr, "bad %s: expected --rounds=1..1000\n", argv[i]);
        return 2;
      }
      rounds = int(r);
    } else {
      std::fprintf(stderr,
                   "usage: %s [--quick] [--stored] [--layer-norm] "
                   "[--shape=f32|bf16:M:K:N]... [--rounds=R]\n",
                   argv[0]);
      return 2;
    }
  }
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

  std::printf("flashnorm-cpu-bench: %s; medians in ms; weights constant, "
              "packed at compile time; 1t = one core; kernels sized for "
              "%lld-bit vector registers\n",
              layerNorm ? "LayerNorm" : "RMSNorm",
              (long long)flashnorm::hostVectorBits());
  if (!storedOnly)
    std::printf("%-5s %-4s %5s %6s %9s %9s %9s %9s %9s %9s %7s %7s %7s %7s\n",
                "dtype", "M", "K", "N", "limit-1t", "blas-1t", "limit",
                "blas-2t", "flashnorm", "serial", "lim/bl1", "lim/bl2",
                "fn/lim", "ser/lim");
  double worstFn = 0, worstSerial = 0, worstDecode = 0, worstPrefill = 0,
         worstMt = 0;
  // Destroying an engine that loaded the async runtime tears the runtime
  // down for the next one: keep them all, and leave without destroying them.
  std::vector<std::unique_ptr<ExecutionEngine>> engines;
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> dist(-1, 1);
  std::vector<int64_t> ks =
      quick ? std::vector<int64_t>{2048} : std::vector<int64_t>{2048, 4096};
  std::vector<int64_t> ms =
      quick ? std::vector<int64_t>{1, 128} : std::vector<int64_t>{1, 16, 128};
  std::vector<Shape> shapes = only;
  if (only.empty() && !storedOnly)
    for (bool bf16 : {false, true})
      for (int64_t k : ks)
        for (int64_t n : {k, k * 11 / 4})
          for (int64_t m : ms)
            shapes.push_back({bf16, m, k, n});
  std::vector<float> wf;
  std::vector<char> w;
  for (size_t s = 0; s < shapes.size(); ++s) {
    auto [bf16, m, k, n] = shapes[s];
    // One weight per (dtype, K, N), shared by its rows.
    if (s == 0 || shapes[s - 1].bf16 != bf16 || shapes[s - 1].k != k ||
        shapes[s - 1].n != n) {
      wf.assign(k * n, 0);
      for (float &v : wf)
        v = dist(rng) / 64;
      w = encode(wf, bf16);
      wf = decode(w, bf16); // OpenBLAS multiplies the same numbers.
    }
    std::vector<float> xf(m * k), gf(k), y(m * n);
    for (float &v : xf)
      v = dist(rng);
    for (float &v : gf)
      v = 1 + dist(rng) / 2;
    std::vector<char> x = encode(xf, bf16), g = encode(gf, bf16);
    xf = decode(x, bf16);
    std::vector<std::function<void()>> calls;
    for (Mode mode : kModes) {
      std::unique_ptr<ExecutionEngine> engine =
          compile(ctx, mode, m, k, n, bf16, w);
      if (!engine) {
        std::fprintf(stderr, "cannot compile mode %d\n", int(mode));
        return 1;
      }
      calls.push_back(jitCall(*engine, x.data(), g.data(), m, k));
      // Destroying an engine that loaded the async runtime tears the
      // runtime down for the next one: keep them all until exit.
      engines.push_back(std::move(engine));
    }
    for (int threads : {1, 2})
      calls.push_back([&, threads] {
        openblas_set_num_threads(threads);
        if (m == 1)
          cblas_sgemv(CblasRowMajor, CblasTrans, k, n, 1.0f, wf.data(), n,
                      xf.data(), 1, 0.0f, y.data(), 1);
        else
          cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f,
                      xf.data(), k, wf.data(), n, 0.0f, y.data(), n);
      });
    std::vector<double> t = timeInterleaved(std::move(calls), rounds);
    double blas[2] = {t[4], t[5]};
    double vs1 = t[0] / blas[0], vs2 = t[1] / blas[1], fn = t[2] / t[1],
           ser = t[3] / t[1];
    (m == 1 ? worstDecode : worstPrefill) =
        std::max(m == 1 ? worstDecode : worstPrefill, vs1);
    worstMt = std::max(worstMt, vs2);
    worstFn = std::max(worstFn, fn);
    worstSerial = std::max(worstSerial, ser);
    std::printf("%-5s %-4lld %5lld %6lld %9.3f %9.3f %9.3f %9.3f %9.3f "
                "%9.3f %7.2f %7.2f %7.2f %7.2f\n",
                bf16 ? "bf16" : "f32", (long long)m, (long long)k, (long long)n,
                t[0] * 1e3, blas[0] * 1e3, t[1] * 1e3, blas[1] * 1e3,
                t[2] * 1e3, t[3] * 1e3, vs1, vs2, fn, ser);
    std::fflush(stdout);
  }
  auto printSummary = [&] {
    std::printf("targets: limit-1t <= 1.3x blas-1t at M = 1, <= 1.6x at "
                "M = 128; limit <= 1.3x blas-2t; flashnorm <= 1.03x limit\n");
    std::printf(
        "flashnorm_vs_limit=%.2f serial_vs_limit=%.2f "
        "limit_vs_openblas=%.2f (decode %.2f) limit_vs_openblas_mt=%.2f\n",
        worstFn, worstSerial, std::max(worstDecode, worstPrefill), worstDecode,
        worstMt);
    std::fflush(stdout);
    std::_Exit(0); // Skip the engines' teardown (see `engines`).
  };
  if (!only.empty())
    printSummary(); // Only the rows asked for.

  // The cost rule of the concurrent statistic (flashnorm-async-mark's
  // min-stat-bytes): the rewritten program on projections small enough to
  // run on one core, its statistic as a task beside them or serial.
  if (!storedOnly)
    std::printf("\nconcurrent statistic (weights under 1 MiB, one core each): "
                "medians in ms\n%-5s %-5s %5s %6s %10s %10s %10s %8s\n",
                "dtype", "M", "K", "N", "stat_bytes", "concurrent", "serial",
                "con/ser");
  std::vector<std::pair<int64_t, double>> gains; // stat bytes, con/ser
  for (auto [m, k, n] : {std::array<int64_t, 3>{16, 256, 256},
                         {64, 256, 256},
                         {256, 256, 256},
                         {1024, 256, 256},
                         {4096, 256, 256},
                         {64, 1024, 128},
                         {256, 1024, 128},
                         {1024, 1024, 128},
                         {4096, 1024, 128}}) {
    if (storedOnly || (quick && m * k > 1024 * 1024))
      continue;
    std::vector<float> wf(k * n), xf(m * k), gf(k);
    for (float &v : wf)
      v = dist(rng) / 64;
    for (float &v : xf)
      v = dist(rng);
    for (float &v : gf)
      v = 1 + dist(rng) / 2;
    std::vector<char> w = encode(wf, false), x = encode(xf, false),
                      g = encode(gf, false);
    std::vector<std::function<void()>> calls;
    for (int64_t minBytes : {int64_t(0), std::numeric_limits<int64_t>::max()}) {
      std::unique_ptr<ExecutionEngine> engine =
          compile(ctx, Mode::FlashNorm, m, k, n, false, w, minBytes);
      if (!engine) {
        std::fprintf(stderr, "cannot compile the concurrent statistic\n");
        return 1;
      }
      calls.push_back(jitCall(*engine, x.data(), g.data(), m, k));
      engines.push_back(std::move(engine));
    }
    std::vector<double> t = timeInterleaved(std::move(calls));
    int64_t bytes = m * k * 4;
    double ratio = t[0] / t[1];
    gains.emplace_back(bytes, ratio);
    std::printf("%-5s %-5lld %5lld %6lld %10lld %10.3f %10.3f %8.2f\n", "f32",
                (long long)m, (long long)k, (long long)n, (long long)bytes,
                t[0] * 1e3, t[1] * 1e3, ratio);
    std::fflush(stdout);
  }
  // The smallest statistic from which every larger one gains (-1: none).
  std::sort(gains.begin(), gains.end());
  int64_t paysFrom = -1;
  for (auto it = gains.rbegin(); it != gains.rend() && it->second < 1; ++it)
    paysFrom = it->first;
  if (!storedOnly)
    std::printf("concurrent_pays_from_bytes=%lld (the pipeline's rule: "
                "16777216)"
                "\n\n",
                (long long)paysFrom);

  // Weights in their stored layout, not packed, on one core and on both.
  std::printf("weights in their stored layout (not packed): medians in ms\n"
              "%-6s %-5s %-4s %5s %6s %9s %9s %9s %9s %7s %7s\n",
              "layout", "dtype", "M", "K", "N", "stored-1t", "blas-1t",
              "stored", "blas-2t", "st/bl1", "st/bl2");
  double worstStored = 0, worstStoredMt = 0;
  for (Mode mode : {Mode::StoredNK, Mode::StoredKN})
    for (bool bf16 : {false, true})
      for (int64_t k : ks)
        for (int64_t m : ms) {
          bool nk = mode == Mode::StoredNK;
          int64_t n = k;
          std::vector<float> wf(n * k), xf(m * k), gf(k), y(m * n);
          for (float &v : wf)
            v = dist(rng) / 64;
          for (float &v : xf)
            v = dist(rng);
          std::vector<char> w = encode(wf, bf16), x = encode(xf, bf16),
                            g = encode(gf, bf16);
          wf = decode(w, bf16);
          xf = decode(x, bf16);
          std::vector<std::function<void()>> calls;
          for (int threads : {1, 2}) {
            std::unique_ptr<ExecutionEngine> engine =
                compile(ctx, mode, m, k, n, bf16, w, 16 << 20, threads);
            if (!engine) {
              std::fprintf(stderr, "cannot compile the stored layout\n");
              return 1;
            }
            calls.push_back(jitCall(*engine, x.data(), g.data(), m, k));
            engines.push_back(std::move(engine));
            // OpenBLAS on the same array: W is N x K (nk) or K x N,
            // row-major.
            calls.push_back([&, threads] {
              openblas_set_num_threads(threads);
              if (m == 1)
                cblas_sgemv(CblasRowMajor, nk ? CblasNoTrans : CblasTrans,
                            nk ? n : k, nk ? k : n, 1.0f, wf.data(), nk ? k : n,
                            xf.data(), 1, 0.0f, y.data(), 1);
              else
                cblas_sgemm(CblasRowMajor, CblasNoTrans,
                            nk ? CblasTrans : CblasNoTrans, m, n, k, 1.0f,
                            xf.data(), k, wf.data(), nk ? k : n, 0.0f, y.data(),
                            n);
            });
          }
          std::vector<double> t = timeInterleaved(std::move(calls));
          worstStored = std::max(worstStored, t[0] / t[1]);
          worstStoredMt = std::max(worstStoredMt, t[2] / t[3]);
          std::printf(
              "%-6s %-5s %-4lld %5lld %6lld %9.3f %9.3f %9.3f %9.3f %7.2f "
              "%7.2f\n",
              nk ? "N x K" : "K x N", bf16 ? "bf16" : "f32", (long long)m,
              (long long)k, (long long)n, t[0] * 1e3, t[1] * 1e3, t[2] * 1e3,
              t[3] * 1e3, t[0] / t[1], t[2] / t[3]);
          std::fflush(stdout);
        }
  std::printf("stored_vs_openblas=%.2f stored_vs_openblas_mt=%.2f\n\n",
              worstStored, worstStoredMt);
  std::fflush(stdout);
  if (storedOnly)
    std::_Exit(0); // Skip the engines' teardown (see `engines`).

  printSummary();
}
