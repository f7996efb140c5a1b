// CudaBackend: the Backend interface over kernels/cuda, on one GPU and one stream. Kernels are queued on the
// stream; calls that return host values (loss sums, norm block sums, copies to the host) wait for it.
// Built into libreplica only when CMake finds CUDA (REPLICA_HAVE_CUDA_BACKEND).
#include <cuda_runtime_api.h>
#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <vector>

#include "replica/core/error.h"
#include "replica/kernels/backend.h"
#include "replica/kernels/cuda/adamw.h"
#include "replica/kernels/cuda/attention.h"
#include "replica/kernels/cuda/cached_attention.h"
#include "replica/kernels/cuda/context.h"
#include "replica/kernels/cuda/elementwise.h"
#include "replica/kernels/cuda/embedding.h"
#include "replica/kernels/cuda/float8.h"
#include "replica/kernels/cuda/gemm.h"
#include "replica/kernels/cuda/grad_norm.h"
#include "replica/kernels/cuda/lm_head_loss.h"
#include "replica/kernels/cuda/profiling_backend.h"
#include "replica/kernels/cuda/rmsnorm.h"
#include "replica/kernels/cuda/rope.h"
#include "replica/kernels/cuda/swiglu.h"
#include "replica/metrics/peak.h"

namespace replica {

int cuda_device_count() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess ? n : 0;
}

namespace {

using cuda::check_cuda;

// A device buffer that grows to the largest size asked for (host data uploaded per call: ids, targets).
template <typename T>
class Staging {
 public:
  explicit Staging(cuda::Context& ctx) : ctx_(ctx) {}
  ~Staging() { ctx_.release(data_); }
  T* upload(const T* host, size_t n) {
    if (n > capacity_) {
      ctx_.release(data_);
      data_ = static_cast<T*>(ctx_.allocate(n * sizeof(T)));
      capacity_ = n;
    }
    check_cuda(cudaMemcpyAsync(data_, host, n * sizeof(T), cudaMemcpyHostToDevice, ctx_.stream()), "upload");
    return data_;
  }

 private:
  cuda::Context& ctx_;
  T* data_ = nullptr;
  size_t capacity_ = 0;
};

class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(int gpu) : gpu_(gpu), ctx_(gpu), ids_(ctx_), targets_(ctx_) {
    check_cuda(cudaGetDeviceProperties(&props_, gpu), "cudaGetDeviceProperties");
  }

  Device device() const override { return Device::cuda; }
  std::string describe() const override {
    return fmt::format("cuda:{} ({}, {} SMs, {:.0f} GiB)", gpu_, props_.name, props_.multiProcessorCount,
                       double(props_.totalGlobalMem) / double(1 << 30));
  }
  bool host_memory() const override { return false; }

  void* allocate(size_t bytes) override {
    void* p = nullptr;
    const cudaError_t status = cudaMallocAsync(&p, bytes, ctx_.stream());
    if (status != cudaSuccess) {
      size_t free = 0, total = 0;
      cudaMemGetInfo(&free, &total);
      fail("cuda: cannot allocate {:.2f} GiB ({} GiB of {} GiB free): {}", double(bytes) / double(1 << 30),
           free >> 30, total >> 30, cudaGetErrorString(status));
    }
    check_cuda(cudaMemsetAsync(p, 0, bytes, ctx_.stream()), "cudaMemsetAsync");
    return p;
  }
  void release(void* p) override { ctx_.release(p); }
  void* allocate_host(size_t bytes) override {
    void* p = nullptr;
    if (cudaMallocHost(&p, bytes) != cudaSuccess)
      fail("cuda: cannot allocate {:.2f} GiB of page-locked host memory", double(bytes) / double(1 << 30));
    std::memset(p, 0, bytes);
    return p;
  }
  void release_host(void* p) override { check_cuda(cudaFreeHost(p), "cudaFreeHost"); }
  void to_device(void* dst, const void* host, size_t bytes) override {
    check_cuda(cudaMemcpyAsync(dst, host, bytes, cudaMemcpyHostToDevice, ctx_.stream()), "copy to the GPU");
    ctx_.synchronize();  // the host buffer may go away when this returns
  }
  void to_host(void* host, const void* src, size_t bytes) override {
    check_cuda(cudaMemcpyAsync(host, src, bytes, cudaMemcpyDeviceToHost, ctx_.stream()), "copy to the host");
    ctx_.synchronize();
  }
  void copy(float* dst, const float* src, size_t n) override {
    check_cuda(cudaMemcpyAsync(dst, src, n * sizeof(float), cudaMemcpyDeviceToDevice, ctx_.stream()), "copy");
  }
  void copy_rows(float* dst, size_t dst_stride, const float* src, size_t src_stride, size_t width,
                 size_t rows) override {
    check_cuda(cudaMemcpy2DAsync(dst, dst_stride * sizeof(float), src, src_stride * sizeof(float), width * sizeof(float),
                                 rows, cudaMemcpyDeviceToDevice, ctx_.stream()),
               "copy_rows");
  }
  void zero(float* x, size_t n) override {
    check_cuda(cudaMemsetAsync(x, 0, n * sizeof(float), ctx_.stream()), "zero");
  }
  void synchronize() override { ctx_.synchronize(); }
  void* native_stream() override { return ctx_.stream(); }

  double peak_flops(Precision p) override {
    const std::string name = props_.name;
    if (name.find("H100") != std::string::npos || name.find("H200") != std::string::npos)
      return metrics::hopper_peak_flops(p);
    return measured_gemm_peak(p);
  }

  double device_memory_used() override {
    size_t free = 0, total = 0;
    check_cuda(cudaMemGetInfo(&free, &total), "cudaMemGetInfo");
    return double(total - free);
  }

  void add(float* out, const float* a, const float* b, int64_t n) override {
    cuda::add(ctx_, out, a, b, n);
  }
  void scale(float* x, size_t n, float s) override {
    cuda::scale(ctx_, x, n, s);
  }
  void convert_to_bf16(const float* src, bf16* dst, size_t n) override {
    cuda::convert_to_bf16(ctx_, src, dst, int64_t(n));
  }

  void gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, const float* B,
            int64_t ldb, float* C, int64_t ldc, bool acc, Precision p, const bf16* B16, const bf16* A16) override {
    cuda::gemm(ctx_, ta, tb, M, N, K, A, lda, B, ldb, C, ldc, acc, p, B16, A16);
  }
  void quantize_float8(uint8_t* codes, float* inverse_scale, WeightRef x, size_t n, Float8Format f,
                       bool power_of_two) override {
    require_float8();
    cuda::quantize_float8(ctx_, codes, inverse_scale, x.f32, x.b16, int64_t(n), f, power_of_two);
  }
  void gemm_float8(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const Float8Matrix& A, int64_t lda,
                   const Float8Matrix& B, int64_t ldb, float* C, int64_t ldc, bool acc, bool fast) override {
    require_float8();
    cuda::gemm_float8(ctx_, ta, tb, M, N, K, A, lda, B, ldb, C, ldc, acc, fast);
  }
  // cuBLASLt's float8 GEMMs need the float8 tensor cores of Ada and Hopper (compute capability 8.9 or newer).
  void require_float8() const {
    check(props_.major * 10 + props_.minor >= 89,
          "train.float8 needs a GPU of compute capability 8.9 or newer (float8 tensor cores); cuda:{} ({}) is {}.{}",
          gpu_, props_.name, props_.major, props_.minor);
  }
  void rmsnorm_forward(float* y, float* rstd, const float* x, const float* w, int64_t rows, int64_t C,
                       float eps) override {
    cuda::rmsnorm_forward(ctx_, y, rstd, x, w, rows, C, eps);
  }
  void rmsnorm_backward(float* dx, bf16* dx16, float* dw, const float* dy, const float* x, const float* w,
                        const float* rstd, int64_t rows, int64_t C, bool acc) override {
    cuda::rmsnorm_backward(ctx_, dx, dx16, dw, dy, x, w, rstd, rows, C, acc);
  }
  void rmsnorm_add_forward(float* out, bf16* out16, float* rstd, const float* residual, const float* x, const float* w,
                           int64_t rows, int64_t C, float eps) override {
    cuda::rmsnorm_add_forward(ctx_, out, out16, rstd, residual, x, w, rows, C, eps);
  }
  void rmsnorm_rope_forward(float* y, bf16* y16, float* rstd, const float* x, const float* w, const float* cos,
                            const float* sin, int64_t B, int64_t T, int64_t heads, int64_t D, float eps) override {
    cuda::rmsnorm_rope_forward(ctx_, y, y16, rstd, x, w, cos, sin, B, T, heads, D, eps);
  }
  void rope_forward(float* x, const float* cos, const float* sin, int64_t B, int64_t T, int64_t heads,
                    int64_t D) override {
    cuda::rope_forward(ctx_, x, cos, sin, B, T, heads, D);
  }
  void rope_backward(float* dx, const float* cos, const float* sin, int64_t B, int64_t T, int64_t heads,
                     int64_t D) override {
    cuda::rope_backward(ctx_, dx, cos, sin, B, T, heads, D);
  }
  // automatic is mma.sync (attention_mma.cu): the wgmma kernels (attention_wgmma.cu) have not yet run on a GPU,
  // so they run only when asked for by name.
  AttentionKernel resolve_attention(AttentionKernel wanted) const override {
    check(wanted != AttentionKernel::cpu_bf16, "attention kernel cpu_bf16 needs train.device=cpu (on CUDA: auto, "
                                               "mma, wgmma or fp32)");
    return wanted == AttentionKernel::automatic ? AttentionKernel::mma : wanted;
  }
  // bf16 precision runs attention's products on tensor cores for the head sizes those kernels have; the fp32
  // kernels run everything else, and everything when chosen (to tell the kernels apart).
  static bool tensor_core_attention(const AttentionShape& s, Precision p, AttentionKernel kernel) {
    return p == Precision::bf16 && cuda::attention_mma_head_dim(s.D) && kernel != AttentionKernel::fp32;
  }
  void attention_forward(float* out, float* lse, WeightRef q, WeightRef k, WeightRef v, const AttentionShape& s,
                         const DocumentOffsets& docs, Precision p, AttentionKernel kernel) override {
    kernel = resolve_attention(kernel);
    if (!tensor_core_attention(s, p, kernel)) cuda::attention_forward(ctx_, out, lse, q.f32, k.f32, v.f32, s, docs);
    else if (kernel == AttentionKernel::wgmma) cuda::attention_forward_wgmma(ctx_, out, lse, q, k, v, s, docs);
    else cuda::attention_forward_mma(ctx_, out, lse, q, k, v, s, docs);
  }
  void attention_backward(float* dq, float* dk, float* dv, const float* dout, const float* out, const float* lse,
                          WeightRef q, WeightRef k, WeightRef v, const AttentionShape& s, const DocumentOffsets& docs,
                          Precision p, AttentionKernel kernel) override {
    kernel = resolve_attention(kernel);
    if (!tensor_core_attention(s, p, kernel))
      cuda::attention_backward(ctx_, dq, dk, dv, dout, out, lse, q.f32, k.f32, v.f32, s, docs);
    else if (kernel == AttentionKernel::wgmma)
      cuda::attention_backward_wgmma(ctx_, dq, dk, dv, dout, out, lse, q, k, v, s, docs);
    else cuda::attention_backward_mma(ctx_, dq, dk, dv, dout, out, lse, q, k, v, s, docs);
  }
  void swiglu_forward(float* s, bf16* s16, const float* g, const float* u, int64_t n) override {
    cuda::swiglu_forward(ctx_, s, s16, g, u, n);
  }
  void swiglu_backward(float* dg, float* du, bf16* dg16, bf16* du16, const float* ds, const float* g, const float* u,
                       int64_t n) override {
    cuda::swiglu_backward(ctx_, dg, du, dg16, du16, ds, g, u, n);
  }
  void embedding_forward(float* out, const int32_t* host_ids, const float* table, int64_t N, int64_t C) override {
    cuda::embedding_forward(ctx_, out, ids_.upload(host_ids, size_t(N)), table, N, C);
  }
  void embedding_backward(float* dtable, const int32_t* host_ids, const float* dout, int64_t N, int64_t C) override {
    cuda::embedding_backward(ctx_, dtable, host_ids, dout, N, C);
  }
  LossSums lm_head_loss(const float* hidden, WeightRef weight, const int32_t* host_targets, int64_t N, int64_t C,
                        int64_t V, float z_coef, Precision p, const LmHeadGrads* grads) override {
    const int32_t* targets = targets_.upload(host_targets, size_t(N));
    return cuda::lm_head_loss(ctx_, hidden, weight, targets, N, C, V, z_coef, p, grads);
  }
  void cached_attention(float* out, const float* q, const float* k, const float* v, const float* k_cache,
                        const float* v_cache, const CachedAttentionShape& s) override {
    cuda::cached_attention(ctx_, out, q, k, v, k_cache, v_cache, s);
  }

  void adamw_step(float* params, const float* grads, float* m, float* v, size_t shard_begin,
                  const AdamWChunk* chunks, int64_t n_chunks, const AdamWScalars& s) override {
    cuda::adamw_step(ctx_, params, grads, m, v, shard_begin, chunks, n_chunks, s);
  }
  void adamw_step_host_moments(float* params, const float* grads, float* m, float* v, size_t shard_begin,
                               const AdamWChunk* chunks, std::span<const AdamWChunk> host_chunks,
                               const AdamWScalars& s) override {
    if (!host_moments_) host_moments_ = std::make_unique<cuda::HostMomentPipeline>(ctx_);
    host_moments_->step(params, grads, m, v, shard_begin, chunks, host_chunks, s);
  }
  std::vector<double> block_sums_of_squares(const float* x, size_t n) override {
    return cuda::block_sums_of_squares(ctx_, x, n);
  }
 private:
  // Best of five square GEMMs of 8192 (GPUs without a datasheet entry here), on varied values: tensor cores
  // run faster on zeros, which would overstate the peak.
  double measured_gemm_peak(Precision p) {
    const int64_t n = 8192;
    auto* a = static_cast<float*>(allocate(size_t(n * n) * sizeof(float)));
    std::vector<float> values(size_t(n * n));
    for (size_t i = 0; i < values.size(); i++) values[i] = float(int((i * 2654435761u >> 20) % 2001) - 1000) / 1000.0f;
    to_device(a, values.data(), values.size() * sizeof(float));
    auto* c = static_cast<float*>(allocate(size_t(n * n) * sizeof(float)));
    double best = 0.0;
    for (int i = 0; i < 6; i++) {
      const auto start = std::chrono::steady_clock::now();
      gemm(false, true, n, n, n, a, n, a, n, c, n, false, p, nullptr, nullptr);
      synchronize();
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (i > 0) best = std::max(best, 2.0 * double(n * n) * double(n) / s);  // the first call warms up
    }
    release(a);
    release(c);
    return best;
  }

  int gpu_;
  cuda::Context ctx_;
  cudaDeviceProp props_{};
  Staging<int32_t> ids_, targets_;
  std::unique_ptr<cuda::HostMomentPipeline> host_moments_;  // made by the first adamw_step_host_moments
};

}  // namespace

// Behind its profiler, which times the calls when asked (kernels/cuda/profiling_backend.h).
std::unique_ptr<Backend> make_cuda_backend(int gpu) {
  return std::make_unique<cuda::ProfilingBackend>(std::make_unique<CudaBackend>(gpu));
}

}  // namespace replica
