// End-to-end forward + backward throughput of a model config on a device, and MFU against the backend's
// peak (kernels/backend.h: on the CPU a large oneDNN matmul in the same precision, measured in this process;
// on known GPUs the datasheet's dense peak).
// Usage: bench_model MODEL.yaml BATCH SEQ PRECISION STEPS [none|block] [train] [cpu|cuda]   → one JSON line
// With `train`, each step is a full training step as the trainer runs it (dist/data_parallel.h, one rank):
// forward + backward, global-norm clipping and AdamW, and the optimizer's share of the step is reported.
// REPLICA_PROFILE=1 on a GPU adds a table of the device time per operation of the timed steps (Backend::profile).
#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <exception>
#include <random>
#include <vector>

#include "replica/core/threads.h"
#include "replica/dist/data_parallel.h"
#include "replica/train/distributed.h"
#include "replica/model/flops.h"
#include "replica/model/olmo3.h"
#include "replica/kernels/profile.h"

using namespace replica;

static double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

static int run(int argc, char** argv);

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    fmt::print(stderr, "bench_model: error: {}\n", e.what());
    return 2;
  }
}

static int run(int argc, char** argv) {
  if (argc < 6) {
    fmt::print(stderr, "usage: bench_model MODEL.yaml BATCH SEQ fp32|bf16 STEPS [none|block] [train] [cpu|cuda]\n");
    return 2;
  }
  const ModelConfig config = load_model_config(argv[1]);
  const int64_t B = std::stoll(argv[2]), T = std::stoll(argv[3]);
  const Precision precision = parse_precision(argv[4]);
  const int steps = std::stoi(argv[5]);
  Remat remat = Remat::none;
  bool train = false;
  Device device = Device::cpu;
  for (int i = 6; i < argc; i++) {
    const std::string arg = argv[i];
    if (arg == "train") train = true;
    else if (arg == "cpu" || arg == "cuda") device = parse_device(arg);
    else remat = parse_remat(arg);
  }

  Backend& backend = backend_for(device);
  Olmo3 model(config, precision, remat, backend);
  const size_t n = model.table().total();
  LocalCommunicator local;
  DataParallel dp(local, local, backend, model.table(), AdamWConfig{}, B, B);
  {
    std::vector<float> host(n);
    init_params(config, model.table(), 0, host.data());
    dp.load_weights(host.data());
  }
  std::mt19937 rng(0);
  std::vector<int32_t> ids(size_t(B * T));
  for (int32_t& id : ids) id = int32_t(rng() % uint32_t(std::min<int64_t>(config.vocab_size, 100278)));
  std::vector<int32_t> targets = shifted_targets(ids.data(), B, T);
  const Batch batch{ids.data(), targets.data(), B, T};

  double optimizer_s = 0;
  auto step = [&] {
    const LossSums sums = dp.gradients([&](int64_t, GradientSink& sink) {
      return model.forward_backward(step_weights(dp, model), sink, batch, 1e-5f, 1.0f / float(B * (T - 1)));
    });
    if (train) {
      backend.synchronize();
      auto start = std::chrono::steady_clock::now();
      dp.clip(1.0);
      dp.step(1e-4);
      backend.synchronize();
      optimizer_s = seconds_since(start);
    }
    backend.synchronize();
    return sums.ce / double(sums.n_labels);
  };
  step();  // warm-up
  if (profile_requested() && !backend.profile(true))  // the timed steps only
    fmt::print(stderr, "bench_model: the {} backend does not profile; REPLICA_PROFILE ignored\n", device_name(device));
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
  ProfileSum profile;  // a Markdown table before the JSON line
  profile.add(backend.take_profile());
  if (!profile.empty()) fmt::print("{}", profile.table(steps, 1e3 * step_s));
  const double tokens_per_s = double(B * T) / step_s;
  const double peak = backend.peak_flops(precision);
  const double achieved = training_flops_per_token(config, T) * tokens_per_s;
  fmt::print("{{\"impl\": \"replica\", \"device\": \"{}\", \"model\": \"{}\", \"params\": {}, \"B\": {}, "
             "\"T\": {}, \"precision\": \"{}\", \"threads\": {}, \"step_s\": {:.4f}, \"tokens_per_s\": {:.1f}, "
             "\"model_gflops\": {:.1f}, \"gemm_peak_gflops\": {:.1f}, \"mfu_vs_gemm_peak\": {:.3f}, \"train\": {}, "
             "\"optimizer_share\": {:.4f}, \"loss\": {:.4f}, \"device_memory_gib\": {:.2f}}}\n",
             backend.describe(), argv[1], model.table().count(), B, T, precision_name(precision), num_threads(), step_s,
             tokens_per_s, achieved / 1e9, peak / 1e9, achieved / peak, train,
             optimizer_times[optimizer_times.size() / 2] / step_s, loss, backend.device_memory_used() / double(1 << 30));
  return 0;
}
