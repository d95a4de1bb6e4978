//===- Mgpu.cpp - The mgpu* ABI that MLIR 22's gpu-to-llvm emits ----------===//
//
// Streams and events come from per-device pools, allocations are tracked, and
// with FLASHNORM_CUDA_GRAPHS=1 the work between the first stream creation and
// the host synchronization is captured into a CUDA graph (an "episode"; see
// README.md for the rules and their reasons). Episodes can be timed with CUDA
// events (mgpuFlashNormSetTiming).
//
//===----------------------------------------------------------------------===//

#include "Runtime.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

using namespace flashnorm::cuda;

namespace {

enum class AllocKind { Plain, Managed, StreamOrdered, Cached };
struct Alloc {
  size_t bytes;
  AllocKind kind;
  int device;
};

struct StreamInfo {
  int device;
  bool live;
  // The episode whose capture the stream joined (0: none).
  uint64_t episode = 0;
};

struct EventInfo {
  int device;
  bool live;
  // The episode the last record was captured in (0: recorded eagerly).
  uint64_t recordedIn = 0;
};

struct DevicePools {
  std::vector<CUstream> streams;
  std::vector<CUevent> events;
  // Timing-enabled events, for episode timing only.
  std::vector<CUevent> timingEvents;
  // Device blocks for captured allocations, by exact size.
  std::unordered_multimap<size_t, CUdeviceptr> blocks;
  // Device copies of constants (mgpuFlashNormResident) by host address, and
  // the stream that uploads them, outside any capture.
  std::unordered_map<const void *, std::pair<CUdeviceptr, uint64_t>> residents;
  CUstream uploads = nullptr;
};

// A device-to-pageable copy captured into a pinned buffer; the host copies
// it out once the graph has run.
struct CopyOut {
  void *dst;
  void *pinned;
  size_t bytes;
};

struct Episode {
  uint64_t id = 0; // 0: no capture in progress
  CUstream origin = nullptr;
  // Recorded right after the capture began: waiting on it joins a stream to
  // the capture without ordering it after anything.
  CUevent start = nullptr;
  std::vector<CUstream> members;
  std::vector<CopyOut> copiesOut;
  std::vector<std::pair<size_t, void *>> pinned;
  // Frees issued during capture; done once the graph has run.
  std::vector<CUdeviceptr> frees;
  uint64_t signature = 1469598103934665603ull;
  size_t operations = 0;
};

// An eagerly executed episode being timed: from its first stream's creation
// until every stream created in it has been synchronized.
struct EagerTiming {
  CUevent start = nullptr; // null: none running
  // Member streams and whether each was synchronized since its creation.
  std::vector<std::pair<CUstream, bool>> members;
  // Recorded on a member right before each of its synchronizations.
  std::vector<CUevent> ends;
};

struct State {
  std::unordered_map<CUstream, StreamInfo> streams;
  std::unordered_map<CUevent, EventInfo> events;
  std::unordered_map<CUfunction, std::string> kernelNames;
  std::unordered_map<CUdeviceptr, Alloc> allocs;
  std::map<int, DevicePools> pools;
  // Pinned (portable) staging buffers by exact size.
  std::unordered_multimap<size_t, void *> pinned;
  Episode episode;
  uint64_t lastEpisode = 0;
  // Executable graphs by episode signature.
  std::unordered_map<uint64_t, CUgraphExec> executables;
  bool graphs = envFlag("FLASHNORM_CUDA_GRAPHS");
  bool timing = false;
  EagerTiming eager;
  // Milliseconds of the last timed episode not yet read; -1: none.
  double lastEpisodeMs = -1;
};

// Never destroyed: module unloads run from global destructors.
State &S = *new State;

enum OpTag : uint64_t {
  TagMemcpy = 1,
  TagMemset16,
  TagMemset32,
  TagRecord,
  TagWait,
  TagAlloc,
  TagFree
};

const char *kernelName(CUfunction function) {
  auto it = S.kernelNames.find(function);
  return it == S.kernelNames.end() ? "<unknown kernel>" : it->second.c_str();
}

//===----------------------------------------------------------------------===//
// Pools
//===----------------------------------------------------------------------===//

// The last handle of `free`, or a new one from `create` when it is empty.
template <typename Handle, typename Create>
Handle takeFrom(std::vector<Handle> &free, Create create) {
  if (free.empty())
    return create();
  Handle handle = free.back();
  free.pop_back();
  return handle;
}

CUstream takeStream() {
  int device = currentDevice();
  CUstream stream = takeFrom(S.pools[device].streams, [] {
    CUstream created;
    FN_CHECK(cuStreamCreate(&created, CU_STREAM_NON_BLOCKING), nullptr);
    return created;
  });
  S.streams[stream] = {device, true};
  return stream;
}

CUevent takeEvent() {
  int device = currentDevice();
  CUevent event = takeFrom(S.pools[device].events, [] {
    CUevent created;
    FN_CHECK(cuEventCreate(&created, CU_EVENT_DISABLE_TIMING), nullptr);
    return created;
  });
  S.events[event] = {device, true};
  return event;
}

// Timing events are internal: never handed to generated code, so no
// liveness tracking.
CUevent takeTimingEvent() {
  return takeFrom(S.pools[currentDevice()].timingEvents, [] {
    CUevent created;
    FN_CHECK(cuEventCreate(&created, CU_EVENT_DEFAULT), nullptr);
    return created;
  });
}

void giveBackTimingEvent(CUevent event) {
  S.pools[currentDevice()].timingEvents.push_back(event);
}

CUevent recordTimingEvent(CUstream stream, const char *what) {
  CUevent event = takeTimingEvent();
  FN_CHECK(cuEventRecord(event, stream), stream);
  FN_TRACE("timing event %p (%s) on stream %p", static_cast<void *>(event),
           what, static_cast<void *>(stream));
  return event;
}

float elapsedMs(CUevent from, CUevent to) {
  float ms;
  FN_CHECK(cuEventElapsedTime(&ms, from, to), nullptr);
  return ms;
}

// Returns a live pooled handle; anything else (a second destroy, a foreign
// handle) is ignored so that it is never handed out twice.
template <typename Handle, typename Info>
bool giveBack(std::unordered_map<Handle, Info> &infos, Handle handle,
              std::vector<Handle> DevicePools::*free) {
  auto it = infos.find(handle);
  if (it == infos.end() || !it->second.live)
    return false;
  it->second.live = false;
  (S.pools[it->second.device].*free).push_back(handle);
  return true;
}

void *takePinned(size_t bytes) {
  void *buffer;
  auto it = S.pinned.find(bytes);
  if (it != S.pinned.end()) {
    buffer = it->second;
    S.pinned.erase(it);
  } else {
    FN_CHECK(cuMemHostAlloc(&buffer, bytes, CU_MEMHOSTALLOC_PORTABLE), nullptr);
  }
  S.episode.pinned.emplace_back(bytes, buffer);
  return buffer;
}

// Frees `ptr` once no GPU work can use it any more.
void release(CUdeviceptr ptr) {
  auto it = S.allocs.find(ptr);
  Alloc alloc = it->second;
  S.allocs.erase(it);
  if (alloc.kind == AllocKind::Cached)
    S.pools[alloc.device].blocks.emplace(alloc.bytes, ptr);
  else
    FN_CHECK(cuMemFree(ptr), nullptr);
}

enum class Memory { Device, Pinned, Pageable };

Memory classify(const void *ptr) {
  CUmemorytype type;
  CUresult result =
      cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                            reinterpret_cast<CUdeviceptr>(ptr));
  // The driver does not know pageable host memory.
  if (result == CUDA_ERROR_INVALID_VALUE)
    return Memory::Pageable;
  check(result, "cuPointerGetAttribute(CU_POINTER_ATTRIBUTE_MEMORY_TYPE)",
        nullptr);
  return type == CU_MEMORYTYPE_HOST ? Memory::Pinned : Memory::Device;
}

const char *memoryName(Memory memory) {
  switch (memory) {
  case Memory::Device:
    return "device";
  case Memory::Pinned:
    return "pinned";
  case Memory::Pageable:
    return "pageable";
  }
  return "";
}

//===----------------------------------------------------------------------===//
// Graph episodes
//===----------------------------------------------------------------------===//

bool capturing() { return S.episode.id != 0; }

bool isMember(CUstream stream) {
  auto it = S.streams.find(stream);
  return capturing() && it != S.streams.end() &&
         it->second.episode == S.episode.id;
}

void recordEvent(CUevent event, CUstream stream, bool captured) {
  FN_CHECK(cuEventRecord(event, stream), stream);
  S.events[event].recordedIn = captured ? S.episode.id : 0;
}

// Makes a new stream part of the episode, beginning one if none is running.
void joinEpisode(CUstream stream) {
  Episode &e = S.episode;
  uint64_t &episode = S.streams[stream].episode;
  // Given back to the pool and taken again within the episode.
  if (capturing() && episode == e.id)
    return;
  if (!capturing()) {
    e.id = ++S.lastEpisode;
    e.origin = stream;
    // Relaxed: the runtime allocates (cuMemAlloc, cuMemHostAlloc) and waits
    // on eagerly recorded events while capturing.
    FN_CHECK(cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_RELAXED),
             stream);
    e.start = takeEvent();
    recordEvent(e.start, stream, true);
    FN_TRACE("graph episode %llu begins on stream %p",
             static_cast<unsigned long long>(e.id),
             static_cast<void *>(stream));
  } else {
    FN_CHECK(cuStreamWaitEvent(stream, e.start, 0), stream);
  }
  episode = e.id;
  e.members.push_back(stream);
}

// Ends the capture, runs it (updating the cached executable graph when the
// topology allows) and waits for it: the host synchronization the episode
// was waiting for.
void endEpisode() {
  Episode &e = S.episode;
  // cuStreamEndCapture requires every joined stream to join the origin back.
  for (CUstream member : e.members) {
    if (member == e.origin)
      continue;
    CUevent join = takeEvent();
    recordEvent(join, member, true);
    FN_CHECK(cuStreamWaitEvent(e.origin, join, 0), e.origin);
    giveBack(S.events, join, &DevicePools::events);
  }
  CUgraph graph;
  FN_CHECK(cuStreamEndCapture(e.origin, &graph), e.origin);
  // With timing on, the graph's execution is timed: capturing is host work.
  CUevent launchStart = nullptr, launchEnd = nullptr;
  size_t nodes = 0;
  FN_CHECK(cuGraphGetNodes(graph, nullptr, &nodes), e.origin);
  if (nodes) {
    CUgraphExec &exec = S.executables[e.signature];
    const char *how = "updated";
    if (exec) {
      CUgraphExecUpdateResultInfo info;
      if (cuGraphExecUpdate(exec, graph, &info) != CUDA_SUCCESS) {
        FN_CHECK(cuGraphExecDestroy(exec), e.origin);
        exec = nullptr;
      }
    }
    if (!exec) {
      FN_CHECK(cuGraphInstantiate(&exec, graph, 0), e.origin);
      how = "instantiated";
    }
    FN_TRACE("graph episode %llu: %zu operations, %zu nodes, %zu streams, "
             "%s, launch on stream %p",
             static_cast<unsigned long long>(e.id), e.operations, nodes,
             e.members.size(), how, static_cast<void *>(e.origin));
    if (S.timing)
      launchStart = recordTimingEvent(e.origin, "graph launch start");
    FN_CHECK(cuGraphLaunch(exec, e.origin), e.origin);
    if (S.timing)
      launchEnd = recordTimingEvent(e.origin, "graph launch end");
  }
  FN_CHECK(cuGraphDestroy(graph), e.origin);
  FN_CHECK(cuStreamSynchronize(e.origin), e.origin);
  if (launchStart) {
    S.lastEpisodeMs = elapsedMs(launchStart, launchEnd);
    giveBackTimingEvent(launchStart);
    giveBackTimingEvent(launchEnd);
    FN_TRACE("graph episode %llu: %.3f ms",
             static_cast<unsigned long long>(e.id), S.lastEpisodeMs);
  } else if (S.timing) {
    S.lastEpisodeMs = 0; // Nothing was launched.
  }
  for (const CopyOut &copy : e.copiesOut)
    std::memcpy(copy.dst, copy.pinned, copy.bytes);
  for (auto &[bytes, buffer] : e.pinned)
    S.pinned.emplace(bytes, buffer);
  for (CUdeviceptr ptr : e.frees)
    release(ptr);
  giveBack(S.events, e.start, &DevicePools::events);
  e = Episode();
}

// For patterns a capture cannot express: run what was captured and stay
// eager from now on, rather than capture something wrong.
void fallBack(const char *reason) {
  std::fprintf(stderr,
               "flashnorm-cuda: warning: FLASHNORM_CUDA_GRAPHS: %s; falling "
               "back to eager execution\n",
               reason);
  endEpisode();
  S.graphs = false;
}

bool route(CUstream stream, uint64_t tag) {
  if (!capturing())
    return false;
  if (!stream) {
    // The legacy stream is host-synchronous for our purposes.
    endEpisode();
    return false;
  }
  auto it =
      std::find(S.episode.members.begin(), S.episode.members.end(), stream);
  if (it == S.episode.members.end()) {
    fallBack("work on a stream created outside the running capture");
    return false;
  }
  Episode &e = S.episode;
  uint64_t position = it - e.members.begin();
  e.signature = (e.signature ^ (tag + (position << 56))) * 1099511628211ull;
  ++e.operations;
  return true;
}

// Eagerly recorded work a captured stream waits for has to be done before
// the graph runs; waiting on the host now is the simple way to ensure that.
void waitEvent(CUstream stream, CUevent event, uint64_t recordedIn) {
  bool captured = route(stream, TagWait);
  if (recordedIn == 0) {
    if (captured)
      FN_CHECK(cuEventSynchronize(event), stream);
    else
      FN_CHECK(cuStreamWaitEvent(stream, event, 0), stream);
  } else if (captured && recordedIn == S.episode.id) {
    FN_CHECK(cuStreamWaitEvent(stream, event, 0), stream);
  }
  // Otherwise the event was recorded in an episode that has been launched
  // and synchronized: nothing to wait for.
}

//===----------------------------------------------------------------------===//
// Timing of eager episodes
//===----------------------------------------------------------------------===//

// Adds a new stream to the timed episode, beginning one if none is running.
void timeNewStream(CUstream stream) {
  EagerTiming &t = S.eager;
  if (!t.start)
    t.start = recordTimingEvent(stream, "episode start");
  for (auto &[member, synchronized] : t.members)
    if (member == stream) { // Given back and taken again.
      synchronized = false;
      return;
    }
  t.members.emplace_back(stream, false);
}

void dropEagerTiming() {
  EagerTiming &t = S.eager;
  if (t.start)
    giveBackTimingEvent(t.start);
  for (CUevent end : t.ends)
    giveBackTimingEvent(end);
  t = EagerTiming();
}

// The member `stream` of the timed episode is about to be synchronized.
void timeSynchronize(CUstream stream) {
  S.eager.ends.push_back(recordTimingEvent(stream, "stream sync"));
}

// `stream` has been synchronized: once every member has, the episode's time
// is from its start to the latest of the synchronized points.
void timeSynchronized(CUstream stream) {
  EagerTiming &t = S.eager;
  bool done = true;
  for (auto &[member, synchronized] : t.members) {
    if (member == stream)
      synchronized = true;
    done &= synchronized;
  }
  if (!done)
    return;
  float ms = 0;
  for (CUevent end : t.ends)
    ms = std::max(ms, elapsedMs(t.start, end));
  S.lastEpisodeMs = ms;
  FN_TRACE("timed episode: %zu streams, %.3f ms", t.members.size(),
           S.lastEpisodeMs);
  dropEagerTiming();
}

bool isTimed(CUstream stream) {
  const EagerTiming &t = S.eager;
  return t.start && std::any_of(t.members.begin(), t.members.end(),
                                [&](const auto &member) {
                                  return member.first == stream;
                                });
}

void synchronizeStream(CUstream stream) {
  FN_TRACE("stream sync %p%s", static_cast<void *>(stream),
           isMember(stream) ? " (ends graph episode)" : "");
  if (isMember(stream)) {
    endEpisode();
  } else if (isTimed(stream)) {
    timeSynchronize(stream);
    FN_CHECK(cuStreamSynchronize(stream), stream);
    timeSynchronized(stream);
  } else {
    FN_CHECK(cuStreamSynchronize(stream), stream);
  }
}

void destroyStream(CUstream stream) {
  bool pooled = giveBack(S.streams, stream, &DevicePools::streams);
  FN_TRACE("stream destroy %p%s", static_cast<void *>(stream),
           pooled ? "" : " (not live: ignored)");
}

void allowSharedMemory(CUfunction function, int32_t smem, CUstream stream,
                       const char *name) {
  // Beyond 48 KiB of dynamic shared memory a kernel has to opt in.
  if (smem > 48 * 1024)
    FN_CHECK_KERNEL(
        cuFuncSetAttribute(
            function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, smem),
        stream, name);
}

// The start of a ranked memref descriptor; sizes[rank] and strides[rank]
// follow.
struct MemRefDescriptor {
  char *allocated;
  char *aligned;
  int64_t offset;
};

// The bytes from the first to one past the last element.
std::pair<char *, size_t>
memRefExtent(int64_t rank, MemRefDescriptor *descriptor, int64_t elementBytes) {
  const auto *sizes = reinterpret_cast<const int64_t *>(descriptor + 1);
  const int64_t *strides = sizes + rank;
  int64_t last = 0;
  for (int64_t i = 0; i < rank; ++i) {
    if (sizes[i] == 0)
      return {descriptor->aligned, 0};
    last += (sizes[i] - 1) * strides[i];
  }
  return {descriptor->aligned + descriptor->offset * elementBytes,
          (last + 1) * elementBytes};
}

} // namespace

bool flashnorm::cuda::beginStreamOp(CUstream stream, uint64_t tag) {
  return route(stream, tag);
}

//===----------------------------------------------------------------------===//
// The ABI
//===----------------------------------------------------------------------===//

extern "C" {

void mgpuSetDefaultDevice(int32_t ordinal) {
  std::lock_guard<std::mutex> lock(runtimeMutex());
  setDevice(ordinal);
  FN_TRACE("default device %d", ordinal);
}

CUmodule mgpuModuleLoad(void *data, int64_t /*size*/) {
  Entry entry;
  CUmodule module;
  FN_CHECK(cuModuleLoadData(&module, data), nullptr);
  FN_TRACE("module load %p (binary)", static_cast<void *>(module));
  return module;
}

CUmodule mgpuModuleLoadJIT(void *data, int32_t optLevel) {
  Entry entry;
  CUmodule module;
  char log[8192] = "";
  CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER,
                            CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
                            CU_JIT_OPTIMIZATION_LEVEL};
  void *values[] = {log, reinterpret_cast<void *>(sizeof(log)),
                    reinterpret_cast<void *>(static_cast<intptr_t>(optLevel))};
  CUresult result = cuModuleLoadDataEx(&module, data, 3, options, values);
  if (result != CUDA_SUCCESS)
    std::fprintf(stderr, "flashnorm-cuda: PTX JIT log:\n%s\n", log);
  check(result, "cuModuleLoadDataEx(PTX, CU_JIT_OPTIMIZATION_LEVEL)", nullptr);
  FN_TRACE("module load %p (PTX JIT, O%d)", static_cast<void *>(module),
           optLevel);
  return module;
}

void mgpuModuleUnload(CUmodule module) {
  // A program's modules are unloaded by its global destructors, which run
  // after the exit handlers: by then the driver's own handler has shut the
  // driver down, and every module went with it.
  if (driverShutDown()) {
    FN_TRACE("module unload %p: the driver has shut down",
             static_cast<void *>(module));
    return;
  }
  Entry entry;
  FN_TRACE("module unload %p", static_cast<void *>(module));
  FN_CHECK(cuModuleUnload(module), nullptr);
}

CUfunction mgpuModuleGetFunction(CUmodule module, const char *name) {
  Entry entry;
  CUfunction function;
  CUresult result = cuModuleGetFunction(&function, module, name);
  check(result, "cuModuleGetFunction", nullptr, name);
  S.kernelNames.try_emplace(function, name);
  return function;
}

void mgpuLaunchKernel(CUfunction function, intptr_t gridX, intptr_t gridY,
                      intptr_t gridZ, intptr_t blockX, intptr_t blockY,
                      intptr_t blockZ, int32_t smem, CUstream stream,
                      void **params, void **extra, size_t /*paramsCount*/) {
  Entry entry;
  const char *name = kernelName(function);
  bool captured = route(stream, reinterpret_cast<uint64_t>(function));
  allowSharedMemory(function, smem, stream, name);
  FN_TRACE("launch %s grid=(%zd,%zd,%zd) block=(%zd,%zd,%zd) smem=%d "
           "stream=%p%s",
           name, gridX, gridY, gridZ, blockX, blockY, blockZ, smem,
           static_cast<void *>(stream), captured ? " captured" : "");
  // A 0-sized tensor makes an empty grid, which the driver rejects; it has
  // nothing to do (traced as launched: the launch's line comes first).
  if (gridX * gridY * gridZ == 0)
    return;
  FN_CHECK_KERNEL(cuLaunchKernel(function, gridX, gridY, gridZ, blockX, blockY,
                                 blockZ, smem, stream, params, extra),
                  stream, name);
}

void mgpuLaunchClusterKernel(CUfunction function, intptr_t clusterX,
                             intptr_t clusterY, intptr_t clusterZ,
                             intptr_t gridX, intptr_t gridY, intptr_t gridZ,
                             intptr_t blockX, intptr_t blockY, intptr_t blockZ,
                             int32_t smem, CUstream stream, void **params,
                             void **extra) {
  Entry entry;
  const char *name = kernelName(function);
  bool captured = route(stream, reinterpret_cast<uint64_t>(function));
  allowSharedMemory(function, smem, stream, name);
  if (gridX * gridY * gridZ == 0) { // a 0-sized tensor: nothing to do
    FN_TRACE("launch %s grid=(%zd,%zd,%zd): empty, skipped", name, gridX, gridY,
             gridZ);
    return;
  }
  // Clusters above the portable size (8) need an opt-in, as upstream does.
  FN_CHECK_KERNEL(
      cuFuncSetAttribute(
          function, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1),
      stream, name);
  CUlaunchAttribute attributes[2] = {};
  attributes[0].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
  attributes[0].value.clusterDim.x = clusterX;
  attributes[0].value.clusterDim.y = clusterY;
  attributes[0].value.clusterDim.z = clusterZ;
  attributes[1].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE;
  attributes[1].value.clusterSchedulingPolicyPreference =
      CU_CLUSTER_SCHEDULING_POLICY_SPREAD;
  CUlaunchConfig config = {};
  config.gridDimX = gridX;
  config.gridDimY = gridY;
  config.gridDimZ = gridZ;
  config.blockDimX = blockX;
  config.blockDimY = blockY;
  config.blockDimZ = blockZ;
  config.sharedMemBytes = smem;
  config.hStream = stream;
  config.attrs = attributes;
  config.numAttrs = 2;
  FN_TRACE("launch %s cluster=(%zd,%zd,%zd) grid=(%zd,%zd,%zd) "
           "block=(%zd,%zd,%zd) smem=%d stream=%p%s",
           name, clusterX, clusterY, clusterZ, gridX, gridY, gridZ, blockX,
           blockY, blockZ, smem, static_cast<void *>(stream),
           captured ? " captured" : "");
  FN_CHECK_KERNEL(cuLaunchKernelEx(&config, function, params, extra), stream,
                  name);
}

CUstream mgpuStreamCreate() {
  Entry entry;
  CUstream stream = takeStream();
  if (S.graphs)
    joinEpisode(stream);
  else if (S.timing)
    timeNewStream(stream);
  FN_TRACE("stream create %p", static_cast<void *>(stream));
  return stream;
}

void mgpuStreamDestroy(CUstream stream) {
  Entry entry;
  destroyStream(stream);
}

void mgpuStreamSynchronize(CUstream stream) {
  Entry entry;
  synchronizeStream(stream);
}

void mgpuStreamWaitEvent(CUstream stream, CUevent event) {
  Entry entry;
  // A token that reached its wait through a block argument is lowered as an
  // event but is a stream: wait for its current work.
  if (S.streams.count(reinterpret_cast<CUstream>(event))) {
    CUstream source = reinterpret_cast<CUstream>(event);
    CUevent marker = takeEvent();
    recordEvent(marker, source, route(source, TagRecord));
    FN_TRACE("stream %p waits on stream %p", static_cast<void *>(stream),
             static_cast<void *>(source));
    waitEvent(stream, marker, S.events[marker].recordedIn);
    giveBack(S.events, marker, &DevicePools::events);
    return;
  }
  auto it = S.events.find(event);
  FN_TRACE("stream %p waits on event %p", static_cast<void *>(stream),
           static_cast<void *>(event));
  waitEvent(stream, event, it == S.events.end() ? 0 : it->second.recordedIn);
}

CUevent mgpuEventCreate() {
  Entry entry;
  CUevent event = takeEvent();
  FN_TRACE("event create %p", static_cast<void *>(event));
  return event;
}

void mgpuEventDestroy(CUevent event) {
  Entry entry;
  if (S.streams.count(reinterpret_cast<CUstream>(event))) {
    destroyStream(reinterpret_cast<CUstream>(event));
    return;
  }
  bool pooled = giveBack(S.events, event, &DevicePools::events);
  FN_TRACE("event destroy %p%s", static_cast<void *>(event),
           pooled ? "" : " (not live: ignored)");
}

void mgpuEventSynchronize(CUevent event) {
  Entry entry;
  if (S.streams.count(reinterpret_cast<CUstream>(event))) {
    synchronizeStream(reinterpret_cast<CUstream>(event));
    return;
  }
  auto it = S.events.find(event);
  uint64_t recordedIn = it == S.events.end() ? 0 : it->second.recordedIn;
  FN_TRACE("event sync %p", static_cast<void *>(event));
  if (recordedIn == 0)
    FN_CHECK(cuEventSynchronize(event), nullptr);
  else if (recordedIn == S.episode.id)
    endEpisode();
}

void mgpuEventRecord(CUevent event, CUstream stream) {
  Entry entry;
  bool captured = route(stream, TagRecord);
  recordEvent(event, stream, captured);
  FN_TRACE("event record %p on stream %p%s", static_cast<void *>(event),
           static_cast<void *>(stream), captured ? " captured" : "");
}

void *mgpuMemAlloc(uint64_t bytes, CUstream stream, bool isHostShared) {
  Entry entry;
  if (bytes == 0)
    return nullptr;
  CUdeviceptr ptr;
  AllocKind kind;
  if (isHostShared) {
    FN_CHECK(cuMemAllocManaged(&ptr, bytes, CU_MEM_ATTACH_GLOBAL), stream);
    kind = AllocKind::Managed;
  } else if (!stream) {
    FN_CHECK(cuMemAlloc(&ptr, bytes), stream);
    kind = AllocKind::Plain;
  } else if (route(stream, TagAlloc + (bytes << 8))) {
    // Not an allocation node: a block that outlives the graph, so that the
    // executable graph can be launched again.
    DevicePools &pools = S.pools[currentDevice()];
    auto it = pools.blocks.find(bytes);
    if (it != pools.blocks.end()) {
      ptr = it->second;
      pools.blocks.erase(it);
    } else {
      FN_CHECK(cuMemAlloc(&ptr, bytes), stream);
    }
    kind = AllocKind::Cached;
  } else {
    FN_CHECK(cuMemAllocAsync(&ptr, bytes, stream), stream);
    kind = AllocKind::StreamOrdered;
  }
  S.allocs[ptr] = {bytes, kind, currentDevice()};
  FN_TRACE("alloc %p bytes=%llu stream=%p%s%s", reinterpret_cast<void *>(ptr),
           static_cast<unsigned long long>(bytes), static_cast<void *>(stream),
           isHostShared ? " host-shared" : "",
           kind == AllocKind::Cached ? " (graph block cache)" : "");
  return reinterpret_cast<void *>(ptr);
}

void mgpuMemFree(void *ptr, CUstream stream) {
  Entry entry;
  if (!ptr)
    return;
  auto dptr = reinterpret_cast<CUdeviceptr>(ptr);
  auto it = S.allocs.find(dptr);
  // (A free in a captured episode is queued until the graph ran: the
  // allocation is still registered then, and a second free is in the queue.)
  if (it == S.allocs.end() ||
      std::find(S.episode.frees.begin(), S.episode.frees.end(), dptr) !=
          S.episode.frees.end())
    fatal("mgpuMemFree(%p, stream %p): not allocated by mgpuMemAlloc or "
          "already freed",
          ptr, static_cast<void *>(stream));
  FN_TRACE("free %p stream=%p", ptr, static_cast<void *>(stream));
  if (route(stream, TagFree)) {
    S.episode.frees.push_back(dptr);
  } else if (stream && it->second.kind == AllocKind::StreamOrdered) {
    FN_CHECK(cuMemFreeAsync(dptr, stream), stream);
    S.allocs.erase(it);
  } else {
    FN_CHECK(stream ? cuStreamSynchronize(stream) : cuCtxSynchronize(), stream);
    release(dptr);
  }
}

void mgpuMemcpy(void *dst, void *src, size_t bytes, CUstream stream) {
  Entry entry;
  // Nothing to copy (a buffer of no rows, which mgpuMemAlloc makes null):
  // not a host-to-host copy that would end a captured episode.
  if (bytes == 0)
    return;
  Memory from = Memory::Device, to = Memory::Device;
  if (capturing() || traceEnabled()) {
    from = classify(src);
    to = classify(dst);
  }
  bool captured =
      route(stream, TagMemcpy + (uint64_t(from) << 8) + (uint64_t(to) << 12));
  FN_TRACE("memcpy %p <- %p bytes=%zu %s->%s stream=%p%s", dst, src, bytes,
           memoryName(from), memoryName(to), static_cast<void *>(stream),
           captured ? " captured" : "");
  if (captured && from == Memory::Pageable) {
    auto *begin = static_cast<char *>(src);
    bool readsCopyOut =
        std::any_of(S.episode.copiesOut.begin(), S.episode.copiesOut.end(),
                    [&](const CopyOut &c) {
                      auto *out = static_cast<char *>(c.dst);
                      return begin < out + c.bytes && out < begin + bytes;
                    });
    if (to == Memory::Pageable || readsCopyOut) {
      fallBack(to == Memory::Pageable
                   ? "a host-to-host copy"
                   : "a copy reads host memory a captured copy writes");
      captured = false;
    }
  }
  // Pageable memory goes through pinned buffers: taken now for reads (the
  // host may not write it before it waits), written after the graph ran.
  if (captured && from == Memory::Pageable) {
    void *pinned = takePinned(bytes);
    std::memcpy(pinned, src, bytes);
    src = pinned;
  } else if (captured && to == Memory::Pageable) {
    void *pinned = takePinned(bytes);
    S.episode.copiesOut.push_back({dst, pinned, bytes});
    dst = pinned;
  }
  FN_CHECK(cuMemcpyAsync(reinterpret_cast<CUdeviceptr>(dst),
                         reinterpret_cast<CUdeviceptr>(src), bytes, stream),
           stream);
}

// The device copy of a constant host buffer: uploaded on the first call for
// `host` in the process, on the runtime's own stream and completed before it
// returns (so it is never part of a graph episode, and the caller's stream
// needs no ordering for it), then returned as it is. Never freed.
void *mgpuFlashNormResident(CUstream stream, void *host, uint64_t bytes) {
  Entry entry;
  if (bytes == 0)
    return nullptr;
  DevicePools &pools = S.pools[currentDevice()];
  auto [it, inserted] = pools.residents.try_emplace(host, 0, bytes);
  auto &[ptr, size] = it->second;
  if (!inserted) {
    if (size != bytes)
      fatal("mgpuFlashNormResident(%p): %llu bytes, but %llu before: a "
            "constant changed its size",
            host, static_cast<unsigned long long>(bytes),
            static_cast<unsigned long long>(size));
    FN_TRACE("resident %p <- %p bytes=%llu kept stream=%p",
             reinterpret_cast<void *>(ptr), host,
             static_cast<unsigned long long>(bytes),
             static_cast<void *>(stream));
    return reinterpret_cast<void *>(ptr);
  }
  if (!pools.uploads)
    FN_CHECK(cuStreamCreate(&pools.uploads, CU_STREAM_NON_BLOCKING), nullptr);
  FN_CHECK(cuMemAlloc(&ptr, bytes), nullptr);
  FN_TRACE("resident %p <- %p bytes=%llu uploaded stream=%p",
           reinterpret_cast<void *>(ptr), host,
           static_cast<unsigned long long>(bytes), static_cast<void *>(stream));
  FN_CHECK(cuMemcpyAsync(ptr, reinterpret_cast<CUdeviceptr>(host), bytes,
                         pools.uploads),
           pools.uploads);
  FN_CHECK(cuStreamSynchronize(pools.uploads), pools.uploads);
  return reinterpret_cast<void *>(ptr);
}

// A caller's device buffer must be as aligned as the kernels read it
// (flashnorm.check_alignment); checked before any device work, so a
// misaligned view is named here rather than faulting in a kernel, which
// would leave the context unusable. Touches no driver state.
void mgpuFlashNormCheckAlignment(void *buffer, uint64_t alignment,
                                 const char *what) {
  if (alignment && reinterpret_cast<uintptr_t>(buffer) % alignment)
    fatal("%s is at %p, not %llu-byte aligned: device buffers must be "
          "aligned as the driver aligns an allocation, the kernels read them "
          "in vectors that wide (a view at an element offset needs a copy)",
          what, buffer, static_cast<unsigned long long>(alignment));
}

void mgpuMemset32(void *dst, uint32_t value, size_t count, CUstream stream) {
  Entry entry;
  if (count == 0)
    return;
  bool captured = route(stream, TagMemset32);
  FN_TRACE("memset32 %p value=0x%x count=%zu bytes=%zu stream=%p%s", dst, value,
           count, count * 4, static_cast<void *>(stream),
           captured ? " captured" : "");
  FN_CHECK(cuMemsetD32Async(reinterpret_cast<CUdeviceptr>(dst), value, count,
                            stream),
           stream);
}

void mgpuMemset16(void *dst, uint16_t value, size_t count, CUstream stream) {
  Entry entry;
  if (count == 0)
    return;
  bool captured = route(stream, TagMemset16);
  FN_TRACE("memset16 %p value=0x%x count=%zu bytes=%zu stream=%p%s", dst, value,
           count, count * 2, static_cast<void *>(stream),
           captured ? " captured" : "");
  FN_CHECK(cuMemsetD16Async(reinterpret_cast<CUdeviceptr>(dst), value, count,
                            stream),
           stream);
}

void mgpuMemHostRegisterMemRef(int64_t rank, MemRefDescriptor *descriptor,
                               int64_t elementBytes) {
  Entry entry;
  auto [ptr, bytes] = memRefExtent(rank, descriptor, elementBytes);
  FN_TRACE("host register %p bytes=%zu", static_cast<void *>(ptr), bytes);
  if (bytes)
    FN_CHECK(cuMemHostRegister(ptr, bytes, CU_MEMHOSTREGISTER_PORTABLE),
             nullptr);
}

void mgpuMemHostUnregisterMemRef(int64_t rank, MemRefDescriptor *descriptor,
                                 int64_t elementBytes) {
  Entry entry;
  auto [ptr, bytes] = memRefExtent(rank, descriptor, elementBytes);
  FN_TRACE("host unregister %p", static_cast<void *>(ptr));
  if (bytes)
    FN_CHECK(cuMemHostUnregister(ptr), nullptr);
}

void mgpuFlashNormSetTiming(bool on) {
  Entry entry;
  if (!on)
    dropEagerTiming();
  S.timing = on;
  S.lastEpisodeMs = -1;
  FN_TRACE("episode timing %s", on ? "on" : "off");
}

double mgpuFlashNormLastEpisodeMs() {
  std::lock_guard<std::mutex> lock(runtimeMutex());
  double ms = S.lastEpisodeMs;
  S.lastEpisodeMs = -1;
  return ms;
}

bool mgpuFlashNormSetGraphs(bool on) {
  Entry entry;
  bool was = S.graphs;
  // A capture in progress runs as captured.
  if (!on && capturing())
    endEpisode();
  // An eagerly timed episode would mix with the captured ones.
  if (on)
    dropEagerTiming();
  S.graphs = on;
  FN_TRACE("graph mode %s", on ? "on" : "off");
  return was;
}

} // extern "C"
