// End-to-end forward + backward throughput of a model config, and MFU against this machine's GEMM peak
// measured in the same process (a large oneDNN matmul in the same precision).
// Usage: bench_model MODEL.yaml BATCH SEQ PRECISION STEPS [none|block] [train]   → one JSON line
// With `train`, each step is a full training step: forward + backward, global-norm clipping and AdamW,
// and the optimizer's share of the step is reported.
#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <random>
#include <vector>

#include "replica/core/threads.h"
#include "replica/model/flops.h"
#include "replica/model/olmo3.h"
#include "replica/optim/adamw.h"
#include "replica/optim/clip.h"

using namespace replica;

static double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

int main(int argc, char** argv) {
  if (argc < 6) {
    fmt::print(stderr, "usage: bench_model MODEL.yaml BATCH SEQ fp32|bf16 STEPS [none|block] [train]\n");
    return 2;
  }
  const ModelConfig config = load_model_config(argv[1]);
  const int64_t B = std::stoll(argv[2]), T = std::stoll(argv[3]);
  const Precision precision = parse_precision(argv[4]);
  const int steps = std::stoi(argv[5]);
  Remat remat = Remat::none;
  bool train = false;
  for (int i = 6; i < argc; i++) {
    if (std::string(argv[i]) == "train") train = true;
    else remat = parse_remat(argv[i]);
  }

  Olmo3 model(config, precision, remat);
  std::vector<float> params(model.table().total(), 0.0f), grads(params.size(), 0.0f);
  init_params(config, model.table(), 0, params.data());
  std::mt19937 rng(0);
  std::vector<int32_t> ids(size_t(B * T));
  for (int32_t& id : ids) id = int32_t(rng() % uint32_t(std::min<int64_t>(config.vocab_size, 100278)));
  std::vector<int32_t> targets = shifted_targets(ids.data(), B, T);
  const Batch batch{ids.data(), targets.data(), B, T};

  AdamW adamw(model.table(), AdamWConfig{});
  double optimizer_s = 0;
  auto step = [&] {
    std::fill(grads.begin(), grads.end(), 0.0f);
    LossSums sums = model.forward_backward(params.data(), grads.data(), batch, 1e-5f, 1.0f / float(B * (T - 1)));
    if (train) {
      auto start = std::chrono::steady_clock::now();
      clip_grad_norm(grads.data(), grads.size(), 1.0);
      adamw.step(params.data(), grads.data(), 1e-4);
      optimizer_s = seconds_since(start);
    }
    return sums.ce / double(sums.n_labels);
  };
  step();  // warm-up
  std::vector<double> times, optimizer_times;
  double loss = 0;
  for (int s = 0; s < steps; s++) {
    auto start = std::chrono::steady_clock::now();
    loss = step();
    times.push_back(seconds_since(start));
    optimizer_times.push_back(optimizer_s);
  }
  std::sort(times.begin(), times.end());
  std::sort(optimizer_times.begin(), optimizer_times.end());
  const double step_s = times[times.size() / 2];
  const double tokens_per_s = double(B * T) / step_s;
  const double peak = measure_gemm_peak(precision);
  const double achieved = training_flops_per_token(config, T) * tokens_per_s;
  fmt::print("{{\"impl\": \"replica\", \"model\": \"{}\", \"params\": {}, \"B\": {}, \"T\": {}, \"precision\": \"{}\", "
             "\"threads\": {}, \"step_s\": {:.4f}, \"tokens_per_s\": {:.1f}, \"model_gflops\": {:.1f}, "
             "\"gemm_peak_gflops\": {:.1f}, \"mfu_vs_gemm_peak\": {:.3f}, \"train\": {}, \"optimizer_share\": {:.4f}, "
             "\"loss\": {:.4f}}}\n",
             argv[1], model.table().count(), B, T, precision_name(precision), num_threads(), step_s, tokens_per_s,
             achieved / 1e9, peak / 1e9, achieved / peak, train, optimizer_times[optimizer_times.size() / 2] / step_s,
             loss);
  return 0;
}
