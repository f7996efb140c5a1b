// The seam between the model, optimizer and trainer and the kernels: one interface, implemented by the CPU
// kernels (kernels/cpu/backend.cc) and the CUDA kernels (kernels/cuda/backend.cc), chosen at run time by
// `train.device`. Everything above this file is one code path for both devices.
//
// Memory: buffers the kernels read or write (weights, gradients, moments, activations) live in the
// backend's memory, allocated through it (DeviceArray). Pointers passed to the kernel calls below are
// backend pointers; token ids and targets are host pointers (the CPU checks them and the embedding
// backward plans its order from them on the host). On the CPU, backend memory is host memory.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "replica/core/bf16.h"
#include "replica/kernels/adamw.h"
#include "replica/kernels/attention.h"
#include "replica/kernels/float8.h"
#include "replica/kernels/lm_head_loss.h"
#include "replica/kernels/precision.h"

namespace replica {

enum class Device { cpu, cuda };
const char* device_name(Device d);
Device parse_device(const std::string& text);  // "cpu" | "cuda", else replica::Error

// One operation's device time in a profile (Backend::take_profile): all calls of `op` since the last take.
struct OpTime {
  std::string op;  // the call, with the shape that tells its instances apart ("gemm 8192×4096×4096 NT")
  int64_t calls = 0;
  double ms = 0;
  // Bytes the calls move by their contract, each input read and each output written once (0 where not counted: the
  // products, attention, the optimizer): over ms, the bandwidth a memory-bound kernel reached.
  double bytes = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual Device device() const = 0;
  virtual std::string describe() const = 0;  // "cpu (16 threads)" or "cuda:0 (NVIDIA H200, ...)"
  // True when backend memory is ordinary host memory (the CPU): host code may then use buffers directly.
  virtual bool host_memory() const = 0;

  // ---- memory -------------------------------------------------------------------------------------------
  virtual void* allocate(size_t bytes) = 0;  // zero-filled
  virtual void release(void* p) = 0;
  // Host memory the device's copies can overlap kernels from (page-locked on a GPU), zero-filled; allocate() on the
  // CPU. For state kept off the device (optim.host_moments).
  virtual void* allocate_host(size_t bytes) = 0;
  virtual void release_host(void* p) = 0;
  virtual void to_device(void* dst, const void* host, size_t bytes) = 0;
  virtual void to_host(void* host, const void* src, size_t bytes) = 0;  // returns when the copy is done
  virtual void copy(float* dst, const float* src, size_t n) = 0;
  // `rows` runs of `width` floats, src_stride floats apart in src and dst_stride apart in dst: one call (a 2-D copy
  // on a GPU) for what would otherwise be a copy per row (a head range of [T, heads, D]).
  virtual void copy_rows(float* dst, size_t dst_stride, const float* src, size_t src_stride, size_t width,
                         size_t rows) = 0;
  virtual void zero(float* x, size_t n) = 0;
  virtual void synchronize() = 0;  // waits for every queued kernel (timing)
  // The native queue the backend's work runs on (a cudaStream_t on CUDA, null on the CPU), for libraries
  // that must queue on it too (NCCL).
  virtual void* native_stream() = 0;
  // The MFU denominator in FLOP/s for `precision`: the measured GEMM peak on the CPU (no datasheet number
  // fits every machine), the datasheet's dense peak on known GPUs (as MaxText and OLMo-core report MFU).
  virtual double peak_flops(Precision precision) = 0;
  // Bytes of device memory taken on a GPU (what the memory plan predicts, plus the allocator's reserve); 0
  // on the CPU.
  virtual double device_memory_used() = 0;

  // ---- elementwise --------------------------------------------------------------------------------------
  virtual void add(float* out, const float* a, const float* b, int64_t n) = 0;  // out may alias a or b
  virtual void scale(float* x, size_t n, float s) = 0;
  virtual void convert_to_bf16(const float* src, bf16* dst, size_t n) = 0;  // round to nearest even

  // ---- the layers: kernels/cpu/*.h documents each contract ----------------------------------------------
  // In bf16, B16 and A16 (optional) are B and A already rounded, same layout (kernels/cpu/gemm.h).
  virtual void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const float* A, int64_t lda,
                    const float* B, int64_t ldb, float* C, int64_t ldc, bool accumulate, Precision precision,
                    const bf16* B16, const bf16* A16) = 0;
  virtual void rmsnorm_forward(float* y, float* rstd, const float* x, const float* w, int64_t rows, int64_t C,
                               float eps) = 0;
  // dx16 (when given): dx as written, rounded to bf16, for the products that take it next.
  virtual void rmsnorm_backward(float* dx, bf16* dx16, float* dw, const float* dy, const float* x, const float* w,
                                const float* rstd, int64_t rows, int64_t C, bool accumulate) = 0;
  // out = residual + rmsnorm_forward(x)'s y, and out16 (when given) = out rounded to bf16: bit for bit rmsnorm_forward,
  // add and convert_to_bf16, which a GPU runs as one pass that never writes y (the reordered block's h = x + norm(f(x))).
  // out may alias residual.
  virtual void rmsnorm_add_forward(float* out, bf16* out16, float* rstd, const float* residual, const float* x,
                                   const float* w, int64_t rows, int64_t C, float eps) = 0;
  // y = rope_forward(rmsnorm_forward(x)) over rows of heads·D (QK-norm, which spans every head, then RoPE), bit for bit
  // the two calls, and y16 (when given) = y rounded to bf16 (the attention's operands); a GPU runs it as one pass.
  // rstd: [B·T].
  virtual void rmsnorm_rope_forward(float* y, bf16* y16, float* rstd, const float* x, const float* w, const float* cos,
                                    const float* sin, int64_t B, int64_t T, int64_t heads, int64_t D, float eps) = 0;
  // cos, sin [T, D/2]: a RopeTable (kernels/rope_table.h) uploaded into backend memory.
  virtual void rope_forward(float* x, const float* cos, const float* sin, int64_t B, int64_t T, int64_t heads,
                            int64_t D) = 0;
  virtual void rope_backward(float* dx, const float* cos, const float* sin, int64_t B, int64_t T, int64_t heads,
                             int64_t D) = 0;
  // The attention kernel this backend runs for `wanted` (never automatic): the CPU has fp32 only (mma and wgmma
  // are a replica::Error); CUDA runs mma, wgmma or fp32, automatic = mma. The model holds the result as its option
  // (Transformer::use_attention) and passes it to every attention call: the backend keeps no mode.
  virtual AttentionKernel resolve_attention(AttentionKernel wanted) const = 0;
  // `precision` and `kernel` (automatic: the backend's default) let a backend run the attention products in bf16 on
  // tensor cores (mma or wgmma, for the head sizes they take; fp32 otherwise); the CPU is always fp32. `docs`: the
  // packed rows' documents (backend memory), or none. q, k, v: fp32 and, where the caller has them, their bf16
  // copies, which the tensor-core kernels then read instead of rounding their own.
  virtual void attention_forward(float* out, float* lse, WeightRef q, WeightRef k, WeightRef v,
                                 const AttentionShape& s, const DocumentOffsets& docs, Precision precision,
                                 AttentionKernel kernel) = 0;
  virtual void attention_backward(float* dq, float* dk, float* dv, const float* dout, const float* out,
                                  const float* lse, WeightRef q, WeightRef k, WeightRef v, const AttentionShape& s,
                                  const DocumentOffsets& docs, Precision precision, AttentionKernel kernel) = 0;
  // s16, dg16, du16 (when given): the outputs rounded to bf16, for the products that take them next.
  virtual void swiglu_forward(float* s, bf16* s16, const float* g, const float* u, int64_t n) = 0;
  virtual void swiglu_backward(float* dg, float* du, bf16* dg16, bf16* du16, const float* ds, const float* g,
                               const float* u, int64_t n) = 0;
  virtual void embedding_forward(float* out, const int32_t* host_ids, const float* table, int64_t N,
                                 int64_t C) = 0;
  virtual void embedding_backward(float* dtable, const int32_t* host_ids, const float* dout, int64_t N,
                                  int64_t C) = 0;
  virtual LossSums lm_head_loss(const float* hidden, WeightRef weight, const int32_t* host_targets, int64_t N,
                                int64_t C, int64_t V, float z_coef, Precision precision,
                                const LmHeadGrads* grads) = 0;

  // ---- float8 linears (train.float8; kernels/cpu/float8.h documents the contracts) ------------------------------
  // torchao's dynamic tensorwise cast of n values: x's amax to the scale (float8_scale), codes = to_float8(x · scale)
  // and *inverse_scale = 1 / scale (both backend memory). In bf16 precision x.b16 (when given) holds the values cast.
  virtual void quantize_float8(uint8_t* codes, float* inverse_scale, WeightRef x, size_t n, Float8Format format,
                               bool power_of_two_scale) = 0;
  // gemm's product over float8 operands: C = (A's inverse scale · B's) · op(A)·op(B) (+ C), fp32 accumulation;
  // fast_accumulation lets a GPU use its faster, less exact accumulation (torchao: the forward product only).
  virtual void gemm_float8(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const Float8Matrix& A,
                           int64_t lda, const Float8Matrix& B, int64_t ldb, float* C, int64_t ldc, bool accumulate,
                           bool fast_accumulation) = 0;

  // ---- decoding (generation): forward only, fp32 -------------------------------------------------------
  // (RoPE at positions p … p + T − 1 is rope_forward with B = 1 on the tables' rows from p on.)
  // New queries over the new keys and a key/value cache (kernels/cpu/cached_attention.h).
  virtual void cached_attention(float* out, const float* q, const float* k, const float* v, const float* k_cache,
                                const float* v_cache, const CachedAttentionShape& s) = 0;

  // ---- optimizer ----------------------------------------------------------------------------------------
  // One AdamW update of every element of `chunks` (backend memory, n_chunks entries); the weights, the gradient and
  // the moments cover a shard of the flat buffer that starts at shard_begin.
  virtual void adamw_step(float* params, const float* grads, float* exp_avg, float* exp_avg_sq,
                          size_t shard_begin, const AdamWChunk* chunks, int64_t n_chunks,
                          const AdamWScalars& s) = 0;
  // The same update with the moments in host memory from allocate_host (optim.host_moments), `host_chunks` the
  // chunks' host copy. A GPU streams the moments through its memory in slabs, each slab's copies in and out
  // overlapping the updates of its neighbours (kernels/cuda/adamw.h), and returns with the moments written back as
  // far as later work on the backend is concerned (synchronize() before the host reads them). Same bits as
  // adamw_step. On the CPU, where backend memory is host memory, it is adamw_step.
  virtual void adamw_step_host_moments(float* params, const float* grads, float* host_exp_avg, float* host_exp_avg_sq,
                                       size_t shard_begin, const AdamWChunk* chunks,
                                       std::span<const AdamWChunk> host_chunks, const AdamWScalars& s) = 0;
  // Σ x² in double per kSquareSumBlock block, in block order, on the host (the gradient norm's partial sums).
  virtual std::vector<double> block_sums_of_squares(const float* x, size_t n) = 0;

  // ---- profile ------------------------------------------------------------------------------------------
  // Starts timing every call on the device, or stops and drops what was not taken; false when the backend
  // cannot (the CPU: its calls are synchronous, so wall-clock timers around them say the same). The CUDA
  // backend records events around each call (kernels/cuda/profiler.h), so the work runs as it does unprofiled.
  virtual bool profile(bool on) { return !on; }
  // Device time per operation recorded since the last take (kernels/profile.h sums and tabulates it).
  virtual std::vector<OpTime> take_profile() { return {}; }

  // The three products of a Linear layer y = x · Wᵀ with x [M, K], W [N, K] (kernels/cpu/gemm.h). Activations
  // are WeightRefs too: fp32 values and, in bf16, optionally their rounded copy (rounded once, used twice).
  void linear_forward(float* y, WeightRef x, WeightRef w, int64_t M, int64_t N, int64_t K, Precision p) {
    gemm(false, true, M, N, K, x.f32, K, w.f32, K, y, N, false, p, w.b16, x.b16);
  }
  void linear_backward_input(float* dx, WeightRef dy, WeightRef w, int64_t M, int64_t N, int64_t K,
                             bool accumulate, Precision p) {
    gemm(false, false, M, K, N, dy.f32, N, w.f32, K, dx, K, accumulate, p, w.b16, dy.b16);
  }
  void linear_backward_weight(float* dw, WeightRef dy, WeightRef x, int64_t M, int64_t N, int64_t K, Precision p) {
    gemm(true, false, N, K, M, dy.f32, N, x.f32, K, dw, K, true, p, x.b16, dy.b16);
  }
};

// The process's backend for `device`, made on first use and kept until exit (it owns the GPU's stream,
// handles and memory pool, so there is one per process; `gpu` counts only on the first cuda call). cuda
// raises replica::Error naming why it is unavailable (not built with CUDA, no GPU visible).
Backend& backend_for(Device device, int gpu = 0);
Backend& cpu_backend();  // backend_for(Device::cpu)
// A CUDA backend of its own on GPU `gpu` (its own stream, handles and scratch), for tests that run the ranks of a
// job as threads of one process; the same errors as backend_for(Device::cuda).
std::unique_ptr<Backend> new_cuda_backend(int gpu = 0);
bool cuda_available();

// An array of T that a backend allocated, zero-filled, freed with its owner: in the backend's memory, or with
// Memory::host in its host memory (Backend::allocate_host: page-locked on a GPU).
enum class Memory { device, host };
template <typename T>
class BackendArray {
 public:
  BackendArray() = default;
  BackendArray(Backend& backend, size_t n, Memory memory = Memory::device)
      : backend_(&backend), memory_(memory), size_(n) {
    if (n == 0) return;
    const size_t bytes = n * sizeof(T);
    data_ = static_cast<T*>(memory == Memory::host ? backend.allocate_host(bytes) : backend.allocate(bytes));
  }
  ~BackendArray() {
    if (!data_) return;
    if (memory_ == Memory::host)
      backend_->release_host(data_);
    else
      backend_->release(data_);
  }
  BackendArray(BackendArray&& o) noexcept { *this = std::move(o); }
  BackendArray& operator=(BackendArray&& o) noexcept {
    std::swap(backend_, o.backend_);
    std::swap(memory_, o.memory_);
    std::swap(data_, o.data_);
    std::swap(size_, o.size_);
    return *this;
  }
  T* data() const { return data_; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

 private:
  Backend* backend_ = nullptr;
  Memory memory_ = Memory::device;
  T* data_ = nullptr;
  size_t size_ = 0;
};
// The usual case: the backend's memory.
template <typename T>
using DeviceArray = BackendArray<T>;

// Host floats to be written into backend memory: the memory itself where it is host memory (no copy), else a
// zeroed host buffer that upload() writes there.
class HostMirror {
 public:
  HostMirror(Backend& backend, float* data, size_t n);
  float* data() { return host_ ? host_ : staged_.data(); }
  void upload();

 private:
  Backend& backend_;
  float* device_;
  float* host_;  // the buffer itself when the backend's memory is host memory, else null
  std::vector<float> staged_;
};

// Read-only host floats given to a backend: the host memory itself where that is backend memory (no copy),
// else a copy uploaded once (weights of a model loaded from disk for evaluation).
class OnBackend {
 public:
  OnBackend(Backend& backend, const std::vector<float>& host);
  const float* data() const { return copy_.empty() ? host_ : copy_.data(); }

 private:
  const float* host_;
  DeviceArray<float> copy_;
};

}  // namespace replica
