// An emulated device for tests of everything above the kernel layer: a Backend whose memory the host cannot
// touch. Each allocation is its own mapping, kept PROT_NONE except while a backend call runs (the CPU kernels
// do the work), so host code that reads or writes backend memory directly (instead of to_host / to_device)
// faults at once, as it would on a GPU. host_memory() is false, so every staging path of the GPU runs.
// EmulatedPeerCommunicator plays NCCL for data-parallel tests: it moves device memory between ranks (threads).
#pragma once
#include <sys/mman.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <stdexcept>
#include <vector>

#include "replica/dist/communicator.h"
#include "replica/kernels/backend.h"

namespace replica {

class EmulatedDevice final : public Backend {
 public:
  ~EmulatedDevice() override {
    for (auto& [p, bytes] : mappings_) munmap(p, bytes);
  }
  Device device() const override { return Device::cuda; }
  std::string describe() const override { return "emulated device (CPU kernels, memory closed to the host)"; }
  bool host_memory() const override { return false; }

  void* allocate(size_t bytes) override {
    const size_t size = std::max<size_t>(bytes, 1);
    std::lock_guard lock(mutex_);
    void* p = mmap(nullptr, size, open_count_ > 0 ? PROT_READ | PROT_WRITE : PROT_NONE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);  // zero-filled
    if (p == MAP_FAILED) throw std::runtime_error("EmulatedDevice: mmap failed");
    mappings_[p] = size;
    return p;
  }
  void release(void* p) override {
    std::lock_guard lock(mutex_);
    auto it = mappings_.find(p);
    if (it == mappings_.end()) throw std::runtime_error("EmulatedDevice: release of memory it did not allocate");
    munmap(p, it->second);
    mappings_.erase(it);
  }
  void to_device(void* dst, const void* host, size_t bytes) override {
    Open open(*this);
    std::memcpy(dst, host, bytes);
  }
  void to_host(void* host, const void* src, size_t bytes) override {
    Open open(*this);
    std::memcpy(host, src, bytes);
  }
  void copy(float* dst, const float* src, size_t n) override { run([&](Backend& b) { b.copy(dst, src, n); }); }
  void zero(float* x, size_t n) override { run([&](Backend& b) { b.zero(x, n); }); }
  void synchronize() override {}
  void* native_stream() override { return nullptr; }
  double peak_flops(Precision) override { return 1e12; }  // no measurement: tests do not report MFU
  double device_memory_used() override { return 0.0; }

  void add(float* out, const float* a, const float* b, int64_t n) override {
    run([&](Backend& k) { k.add(out, a, b, n); });
  }
  void scale(float* x, size_t n, float s) override { run([&](Backend& k) { k.scale(x, n, s); }); }
  void convert_to_bf16(const float* src, bf16* dst, size_t n) override {
    run([&](Backend& k) { k.convert_to_bf16(src, dst, n); });
  }
  void gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, const float* B,
            int64_t ldb, float* C, int64_t ldc, bool acc, Precision p, const bf16* B16, const bf16* A16) override {
    run([&](Backend& k) { k.gemm(ta, tb, M, N, K, A, lda, B, ldb, C, ldc, acc, p, B16, A16); });
  }
  void rmsnorm_forward(float* y, float* rstd, const float* x, const float* w, int64_t rows, int64_t C,
                       float eps) override {
    run([&](Backend& k) { k.rmsnorm_forward(y, rstd, x, w, rows, C, eps); });
  }
  void rmsnorm_backward(float* dx, float* dw, const float* dy, const float* x, const float* w, const float* rstd,
                        int64_t rows, int64_t C, bool acc) override {
    run([&](Backend& k) { k.rmsnorm_backward(dx, dw, dy, x, w, rstd, rows, C, acc); });
  }
  void rope_forward(float* x, const RopeTable& t, int64_t B, int64_t T, int64_t heads, int64_t D) override {
    run([&](Backend& k) { k.rope_forward(x, t, B, T, heads, D); });
  }
  void rope_backward(float* dx, const RopeTable& t, int64_t B, int64_t T, int64_t heads, int64_t D) override {
    run([&](Backend& k) { k.rope_backward(dx, t, B, T, heads, D); });
  }
  void attention_forward(float* out, float* lse, const float* q, const float* k, const float* v,
                         const AttentionShape& s, Precision p) override {
    run([&](Backend& b) { b.attention_forward(out, lse, q, k, v, s, p); });
  }
  void attention_backward(float* dq, float* dk, float* dv, const float* dout, const float* out, const float* lse,
                          const float* q, const float* k, const float* v, const AttentionShape& s,
                          Precision p) override {
    run([&](Backend& b) { b.attention_backward(dq, dk, dv, dout, out, lse, q, k, v, s, p); });
  }
  void swiglu_forward(float* s, const float* g, const float* u, int64_t n) override {
    run([&](Backend& k) { k.swiglu_forward(s, g, u, n); });
  }
  void swiglu_backward(float* dg, float* du, const float* ds, const float* g, const float* u, int64_t n) override {
    run([&](Backend& k) { k.swiglu_backward(dg, du, ds, g, u, n); });
  }
  void embedding_forward(float* out, const int32_t* ids, const float* table, int64_t N, int64_t C) override {
    run([&](Backend& k) { k.embedding_forward(out, ids, table, N, C); });
  }
  void embedding_backward(float* dtable, const int32_t* ids, const float* dout, int64_t N, int64_t C) override {
    run([&](Backend& k) { k.embedding_backward(dtable, ids, dout, N, C); });
  }
  LossSums lm_head_loss(const float* hidden, WeightRef weight, const int32_t* targets, int64_t N, int64_t C,
                        int64_t V, float z_coef, Precision p, const LmHeadGrads* grads) override {
    LossSums sums;
    run([&](Backend& k) { sums = k.lm_head_loss(hidden, weight, targets, N, C, V, z_coef, p, grads); });
    return sums;
  }
  void adamw_step(float* params, const float* grads, float* m, float* v, size_t begin, const AdamWChunk* chunks,
                  int64_t n_chunks, const AdamWScalars& s) override {
    run([&](Backend& k) { k.adamw_step(params, grads, m, v, begin, chunks, n_chunks, s); });
  }
  std::vector<double> block_sums_of_squares(const float* x, size_t n) override {
    std::vector<double> sums;
    run([&](Backend& k) { sums = k.block_sums_of_squares(x, n); });
    return sums;
  }

  size_t live_allocations() const { return mappings_.size(); }
  size_t live_bytes() const {
    size_t bytes = 0;
    for (const auto& [p, size] : mappings_) bytes += size;
    return bytes;
  }

  // The memory is open to the host while any backend call or peer exchange is using it (counted, since
  // other ranks' threads open it too).
  void open() {
    std::lock_guard lock(mutex_);
    if (open_count_++ == 0) protect(PROT_READ | PROT_WRITE);
  }
  void close() {
    std::lock_guard lock(mutex_);
    if (--open_count_ == 0) protect(PROT_NONE);
  }

 private:
  struct Open {
    explicit Open(EmulatedDevice& d) : device(d) { device.open(); }
    ~Open() { device.close(); }
    EmulatedDevice& device;
  };
  void protect(int mode) {
    for (auto& [p, bytes] : mappings_) mprotect(p, bytes, mode);
  }
  template <typename F>
  void run(F kernel) {
    Open open(*this);
    kernel(cpu_backend());
  }
  std::mutex mutex_;
  int open_count_ = 0;
  std::map<void*, size_t> mappings_;
};

// Moves device memory between ranks, as NCCL does on GPUs: the exchange of `inner` (a host communicator)
// with every rank's device open.
class EmulatedPeerCommunicator final : public Communicator {
 public:
  EmulatedPeerCommunicator(Communicator& inner, std::vector<EmulatedDevice*> devices)
      : inner_(inner), devices_(std::move(devices)) {}
  int rank() const override { return inner_.rank(); }
  int size() const override { return inner_.size(); }
  std::string name() const override { return "emulated-nccl"; }
  void exchange(const std::vector<Send>& sends, const std::vector<Recv>& recvs) override {
    for (EmulatedDevice* d : devices_) d->open();
    inner_.exchange(sends, recvs);
    for (EmulatedDevice* d : devices_) d->close();
  }
  void barrier() override { inner_.barrier(); }
  [[noreturn]] void abort(const std::string& message, int status) override {
    inner_.abort(message, status);
    std::abort();  // not reached (GCC does not see [[noreturn]] through the virtual call)
  }

 private:
  Communicator& inner_;
  std::vector<EmulatedDevice*> devices_;
};

}  // namespace replica
