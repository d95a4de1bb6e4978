//===- FoldBench.cpp - Cost of folding a gain into a constant weight ------===//
//
// Measures flashnorm::scaleAlongAxis against the cheapest thing it could
// possibly be: copying the weight's bytes once. For each case it reports the
// median time of a plain copy and of a fold (same process, interleaved), and
// the peak resident memory of one fold relative to the weight's size. Every
// case runs in its own forked child, forked before any MLIRContext exists, so
// the memory numbers are not polluted by earlier cases (contexts never free
// attribute storage).
//
// Targets: fold <= 3x copy, peak <= 3x weight bytes. This is a benchmark, it
// always exits 0.
//
//===----------------------------------------------------------------------===//

#include "flashnorm/Utils/WeightFolder.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinDialect.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/MLIRContext.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace mlir;
using flashnorm::FloatKind;

namespace {

constexpr double kFoldVsCopyTarget = 3.0;
constexpr double kPeakVsWeightTarget = 3.0;

struct Options {
  unsigned reps = 5;
  bool quick = false;
  bool threads = true;
};

struct Case {
  int64_t rows, cols;
  FloatKind kind;
  bool resource;
  int64_t axis;

  size_t width() const { return kind == FloatKind::F32 ? 4 : 2; }
  size_t bytes() const { return width() * rows * cols; }
  std::string name() const {
    const char *ty = kind == FloatKind::F32   ? "f32"
                     : kind == FloatKind::F16 ? "f16"
                                              : "bf16";
    return std::to_string(rows) + "x" + std::to_string(cols) + " " + ty + " " +
           (resource ? "dense_resource" : "dense") + " ax" +
           std::to_string(axis);
  }
};

struct Result {
  bool ok = false;
  std::string error;
  double copyMs = 0, foldMs = 0;
  double peakBytes = 0;
  bool hwmReset = false; // false: peak came from sampling RSS instead.
};

//===----------------------------------------------------------------------===//
// Data generation
//===----------------------------------------------------------------------===//

uint64_t xorshift64(uint64_t &s) {
  s ^= s << 13;
  s ^= s >> 7;
  s ^= s << 17;
  return s;
}

/// Writes raw bits for finite values of magnitude in [2^-8, 2): random sign,
/// small exponent window, random mantissa. Never NaN/Inf, never a splat.
void fillWeight(char *out, const Case &c, uint64_t seed) {
  uint64_t s = seed;
  int64_t n = c.rows * c.cols;
  switch (c.kind) {
  case FloatKind::F32: {
    auto *p = reinterpret_cast<uint32_t *>(out);
    for (int64_t i = 0; i < n; ++i) {
      uint64_t r = xorshift64(s);
      p[i] = (uint32_t(r >> 63) << 31) | (uint32_t(119 + (r >> 32) % 8) << 23) |
             uint32_t(r & 0x7fffff);
    }
    break;
  }
  case FloatKind::F16: {
    auto *p = reinterpret_cast<uint16_t *>(out);
    for (int64_t i = 0; i < n; ++i) {
      uint64_t r = xorshift64(s);
      p[i] = uint16_t((uint16_t(r >> 63) << 15) |
                      (uint16_t(7 + (r >> 32) % 8) << 10) | (r & 0x3ff));
    }
    break;
  }
  case FloatKind::BF16: {
    auto *p = reinterpret_cast<uint16_t *>(out);
    for (int64_t i = 0; i < n; ++i) {
      uint64_t r = xorshift64(s);
      p[i] = uint16_t((uint16_t(r >> 63) << 15) |
                      (uint16_t(119 + (r >> 32) % 8) << 7) | (r & 0x7f));
    }
    break;
  }
  case FloatKind::F64:
    llvm_unreachable("not benchmarked");
  }
}

/// Gains in [0.5, 1.5); a different seed per repetition so every fold yields
/// a genuinely new attribute (no uniquing hit for dense).
std::vector<double> makeGains(int64_t n, uint64_t seed) {
  uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
  std::vector<double> g(n);
  for (double &v : g)
    v = 0.5 + double(xorshift64(s) >> 11) * 0x1p-53;
  return g;
}

Type elementType(Builder &b, FloatKind kind) {
  switch (kind) {
  case FloatKind::F32:
    return b.getF32Type();
  case FloatKind::F16:
    return b.getF16Type();
  case FloatKind::BF16:
    return b.getBF16Type();
  case FloatKind::F64:
    return b.getF64Type();
  }
  llvm_unreachable("unknown kind");
}

/// Builds the input weight. Dense needs a staging buffer (the context copies
/// it); it is freed before returning so it does not count as input memory.
ElementsAttr makeWeight(MLIRContext &ctx, const Case &c, StringRef blobName) {
  Builder b(&ctx);
  auto type = RankedTensorType::get({c.rows, c.cols}, elementType(b, c.kind));
  if (c.resource) {
    AsmResourceBlob blob =
        HeapAsmResourceBlob::allocate(c.bytes(), alignof(double));
    fillWeight(blob.getMutableData().data(), c, 0x1234567);
    return DenseResourceElementsAttr::get(type, blobName, std::move(blob));
  }
  std::unique_ptr<char[]> staging(new char[c.bytes()]);
  fillWeight(staging.get(), c, 0x1234567);
  return DenseElementsAttr::getFromRawBuffer(
      type, ArrayRef<char>(staging.get(), c.bytes()));
}

ArrayRef<char> rawBytes(ElementsAttr attr) {
  if (auto dense = dyn_cast<DenseElementsAttr>(attr))
    return dense.getRawData();
  return cast<DenseResourceElementsAttr>(attr)
      .getRawHandle()
      .getBlob()
      ->getData();
}

//===----------------------------------------------------------------------===//
// Memory probes
//===----------------------------------------------------------------------===//

size_t currentRss() {
  FILE *f = std::fopen("/proc/self/statm", "r");
  if (!f)
    return 0;
  unsigned long size = 0, resident = 0;
  if (std::fscanf(f, "%lu %lu", &size, &resident) != 2)
    resident = 0;
  std::fclose(f);
  return resident * size_t(sysconf(_SC_PAGESIZE));
}

size_t readHwm() {
  FILE *f = std::fopen("/proc/self/status", "r");
  if (!f)
    return 0;
  char line[256];
  size_t kb = 0;
  while (std::fgets(line, sizeof(line), f))
    if (std::sscanf(line, "VmHWM: %zu kB", &kb) == 1)
      break;
  std::fclose(f);
  return kb * 1024;
}

/// Resets VmHWM to the current RSS (Linux >= 4.0). False if not permitted.
bool resetHwm() {
  FILE *f = std::fopen("/proc/self/clear_refs", "w");
  if (!f)
    return false;
  bool ok = std::fputs("5", f) >= 0;
  ok &= std::fclose(f) == 0;
  return ok;
}

/// Fallback when clear_refs is not writable: poll RSS from a thread. It can
/// miss short spikes, so results are marked as sampled.
class RssSampler {
public:
  RssSampler()
      : thread([this] {
          while (!stop.load(std::memory_order_relaxed)) {
            size_t r = currentRss();
            if (r > peak.load(std::memory_order_relaxed))
              peak.store(r, std::memory_order_relaxed);
            std::this_thread::sleep_for(std::chrono::microseconds(200));
          }
        }) {}
  size_t finish() {
    stop = true;
    thread.join();
    return std::max(peak.load(), currentRss());
  }

private:
  std::atomic<bool> stop{false};
  std::atomic<size_t> peak{0};
  std::thread thread;
};

//===----------------------------------------------------------------------===//
// One case (runs in the child)
//===----------------------------------------------------------------------===//

using Clock = std::chrono::steady_clock;

double msSince(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

/// Keeps the compiler from eliding a malloc/memcpy/free sequence.
void escape(void *p) { asm volatile("" : : "g"(p) : "memory"); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

Result runCase(const Case &c, const Options &opts) {
  Result res;
  MLIRContext ctx;
  if (!opts.threads)
    ctx.disableMultithreading();
  int64_t numK = c.axis == 0 ? c.rows : c.cols;

  // Warm-up on a small weight of the same kind, large enough to take the
  // parallel path: faults in library code and spawns the pool's threads, a
  // one-time ~1-2 MB that would otherwise be charged to the first fold.
  Case small = c;
  small.rows = 2048;
  small.cols = 1024;
  if (failed(flashnorm::scaleAlongAxis(
          makeWeight(ctx, small, "bench_warmup"), c.axis,
          makeGains(c.axis == 0 ? small.rows : small.cols, 99)))) {
    res.error = "warm-up fold failed";
    return res;
  }

  // Peak on a fresh input: baseline, input, reset HWM, one fold.
  size_t rssBase = currentRss();
  ElementsAttr weight = makeWeight(ctx, c, "bench_weight");
  std::vector<double> gains = makeGains(numK, 0);
  res.hwmReset = resetHwm();
  std::unique_ptr<RssSampler> sampler;
  if (!res.hwmReset)
    sampler = std::make_unique<RssSampler>();
  std::string why;
  FailureOr<ElementsAttr> folded =
      flashnorm::scaleAlongAxis(weight, c.axis, gains, &why);
  size_t peak = res.hwmReset ? readHwm() : sampler->finish();
  if (failed(folded)) {
    res.error = why.empty() ? "scaleAlongAxis failed" : why;
    return res;
  }
  res.peakBytes = double(peak) - double(rssBase);

  // Interleave copy and fold so both see the same machine state.
  ArrayRef<char> src = rawBytes(weight);
  std::vector<double> copyMs, foldMs;
  for (unsigned r = 0; r < opts.reps; ++r) {
    auto t0 = Clock::now();
    // Fresh, untouched allocation so the copy pays the same page faults as
    // the fold's output buffer.
    char *dst = static_cast<char *>(std::malloc(src.size()));
    std::memcpy(dst, src.data(), src.size());
    escape(dst);
    copyMs.push_back(msSince(t0));
    std::free(dst);

    gains = makeGains(numK, r + 1);
    t0 = Clock::now();
    folded = flashnorm::scaleAlongAxis(weight, c.axis, gains, &why);
    foldMs.push_back(msSince(t0));
    if (failed(folded)) {
      res.error = why;
      return res;
    }
  }
  res.copyMs = median(copyMs);
  res.foldMs = median(foldMs);
  res.ok = true;
  return res;
}

//===----------------------------------------------------------------------===//
// Driver (parent never creates an MLIRContext)
//===----------------------------------------------------------------------===//

Result runInChild(const Case &c, const Options &opts) {
  Result res;
  int fds[2];
  if (pipe(fds) != 0) {
    res.error = "pipe failed";
    return res;
  }
  std::fflush(nullptr);
  pid_t pid = fork();
  if (pid < 0) {
    res.error = "fork failed";
    return res;
  }
  if (pid == 0) {
    close(fds[0]);
    Result r = runCase(c, opts);
    char line[512];
    if (r.ok)
      std::snprintf(line, sizeof(line), "OK %.6f %.6f %.0f %d\n", r.copyMs,
                    r.foldMs, r.peakBytes, r.hwmReset ? 1 : 0);
    else
      std::snprintf(line, sizeof(line), "ERR %s\n", r.error.c_str());
    ssize_t ignored = write(fds[1], line, std::strlen(line));
    (void)ignored;
    // Skip tearing down a context holding gigabytes of attribute storage.
    _exit(0);
  }
  close(fds[1]);
  std::string out;
  char buf[512];
  ssize_t n;
  while ((n = read(fds[0], buf, sizeof(buf))) > 0)
    out.append(buf, n);
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  int hwm = 0;
  if (std::sscanf(out.c_str(), "OK %lf %lf %lf %d", &res.copyMs, &res.foldMs,
                  &res.peakBytes, &hwm) == 4) {
    res.ok = true;
    res.hwmReset = hwm != 0;
  } else if (out.rfind("ERR ", 0) == 0) {
    res.error = out.substr(4, out.find('\n') - 4);
  } else if (WIFSIGNALED(status)) {
    res.error = "child killed by signal " + std::to_string(WTERMSIG(status));
  } else {
    res.error = "child exited without a result";
  }
  return res;
}

void usage(const char *argv0) {
  std::printf("usage: %s [--reps N] [--quick] [--threads=on|off]\n"
              "  --reps N       timed repetitions per case (default 5)\n"
              "  --quick        only the 4096x4096 weights\n"
              "  --threads=off  disable MLIRContext multithreading\n",
              argv0);
}

/// A repetition count: a whole number from 1 to 1000000, or none.
std::optional<unsigned> parseReps(const char *text) {
  char *end = nullptr;
  errno = 0;
  long value = std::strtol(text, &end, 10);
  if (end == text || *end || errno || value < 1 || value > 1000000)
    return std::nullopt;
  return unsigned(value);
}

} // namespace

int main(int argc, char **argv) {
  Options opts;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    const char *reps = a == "--reps" ? (i + 1 < argc ? argv[++i] : "")
                       : a.rfind("--reps=", 0) == 0 ? a.c_str() + 7
                                                    : nullptr;
    if (reps) {
      std::optional<unsigned> value = parseReps(reps);
      if (!value) {
        std::fprintf(stderr,
                     "--reps takes a whole number from 1 to 1000000, "
                     "not '%s'\n",
                     reps);
        return 2;
      }
      opts.reps = *value;
    } else if (a == "--quick") {
      opts.quick = true;
    } else if (a == "--threads=off") {
      opts.threads = false;
    } else if (a == "--threads=on") {
      opts.threads = true;
    } else if (a == "--help" || a == "-h") {
      usage(argv[0]);
      return 0;
    } else {
      std::fprintf(stderr, "unknown option '%s'\n", a.c_str());
      usage(argv[0]);
      return 2;
    }
  }

  std::vector<Case> cases;
  std::vector<std::pair<int64_t, int64_t>> shapes = {{4096, 4096}};
  if (!opts.quick)
    shapes.push_back({4096, 11008});
  const FloatKind kinds[] = {FloatKind::F32, FloatKind::F16, FloatKind::BF16};
  for (auto [rows, cols] : shapes)
    for (FloatKind k : kinds)
      for (bool resource : {false, true})
        cases.push_back({rows, cols, k, resource, 0});
  // Axis 1 (gain per column, innermost) for the smaller shape only.
  for (FloatKind k : kinds)
    for (bool resource : {false, true})
      cases.push_back({4096, 4096, k, resource, 1});

  std::printf("flashnorm-fold-bench: reps=%u threads=%s hw_threads=%u\n",
              opts.reps, opts.threads ? "on" : "off",
              std::thread::hardware_concurrency());
  std::printf("copy = malloc + memcpy of the weight bytes (single thread); "
              "fold = scaleAlongAxis incl. attribute creation; medians.\n");
  std::printf("peak = VmHWM during one fold - RSS before the input existed.\n");
  std::printf("targets: fold <= %.1fx copy, peak <= %.1fx weight bytes\n\n",
              kFoldVsCopyTarget, kPeakVsWeightTarget);
  std::printf("%-34s %12s %9s %9s %9s %11s  %s\n", "case", "bytes", "copy ms",
              "fold ms", "fold/copy", "peak/weight", "verdict");

  double foldMax = 0, peakMax = 0;
  bool anySampled = false;
  for (const Case &c : cases) {
    Result r = runInChild(c, opts);
    if (!r.ok) {
      std::printf("%-34s %12zu  ERROR: %s\n", c.name().c_str(), c.bytes(),
                  r.error.c_str());
      continue;
    }
    double ratio = r.foldMs / r.copyMs;
    double peak = r.peakBytes / double(c.bytes());
    foldMax = std::max(foldMax, ratio);
    peakMax = std::max(peakMax, peak);
    anySampled |= !r.hwmReset;
    std::string verdict = "PASS";
    if (ratio > kFoldVsCopyTarget || peak > kPeakVsWeightTarget) {
      verdict = "MISS(";
      if (ratio > kFoldVsCopyTarget)
        verdict += "time";
      if (ratio > kFoldVsCopyTarget && peak > kPeakVsWeightTarget)
        verdict += ",";
      if (peak > kPeakVsWeightTarget)
        verdict += "mem";
      verdict += ")";
    }
    std::printf("%-34s %12zu %9.2f %9.2f %9.2f %10.3f%s  %s\n",
                c.name().c_str(), c.bytes(), r.copyMs, r.foldMs, ratio, peak,
                r.hwmReset ? " " : "~", verdict.c_str());
    std::fflush(stdout);
  }
  if (anySampled)
    std::printf("\n~ /proc/self/clear_refs was not writable: peak sampled from "
                "/proc/self/statm every 200us (may miss short spikes).\n");
  std::printf("\nfold_vs_copy_max=%.2f peak_vs_weight_max=%.3f\n", foldMax,
              peakMax);
  return 0;
}
