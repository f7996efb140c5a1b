// oneDNN matmul with a primitive cache keyed by shape, strides, accumulation and precision.
// oneDNN's CPU matmul is deterministic for a fixed shape and thread count.
//
// oneDNN (Debian's 2.6) runs bf16 matmuls only on CPUs with AVX-512; on an AVX2 machine it has no bf16 kernel at
// all. There bf16 precision keeps its meaning (operands rounded to bf16, products summed in fp32) through the fp32
// matmul over the rounded values: a product of two bf16 values is exact in fp32, so only the order of the fp32 sums
// differs from the bf16 kernel's, as it differs between any two ISAs oneDNN picks kernels for. Same machine and
// thread count, same bits (the fp32 matmul may split its sums across threads, so unlike the bf16 kernel's here the
// bits can depend on the count); the speed is the fp32 matmul's.
#include "replica/kernels/cpu/gemm.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <tuple>
#include <vector>

#include "replica/core/bf16.h"

namespace replica::cpu {

namespace {

using dnnl::memory;
using Key = std::tuple<bool, bool, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, bool, bool>;

// Whether oneDNN can build a bf16 matmul on this CPU (it throws "could not create a primitive descriptor iterator"
// where it cannot).
bool has_bf16_matmul(const dnnl::engine& engine) {
  const memory::desc bf16_desc({16, 16}, memory::data_type::bf16, memory::dims{16, 1});
  const memory::desc f32_desc({16, 16}, memory::data_type::f32, memory::dims{16, 1});
  try {
    dnnl::matmul::primitive_desc(dnnl::matmul::desc(bf16_desc, bf16_desc, f32_desc), engine);
    return true;
  } catch (const dnnl::error&) {
    return false;
  }
}

struct Engine {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  std::map<Key, dnnl::matmul> cache;
  std::mutex mutex;
  std::vector<bf16> a16, b16;   // operand scratch for bf16 precision
  std::vector<float> a32, b32;  // the same, widened back to fp32 where oneDNN has no bf16 matmul
  bool native_bf16 = has_bf16_matmul(engine);
};

Engine& engine() {
  static Engine e;
  return e;
}

// Memory descriptor of a logical [rows, cols] matrix stored row-major with stride ld, or transposed.
memory::desc matrix_desc(int64_t rows, int64_t cols, int64_t ld, bool transposed, memory::data_type type) {
  memory::dims strides = transposed ? memory::dims{1, ld} : memory::dims{ld, 1};
  return memory::desc({rows, cols}, type, strides);
}

}  // namespace

void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, const float* B,
          int64_t ldb, float* C, int64_t ldc, bool accumulate, Precision precision, const bf16* B16, const bf16* A16) {
  if (M == 0 || N == 0) return;
  Engine& e = engine();
  std::lock_guard<std::mutex> lock(e.mutex);
  const bool bf = precision == Precision::bf16;
  const bool bf_kernel = bf && e.native_bf16;  // else bf16-rounded values through the fp32 matmul
  auto in_type = bf_kernel ? memory::data_type::bf16 : memory::data_type::f32;
  // op(B) is [K,N]: B stored [N,K] when trans_b (read transposed), else [K,N].
  memory::desc a_desc = matrix_desc(M, K, lda, trans_a, in_type);
  memory::desc b_desc = matrix_desc(K, N, ldb, trans_b, in_type);
  memory::desc c_desc = matrix_desc(M, N, ldc, false, memory::data_type::f32);

  Key key{trans_a, trans_b, M, N, K, lda, ldb, ldc, accumulate, bf};
  auto it = e.cache.find(key);
  if (it == e.cache.end()) {
    dnnl::primitive_attr attr;
    if (accumulate) {
      dnnl::post_ops ops;
      ops.append_sum(1.0f);
      attr.set_post_ops(ops);
    }
    auto pd = dnnl::matmul::primitive_desc(dnnl::matmul::desc(a_desc, b_desc, c_desc), attr, e.engine);
    it = e.cache.emplace(key, dnnl::matmul(pd)).first;
  }

  const void* a = A;
  const void* b = B;
  if (bf) {
    size_t a_size = size_t((trans_a ? K : M) - 1) * size_t(lda) + size_t(trans_a ? M : K);
    size_t b_size = size_t((trans_b ? N : K) - 1) * size_t(ldb) + size_t(trans_b ? K : N);
    // Each operand: the caller's pre-rounded copy, else a packed copy rounded here.
    auto rounded = [](const float* x, const bf16* pre, std::vector<bf16>& scratch, size_t size) -> const void* {
      if (pre) return pre;
      if (scratch.size() < size) scratch.resize(size);
      convert_to_bf16(x, scratch.data(), size);
      return scratch.data();
    };
    // Without a bf16 kernel: the same rounded values, widened back to fp32 (exactly).
    auto widened = [](const float* x, const bf16* pre, std::vector<float>& scratch, size_t size) -> const void* {
      if (scratch.size() < size) scratch.resize(size);
      round_to_bf16(x, pre, scratch.data(), size);
      return scratch.data();
    };
    a = bf_kernel ? rounded(A, A16, e.a16, a_size) : widened(A, A16, e.a32, a_size);
    b = bf_kernel ? rounded(B, B16, e.b16, b_size) : widened(B, B16, e.b32, b_size);
  }
  memory a_mem(a_desc, e.engine, const_cast<void*>(a));
  memory b_mem(b_desc, e.engine, const_cast<void*>(b));
  memory c_mem(c_desc, e.engine, C);
  it->second.execute(e.stream, {{DNNL_ARG_SRC, a_mem}, {DNNL_ARG_WEIGHTS, b_mem}, {DNNL_ARG_DST, c_mem}});
  e.stream.wait();
}

bool native_bf16_gemm() { return engine().native_bf16; }

double measure_gemm_peak(Precision precision) {
  const int64_t n = 2048;
  std::vector<float> a(size_t(n * n), 0.5f), b(size_t(n * n), 0.25f), c(size_t(n * n));
  double best = 0.0;
  for (int i = 0; i < 10; i++) {
    const auto start = std::chrono::steady_clock::now();
    gemm(false, true, n, n, n, a.data(), n, b.data(), n, c.data(), n, false, precision);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    best = std::max(best, 2.0 * double(n) * double(n) * double(n) / seconds);
  }
  return best;
}

}  // namespace replica::cpu
