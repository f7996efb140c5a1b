// End-to-end forward + backward throughput of a model config on a device, and MFU against the backend's
// peak (kernels/backend.h: on the CPU a large oneDNN matmul in the same precision, measured in this process;
// on known GPUs the datasheet's dense peak).
// Usage: bench_model MODEL.yaml BATCH SEQ PRECISION STEPS [none|selective|keep_attention|block] [train] [cpu|cuda]
//                    [attention=auto|mma|wgmma|fp32] [profile] [float8] [host_moments] [section.key=value]
//                                                                                                → one JSON line
// The arguments are overrides of the default recipe (train/recipe.h): BATCH is data.micro_batch_size and
// data.global_batch_size, SEQ data.seq_len, float8 train.float8, and any section.key=value is one more override.
// Every step runs the trainer's own step (train/step.h) on one rank, one micro-batch of random ids: its gradients,
// and with `train` also the update (global-norm clipping and AdamW; no skip-step), whose share of the step is
// reported. `profile` on a GPU adds a table of the device time per operation of the timed steps (Backend::profile).
// `float8`: the block Linears in float8 (train.float8); MFU stays against the PRECISION peak (bf16-equivalent, as
// peers report float8 runs). `host_moments`: AdamW's moments in page-locked host memory (optim.host_moments); every
// step here is one micro-batch and one update, so the optimizer share is that of a step without accumulation.
#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <exception>
#include <random>
#include <vector>

#include "replica/core/threads.h"
#include "replica/kernels/profile.h"
#include "replica/model/flops.h"
#include "replica/train/checkpointing.h"
#include "replica/train/recipe.h"
#include "replica/train/step.h"

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
    fmt::print(stderr,
               "usage: bench_model MODEL.yaml BATCH SEQ fp32|bf16 STEPS [none|selective|keep_attention|block] [train] "
               "[cpu|cuda] [attention=auto|mma|wgmma|fp32] [profile] [float8] [host_moments] [section.key=value]\n");
    return 2;
  }
  // The arguments are overrides of a recipe, so the step is configured as `replica train` configures it
  // (train::step_config): the positional ones name their keys, and any section.key=value is passed on as it is.
  const int64_t B = std::stoll(argv[2]), T = std::stoll(argv[3]);
  const int steps = std::stoi(argv[5]);
  std::vector<std::string> overrides = {fmt::format("model.config=\"{}\"", argv[1]),
                                        fmt::format("data.seq_len={}", T),
                                        fmt::format("data.global_batch_size={}", B),
                                        fmt::format("data.micro_batch_size={}", B),
                                        fmt::format("train.precision={}", argv[4]),
                                        "schedule.type=constant",
                                        "optim.lr=1e-4",
                                        "optim.skip_step=false"};
  bool train = false, profile = false;
  for (int i = 6; i < argc; i++) {
    const std::string arg = argv[i];
    if (arg == "train") train = true;
    else if (arg == "profile") profile = true;
    else if (arg == "float8") overrides.push_back("train.float8=true");
    else if (arg == "host_moments") overrides.push_back("optim.host_moments=true");
    else if (arg == "cpu" || arg == "cuda") overrides.push_back("train.device=" + arg);
    else if (arg.starts_with("attention=")) overrides.push_back("train.attention=" + arg.substr(10));
    else if (arg.find('=') != std::string::npos) overrides.push_back(arg);
    else
      overrides.push_back("train.remat=" + arg);
  }
  const train::Recipe recipe = train::load_recipe_text("", "bench_model", overrides, /*check_files=*/false);
  const model::ModelConfig config = train::recipe_model_config(recipe);
  const train::StepConfig c = train::step_config(recipe);
  const Device device = recipe.train.device;

  Backend& backend = backend_for(device);
  distributed::LocalCommunicator local;
  train::TrainStep step(config, c, local, local, backend);
  {
    std::vector<float> host(step.model().table().total());
    model::init_params(config, step.model().table(), 0, host.data());
    step.dp().load_weights(host.data());
  }
  std::mt19937 rng(0);
  data::Batch batch{.rows = B, .seq_len = T, .tokens = std::vector<int32_t>(size_t(B * T)),
                    .keep = std::vector<uint8_t>(size_t(B), 1), .instances = {}, .doc_lens = {}};
  for (int32_t& id : batch.tokens) id = int32_t(rng() % uint32_t(std::min<int64_t>(config.vocab_size, 100278)));

  double optimizer_s = 0;
  int64_t step_number = 0;
  auto one_step = [&] {
    const LossSums sums = step.gradients(batch);
    if (train) {
      backend.synchronize();
      auto start = std::chrono::steady_clock::now();
      step.update(sums, ++step_number);
      backend.synchronize();
      optimizer_s = seconds_since(start);
    }
    backend.synchronize();
    return sums.ce / double(sums.n_labels);
  };
  // The GEMM peak, measured (on the CPU, ~1 s) before the warm-up and again after the timed steps, the higher kept: on
  // a shared machine one measurement can land in a slow stretch that the steps mostly miss, and put MFU above 100 %.
  const double peak_before = backend.peak_flops(c.precision);
  one_step();  // warm-up
  if (profile && !backend.profile(true))  // the timed steps only
    fmt::print(stderr, "bench_model: the {} backend does not profile; `profile` ignored\n", device_name(device));
  std::vector<double> times, optimizer_times;
  double loss = 0;
  for (int s = 0; s < steps; s++) {
    auto start = std::chrono::steady_clock::now();
    loss = one_step();
    times.push_back(seconds_since(start));
    optimizer_times.push_back(optimizer_s);
  }
  std::sort(times.begin(), times.end());
  std::sort(optimizer_times.begin(), optimizer_times.end());
  const double step_s = times[times.size() / 2];
  ProfileSum profile_sum;  // a Markdown table before the JSON line
  profile_sum.add(backend.take_profile());
  if (!profile_sum.empty()) fmt::print("{}", profile_sum.table(steps, 1e3 * step_s));
  const double tokens_per_s = double(B * T) / step_s;
  const double peak = std::max(peak_before, backend.peak_flops(c.precision));
  const double achieved = model::training_flops_per_token(config, T) * tokens_per_s;
  fmt::print("{{\"impl\": \"replica\", \"device\": \"{}\", \"model\": \"{}\", \"params\": {}, \"B\": {}, "
             "\"T\": {}, \"precision\": \"{}\", \"attention\": \"{}\", \"float8\": {}, \"host_moments\": {}, "
             "\"threads\": {}, "
             "\"step_s\": {:.4f}, "
             "\"tokens_per_s\": {:.1f}, \"model_gflops\": {:.1f}, \"gemm_peak_gflops\": {:.1f}, "
             "\"mfu_vs_gemm_peak\": {:.3f}, \"train\": {}, \"optimizer_share\": {:.4f}, \"loss\": {:.4f}, "
             "\"device_memory_gib\": {:.2f}}}\n",
             backend.describe(), argv[1], step.model().table().count(), B, T, precision_name(c.precision),
             attention_kernel_name(step.model().attention()), c.float8, optim::state_in_host_memory(c.optimizer),
             num_threads(), step_s,
             tokens_per_s,
             achieved / 1e9, peak / 1e9, achieved / peak, train, optimizer_times[optimizer_times.size() / 2] / step_s, loss,
             backend.device_memory_used() / double(1 << 30));
  return 0;
}
