// SwiGLU forward and backward, a vector of kNativeWidth elements at a time. The sigmoid's exp is simd::exp (~1 ulp):
// libm's expf is a call per element, which kept these loops scalar (15 ms of the tiny model's ~560 ms bf16 step, and
// ~0.4 s of the 100M model's ~7.8 s; bench/RESULTS.md, issue 34). The last partial vector goes through the same
// instructions, so every element has the same bits wherever it falls.
#include "replica/kernels/cpu/swiglu.h"

#include <algorithm>
#include <cstring>

#include "replica/kernels/cpu/simd.h"

namespace replica::cpu {

// (Names unique to this file: the unity builds put it in one translation unit with others.)
namespace {

constexpr int64_t kGateLanes = simd::kNativeWidth;

simd::native gate_sigmoid(simd::native g) { return 1.0f / (1.0f + simd::exp(-g)); }

// Lanes [0, n) of p, zeros after; and the first n lanes of v to p.
simd::native load_gates(const float* p, int64_t n) {
  simd::native v{};
  std::memcpy(&v, p, size_t(n) * sizeof(float));
  return v;
}
void store_gates(float* p, simd::native v, int64_t n) { std::memcpy(p, &v, size_t(n) * sizeof(float)); }

// f(i, n) for the vectors [i, i + n) of [0, total), n = kGateLanes but for the last.
template <typename F>
void for_each_vector_of_gates(int64_t total, F f) {
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < total; i += kGateLanes) f(i, std::min(kGateLanes, total - i));
}

}  // namespace

void swiglu_forward(float* s, const float* g, const float* u, int64_t n) {
  for_each_vector_of_gates(n, [&](int64_t i, int64_t lanes) {
    const simd::native gv = load_gates(g + i, lanes);
    store_gates(s + i, gv * gate_sigmoid(gv) * load_gates(u + i, lanes), lanes);
  });
}

void swiglu_backward(float* dg, float* du, const float* ds, const float* g, const float* u, int64_t n) {
  for_each_vector_of_gates(n, [&](int64_t i, int64_t lanes) {
    const simd::native gv = load_gates(g + i, lanes), uv = load_gates(u + i, lanes), dsv = load_gates(ds + i, lanes);
    const simd::native sig = gate_sigmoid(gv);
    store_gates(du + i, dsv * (gv * sig), lanes);
    store_gates(dg + i, dsv * uv * (sig * (1.0f + gv * (1.0f - sig))), lanes);
  });
}

}  // namespace replica::cpu
