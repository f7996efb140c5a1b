// The per-device state every CUDA kernel call runs in: one stream, the cuBLASLt handle and its workspace,
// and the GEMM algorithm chosen once per shape (so a shape always runs the same, deterministic algorithm).
#pragma once
#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <tuple>

namespace replica::cuda {

// Throws std::runtime_error naming `what` and CUDA's message when status is not cudaSuccess.
void check_cuda(cudaError_t status, const char* what);
void check_cublas(cublasStatus_t status, const char* what);

class Context {
 public:
  explicit Context(int device = 0);
  int device() const { return device_; }
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  cudaStream_t stream() const { return stream_; }
  cublasLtHandle_t blas() const { return blas_; }
  void* workspace() const { return workspace_; }
  size_t workspace_bytes() const { return kWorkspaceBytes; }
  void synchronize() const;

  // Stream-ordered scratch memory (cudaMallocAsync on this context's stream); free with release().
  void* allocate(size_t bytes);
  void release(void* p);

  // The algorithm cuBLASLt's heuristic picked for a GEMM shape (transposes, sizes, strides, accumulate, the operand
  // types with float8's fast accumulation, operand alignments), cached by the GEMM code.
  using GemmKey = std::tuple<bool, bool, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, bool, uint32_t, uint32_t,
                             uint32_t, uint32_t>;
  std::map<GemmKey, cublasLtMatmulAlgo_t> gemm_algorithms;

 private:
  static constexpr size_t kWorkspaceBytes = size_t(32) << 20;  // NVIDIA's recommendation for Hopper
  int device_;
  cudaStream_t stream_ = nullptr;
  cublasLtHandle_t blas_ = nullptr;
  void* workspace_ = nullptr;
};

// A typed, stream-ordered scratch buffer that lives for one scope.
template <typename T>
class Scratch {
 public:
  Scratch(Context& ctx, size_t count) : ctx_(ctx), data_(static_cast<T*>(ctx.allocate(count * sizeof(T)))) {}
  ~Scratch() { ctx_.release(data_); }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  T* get() const { return data_; }

 private:
  Context& ctx_;
  T* data_;
};

}  // namespace replica::cuda
