// CPU emulation of the CUDA runtime API (tests/cuda_emu/README.md): the subset replica's CUDA backend calls.
// Device memory is host memory; streams and events are ordered trivially because every call completes before
// it returns. Errors that the real runtime reports for a bad call (an unknown kernel attribute, a launch
// asking for more shared memory than allowed) are reported the same way, through cudaError_t.
#pragma once
#include <cstddef>
#include <cstdint>

enum cudaError_t {
  cudaSuccess = 0,
  cudaErrorInvalidValue = 1,
  cudaErrorMemoryAllocation = 2,
  cudaErrorInvalidConfiguration = 9,
  cudaErrorInvalidDevice = 101,
  cudaErrorLaunchFailure = 719,
};
using cudaError = cudaError_t;

struct CUstream_st;
struct CUevent_st;
struct CUmemPoolHandle_st;
using cudaStream_t = CUstream_st*;
using cudaEvent_t = CUevent_st*;
using cudaMemPool_t = CUmemPoolHandle_st*;

enum cudaMemcpyKind {
  cudaMemcpyHostToHost = 0,
  cudaMemcpyHostToDevice = 1,
  cudaMemcpyDeviceToHost = 2,
  cudaMemcpyDeviceToDevice = 3,
  cudaMemcpyDefault = 4,
};

enum cudaFuncAttribute {
  cudaFuncAttributeMaxDynamicSharedMemorySize = 8,
  cudaFuncAttributePreferredSharedMemoryCarveout = 9,
};

enum cudaMemPoolAttr { cudaMemPoolAttrReleaseThreshold = 4 };
enum cudaSharedCarveout { cudaSharedmemCarveoutDefault = -1, cudaSharedmemCarveoutMaxShared = 100 };

constexpr unsigned cudaStreamDefault = 0, cudaStreamNonBlocking = 1;

struct uint3 {
  unsigned x, y, z;
};
struct dim3 {
  unsigned x = 1, y = 1, z = 1;
  constexpr dim3(unsigned vx = 1, unsigned vy = 1, unsigned vz = 1) : x(vx), y(vy), z(vz) {}
};
struct alignas(16) float4 {
  float x, y, z, w;
};
inline float4 make_float4(float x, float y, float z, float w) { return {x, y, z, w}; }

// The fields replica reads, with an H200's values.
struct cudaDeviceProp {
  char name[256];
  size_t totalGlobalMem;
  size_t sharedMemPerBlock;
  size_t sharedMemPerBlockOptin;
  int multiProcessorCount;
  int major, minor;
  int warpSize;
  int maxThreadsPerBlock;
};

cudaError_t cudaGetDeviceCount(int* count);
cudaError_t cudaSetDevice(int device);
cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device);
cudaError_t cudaMemGetInfo(size_t* free, size_t* total);
const char* cudaGetErrorString(cudaError_t error);
cudaError_t cudaGetLastError();
cudaError_t cudaDeviceSynchronize();

cudaError_t cudaMalloc(void** p, size_t bytes);
cudaError_t cudaFree(void* p);
cudaError_t cudaMallocAsync(void** p, size_t bytes, cudaStream_t stream);
cudaError_t cudaFreeAsync(void* p, cudaStream_t stream);
cudaError_t cudaMallocHost(void** p, size_t bytes);
cudaError_t cudaFreeHost(void* p);
cudaError_t cudaMemcpy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind);
cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind, cudaStream_t stream);
cudaError_t cudaMemcpy2DAsync(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width, size_t height,
                              cudaMemcpyKind kind, cudaStream_t stream);
cudaError_t cudaMemsetAsync(void* p, int value, size_t bytes, cudaStream_t stream);
cudaError_t cudaDeviceGetMemPool(cudaMemPool_t* pool, int device);
cudaError_t cudaMemPoolSetAttribute(cudaMemPool_t pool, cudaMemPoolAttr attribute, void* value);

cudaError_t cudaStreamCreate(cudaStream_t* stream);
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned flags);
cudaError_t cudaStreamDestroy(cudaStream_t stream);
cudaError_t cudaStreamSynchronize(cudaStream_t stream);
cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned flags = 0);
cudaError_t cudaEventCreate(cudaEvent_t* event);
cudaError_t cudaEventDestroy(cudaEvent_t event);
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream = nullptr);
cudaError_t cudaEventSynchronize(cudaEvent_t event);
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end);

namespace cuda_emu {
// Runs the copies still queued on `stream` (runtime.cc: copies to and from page-locked host memory wait there), as
// a GPU finishes them before the stream's next operation: every kernel launch and cuBLASLt call calls it first.
void order_stream(cudaStream_t stream);
}  // namespace cuda_emu

// Kernels are identified by their address, as in the real runtime.
cudaError_t cudaFuncSetAttribute(const void* kernel, cudaFuncAttribute attribute, int value);
template <typename Kernel>
cudaError_t cudaFuncSetAttribute(Kernel* kernel, cudaFuncAttribute attribute, int value) {
  return cudaFuncSetAttribute(reinterpret_cast<const void*>(kernel), attribute, value);
}

// cuda_runtime.h's typed overloads.
template <typename T>
cudaError_t cudaMalloc(T** p, size_t bytes) {
  return cudaMalloc(reinterpret_cast<void**>(p), bytes);
}
template <typename T>
cudaError_t cudaMallocHost(T** p, size_t bytes) {
  return cudaMallocHost(reinterpret_cast<void**>(p), bytes);
}
template <typename T>
cudaError_t cudaMallocAsync(T** p, size_t bytes, cudaStream_t stream) {
  return cudaMallocAsync(reinterpret_cast<void**>(p), bytes, stream);
}
