// The kernels of issue 34 timed by the process's CPU time, best of R warm calls, each beside the bf16 GEMM peak
// timed the same way in the same process: on a machine shared with other jobs, CPU time is what this process got of
// the cores, so the ratios hold where wall-clock rates (bench_kernels) measure the other jobs. Run it with
// OMP_NUM_THREADS=1 (with more threads, threads waiting at a barrier for a descheduled partner count as busy).
// Usage: bench_kernels_cpu_time [reps=3] [lm_head|attention|attention_bf16 ...]   → one Markdown row per kernel and
// mask (all kernels without names; attention_bf16: the bf16-product kernel alone), the masked attention rows also as
// a ratio to the causal row's rate (FLOPs are per visible pair, so 1.00: as fast per visible pair). On a
// CPU where oneDNN has no bf16 matmul (no AVX-512) bf16 GEMMs, the peak's among them, run the fp32 matmul on the
// rounded operands: the peak is marked "(fp32 matmul)".
#include <fmt/core.h>
#include <time.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "random_floats.h"
#include "replica/core/bf16.h"
#include "replica/kernels/cpu/attention.h"
#include "replica/kernels/cpu/gemm.h"
#include "replica/kernels/cpu/lm_head_loss.h"
#include "replica/kernels/cpu/narrow_head.h"

using namespace replica;
using namespace replica::cpu;

namespace {

double cpu_seconds() {
  timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
}

// The least CPU time of `reps` calls after a warm-up call.
template <typename Call>
double best_seconds(int reps, Call&& call) {
  call();
  double best = 1e30;
  for (int r = 0; r < reps; r++) {
    const double start = cpu_seconds();
    call();
    best = std::min(best, cpu_seconds() - start);
  }
  return best;
}

double bf16_peak(int reps) {
  const int64_t n = 2048;
  std::vector<float> a(size_t(n * n), 0.5f), b(size_t(n * n), 0.25f), c(size_t(n * n));
  const double s = best_seconds(
      reps, [&] { gemm(false, true, n, n, n, a.data(), n, b.data(), n, c.data(), n, false, Precision::bf16); });
  return 2.0 * double(n * n * n) / s;
}

// One row; `causal`: the rate (FLOP/s) of the same kernel and pass with the causal mask, for the masked rows.
void row(const std::string& what, double flops, double seconds, double peak, double causal = 0) {
  const double rate = flops / seconds;
  fmt::print("| {} | {:.1f} | {:.1f}{} | {:.0f}% | {} |\n", what, rate / 1e9, peak / 1e9,
             native_bf16_gemm() ? "" : " (fp32 matmul)", 100 * rate / peak,
             causal > 0 ? fmt::format("{:.2f}", rate / causal) : "–");
}

// The causal rows' rates per kernel and pass, for the masked rows' ratio.
std::map<std::string, double> causal_rate;

void attention(int reps, int64_t window, int64_t documents, bool with_fp32) {
  const AttentionShape s{1, 2048, 12, 12, 64, window};
  const int64_t length = s.T / documents;
  std::vector<int32_t> offsets{0};
  for (int64_t d = 1; d <= documents && documents > 1; d++)
    offsets.push_back(int32_t(d < documents ? d * length : s.T));
  const DocumentOffsets docs = documents > 1 ? DocumentOffsets{offsets.data(), documents} : DocumentOffsets{};
  double pairs = 0;
  for (int64_t d = 0; d < documents; d++) {
    const int64_t n = d + 1 < documents ? length : s.T - d * length;
    for (int64_t i = 0; i < n; i++) pairs += double(window > 0 ? std::min(i + 1, window) : i + 1);
  }
  const double flops = 4.0 * double(s.H * s.D) * pairs;
  auto q = random_floats(size_t(s.T * s.H * s.D), 3), k = random_floats(q.size(), 4), v = random_floats(q.size(), 5),
       dout = random_floats(q.size(), 6);
  std::vector<float> out(q.size()), lse(size_t(s.H * s.T)), dq(q.size()), dk(q.size()), dv(q.size());
  const std::string mask = window > 0      ? fmt::format("W={}", window)
                           : documents > 1 ? fmt::format("{} documents", documents)
                                           : "causal";
  for (const bool bf16 : {false, true}) {
    if (!bf16 && !with_fp32) continue;
    const auto forward = bf16 ? attention_forward_bf16 : attention_forward;
    const auto backward = bf16 ? attention_backward_bf16 : attention_backward;
    const double peak = bf16_peak(reps);
    const double fwd =
        best_seconds(reps, [&] { forward(out.data(), lse.data(), q.data(), k.data(), v.data(), s, docs); });
    const double both = best_seconds(reps, [&] {
      forward(out.data(), lse.data(), q.data(), k.data(), v.data(), s, docs);
      backward(dq.data(), dk.data(), dv.data(), dout.data(), out.data(), lse.data(), q.data(), k.data(), v.data(), s,
               docs);
    });
    const std::string kernel = bf16 ? fmt::format("cpu_bf16 ({})", attention_bf16_products()) : "fp32";
    const bool causal = window == 0 && documents == 1;
    if (causal) {
      causal_rate[kernel + " forward"] = flops / fwd;
      causal_rate[kernel + " both"] = 3 * flops / both;
    }
    row(fmt::format("attention {} T=2048 H=12 D=64 {}, forward", kernel, mask), flops, fwd, peak,
        causal ? 0 : causal_rate[kernel + " forward"]);
    row(fmt::format("attention {} T=2048 H=12 D=64 {}, forward + backward", kernel, mask), 3 * flops, both, peak,
        causal ? 0 : causal_rate[kernel + " both"]);
  }
}

// The LM head at the shape of the target (C = 768) and of olmo3_tiny, which `make train` spends most of its
// step in (C = 128). Where oneDNN has no bf16 matmul, the same calls also with the operands widened per product (the
// path gemm's fallback took before lm_head_loss rounded them once per call): before and after, in one run.
void lm_head(int reps, int64_t N, int64_t C) {
  const int64_t V = 100352;
  auto hidden = random_floats(size_t(N * C), 7), weight = random_floats(size_t(V * C), 8);
  for (float& w : weight) w *= 0.02f;
  std::vector<bf16> weight16(weight.size());
  convert_to_bf16(weight.data(), weight16.data(), weight.size());
  std::vector<int32_t> targets(N);
  for (int64_t i = 0; i < N; i++) targets[size_t(i)] = int32_t((i * 7919) % V);
  std::vector<float> dhidden(size_t(N * C)), dweight(size_t(V * C));
  const LmHeadGrads grads{dhidden.data(), dweight.data(), 1.0f / float(N)};
  const WeightRef w(weight.data(), weight16.data());
  const double flops = 2.0 * double(N * C * V);
  std::vector<std::pair<LmHeadBf16Path, const char*>> paths = {{LmHeadBf16Path::automatic, ""}};
  if (!native_bf16_gemm()) paths.push_back({LmHeadBf16Path::per_product, ", operands widened per product"});
  if (native_bf16_gemm() && narrow_head_available(C))
    paths.push_back({LmHeadBf16Path::per_product, ", oneDNN's matmul (not replica's narrow-head kernels)"});
  for (const auto& [path, how] : paths)
    for (const LmHeadGrads* g : {static_cast<const LmHeadGrads*>(nullptr), &grads}) {
      const double peak = bf16_peak(reps);
      row(fmt::format("LM head + loss bf16 {}×{}×100,352, {}{}", N, C, g ? "forward + backward" : "forward", how),
          g ? 3 * flops : flops,
          best_seconds(
              reps, [&] { lm_head_loss(hidden.data(), w, targets.data(), N, C, V, 1e-5f, Precision::bf16, g, path); }),
          peak);
    }
}

}  // namespace

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::max(1, std::atoi(argv[1])) : 3;
  std::vector<std::string> kernels(argv + std::min(argc, 2), argv + argc);
  if (kernels.empty()) kernels = {"lm_head", "attention"};
  const auto wanted = [&](const char* name) { return std::find(kernels.begin(), kernels.end(), name) != kernels.end(); };
  fmt::print(
      "| kernel | GFLOP/s (CPU time) | bf16 GEMM peak GFLOP/s (CPU time, same process) | share of peak | per visible "
      "pair, vs causal |\n"
      "|---|---|---|---|---|\n");
  if (wanted("lm_head")) {
    lm_head(reps, 512, 768);
    lm_head(reps, 2048, 128);
  }
  if (wanted("attention") || wanted("attention_bf16")) {
    const bool fp32 = wanted("attention");
    attention(reps, 0, 1, fp32);
    attention(reps, 512, 1, fp32);
    attention(reps, 0, 4, fp32);
    attention(reps, 0, 5, fp32);  // documents of 409–412 tokens: boundaries inside the 64-query tiles
  }
  return 0;
}
