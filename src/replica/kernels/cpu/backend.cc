// CpuBackend: the Backend interface over kernels/cpu. Backend memory is host memory.
#include "replica/kernels/backend.h"

#include <fmt/core.h>

#include <algorithm>
#include <cstring>
#include <new>

#include "replica/core/error.h"
#include "replica/core/huge_pages.h"
#include "replica/core/threads.h"
#include "replica/kernels/cpu/adamw.h"
#include "replica/kernels/cpu/attention.h"
#include "replica/kernels/cpu/cached_attention.h"
#include "replica/kernels/cpu/embedding.h"
#include "replica/kernels/cpu/float8.h"
#include "replica/kernels/cpu/gemm.h"
#include "replica/kernels/cpu/lm_head_loss.h"
#include "replica/kernels/cpu/rmsnorm.h"
#include "replica/kernels/cpu/rope.h"
#include "replica/kernels/cpu/sum_of_squares.h"
#include "replica/kernels/cpu/swiglu.h"

namespace replica {

namespace {

constexpr std::align_val_t kAlignment{64};  // a cache line: what oneDNN and the SIMD loops like

class CpuBackend final : public Backend {
 public:
  Device device() const override { return Device::cpu; }
  std::string describe() const override { return fmt::format("cpu ({} threads)", num_threads()); }
  bool host_memory() const override { return true; }

  void* allocate(size_t bytes) override {
    void* p = ::operator new(bytes, kAlignment);
    advise_huge_pages(p, bytes);  // before zeroing, which touches the pages first
    zero_bytes(p, bytes);
    return p;
  }
  void release(void* p) override { ::operator delete(p, kAlignment); }
  void* allocate_host(size_t bytes) override { return allocate(bytes); }
  void release_host(void* p) override { release(p); }
  void to_device(void* dst, const void* host, size_t bytes) override { copy_bytes(dst, host, bytes); }
  void to_host(void* host, const void* src, size_t bytes) override { copy_bytes(host, src, bytes); }
  void copy(float* dst, const float* src, size_t n) override { copy_bytes(dst, src, n * sizeof(float)); }
  void copy_rows(float* dst, size_t dst_stride, const float* src, size_t src_stride, size_t width,
                 size_t rows) override {
    for (size_t r = 0; r < rows; r++) std::memcpy(dst + r * dst_stride, src + r * src_stride, width * sizeof(float));
  }
  void zero(float* x, size_t n) override { zero_bytes(x, n * sizeof(float)); }
  void synchronize() override {}
  void* native_stream() override { return nullptr; }
  double peak_flops(Precision p) override { return cpu::measure_gemm_peak(p); }
  double device_memory_used() override { return 0.0; }

  void add(float* out, const float* a, const float* b, int64_t n) override {
#pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < n; i++) out[i] = a[i] + b[i];
  }
  void scale(float* x, size_t n, float s) override {
#pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < int64_t(n); i++) x[i] *= s;
  }
  void convert_to_bf16(const float* src, bf16* dst, size_t n) override { replica::convert_to_bf16(src, dst, n); }

  void gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, const float* B,
            int64_t ldb, float* C, int64_t ldc, bool acc, Precision p, const bf16* B16, const bf16* A16) override {
    cpu::gemm(ta, tb, M, N, K, A, lda, B, ldb, C, ldc, acc, p, B16, A16);
  }
  void quantize_float8(uint8_t* codes, float* inverse_scale, WeightRef x, size_t n, Float8Format f,
                       bool power_of_two) override {
    cpu::quantize_float8(codes, inverse_scale, x.f32, x.b16, n, f, power_of_two);
  }
  void gemm_float8(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const Float8Matrix& A, int64_t lda,
                   const Float8Matrix& B, int64_t ldb, float* C, int64_t ldc, bool acc, bool) override {
    cpu::gemm_float8(ta, tb, M, N, K, A, lda, B, ldb, C, ldc, acc);  // fp32 accumulation always
  }
  void rmsnorm_forward(float* y, float* rstd, const float* x, const float* w, int64_t rows, int64_t C,
                       float eps) override {
    cpu::rmsnorm_forward(y, rstd, x, w, rows, C, eps);
  }
  void rmsnorm_backward(float* dx, bf16* dx16, float* dw, const float* dy, const float* x, const float* w,
                        const float* rstd, int64_t rows, int64_t C, bool acc) override {
    cpu::rmsnorm_backward(dx, dw, dy, x, w, rstd, rows, C, acc);
    if (dx16) replica::convert_to_bf16(dx, dx16, size_t(rows * C));
  }
  void rmsnorm_add_forward(float* out, bf16* out16, float* rstd, const float* residual, const float* x, const float* w,
                           int64_t rows, int64_t C, float eps) override {
    cpu::rmsnorm_add_forward(out, rstd, residual, x, w, rows, C, eps);
    if (out16) replica::convert_to_bf16(out, out16, size_t(rows * C));
  }
  void rmsnorm_rope_forward(float* y, bf16* y16, float* rstd, const float* x, const float* w, const float* cos,
                            const float* sin, int64_t B, int64_t T, int64_t heads, int64_t D, float eps) override {
    cpu::rmsnorm_forward(y, rstd, x, w, B * T, heads * D, eps);
    cpu::rope_forward(y, cos, sin, B, T, heads, D);
    if (y16) replica::convert_to_bf16(y, y16, size_t(B * T * heads * D));
  }
  void rope_forward(float* x, const float* cos, const float* sin, int64_t B, int64_t T, int64_t heads,
                    int64_t D) override {
    cpu::rope_forward(x, cos, sin, B, T, heads, D);
  }
  void rope_backward(float* dx, const float* cos, const float* sin, int64_t B, int64_t T, int64_t heads,
                     int64_t D) override {
    cpu::rope_backward(dx, cos, sin, B, T, heads, D);
  }
  AttentionKernel resolve_attention(AttentionKernel wanted) const override {
    check(wanted != AttentionKernel::mma && wanted != AttentionKernel::wgmma,
          "attention kernel {} needs train.device=cuda (the CPU's kernels are cpu_bf16 and fp32)",
          attention_kernel_name(wanted));
    return wanted == AttentionKernel::automatic ? AttentionKernel::cpu_bf16 : wanted;
  }
  // bf16 precision runs attention's products as bf16 dot products (attention_bf16.cc) for the head sizes that kernel
  // has; the fp32 kernel runs everything else, and everything when chosen. Both round from the fp32 values (the bf16
  // copies are not read).
  static bool bf16_attention(const AttentionShape& s, Precision p, AttentionKernel kernel) {
    return p == Precision::bf16 && kernel == AttentionKernel::cpu_bf16 && s.D % 16 == 0 && s.D <= 256;
  }
  void attention_forward(float* out, float* lse, WeightRef q, WeightRef k, WeightRef v, const AttentionShape& s,
                         const DocumentOffsets& docs, Precision p, AttentionKernel kernel) override {
    if (bf16_attention(s, p, resolve_attention(kernel)))
      cpu::attention_forward_bf16(out, lse, q.f32, k.f32, v.f32, s, docs);
    else cpu::attention_forward(out, lse, q.f32, k.f32, v.f32, s, docs);
  }
  void attention_backward(float* dq, float* dk, float* dv, const float* dout, const float* out, const float* lse,
                          WeightRef q, WeightRef k, WeightRef v, const AttentionShape& s, const DocumentOffsets& docs,
                          Precision p, AttentionKernel kernel) override {
    if (bf16_attention(s, p, resolve_attention(kernel)))
      cpu::attention_backward_bf16(dq, dk, dv, dout, out, lse, q.f32, k.f32, v.f32, s, docs);
    else cpu::attention_backward(dq, dk, dv, dout, out, lse, q.f32, k.f32, v.f32, s, docs);
  }
  void swiglu_forward(float* s, bf16* s16, const float* g, const float* u, int64_t n) override {
    cpu::swiglu_forward(s, g, u, n);
    if (s16) replica::convert_to_bf16(s, s16, size_t(n));
  }
  void swiglu_backward(float* dg, float* du, bf16* dg16, bf16* du16, const float* ds, const float* g, const float* u,
                       int64_t n) override {
    cpu::swiglu_backward(dg, du, ds, g, u, n);
    if (dg16) replica::convert_to_bf16(dg, dg16, size_t(n));
    if (du16) replica::convert_to_bf16(du, du16, size_t(n));
  }
  void embedding_forward(float* out, const int32_t* ids, const float* table, int64_t N, int64_t C) override {
    cpu::embedding_forward(out, ids, table, N, C);
  }
  void embedding_backward(float* dtable, const int32_t* ids, const float* dout, int64_t N, int64_t C) override {
    cpu::embedding_backward(dtable, ids, dout, N, C);
  }
  LossSums lm_head_loss(const float* hidden, WeightRef weight, const int32_t* targets, int64_t N, int64_t C,
                        int64_t V, float z_coef, Precision p, const LmHeadGrads* grads) override {
    return cpu::lm_head_loss(hidden, weight, targets, N, C, V, z_coef, p, grads);
  }
  void cached_attention(float* out, const float* q, const float* k, const float* v, const float* k_cache,
                        const float* v_cache, const CachedAttentionShape& s) override {
    cpu::cached_attention(out, q, k, v, k_cache, v_cache, s);
  }

  void adamw_step(float* params, const float* grads, float* m, float* v, size_t shard_begin,
                  const AdamWChunk* chunks, int64_t n_chunks, const AdamWScalars& s) override {
    cpu::adamw_step(params, grads, m, v, shard_begin, chunks, n_chunks, s);
  }
  void adamw_step_host_moments(float* params, const float* grads, float* m, float* v, size_t shard_begin,
                               const AdamWChunk* chunks, std::span<const AdamWChunk> host_chunks,
                               const AdamWScalars& s) override {
    cpu::adamw_step(params, grads, m, v, shard_begin, chunks, int64_t(host_chunks.size()), s);
  }
  std::vector<double> block_sums_of_squares(const float* x, size_t n) override {
    return cpu::block_sums_of_squares(x, n);
  }

 private:
  // Large copies and fills split across the threads (one thread cannot saturate memory bandwidth).
  static constexpr size_t kPiece = size_t(1) << 22;
  static void copy_bytes(void* dst, const void* src, size_t bytes) {
    if (bytes == 0 || dst == src) return;
    const int64_t pieces = int64_t((bytes + kPiece - 1) / kPiece);
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < pieces; i++) {
      const size_t begin = size_t(i) * kPiece;
      std::memcpy(static_cast<char*>(dst) + begin, static_cast<const char*>(src) + begin,
                  std::min(kPiece, bytes - begin));
    }
  }
  static void zero_bytes(void* dst, size_t bytes) {
    const int64_t pieces = int64_t((bytes + kPiece - 1) / kPiece);
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < pieces; i++) {
      const size_t begin = size_t(i) * kPiece;
      std::memset(static_cast<char*>(dst) + begin, 0, std::min(kPiece, bytes - begin));
    }
  }
};

}  // namespace

Backend& cpu_backend() {
  static CpuBackend backend;
  return backend;
}

}  // namespace replica
