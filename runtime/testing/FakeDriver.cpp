//===- FakeDriver.cpp - A CUDA driver without a GPU, for tests ------------===//
//
// libcuda.so.1 for machines without a GPU: the driver entry points the
// flashnorm CUDA runtime links, implemented on host memory, so that the host
// side of generated GPU code (allocations, copies, launches, streams, events)
// runs and can be counted in CI. Device memory is host memory from calloc;
// copies and memsets happen when they are issued; kernels are looked up and
// counted but never run, so the numbers a program computes are meaningless:
// what a test checks is the traffic. Graph capture is not supported.
//
// At exit, as the real driver does from the handler cuInit registers, it
// shuts down: calls made after that (the global destructors that unload a
// program's modules run after the exit handlers) return
// CUDA_ERROR_DEINITIALIZED. Then it prints one summary line to stderr:
//   fake-cuda: launches=L h2d=N (B bytes) d2h=N (B bytes) d2d=N (B bytes)
//              allocs=N (B bytes) h2h=N (B bytes)
// A test loads it ahead of the system's driver with LD_LIBRARY_PATH.
//
//===----------------------------------------------------------------------===//

#include <cuda.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>

namespace {

enum class Space { Pageable, Pinned, Device };

struct Counter {
  unsigned long long count = 0, bytes = 0;
  void add(size_t n) {
    ++count;
    bytes += n;
  }
};

struct Driver {
  std::mutex mutex;
  // Blocks by start address: device (and managed) memory, and pinned host
  // memory (allocated or registered).
  std::map<uintptr_t, std::pair<size_t, Space>> blocks;
  Counter launches, h2d, d2h, d2d, allocs, h2h;
  // Handles (streams, events, modules, ...) are distinct numbers, never
  // dereferenced.
  uintptr_t lastHandle = 0x1000;

  template <typename Handle> Handle handle() {
    return reinterpret_cast<Handle>(lastHandle += 16);
  }

  Space spaceOf(uintptr_t address) {
    auto it = blocks.upper_bound(address);
    if (it == blocks.begin())
      return Space::Pageable;
    --it;
    return address < it->first + it->second.first ? it->second.second
                                                  : Space::Pageable;
  }
};

Driver &D = *new Driver; // Never destroyed: the runtime unloads at exit.
std::atomic<bool> shutDown{false};

void exitHandler() {
  shutDown = true;
  std::fprintf(stderr,
               "fake-cuda: launches=%llu h2d=%llu (%llu bytes) d2h=%llu "
               "(%llu bytes) d2d=%llu (%llu bytes) allocs=%llu (%llu bytes) "
               "h2h=%llu (%llu bytes)\n",
               D.launches.count, D.h2d.count, D.h2d.bytes, D.d2h.count,
               D.d2h.bytes, D.d2d.count, D.d2d.bytes, D.allocs.count,
               D.allocs.bytes, D.h2h.count, D.h2h.bytes);
}

CUresult allocate(CUdeviceptr *ptr, size_t bytes, Space space) {
  if (!ptr || bytes == 0)
    return CUDA_ERROR_INVALID_VALUE;
  // 256-byte aligned, as the driver's allocations are (the kernels and the
  // entry checks of device-buffer functions count on it).
  size_t rounded = (bytes + 255) / 256 * 256;
  void *block = std::aligned_alloc(256, rounded);
  if (!block)
    return CUDA_ERROR_OUT_OF_MEMORY;
  std::memset(block, 0, rounded);
  std::lock_guard<std::mutex> lock(D.mutex);
  *ptr = reinterpret_cast<CUdeviceptr>(block);
  D.blocks[*ptr] = {bytes, space};
  if (space == Space::Device)
    D.allocs.add(bytes);
  return CUDA_SUCCESS;
}

CUresult release(uintptr_t ptr) {
  std::lock_guard<std::mutex> lock(D.mutex);
  auto it = D.blocks.find(ptr);
  if (it == D.blocks.end())
    return CUDA_ERROR_INVALID_VALUE;
  D.blocks.erase(it);
  std::free(reinterpret_cast<void *>(ptr));
  return CUDA_SUCCESS;
}

CUresult copy(CUdeviceptr dst, CUdeviceptr src, size_t bytes) {
  {
    std::lock_guard<std::mutex> lock(D.mutex);
    bool fromDevice = D.spaceOf(src) == Space::Device;
    bool toDevice = D.spaceOf(dst) == Space::Device;
    (fromDevice && toDevice ? D.d2d
     : toDevice             ? D.h2d
     : fromDevice           ? D.d2h
                            : D.h2h)
        .add(bytes);
  }
  std::memmove(reinterpret_cast<void *>(dst), reinterpret_cast<void *>(src),
               bytes);
  return CUDA_SUCCESS;
}

template <typename T> CUresult fill(CUdeviceptr dst, T value, size_t count) {
  auto *out = reinterpret_cast<T *>(dst);
  std::fill(out, out + count, value);
  return CUDA_SUCCESS;
}

CUresult launch() {
  std::lock_guard<std::mutex> lock(D.mutex);
  ++D.launches.count;
  return CUDA_SUCCESS;
}

} // namespace

extern "C" {

CUresult cuInit(unsigned int) {
  static bool registered = (std::atexit(exitHandler), true);
  (void)registered;
  return CUDA_SUCCESS;
}

CUresult cuGetErrorName(CUresult error, const char **name) {
  switch (error) {
  case CUDA_SUCCESS:
    *name = "CUDA_SUCCESS";
    return CUDA_SUCCESS;
  case CUDA_ERROR_INVALID_VALUE:
    *name = "CUDA_ERROR_INVALID_VALUE";
    return CUDA_SUCCESS;
  case CUDA_ERROR_OUT_OF_MEMORY:
    *name = "CUDA_ERROR_OUT_OF_MEMORY";
    return CUDA_SUCCESS;
  case CUDA_ERROR_NOT_SUPPORTED:
    *name = "CUDA_ERROR_NOT_SUPPORTED";
    return CUDA_SUCCESS;
  case CUDA_ERROR_DEINITIALIZED:
    *name = "CUDA_ERROR_DEINITIALIZED";
    return CUDA_SUCCESS;
  default:
    *name = "CUDA_ERROR_UNKNOWN";
    return CUDA_SUCCESS;
  }
}

CUresult cuGetErrorString(CUresult error, const char **text) {
  cuGetErrorName(error, text);
  return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice *device, int ordinal) {
  if (ordinal != 0)
    return CUDA_ERROR_INVALID_VALUE;
  *device = 0;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetAttribute(int *value, CUdevice_attribute attribute,
                              CUdevice) {
  switch (attribute) {
  case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
    *value = 132;
    break;
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
    *value = 9;
    break;
  default:
    *value = 1; // memory pools and the other capabilities: supported
  }
  return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRetain(CUcontext *context, CUdevice) {
  static CUcontext primary = [] {
    std::lock_guard<std::mutex> lock(D.mutex);
    return D.handle<CUcontext>();
  }();
  *context = primary;
  return CUDA_SUCCESS;
}

CUresult cuCtxSetCurrent(CUcontext) {
  return shutDown ? CUDA_ERROR_DEINITIALIZED : CUDA_SUCCESS;
}
CUresult cuCtxGetCurrent(CUcontext *context) {
  if (shutDown)
    return CUDA_ERROR_DEINITIALIZED;
  return cuDevicePrimaryCtxRetain(context, 0);
}
CUresult cuCtxSynchronize() { return CUDA_SUCCESS; }

CUresult cuDeviceGetDefaultMemPool(CUmemoryPool *pool, CUdevice) {
  std::lock_guard<std::mutex> lock(D.mutex);
  *pool = D.handle<CUmemoryPool>();
  return CUDA_SUCCESS;
}
CUresult cuMemPoolSetAttribute(CUmemoryPool, CUmemPool_attribute, void *) {
  return CUDA_SUCCESS;
}

CUresult cuStreamCreate(CUstream *stream, unsigned int) {
  std::lock_guard<std::mutex> lock(D.mutex);
  *stream = D.handle<CUstream>();
  return CUDA_SUCCESS;
}
CUresult cuStreamSynchronize(CUstream) { return CUDA_SUCCESS; }
CUresult cuStreamWaitEvent(CUstream, CUevent, unsigned int) {
  return CUDA_SUCCESS;
}

CUresult cuEventCreate(CUevent *event, unsigned int) {
  std::lock_guard<std::mutex> lock(D.mutex);
  *event = D.handle<CUevent>();
  return CUDA_SUCCESS;
}
CUresult cuEventRecord(CUevent, CUstream) { return CUDA_SUCCESS; }
CUresult cuEventSynchronize(CUevent) { return CUDA_SUCCESS; }
CUresult cuEventElapsedTime(float *ms, CUevent, CUevent) {
  *ms = 0;
  return CUDA_SUCCESS;
}

CUresult cuModuleLoadData(CUmodule *module, const void *image) {
  if (!image)
    return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<std::mutex> lock(D.mutex);
  *module = D.handle<CUmodule>();
  return CUDA_SUCCESS;
}
CUresult cuModuleLoadDataEx(CUmodule *module, const void *image, unsigned int,
                            CUjit_option *, void **) {
  return cuModuleLoadData(module, image);
}
CUresult cuModuleUnload(CUmodule) {
  return shutDown ? CUDA_ERROR_DEINITIALIZED : CUDA_SUCCESS;
}
CUresult cuModuleGetFunction(CUfunction *function, CUmodule, const char *name) {
  if (!name)
    return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<std::mutex> lock(D.mutex);
  *function = D.handle<CUfunction>();
  return CUDA_SUCCESS;
}
CUresult cuFuncSetAttribute(CUfunction, CUfunction_attribute, int) {
  return CUDA_SUCCESS;
}

CUresult cuLaunchKernel(CUfunction, unsigned int, unsigned int, unsigned int,
                        unsigned int, unsigned int, unsigned int, unsigned int,
                        CUstream, void **, void **) {
  return launch();
}
CUresult cuLaunchKernelEx(const CUlaunchConfig *, CUfunction, void **,
                          void **) {
  return launch();
}

CUresult cuMemAlloc(CUdeviceptr *ptr, size_t bytes) {
  return allocate(ptr, bytes, Space::Device);
}
CUresult cuMemAllocAsync(CUdeviceptr *ptr, size_t bytes, CUstream) {
  return allocate(ptr, bytes, Space::Device);
}
CUresult cuMemAllocManaged(CUdeviceptr *ptr, size_t bytes, unsigned int) {
  return allocate(ptr, bytes, Space::Device);
}
CUresult cuMemFree(CUdeviceptr ptr) { return release(ptr); }
CUresult cuMemFreeAsync(CUdeviceptr ptr, CUstream) { return release(ptr); }

CUresult cuMemHostAlloc(void **ptr, size_t bytes, unsigned int) {
  CUdeviceptr block;
  CUresult result = allocate(&block, bytes, Space::Pinned);
  *ptr = reinterpret_cast<void *>(block);
  return result;
}
CUresult cuMemHostRegister(void *ptr, size_t bytes, unsigned int) {
  std::lock_guard<std::mutex> lock(D.mutex);
  D.blocks[reinterpret_cast<uintptr_t>(ptr)] = {bytes, Space::Pinned};
  return CUDA_SUCCESS;
}
CUresult cuMemHostUnregister(void *ptr) {
  std::lock_guard<std::mutex> lock(D.mutex);
  return D.blocks.erase(reinterpret_cast<uintptr_t>(ptr))
             ? CUDA_SUCCESS
             : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuPointerGetAttribute(void *data, CUpointer_attribute attribute,
                               CUdeviceptr ptr) {
  if (attribute != CU_POINTER_ATTRIBUTE_MEMORY_TYPE)
    return CUDA_ERROR_NOT_SUPPORTED;
  std::lock_guard<std::mutex> lock(D.mutex);
  Space space = D.spaceOf(ptr);
  // Like the real driver, pageable memory is unknown to it.
  if (space == Space::Pageable)
    return CUDA_ERROR_INVALID_VALUE;
  *static_cast<CUmemorytype *>(data) =
      space == Space::Pinned ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
  return CUDA_SUCCESS;
}

CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t bytes,
                       CUstream) {
  return copy(dst, src, bytes);
}
CUresult cuMemsetD16Async(CUdeviceptr dst, unsigned short value, size_t count,
                          CUstream) {
  return fill(dst, value, count);
}
CUresult cuMemsetD32Async(CUdeviceptr dst, unsigned int value, size_t count,
                          CUstream) {
  return fill(dst, value, count);
}

// Graphs: not supported (FLASHNORM_CUDA_GRAPHS must stay off).
CUresult cuStreamBeginCapture(CUstream, CUstreamCaptureMode) {
  return CUDA_ERROR_NOT_SUPPORTED;
}
CUresult cuStreamEndCapture(CUstream, CUgraph *) {
  return CUDA_ERROR_NOT_SUPPORTED;
}
CUresult cuGraphGetNodes(CUgraph, CUgraphNode *, size_t *) {
  return CUDA_ERROR_NOT_SUPPORTED;
}
CUresult cuGraphInstantiateWithFlags(CUgraphExec *, CUgraph,
                                     unsigned long long) {
  return CUDA_ERROR_NOT_SUPPORTED;
}
CUresult cuGraphExecUpdate(CUgraphExec, CUgraph,
                           CUgraphExecUpdateResultInfo *) {
  return CUDA_ERROR_NOT_SUPPORTED;
}
CUresult cuGraphLaunch(CUgraphExec, CUstream) {
  return CUDA_ERROR_NOT_SUPPORTED;
}
CUresult cuGraphDestroy(CUgraph) { return CUDA_ERROR_NOT_SUPPORTED; }
CUresult cuGraphExecDestroy(CUgraphExec) { return CUDA_ERROR_NOT_SUPPORTED; }

} // extern "C"
