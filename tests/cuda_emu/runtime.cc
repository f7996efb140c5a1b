// The CUDA runtime's devices, memory, streams and events on the CPU (cuda_runtime_api.h). One emulated
// device with an H200's properties. Device memory is host memory that the emulator tracks, so a copy whose
// direction does not match where its pointers live (a host pointer passed as device memory, or the
// reverse) is refused with cudaErrorInvalidValue. Fresh allocations are filled with NaN bytes, as garbage that
// a kernel must not read, and each one ends at an inaccessible page: a kernel that reads or writes past the end
// of a buffer (beyond cudaMalloc's 256-byte rounding) faults at once, as compute-sanitizer would report it,
// and so does a kernel that touches a freed buffer (its pages are unmapped).
//
// Streams run their operations in order, and everything runs at once except the copies that are asynchronous on a
// GPU too: a cudaMemcpyAsync between device memory and page-locked host memory (cudaMallocHost) waits in its stream's
// queue until something orders it: a later operation on the same stream (a kernel, a cuBLASLt call, another copy),
// a stream waiting for an event recorded after it, or a synchronization. That is a legal schedule of the real one,
// and the latest it allows, so code that reads such a copy's destination (or rewrites its source) without the
// stream order or an event that covers it sees the old bytes here, as it could on a GPU.
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <set>

#include "cuda_runtime_api.h"

namespace {

constexpr size_t kTotalBytes = size_t(141) << 30;  // an H200
constexpr size_t kAlignment = 256;                  // cudaMalloc's guarantee

struct Allocation {
  size_t bytes;    // asked for: a copy past them is refused
  void* mapping;   // the pages, the guard page last
  size_t mapped;
};

struct Memory {
  std::mutex mutex;
  std::map<uintptr_t, Allocation> allocations;  // by start address
  size_t in_use = 0;                            // bytes reserved, rounded to the alignment
};

Memory& memory() {
  static Memory m;
  return m;
}

// Whether [p, p + bytes) lies inside one of `allocations` (by start address; length(value) bytes long).
template <typename Allocations, typename Length>
bool inside(const Allocations& allocations, const void* p, size_t bytes, Length length) {
  const uintptr_t address = reinterpret_cast<uintptr_t>(p);
  auto it = allocations.upper_bound(address);
  if (it == allocations.begin()) return false;
  --it;
  return address + bytes <= it->first + length(it->second);
}

bool on_device(const void* p, size_t bytes) {
  Memory& m = memory();
  std::lock_guard lock(m.mutex);
  return inside(m.allocations, p, bytes, [](const Allocation& a) { return a.bytes; });
}

cudaError_t allocate(void** p, size_t bytes) {
  if (!p) return cudaErrorInvalidValue;
  const size_t rounded = (std::max<size_t>(bytes, 1) + kAlignment - 1) / kAlignment * kAlignment;
  Memory& m = memory();
  std::lock_guard lock(m.mutex);
  if (m.in_use + rounded > kTotalBytes) return cudaErrorMemoryAllocation;
  // The buffer ends where the guard page starts; a page-aligned guard keeps the start 256-byte aligned.
  const size_t page = size_t(sysconf(_SC_PAGESIZE));
  const size_t mapped = (rounded + page - 1) / page * page + page;
  void* mapping = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mapping == MAP_FAILED) return cudaErrorMemoryAllocation;
  unsigned char* guard = static_cast<unsigned char*>(mapping) + mapped - page;
  mprotect(guard, page, PROT_NONE);
  *p = guard - rounded;
  std::memset(*p, 0xff, rounded);
  m.allocations[reinterpret_cast<uintptr_t>(*p)] = {std::max<size_t>(bytes, 1), mapping, mapped};
  m.in_use += rounded;
  return cudaSuccess;
}

cudaError_t release(void* p) {
  if (!p) return cudaSuccess;
  Memory& m = memory();
  std::lock_guard lock(m.mutex);
  const auto it = m.allocations.find(reinterpret_cast<uintptr_t>(p));
  if (it == m.allocations.end()) return cudaErrorInvalidValue;
  m.in_use -= (it->second.bytes + kAlignment - 1) / kAlignment * kAlignment;
  munmap(it->second.mapping, it->second.mapped);
  m.allocations.erase(it);
  return cudaSuccess;
}

// Page-locked host allocations (cudaMallocHost): start → bytes.
struct PinnedMemory {
  std::mutex mutex;
  std::map<uintptr_t, size_t> allocations;
};

PinnedMemory& pinned() {
  static PinnedMemory m;
  return m;
}

bool in_pinned(const void* p, size_t bytes) {
  PinnedMemory& m = pinned();
  std::lock_guard lock(m.mutex);
  return inside(m.allocations, p, bytes, [](size_t length) { return length; });
}

}  // namespace

// A stream's queue of deferred copies; `queued` counts every copy ever queued, `done` those that have run.
struct CUstream_st {
  std::deque<std::function<void()>> waiting;
  uint64_t queued = 0, done = 0;
  void run_until(uint64_t position) {
    while (done < position) {
      std::function<void()> copy = std::move(waiting.front());
      waiting.pop_front();
      copy();
      done++;
    }
  }
  void run_all() { run_until(queued); }
};

namespace {

struct Streams {
  std::mutex mutex;
  std::set<CUstream_st*> all;
};

Streams& streams() {
  static Streams s;
  return s;
}


struct Event {
  std::chrono::steady_clock::time_point time;
  CUstream_st* stream = nullptr;  // where it was last recorded, and how many copies had been queued there then
  uint64_t position = 0;
};

}  // namespace

struct CUevent_st : Event {};
struct CUmemPoolHandle_st {};

namespace cuda_emu {
void order_stream(cudaStream_t stream) {
  if (stream) stream->run_all();
}
}  // namespace cuda_emu
using cuda_emu::order_stream;

cudaError_t cudaGetDeviceCount(int* count) {
  *count = 1;
  return cudaSuccess;
}

cudaError_t cudaSetDevice(int device) { return device == 0 ? cudaSuccess : cudaErrorInvalidDevice; }

cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device) {
  if (device != 0) return cudaErrorInvalidDevice;
  *prop = {};
  std::strcpy(prop->name, "NVIDIA H200 (cuda_emu, CPU emulation)");
  prop->totalGlobalMem = kTotalBytes;
  prop->sharedMemPerBlock = 48 << 10;
  prop->sharedMemPerBlockOptin = 227 << 10;
  prop->multiProcessorCount = 132;
  prop->major = 9;
  prop->minor = 0;
  prop->warpSize = 32;
  prop->maxThreadsPerBlock = 1024;
  return cudaSuccess;
}

cudaError_t cudaMemGetInfo(size_t* free, size_t* total) {
  Memory& m = memory();
  std::lock_guard lock(m.mutex);
  *total = kTotalBytes;
  *free = kTotalBytes - m.in_use;
  return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize() {
  Streams& s = streams();
  std::lock_guard lock(s.mutex);
  for (CUstream_st* stream : s.all) stream->run_all();
  return cudaSuccess;
}

cudaError_t cudaMalloc(void** p, size_t bytes) { return allocate(p, bytes); }
cudaError_t cudaFree(void* p) { return release(p); }
cudaError_t cudaMallocAsync(void** p, size_t bytes, cudaStream_t) { return allocate(p, bytes); }
cudaError_t cudaFreeAsync(void* p, cudaStream_t stream) {
  order_stream(stream);
  return release(p);
}
// Page-locked host memory is host memory here (outside the device's allocations, as copies check), recorded so
// that copies to and from it are asynchronous. Freeing it waits for the device, as cudaFreeHost does.
cudaError_t cudaMallocHost(void** p, size_t bytes) {
  *p = std::malloc(bytes ? bytes : 1);
  if (!*p) return cudaErrorMemoryAllocation;
  PinnedMemory& m = pinned();
  std::lock_guard lock(m.mutex);
  m.allocations[reinterpret_cast<uintptr_t>(*p)] = std::max<size_t>(bytes, 1);
  return cudaSuccess;
}
cudaError_t cudaFreeHost(void* p) {
  cudaDeviceSynchronize();
  {
    PinnedMemory& m = pinned();
    std::lock_guard lock(m.mutex);
    if (m.allocations.erase(reinterpret_cast<uintptr_t>(p)) == 0) return cudaErrorInvalidValue;
  }
  std::free(p);
  return cudaSuccess;
}

cudaError_t cudaMemcpy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind) {
  if (bytes == 0) return cudaSuccess;
  const bool dst_ok = kind == cudaMemcpyDefault || on_device(dst, bytes) == (kind == cudaMemcpyHostToDevice ||
                                                                               kind == cudaMemcpyDeviceToDevice);
  const bool src_ok = kind == cudaMemcpyDefault || on_device(src, bytes) == (kind == cudaMemcpyDeviceToHost ||
                                                                               kind == cudaMemcpyDeviceToDevice);
  if (!dst_ok || !src_ok) return cudaErrorInvalidValue;
  std::memmove(dst, src, bytes);
  return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind, cudaStream_t stream) {
  const bool asynchronous = stream && bytes > 0 &&
                            ((kind == cudaMemcpyHostToDevice && in_pinned(src, bytes)) ||
                             (kind == cudaMemcpyDeviceToHost && in_pinned(dst, bytes)));
  if (!asynchronous) {
    order_stream(stream);
    return cudaMemcpy(dst, src, bytes, kind);
  }
  const bool device_ok = kind == cudaMemcpyHostToDevice ? on_device(dst, bytes) : on_device(src, bytes);
  if (!device_ok) return cudaErrorInvalidValue;
  stream->waiting.push_back([=] { std::memmove(dst, src, bytes); });
  stream->queued++;
  return cudaSuccess;
}

// Row by row, each row checked as cudaMemcpy checks a copy; pitches below the width are CUDA's error too.
cudaError_t cudaMemcpy2DAsync(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width, size_t height,
                              cudaMemcpyKind kind, cudaStream_t stream) {
  if (width > dpitch || width > spitch) return cudaErrorInvalidValue;
  order_stream(stream);
  for (size_t r = 0; r < height; r++) {
    const cudaError_t e = cudaMemcpy(static_cast<char*>(dst) + r * dpitch, static_cast<const char*>(src) + r * spitch,
                                     width, kind);
    if (e != cudaSuccess) return e;
  }
  return cudaSuccess;
}

cudaError_t cudaMemsetAsync(void* p, int value, size_t bytes, cudaStream_t stream) {
  order_stream(stream);
  if (bytes == 0) return cudaSuccess;
  if (!on_device(p, bytes)) return cudaErrorInvalidValue;
  std::memset(p, value, bytes);
  return cudaSuccess;
}

cudaError_t cudaDeviceGetMemPool(cudaMemPool_t* pool, int device) {
  static CUmemPoolHandle_st the_pool;
  if (device != 0) return cudaErrorInvalidDevice;
  *pool = &the_pool;
  return cudaSuccess;
}

cudaError_t cudaMemPoolSetAttribute(cudaMemPool_t pool, cudaMemPoolAttr attribute, void* value) {
  return pool && value && attribute == cudaMemPoolAttrReleaseThreshold ? cudaSuccess : cudaErrorInvalidValue;
}

cudaError_t cudaStreamCreate(cudaStream_t* stream) { return cudaStreamCreateWithFlags(stream, cudaStreamDefault); }
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned) {
  *stream = new CUstream_st;
  Streams& s = streams();
  std::lock_guard lock(s.mutex);
  s.all.insert(*stream);
  return cudaSuccess;
}
cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  stream->run_all();  // the GPU finishes a destroyed stream's work
  {
    Streams& s = streams();
    std::lock_guard lock(s.mutex);
    s.all.erase(stream);
  }
  delete stream;
  return cudaSuccess;
}
cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  order_stream(stream);
  return cudaSuccess;
}
// The waiting stream's later operations come after the event's stream's work up to the record.
cudaError_t cudaStreamWaitEvent(cudaStream_t, cudaEvent_t event, unsigned) {
  if (!event) return cudaErrorInvalidValue;
  if (event->stream) event->stream->run_until(event->position);
  return cudaSuccess;
}

cudaError_t cudaEventCreate(cudaEvent_t* event) {
  *event = new CUevent_st;
  return cudaSuccess;
}
cudaError_t cudaEventDestroy(cudaEvent_t event) {
  delete event;
  return cudaSuccess;
}
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  event->time = std::chrono::steady_clock::now();
  event->stream = stream;
  event->position = stream ? stream->queued : 0;
  return cudaSuccess;
}
cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  if (event->stream) event->stream->run_until(event->position);
  return cudaSuccess;
}
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
  *ms = std::chrono::duration<float, std::milli>(end->time - start->time).count();
  return cudaSuccess;
}
