// Fuzzes model.safetensors.index.json: an HF directory of a tiny model whose weights are in shard.safetensors,
// and an index from the fuzzer. Shard names must be file names of the directory; an index the loader accepts
// has mapped every tensor to a shard that holds it.
#include <filesystem>
#include <vector>

#include "fuzz_input.h"
#include "replica/ckpt/hf.h"
#include "replica/ckpt/safetensors.h"
#include "replica/model/config.h"
#include "replica/model/params.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace replica;
  static const model::ModelConfig config = [] {
    const std::string dir = fuzz::scratch_dir() + "/hf";
    std::filesystem::create_directories(dir);
    const std::string json = R"({"model_type": "olmo3", "vocab_size": 8, "hidden_size": 4, "intermediate_size": 4,
      "num_hidden_layers": 1, "num_attention_heads": 1, "num_key_value_heads": 1, "head_dim": 4,
      "sliding_window": 4, "max_position_embeddings": 16, "tie_word_embeddings": true})";
    fuzz::write_input("hf/config.json", reinterpret_cast<const uint8_t*>(json.data()), json.size());
    const model::ModelConfig c = model::load_model_config(dir);
    const model::ParamTable table(c);
    static std::vector<float> values(table.total(), 0.5f);
    std::vector<ckpt::StTensorOut> tensors;
    for (const model::ParamEntry& entry : table.entries())
      tensors.push_back({entry.name, entry.shape, values.data() + entry.offset});
    ckpt::write_safetensors(dir + "/shard.safetensors", tensors);
    return c;
  }();
  fuzz::write_input("hf/model.safetensors.index.json", data, size);
  fuzz::expect_only_replica_errors([&] {
    const model::ParamTable table(config);
    std::vector<float> params(table.total(), 0.0f);
    ckpt::load_hf_params(fuzz::scratch_dir() + "/hf", table, params.data());
    for (const model::ParamEntry& entry : table.entries())
      for (size_t i = 0; i < entry.numel; i++)
        if (params[entry.offset + i] != 0.5f)
          fuzz::property_failed("an accepted index left a parameter of " + entry.name + " unread");
  });
  return 0;
}
