// The code above the kernel layer on a device whose memory the host cannot touch (emulated_device.h): the
// model, the optimizer (AdamW and SGD), clipping, the trainer's checkpoints, resume and held-out evaluation take every
// GPU staging path, and since the kernels are the CPU's, every result must equal the CPU run bit for bit.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "emulated_device.h"
#include "scratch_dir.h"
#include "replica/core/npy.h"
#include "replica/model/document_offsets.h"
#include "replica/model/transformer.h"
#include "replica/model/params.h"
#include "replica/train/trainer.h"

namespace replica::train {
namespace {

namespace fs = std::filesystem;

// A two-layer OLMo 3 with sliding windows and GQA, as HF config.json keys (the trainer reads it from a file).
const nlohmann::json kTinyModel = {{"model_type", "olmo3"},
                                   {"vocab_size", 256},
                                   {"hidden_size", 64},
                                   {"intermediate_size", 128},
                                   {"num_hidden_layers", 2},
                                   {"num_attention_heads", 4},
                                   {"num_key_value_heads", 2},
                                   {"head_dim", 16},
                                   {"sliding_window", 8},
                                   {"max_position_embeddings", 64},
                                   {"eos_token_id", 0},
                                   {"pad_token_id", 1}};

std::vector<float> download(Backend& backend, const float* data, size_t n) {
  std::vector<float> host(n);
  backend.to_host(host.data(), data, n * sizeof(float));
  return host;
}

TEST(EmulatedDevice, HostAccessToDeviceMemoryFaults) {
  ::testing::FLAGS_gtest_death_test_style = "threadsafe";
  EmulatedDevice device;
  DeviceArray<float> a(device, 16);
  EXPECT_DEATH({ *static_cast<volatile float*>(a.data()) = 1.0f; }, "");
  const std::vector<float> ones(16, 1.0f);
  device.to_device(a.data(), ones.data(), 16 * sizeof(float));  // the way in
  EXPECT_EQ(download(device, a.data(), 16), ones);                // and out
}

TEST(EmulatedDevice, ModelForwardBackwardEqualsTheCpu) {
  const model::ModelConfig config = model::model_config_from_json(kTinyModel, "tiny");
  const model::ParamTable table(config);
  std::vector<float> params(table.total());
  model::init_params(config, table, 5, params.data());
  std::mt19937 rng(1);
  const int64_t B = 2, T = 24;
  std::vector<int32_t> ids(size_t(B * T));
  for (int32_t& id : ids) id = int32_t(rng() % 256);
  const std::vector<int32_t> targets = model::shifted_targets(ids.data(), B, T);
  // Unpacked rows, and packed ones, whose document offsets take the upload to the device.
  const std::vector<int32_t> packed =
      model::document_offsets(std::vector<std::vector<int32_t>>{{1, 10, 13}, {24}}, T, 0);
  for (const model::MicroBatch& batch : {model::MicroBatch{ids.data(), targets.data(), B, T},
                                         model::MicroBatch{ids.data(), targets.data(), B, T, packed}}) {
    for (Precision precision : {Precision::fp32, Precision::bf16}) {
      model::Transformer cpu_model(config, precision, model::Remat::none, cpu_backend());
      std::vector<float> cpu_grads(table.total(), 0.0f);
      const LossSums cpu = cpu_model.forward_backward(params.data(), cpu_grads.data(), batch, 1e-4f, 0.01f);
      std::vector<float> cpu_logits(size_t(B * T * 256));
      cpu_model.forward_logits(params.data(), ids.data(), B, T, cpu_logits.data());

      EmulatedDevice device;
      {
        model::Transformer model(config, precision, model::Remat::block, device);
        const OnBackend device_params(device, params);
        DeviceArray<float> grads(device, table.total());
        const LossSums got = model.forward_backward(device_params.data(), grads.data(), batch, 1e-4f, 0.01f);
        EXPECT_EQ(got.ce, cpu.ce);
        EXPECT_EQ(got.z, cpu.z);
        EXPECT_TRUE(download(device, grads.data(), table.total()) == cpu_grads) << precision_name(precision);
        std::vector<float> logits(cpu_logits.size());
        model.forward_logits(device_params.data(), ids.data(), B, T, logits.data());
        EXPECT_TRUE(logits == cpu_logits) << precision_name(precision);
      }
      EXPECT_EQ(device.live_allocations(), 0u);  // everything the model allocated was released
    }
  }
}

// A run directory's training metrics (loss, grad_norm, lr as written) and held-out losses, by step.
std::map<int64_t, std::string> metrics(const fs::path& run) {
  std::map<int64_t, std::string> out;
  std::ifstream in(run / "metrics.jsonl");
  for (std::string line; std::getline(in, line);) {
    const nlohmann::json j = nlohmann::json::parse(line);
    std::string& s = out[j["step"].get<int64_t>()];
    for (const char* key : {"loss", "grad_norm", "lr", "eval"})
      if (j.contains(key)) s += std::string(key) + "=" + j[key].dump() + " ";
  }
  return out;
}

std::string file_bytes(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(EmulatedDevice, TrainingCheckpointsResumeAndEvaluationEqualTheCpu) {
  const fs::path dir = replica::testing::scratch_dir("emulated_device");
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::mt19937 rng(2);
  for (const char* name : {"train.npy", "valid.npy"}) {
    std::vector<uint32_t> tokens(64 * 16);
    for (uint32_t& t : tokens) t = rng() % 256;
    write_npy((dir / name).string(), NpyType::u32, {int64_t(tokens.size())}, tokens.data());
  }
  std::ofstream(dir / "config.json") << kTinyModel.dump();
  const std::string recipe =
      "model: {config: " + (dir / "config.json").string() + "}\n"
      "data: {paths: [" + (dir / "train.npy").string() + "], validation_paths: [" + (dir / "valid.npy").string() +
      "], seq_len: 16, seed: 3, global_batch_size: 8, micro_batch_size: 2}\n"
      "optim: {lr: 1.0e-2}\n"
      "schedule: {type: cosine, warmup_steps: 2}\n"
      "train: {max_steps: 6, precision: bf16, threads: 1, seed: 4, log_every: 100}\n"
      "checkpoint: {every: 3}\n"
      "eval: {every: 3, batches: 1}\n";
  // AdamW, and SGD with momentum (its one state tensor through the same staging paths).
  for (const std::string optimizer : {"adamw", "sgd"}) {
    SCOPED_TRACE(optimizer);
    const std::vector<std::string> chosen = optimizer == "sgd"
                                                ? std::vector<std::string>{"optim.name=sgd", "optim.momentum=0.9"}
                                                : std::vector<std::string>{};
    auto run = [&](const std::string& name, Backend& backend, std::vector<std::string> overrides = {}) {
      overrides.insert(overrides.end(), chosen.begin(), chosen.end());
      overrides.push_back("run.dir=" + (dir / optimizer / name).string());
      distributed::LocalCommunicator local;
      return train(load_recipe_text(recipe, "emulated.yaml", overrides), local, backend);
    };
    const fs::path runs = dir / optimizer;
    EmulatedDevice device;
    const TrainSummary cpu = run("cpu", cpu_backend());
    const TrainSummary emulated = run("device", device);
    run("split", device, {"train.stop_at=3"});
    const TrainSummary resumed = run("split", device);
    EXPECT_EQ(resumed.steps, 6);

    EXPECT_EQ(emulated.final_loss, cpu.final_loss);
    EXPECT_EQ(emulated.heldout_initial, cpu.heldout_initial);
    EXPECT_EQ(emulated.heldout_final, cpu.heldout_final);
    ASSERT_TRUE(cpu.heldout_initial.has_value());
    EXPECT_GT(*cpu.heldout_initial, 0.0);
    EXPECT_EQ(metrics(runs / "device"), metrics(runs / "cpu"));
    EXPECT_EQ(metrics(runs / "split"), metrics(runs / "cpu"));
    for (const char* file : {"model.safetensors", "optim.safetensors"}) {
      const std::string want = file_bytes(runs / "cpu/checkpoints/step00000006" / file);
      EXPECT_EQ(file_bytes(runs / "device/checkpoints/step00000006" / file), want) << file;
      EXPECT_EQ(file_bytes(runs / "split/checkpoints/step00000006" / file), want) << file;
    }
    EXPECT_EQ(device.live_allocations(), 0u);
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace replica::train
