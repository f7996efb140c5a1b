// Micro-benchmarks of the hot CPU kernels: GEMM (the machine's measured peak), attention (also over packed rows
// with intra-document masking), LM head + loss. Reports GFLOP/s as the "FLOPS" counter and, for attention and the LM
// head, "of_peak": that rate over the GEMM peak in the same precision, measured once in this process (the first
// time it is needed). Run: build/bench/bench_kernels
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "random_floats.h"
#include "replica/core/bf16.h"
#include "replica/kernels/cpu/attention.h"
#include "replica/kernels/cpu/gemm.h"
#include "replica/kernels/cpu/lm_head_loss.h"

namespace {

using namespace replica;
using namespace replica::cpu;

// measure_gemm_peak(p), once per process and precision.
double gemm_peak(Precision p) {
  static const double fp32 = measure_gemm_peak(Precision::fp32), bf16 = measure_gemm_peak(Precision::bf16);
  return p == Precision::bf16 ? bf16 : fp32;
}

void BM_Gemm(benchmark::State& state) {
  const int64_t n = state.range(0);
  const Precision p = state.range(1) ? Precision::bf16 : Precision::fp32;
  auto a = random_floats(size_t(n * n), 1), b = random_floats(size_t(n * n), 2);
  std::vector<float> c(size_t(n * n));
  for (auto _ : state) gemm(false, true, n, n, n, a.data(), n, b.data(), n, c.data(), n, false, p);
  state.counters["FLOPS"] = benchmark::Counter(2.0 * double(n) * double(n) * double(n),
                                               benchmark::Counter::kIsIterationInvariantRate);
  state.SetLabel(precision_name(p));
}
BENCHMARK(BM_Gemm)->ArgsProduct({{1024, 2048}, {0, 1}})->Unit(benchmark::kMillisecond)->UseRealTime();

// Args: T, W, backward, bf16 (the bf16-product kernel, attention_bf16.cc, that bf16 precision runs).
void BM_Attention(benchmark::State& state) {
  const AttentionShape s{1, state.range(0), 12, 12, 64, state.range(1)};
  const bool bf16 = state.range(3) != 0;
  const auto forward = bf16 ? attention_forward_bf16 : attention_forward;
  const auto backward = bf16 ? attention_backward_bf16 : attention_backward;
  auto q = random_floats(size_t(s.T * s.H * s.D), 3), k = random_floats(q.size(), 4), v = random_floats(q.size(), 5),
       dout = random_floats(q.size(), 6);
  std::vector<float> out(q.size()), lse(size_t(s.H * s.T)), dq(q.size()), dk(q.size()), dv(q.size());
  for (auto _ : state) {
    forward(out.data(), lse.data(), q.data(), k.data(), v.data(), s, {});
    if (state.range(2))
      backward(dq.data(), dk.data(), dv.data(), dout.data(), out.data(), lse.data(), q.data(), k.data(), v.data(), s,
               {});
  }
  // Causal QKᵀ + PV: 4·H·D FLOPs per visible key forward, twice that backward.
  double keys = 0;
  for (int64_t i = 0; i < s.T; i++) keys += double(s.window > 0 ? std::min<int64_t>(i + 1, s.window) : i + 1);
  const double flops = 4.0 * double(s.H * s.D) * keys * (state.range(2) ? 3 : 1);
  state.counters["FLOPS"] = benchmark::Counter(flops, benchmark::Counter::kIsIterationInvariantRate);
  const Precision p = bf16 ? Precision::bf16 : Precision::fp32;
  state.counters["of_peak"] = benchmark::Counter(flops / gemm_peak(p), benchmark::Counter::kIsIterationInvariantRate);
  state.SetLabel(std::string(state.range(2) ? "fwd+bwd " : "fwd ") + precision_name(p));
}
BENCHMARK(BM_Attention)
    ->ArgsProduct({{2048}, {0, 512}, {0, 1}, {0, 1}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// The document lengths of a packed long-context row: log-normal lengths (median 1,024 tokens, σ = 1.5, so a few
// run past 10k), drawn until T is full, the last one cut at T; fixed seed.
std::vector<int32_t> document_mix(int64_t T) {
  std::mt19937 rng(7);
  std::lognormal_distribution<double> length(std::log(1024.0), 1.5);
  std::vector<int32_t> lens;
  for (int64_t used = 0; used < T;) {
    const int64_t n = std::min<int64_t>(T - used, std::max<int64_t>(1, int64_t(length(rng))));
    lens.push_back(int32_t(n));
    used += n;
  }
  return lens;
}

// Attention forward + backward over one row of T tokens with the sliding window W (0: full), as one document or
// packed with document_mix (args: T, W, packed, heads; D = 64). FLOPS counts the visible pairs only (4·H·D per
// pair forward, three times that with the backward), so a packed row is not credited for the work it skips;
// tokens/s compares the two directly.
void BM_AttentionDocuments(benchmark::State& state) {
  const int64_t T = state.range(0), W = state.range(1), H = state.range(3);
  const bool packed = state.range(2) != 0;
  const AttentionShape s{1, T, H, H, 64, W};
  const std::vector<int32_t> lens = packed ? document_mix(T) : std::vector<int32_t>{int32_t(T)};
  std::vector<int32_t> offsets{0};
  for (int32_t n : lens) offsets.push_back(offsets.back() + n);
  const DocumentOffsets docs{offsets.data(), int64_t(lens.size())};
  auto q = random_floats(size_t(T * H * s.D), 3), k = random_floats(q.size(), 4), v = random_floats(q.size(), 5),
       dout = random_floats(q.size(), 6);
  std::vector<float> out(q.size()), lse(size_t(H * T)), dq(q.size()), dk(q.size()), dv(q.size());
  for (auto _ : state) {
    attention_forward(out.data(), lse.data(), q.data(), k.data(), v.data(), s, docs);
    attention_backward(dq.data(), dk.data(), dv.data(), dout.data(), out.data(), lse.data(), q.data(), k.data(),
                       v.data(), s, docs);
  }
  double pairs = 0;
  for (int32_t n : lens)
    for (int64_t j = 0; j < n; j++) pairs += double(W > 0 ? std::min<int64_t>(j + 1, W) : j + 1);
  state.counters["FLOPS"] =
      benchmark::Counter(12.0 * double(H * s.D) * pairs, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["tokens/s"] = benchmark::Counter(double(T), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["documents"] = double(lens.size());
  state.SetLabel(packed ? "packed documents" : "one document");
}
BENCHMARK(BM_AttentionDocuments)
    ->ArgsProduct({{8192}, {0, 4096}, {0, 1}, {4}})
    ->ArgsProduct({{65536}, {0, 4096}, {0, 1}, {1}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(1);

// Args: bf16, backward. In bf16 the weight comes rounded, as the model rounds it once per step.
void BM_LmHeadLoss(benchmark::State& state) {
  const int64_t N = 512, C = 768, V = 100352;
  const Precision p = state.range(0) ? Precision::bf16 : Precision::fp32;
  const bool backward = state.range(1) != 0;
  auto hidden = random_floats(size_t(N * C), 7), weight = random_floats(size_t(V * C), 8);
  for (float& w : weight) w *= 0.02f;
  std::vector<bf16> weight16(p == Precision::bf16 ? weight.size() : 0);
  convert_to_bf16(weight.data(), weight16.data(), weight16.size());
  const WeightRef w(weight.data(), weight16.empty() ? nullptr : weight16.data());
  std::vector<int32_t> targets(N);
  for (int64_t i = 0; i < N; i++) targets[size_t(i)] = int32_t((i * 7919) % V);
  std::vector<float> dhidden(size_t(N * C)), dweight(size_t(V * C));
  LmHeadGrads grads{dhidden.data(), dweight.data(), 1.0f / float(N)};
  for (auto _ : state)
    lm_head_loss(hidden.data(), w, targets.data(), N, C, V, 1e-5f, p, backward ? &grads : nullptr);
  const double flops = (backward ? 6.0 : 2.0) * double(N) * double(C) * double(V);
  state.counters["FLOPS"] = benchmark::Counter(flops, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["of_peak"] = benchmark::Counter(flops / gemm_peak(p), benchmark::Counter::kIsIterationInvariantRate);
  state.SetLabel(std::string(backward ? "fwd+bwd " : "fwd ") + precision_name(p));
}
BENCHMARK(BM_LmHeadLoss)->ArgsProduct({{0, 1}, {0, 1}})->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
