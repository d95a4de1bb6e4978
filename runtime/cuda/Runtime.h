//===- Runtime.h - Internals shared by the flashnorm CUDA libraries -------===//
//
// The error check, the trace, the context and the lock every entry point of
// libflashnorm_cuda_runtime (and libflashnorm_cublaslt, which links it) uses.
// Not an installed header: the ABI is the extern "C" mgpu* functions.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHNORM_RUNTIME_CUDA_RUNTIME_H
#define FLASHNORM_RUNTIME_CUDA_RUNTIME_H

#include <cuda.h>

#include <cstdint>
#include <mutex>

namespace flashnorm::cuda {

/// Prints the failing call, the kernel (launches only), the stream and the
/// CUDA error name and string to stderr, then aborts.
[[noreturn]] void fail(CUresult result, const char *call, CUstream stream,
                       const char *kernel);

/// Aborts with a message for misuse the driver cannot see.
[[noreturn]] void fatal(const char *format, ...)
    __attribute__((format(printf, 1, 2)));

inline void check(CUresult result, const char *call, CUstream stream,
                  const char *kernel = nullptr) {
  if (result != CUDA_SUCCESS)
    fail(result, call, stream, kernel);
}

/// Whether FLASHNORM_CUDA_TRACE is set; read once.
bool traceEnabled();
/// One trace line, prefixed with a process-wide sequence number.
void traceLine(const char *format, ...) __attribute__((format(printf, 1, 2)));

/// True when the environment variable is set to something other than "" or
/// "0".
bool envFlag(const char *name);

/// Chooses the device whose primary context later entries make current.
void setDevice(int ordinal);
/// The ordinal of the device in use (FLASHNORM_CUDA_DEVICE, default 0, unless
/// setDevice chose another).
int currentDevice();
/// Retains the device's primary context on first use and makes it current.
void makeContextCurrent();
/// Whether the driver has shut down: at exit, after its own exit handler
/// ran, every call answers CUDA_ERROR_DEINITIALIZED.
bool driverShutDown();

/// Serializes all runtime state.
std::mutex &runtimeMutex();

/// Held for the duration of every entry point: takes the lock and makes the
/// context current.
class Entry {
public:
  Entry() : lock(runtimeMutex()) { makeContextCurrent(); }

private:
  std::lock_guard<std::mutex> lock;
};

/// Prepares an operation on `stream` for graph mode (see README.md) and says
/// whether it is being captured; `tag` identifies the operation in the
/// episode's signature. Call inside an Entry.
bool beginStreamOp(CUstream stream, uint64_t tag);

} // namespace flashnorm::cuda

/// Checks a driver call; the text of the call goes into the error message.
#define FN_CHECK(call, stream) ::flashnorm::cuda::check((call), #call, (stream))
/// Same, for calls that concern a kernel.
#define FN_CHECK_KERNEL(call, stream, kernel)                                  \
  ::flashnorm::cuda::check((call), #call, (stream), (kernel))
#define FN_TRACE(...)                                                          \
  do {                                                                         \
    if (::flashnorm::cuda::traceEnabled())                                     \
      ::flashnorm::cuda::traceLine(__VA_ARGS__);                               \
  } while (false)

#endif // FLASHNORM_RUNTIME_CUDA_RUNTIME_H
