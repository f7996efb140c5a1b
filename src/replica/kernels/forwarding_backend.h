// A Backend that hands every call to an inner Backend: the base of decorators that change what happens around
// the calls and nothing else (the emulated device of the tests opens its memory for each call, the CUDA
// profiler times each), so a decorator overrides only what it changes and a new kernel is forwarded here once.
#pragma once
#include <fmt/core.h>

#include <concepts>
#include <string>
#include <vector>

#include "replica/kernels/backend.h"

namespace replica {

class ForwardingBackend : public Backend {
 public:
  explicit ForwardingBackend(Backend& inner) : inner_(inner) {}

  Device device() const override { return inner_.device(); }
  std::string describe() const override { return inner_.describe(); }
  bool host_memory() const override { return inner_.host_memory(); }

  // Memory management and queries are forwarded bare; copies and kernels run between enter() and leave().
  void* allocate(size_t bytes) override { return inner_.allocate(bytes); }
  void release(void* p) override { inner_.release(p); }
  void* allocate_host(size_t bytes) override { return inner_.allocate_host(bytes); }
  void release_host(void* p) override { inner_.release_host(p); }
  void to_device(void* dst, const void* host, size_t bytes) override {
    Call call(*this, "to_device");
    inner_.to_device(dst, host, bytes);
  }
  void to_host(void* host, const void* src, size_t bytes) override {
    Call call(*this, "to_host");
    inner_.to_host(host, src, bytes);
  }
  void copy(float* dst, const float* src, size_t n) override {
    Call call(*this, "copy", 8.0 * double(n));
    inner_.copy(dst, src, n);
  }
  void copy_rows(float* dst, size_t dst_stride, const float* src, size_t src_stride, size_t width,
                 size_t rows) override {
    Call call(*this, "copy_rows", 8.0 * double(width * rows));
    inner_.copy_rows(dst, dst_stride, src, src_stride, width, rows);
  }
  void zero(float* x, size_t n) override {
    Call call(*this, "zero", 4.0 * double(n));
    inner_.zero(x, n);
  }
  void synchronize() override { inner_.synchronize(); }
  void* native_stream() override { return inner_.native_stream(); }
  double peak_flops(Precision precision) override { return inner_.peak_flops(precision); }
  double device_memory_used() override { return inner_.device_memory_used(); }

  void add(float* out, const float* a, const float* b, int64_t n) override {
    Call call(*this, "add", 12.0 * double(n));
    inner_.add(out, a, b, n);
  }
  void scale(float* x, size_t n, float s) override {
    Call call(*this, "scale", 8.0 * double(n));
    inner_.scale(x, n, s);
  }
  void convert_to_bf16(const float* src, bf16* dst, size_t n) override {
    Call call(*this, "convert_to_bf16", 6.0 * double(n));
    inner_.convert_to_bf16(src, dst, n);
  }

  void gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, const float* B,
            int64_t ldb, float* C, int64_t ldc, bool acc, Precision p, const bf16* B16, const bf16* A16) override {
    Call call(*this, [&] { return fmt::format("gemm {}×{}×{} {}{}{}", M, N, K, ta ? 'T' : 'N', tb ? 'T' : 'N',
                                              acc ? " +=" : ""); });
    inner_.gemm(ta, tb, M, N, K, A, lda, B, ldb, C, ldc, acc, p, B16, A16);
  }
  void quantize_float8(uint8_t* codes, float* inverse_scale, WeightRef x, size_t n, Float8Format f,
                       bool power_of_two) override {
    Call call(*this, "quantize_float8");
    inner_.quantize_float8(codes, inverse_scale, x, n, f, power_of_two);
  }
  void gemm_float8(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const Float8Matrix& A, int64_t lda,
                   const Float8Matrix& B, int64_t ldb, float* C, int64_t ldc, bool acc, bool fast) override {
    Call call(*this, [&] { return fmt::format("gemm_float8 {}×{}×{} {}{}{}", M, N, K, ta ? 'T' : 'N',
                                              tb ? 'T' : 'N', acc ? " +=" : ""); });
    inner_.gemm_float8(ta, tb, M, N, K, A, lda, B, ldb, C, ldc, acc, fast);
  }
  void rmsnorm_forward(float* y, float* rstd, const float* x, const float* w, int64_t rows, int64_t C,
                       float eps) override {
    Call call(*this, [&] { return fmt::format("rmsnorm_forward C={}", C); }, 8.0 * double(rows * C));
    inner_.rmsnorm_forward(y, rstd, x, w, rows, C, eps);
  }
  void rmsnorm_backward(float* dx, bf16* dx16, float* dw, const float* dy, const float* x, const float* w,
                        const float* rstd, int64_t rows, int64_t C, bool acc) override {
    Call call(*this, [&] { return fmt::format("rmsnorm_backward C={}{}", C, dx16 ? " (dx16)" : ""); },
              double(rows * C) * (12.0 + (acc ? 4 : 0) + (dx16 ? 2 : 0)));
    inner_.rmsnorm_backward(dx, dx16, dw, dy, x, w, rstd, rows, C, acc);
  }
  void rmsnorm_add_forward(float* out, bf16* out16, float* rstd, const float* residual, const float* x, const float* w,
                           int64_t rows, int64_t C, float eps) override {
    Call call(*this, [&] { return fmt::format("rmsnorm_add_forward C={}{}", C, out16 ? " (out16)" : ""); },
              double(rows * C) * (out16 ? 14.0 : 12.0));
    inner_.rmsnorm_add_forward(out, out16, rstd, residual, x, w, rows, C, eps);
  }
  void rmsnorm_rope_forward(float* y, bf16* y16, float* rstd, const float* x, const float* w, const float* cos,
                            const float* sin, int64_t B, int64_t T, int64_t heads, int64_t D, float eps) override {
    Call call(*this, [&] { return fmt::format("rmsnorm_rope_forward C={}{}", heads * D, y16 ? " (y16)" : ""); },
              (y16 ? 10.0 : 8.0) * double(B * T * heads * D));
    inner_.rmsnorm_rope_forward(y, y16, rstd, x, w, cos, sin, B, T, heads, D, eps);
  }
  void rope_forward(float* x, const float* cos, const float* sin, int64_t B, int64_t T, int64_t heads,
                    int64_t D) override {
    Call call(*this, "rope_forward", 8.0 * double(B * T * heads * D));
    inner_.rope_forward(x, cos, sin, B, T, heads, D);
  }
  void rope_backward(float* dx, const float* cos, const float* sin, int64_t B, int64_t T, int64_t heads,
                     int64_t D) override {
    Call call(*this, "rope_backward", 8.0 * double(B * T * heads * D));
    inner_.rope_backward(dx, cos, sin, B, T, heads, D);
  }
  AttentionKernel resolve_attention(AttentionKernel wanted) const override { return inner_.resolve_attention(wanted); }
  void attention_forward(float* out, float* lse, WeightRef q, WeightRef k, WeightRef v, const AttentionShape& s,
                         const DocumentOffsets& docs, Precision p, AttentionKernel kernel) override {
    Call call(*this, [&] { return fmt::format("attention_forward W={}", s.window); });
    inner_.attention_forward(out, lse, q, k, v, s, docs, p, kernel);
  }
  void attention_backward(float* dq, float* dk, float* dv, const float* dout, const float* out, const float* lse,
                          WeightRef q, WeightRef k, WeightRef v, const AttentionShape& s, const DocumentOffsets& docs,
                          Precision p, AttentionKernel kernel) override {
    Call call(*this, [&] { return fmt::format("attention_backward W={}", s.window); });
    inner_.attention_backward(dq, dk, dv, dout, out, lse, q, k, v, s, docs, p, kernel);
  }
  void swiglu_forward(float* s, bf16* s16, const float* g, const float* u, int64_t n) override {
    Call call(*this, "swiglu_forward", double(n) * (s16 ? 14.0 : 12.0));
    inner_.swiglu_forward(s, s16, g, u, n);
  }
  void swiglu_backward(float* dg, float* du, bf16* dg16, bf16* du16, const float* ds, const float* g, const float* u,
                       int64_t n) override {
    Call call(*this, "swiglu_backward", double(n) * (20.0 + (dg16 ? 2 : 0) + (du16 ? 2 : 0)));
    inner_.swiglu_backward(dg, du, dg16, du16, ds, g, u, n);
  }
  void embedding_forward(float* out, const int32_t* host_ids, const float* table, int64_t N, int64_t C) override {
    Call call(*this, "embedding_forward");
    inner_.embedding_forward(out, host_ids, table, N, C);
  }
  void embedding_backward(float* dtable, const int32_t* host_ids, const float* dout, int64_t N, int64_t C) override {
    Call call(*this, "embedding_backward");
    inner_.embedding_backward(dtable, host_ids, dout, N, C);
  }
  LossSums lm_head_loss(const float* hidden, WeightRef weight, const int32_t* host_targets, int64_t N, int64_t C,
                        int64_t V, float z_coef, Precision p, const LmHeadGrads* grads) override {
    Call call(*this, grads ? "lm_head_loss (with gradients)" : "lm_head_loss");
    return inner_.lm_head_loss(hidden, weight, host_targets, N, C, V, z_coef, p, grads);
  }
  void cached_attention(float* out, const float* q, const float* k, const float* v, const float* k_cache,
                        const float* v_cache, const CachedAttentionShape& s) override {
    Call call(*this, [&] { return fmt::format("cached_attention n={} W={}", s.n, s.window); });
    inner_.cached_attention(out, q, k, v, k_cache, v_cache, s);
  }

  void adamw_step(float* params, const float* grads, float* exp_avg, float* exp_avg_sq, size_t shard_begin,
                  const AdamWChunk* chunks, int64_t n_chunks, const AdamWScalars& s) override {
    Call call(*this, "adamw_step");
    inner_.adamw_step(params, grads, exp_avg, exp_avg_sq, shard_begin, chunks, n_chunks, s);
  }
  void adamw_step_host_moments(float* params, const float* grads, float* host_exp_avg, float* host_exp_avg_sq,
                               size_t shard_begin, const AdamWChunk* chunks, std::span<const AdamWChunk> host_chunks,
                               const AdamWScalars& s) override {
    Call call(*this, "adamw_step_host_moments");
    inner_.adamw_step_host_moments(params, grads, host_exp_avg, host_exp_avg_sq, shard_begin, chunks, host_chunks, s);
  }
  std::vector<double> block_sums_of_squares(const float* x, size_t n) override {
    Call call(*this, "block_sums_of_squares");
    return inner_.block_sums_of_squares(x, n);
  }

  bool profile(bool on) override { return inner_.profile(on); }
  std::vector<OpTime> take_profile() override { return inner_.take_profile(); }

 protected:
  // A forwarded call's name, with the shape that tells its instances apart ("gemm 8192×4096×4096 NT"): a
  // string, or a function that formats it, run only by a decorator that asks (the profiler). Valid during enter().
  class CallName {
   public:
    std::string str() const { return fixed_ ? std::string(fixed_) : format_(formatter_); }
    double bytes() const { return bytes_; }  // OpTime::bytes of this call

   private:
    friend class ForwardingBackend;
    CallName(const char* fixed, double bytes) : fixed_(fixed), bytes_(bytes) {}
    template <typename Format>
    CallName(const Format& format, double bytes)
        : formatter_(&format), format_([](const void* f) { return (*static_cast<const Format*>(f))(); }),
          bytes_(bytes) {}
    const char* fixed_ = nullptr;
    const void* formatter_ = nullptr;
    std::string (*format_)(const void*) = nullptr;
    double bytes_ = 0;
  };
  // What a decorator does around each forwarded copy and kernel call (leave() also when the call throws).
  virtual void enter(const CallName&) {}
  virtual void leave() {}

 private:
  class Call {
   public:
    Call(ForwardingBackend& backend, const char* name, double bytes = 0) : backend_(backend) {
      backend_.enter(CallName(name, bytes));
    }
    template <std::invocable Format>
    Call(ForwardingBackend& backend, const Format& format, double bytes = 0) : backend_(backend) {
      backend_.enter(CallName(format, bytes));
    }
    ~Call() { backend_.leave(); }
    Call(const Call&) = delete;
    Call& operator=(const Call&) = delete;

   private:
    ForwardingBackend& backend_;
  };

  Backend& inner_;
};

}  // namespace replica
