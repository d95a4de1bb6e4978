//===- Runtime.cpp - Errors, trace and context ----------------------------===//

#include "Runtime.h"

#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string_view>

using namespace flashnorm::cuda;

namespace {
// Chosen on first use; -1 until then.
int device = -1;
// Never destroyed: module unloads run from global destructors.
std::map<int, CUcontext> &contexts = *new std::map<int, CUcontext>;

FILE *traceFile() {
  static FILE *file = [] {
    const char *path = std::getenv("FLASHNORM_CUDA_TRACE_FILE");
    if (!path || !*path)
      return stderr;
    FILE *f = std::fopen(path, "w");
    if (!f)
      fatal("cannot open FLASHNORM_CUDA_TRACE_FILE '%s'", path);
    return f;
  }();
  return file;
}
} // namespace

void flashnorm::cuda::fail(CUresult result, const char *call, CUstream stream,
                           const char *kernel) {
  const char *name = "unknown CUresult", *text = "";
  // (A driver that has shut down names no error.)
  if (cuGetErrorName(result, &name) != CUDA_SUCCESS &&
      result == CUDA_ERROR_DEINITIALIZED)
    name = "CUDA_ERROR_DEINITIALIZED";
  cuGetErrorString(result, &text);
  std::fprintf(stderr,
               "flashnorm-cuda: %s failed: %s (%d): %s\n"
               "  kernel: %s, stream: %p, device: %d\n",
               call, name, static_cast<int>(result), text,
               kernel ? kernel : "-", static_cast<void *>(stream), device);
  std::fflush(stderr);
  std::abort();
}

void flashnorm::cuda::fatal(const char *format, ...) {
  std::fprintf(stderr, "flashnorm-cuda: ");
  va_list args;
  va_start(args, format);
  std::vfprintf(stderr, format, args);
  va_end(args);
  std::fprintf(stderr, "\n");
  std::fflush(stderr);
  std::abort();
}

bool flashnorm::cuda::envFlag(const char *name) {
  const char *value = std::getenv(name);
  return value && *value && std::string_view(value) != "0";
}

bool flashnorm::cuda::traceEnabled() {
  static const bool enabled = envFlag("FLASHNORM_CUDA_TRACE");
  return enabled;
}

void flashnorm::cuda::traceLine(const char *format, ...) {
  static std::atomic<unsigned long long> sequence{0};
  FILE *file = traceFile();
  // One buffered write per line keeps lines whole across threads.
  char line[512];
  int used = std::snprintf(line, sizeof(line),
                           "flashnorm-cuda #%llu: ", sequence.fetch_add(1) + 1);
  va_list args;
  va_start(args, format);
  std::vsnprintf(line + used, sizeof(line) - used, format, args);
  va_end(args);
  std::fprintf(file, "%s\n", line);
  std::fflush(file);
}

std::mutex &flashnorm::cuda::runtimeMutex() {
  static std::mutex mutex;
  return mutex;
}

void flashnorm::cuda::setDevice(int ordinal) { device = ordinal; }

int flashnorm::cuda::currentDevice() {
  if (device < 0) {
    const char *env = std::getenv("FLASHNORM_CUDA_DEVICE");
    device = env && *env ? std::atoi(env) : 0;
  }
  return device;
}

bool flashnorm::cuda::driverShutDown() {
  CUcontext current;
  return cuCtxGetCurrent(&current) == CUDA_ERROR_DEINITIALIZED;
}

void flashnorm::cuda::makeContextCurrent() {
  static const bool initialized = [] {
    // No usable driver (none installed, the toolkit's stub, no device) is
    // the one failure a program meets before doing anything: say so and
    // exit, instead of aborting as for a failed call mid-run.
    if (CUresult result = cuInit(0); result != CUDA_SUCCESS) {
      const char *name = nullptr;
      if (cuGetErrorName(result, &name) != CUDA_SUCCESS || !name)
        name = result == CUDA_ERROR_STUB_LIBRARY ? "CUDA_ERROR_STUB_LIBRARY"
                                                 : "unknown CUresult";
      std::fprintf(stderr,
                   "flashnorm-cuda: no usable CUDA driver: cuInit failed: "
                   "%s (%d)\n",
                   name, static_cast<int>(result));
      // _Exit: the global destructors would unload modules, which calls
      // back in here while this initialization is still running.
      std::fflush(nullptr);
      std::_Exit(1);
    }
    return true;
  }();
  (void)initialized;
  CUcontext &context = contexts[currentDevice()];
  if (!context) {
    CUdevice dev;
    FN_CHECK(cuDeviceGet(&dev, device), nullptr);
    FN_CHECK(cuDevicePrimaryCtxRetain(&context, dev), nullptr);
    FN_TRACE("context device=%d ctx=%p", device, static_cast<void *>(context));
    // Stream-ordered allocations (gpu.alloc async) come from the device's
    // default pool, which by default returns freed memory to the driver at
    // every synchronization: each call of a host function would then map
    // its buffers anew. Keep it, as the CUDA guide advises for such loops.
    int pools = 0;
    FN_CHECK(cuDeviceGetAttribute(
                 &pools, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, dev),
             nullptr);
    if (pools) {
      CUmemoryPool pool;
      FN_CHECK(cuDeviceGetDefaultMemPool(&pool, dev), nullptr);
      cuuint64_t keep = ~cuuint64_t(0);
      FN_CHECK(
          cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep),
          nullptr);
    }
  }
  FN_CHECK(cuCtxSetCurrent(context), nullptr);
}
