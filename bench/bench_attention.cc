// One layer's attention, forward and forward + backward, per kernel on a device: the attention TFLOP/s of the
// GPU-speed issue, counted as model/flops.h counts them (4·H·D FLOPs per visible query-key pair forward, 3× that
// for forward + backward) over the pairs the mask leaves: causal, a sliding window, or packed documents, so a
// document-masked run and a plain one compare per visible pair.
// Usage: bench_attention cpu|cuda B T H K D [window=W] [documents=N] [kernels=fp32,mma,wgmma,cpu_bf16] [reps=R]
//   → a Markdown table row per kernel, then one JSON line per kernel. Each row also gives the rates as a share of
//   the backend's GEMM peak in the kernel's precision (Backend::peak_flops: on the CPU measured in this process,
//   just before the kernel is timed). documents=N: each row packed with N equal
//   documents (the last one takes the remainder). Times are medians of R calls after one warm-up call.
#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <exception>
#include <string>
#include <vector>

#include "random_floats.h"
#include "replica/core/error.h"
#include "replica/kernels/backend.h"

using namespace replica;

namespace {

// Visible (query, key) pairs of one row: causal, within the window (0: none), inside each query's document.
double visible_pairs(int64_t T, int64_t window, int64_t documents) {
  const int64_t length = T / documents;
  double pairs = 0;
  for (int64_t d = 0; d < documents; d++) {
    const int64_t n = d + 1 < documents ? length : T - d * length;
    for (int64_t i = 0; i < n; i++) pairs += double(window > 0 ? std::min(i + 1, window) : i + 1);
  }
  return pairs;
}

DeviceArray<float> on_device(Backend& backend, const std::vector<float>& host) {
  DeviceArray<float> a(backend, host.size());
  backend.to_device(a.data(), host.data(), host.size() * sizeof(float));
  return a;
}

// The median seconds of `reps` calls of `call` after a warm-up call, each timed to the device's completion.
template <typename Call>
double median_seconds(Backend& backend, int reps, Call&& call) {
  call();
  backend.synchronize();
  std::vector<double> times;
  for (int r = 0; r < reps; r++) {
    const auto start = std::chrono::steady_clock::now();
    call();
    backend.synchronize();
    times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

int64_t integer(const std::string& text, const char* what) {
  try {
    size_t used = 0;
    const int64_t value = std::stoll(text, &used);
    if (used == text.size() && value >= 0) return value;
  } catch (const std::exception&) {
  }
  fail("bench_attention: {} must be a non-negative integer, got '{}'", what, text);
}

int run(int argc, char** argv) {
  if (argc < 7) {
    fmt::print(stderr, "usage: bench_attention cpu|cuda B T H K D [window=W] [documents=N] "
                       "[kernels=fp32,mma,wgmma,cpu_bf16] [reps=R]\n");
    return 2;
  }
  const Device device = parse_device(argv[1]);
  AttentionShape s{integer(argv[2], "B"), integer(argv[3], "T"), integer(argv[4], "H"), integer(argv[5], "K"),
                   integer(argv[6], "D"), 0};
  int64_t documents = 1, reps = 5;
  std::vector<AttentionKernel> kernels;
  for (int i = 7; i < argc; i++) {
    const std::string arg = argv[i];
    const size_t eq = arg.find('=');
    const std::string key = arg.substr(0, eq), value = eq == std::string::npos ? "" : arg.substr(eq + 1);
    if (key == "window") s.window = integer(value, "window");
    else if (key == "documents") documents = integer(value, "documents");
    else if (key == "reps") reps = integer(value, "reps");
    else if (key == "kernels")
      for (size_t b = 0; b <= value.size();) {
        const size_t e = std::min(value.find(',', b), value.size());
        kernels.push_back(parse_attention_kernel(value.substr(b, e - b)));
        b = e + 1;
      }
    else
      fail("bench_attention: unknown argument '{}' (window=, documents=, kernels=, reps=)", arg);
  }
  check(s.B > 0 && s.T > 0 && s.H > 0 && s.K > 0 && s.H % s.K == 0 && s.D > 0,
        "bench_attention: B, T, H, K, D must be positive and K divide H");
  check(documents >= 1 && documents <= s.T && reps >= 1, "bench_attention: documents in [1, T] and reps >= 1");
  if (kernels.empty())
    kernels = device == Device::cpu
                  ? std::vector<AttentionKernel>{AttentionKernel::fp32, AttentionKernel::cpu_bf16}
                  : std::vector<AttentionKernel>{AttentionKernel::fp32, AttentionKernel::mma, AttentionKernel::wgmma};

  Backend& backend = backend_for(device);
  const size_t nq = size_t(s.B * s.T * s.H * s.D), nk = size_t(s.B * s.T * s.K * s.D);
  const DeviceArray<float> q = on_device(backend, random_floats(nq, 1)), k = on_device(backend, random_floats(nk, 2)),
                           v = on_device(backend, random_floats(nk, 3)),
                           dout = on_device(backend, random_floats(nq, 4));
  DeviceArray<float> out(backend, nq), lse(backend, size_t(s.B * s.H * s.T)), dq(backend, nq), dk(backend, nk),
      dv(backend, nk);
  // Every row packed the same way; none for one document a row (the unpacked path).
  std::vector<int32_t> offsets{0};
  for (int64_t b = 0; b < s.B && documents > 1; b++)
    for (int64_t d = 1; d <= documents; d++)
      offsets.push_back(int32_t(b * s.T + (d < documents ? d * (s.T / documents) : s.T)));
  DeviceArray<int32_t> device_offsets(backend, offsets.size());
  backend.to_device(device_offsets.data(), offsets.data(), offsets.size() * sizeof(int32_t));
  const DocumentOffsets docs =
      documents > 1 ? DocumentOffsets{device_offsets.data(), int64_t(offsets.size()) - 1} : DocumentOffsets{};

  const double forward_flops = 4.0 * double(s.H * s.D) * double(s.B) * visible_pairs(s.T, s.window, documents);
  const std::string shape = fmt::format("B={} T={} H={} K={} D={} W={} documents={}", s.B, s.T, s.H, s.K, s.D,
                                        s.window, documents);
  fmt::print("| kernel | shape | forward ms | forward TFLOP/s | forward + backward ms | forward + backward TFLOP/s "
             "| GEMM peak TFLOP/s | forward / peak | forward + backward / peak |\n"
             "|---|---|---|---|---|---|---|---|---|\n");
  std::vector<std::string> json;
  // q, k and v rounded to bf16 once, as the model hands them to the bf16 kernels (QK-norm + RoPE writes them).
  DeviceArray<bf16> q16(backend, nq), k16(backend, nk), v16(backend, nk);
  backend.convert_to_bf16(q.data(), q16.data(), nq);
  backend.convert_to_bf16(k.data(), k16.data(), nk);
  backend.convert_to_bf16(v.data(), v16.data(), nk);
  for (AttentionKernel wanted : kernels) {
    const AttentionKernel kernel = backend.resolve_attention(wanted);
    const bool bf16_products = kernel != AttentionKernel::fp32;
    const Precision p = bf16_products ? Precision::bf16 : Precision::fp32;
    const WeightRef q_in(q.data(), bf16_products ? q16.data() : nullptr),
        k_in(k.data(), bf16_products ? k16.data() : nullptr), v_in(v.data(), bf16_products ? v16.data() : nullptr);
    const double peak = backend.peak_flops(p);
    auto forward = [&] { backend.attention_forward(out.data(), lse.data(), q_in, k_in, v_in, s, docs, p, kernel); };
    const double fwd = median_seconds(backend, int(reps), forward);
    const double both = median_seconds(backend, int(reps), [&] {
      forward();
      backend.attention_backward(dq.data(), dk.data(), dv.data(), dout.data(), out.data(), lse.data(), q_in, k_in,
                                 v_in, s, docs, p, kernel);
    });
    const double fwd_tflops = forward_flops / fwd / 1e12, both_tflops = 3 * forward_flops / both / 1e12;
    fmt::print("| {} | {} | {:.3g} | {:.3g} | {:.3g} | {:.3g} | {:.3g} | {:.0f}% | {:.0f}% |\n",
               attention_kernel_name(kernel), shape, 1e3 * fwd, fwd_tflops, 1e3 * both, both_tflops, peak / 1e12,
               100 * fwd_tflops * 1e12 / peak, 100 * both_tflops * 1e12 / peak);
    json.push_back(fmt::format("{{\"device\": \"{}\", \"kernel\": \"{}\", \"B\": {}, \"T\": {}, \"H\": {}, \"K\": {}, "
                               "\"D\": {}, \"window\": {}, \"documents\": {}, \"forward_s\": {:.6f}, "
                               "\"forward_tflops\": {:.4g}, \"forward_backward_s\": {:.6f}, "
                               "\"forward_backward_tflops\": {:.4g}, \"gemm_peak_tflops\": {:.4g}}}",
                               backend.describe(), attention_kernel_name(kernel), s.B, s.T, s.H, s.K, s.D, s.window,
                               documents, fwd, fwd_tflops, both, both_tflops, peak / 1e12));
  }
  for (const std::string& line : json) fmt::print("{}\n", line);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    fmt::print(stderr, "bench_attention: error: {}\n", e.what());
    return 2;
  }
}
