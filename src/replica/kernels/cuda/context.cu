// Context: stream, cuBLASLt handle and workspace; CUDA error checks.
#include "replica/kernels/cuda/context.h"

#include <stdexcept>
#include <string>

#include "replica/kernels/cuda/cublaslt.h"

namespace replica::cuda {

void check_cuda(cudaError_t status, const char* what) {
  if (status != cudaSuccess)
    throw std::runtime_error(std::string("CUDA error in ") + what + ": " + cudaGetErrorString(status));
}

void check_cublas(cublasStatus_t status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error(std::string("cuBLASLt error in ") + what + ": status " + std::to_string(int(status)));
}

Context::Context(int device) : device_(device) {
  check_cuda(cudaSetDevice(device_), "cudaSetDevice");
  check_cuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
  // cudaMallocAsync's pool keeps no freed memory by default (release threshold 0): every synchronization
  // (each step's loss and norm downloads) would hand the freed scratch back to the driver, and the next step
  // would map it again. Keep it in the pool instead, as PyTorch's and RAPIDS's async allocators do.
  cudaMemPool_t pool = nullptr;
  check_cuda(cudaDeviceGetMemPool(&pool, device_), "cudaDeviceGetMemPool");
  uint64_t keep = UINT64_MAX;
  check_cuda(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep), "memory pool release threshold");
  check_cublas(cublaslt().create(&blas_), "cublasLtCreate");
  check_cuda(cudaMalloc(&workspace_, kWorkspaceBytes), "cudaMalloc(cuBLASLt workspace)");
}

Context::~Context() {
  // Destructors must not throw: errors here are reported by the next CUDA call anyway.
  cudaStreamSynchronize(stream_);
  cudaFree(workspace_);
  cublaslt().destroy(blas_);
  cudaStreamDestroy(stream_);
}

void Context::synchronize() const { check_cuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize"); }

void* Context::allocate(size_t bytes) {
  void* p = nullptr;
  if (bytes > 0) check_cuda(cudaMallocAsync(&p, bytes, stream_), "cudaMallocAsync");
  return p;
}

void Context::release(void* p) {
  if (p) cudaFreeAsync(p, stream_);
}

}  // namespace replica::cuda
