// HF export/import: vocab truncation and zero padding, sharding with an index, byte-reproducible exports.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "replica/ckpt/hf.h"
#include "replica/core/error.h"
#include "replica/core/file.h"
#include "scratch_dir.h"

namespace replica::ckpt {
namespace {

namespace fs = std::filesystem;

model::ModelConfig config_with_vocab(int64_t V) {
  model::ModelConfig c;
  c.vocab_size = V, c.d_model = 16, c.ffn_hidden = 24, c.n_layers = 1, c.n_heads = 2, c.n_kv_heads = 2;
  c.head_dim = 8, c.sliding = {false};
  return c;
}

std::vector<float> ramp(const model::ParamTable& table) {
  std::vector<float> p(table.total(), 0.0f);
  for (const model::ParamEntry& e : table.entries())
    for (size_t i = 0; i < e.numel; i++) p[e.offset + i] = 0.01f * float(i) - float(e.offset % 7);
  return p;
}

TEST(CkptHf, TruncatedVocabIsPaddedBackWithZeros) {
  testing::TestDir d;
  const model::ModelConfig padded = config_with_vocab(48);
  const model::ParamTable table(padded);
  const std::vector<float> params = ramp(table);
  HfExportOptions o;
  o.vocab = 40;
  export_hf(padded, table, params.data(), (d.path / "hf").string(), o);
  const HfModel exported = load_hf_model((d.path / "hf").string());
  EXPECT_EQ(exported.config.vocab_size, 40);
  std::vector<float> back(table.total(), 7.0f);
  load_hf_params((d.path / "hf").string(), table, back.data());
  for (const char* name : {"model.embed_tokens.weight", "lm_head.weight"}) {
    const model::ParamEntry& e = table.at(name);
    for (size_t i = 0; i < e.numel; i++)
      ASSERT_EQ(back[e.offset + i], i < 40 * 16 ? params[e.offset + i] : 0.0f) << name << " " << i;
  }
  const model::ParamEntry& q = table.at("model.layers.0.self_attn.q_proj.weight");
  EXPECT_EQ(back[q.offset + 3], params[q.offset + 3]);
  o.vocab = 49;
  EXPECT_THROW(export_hf(padded, table, params.data(), (d.path / "big").string(), o), Error);
  EXPECT_FALSE(fs::exists(d.path / "big"));
}

TEST(CkptHf, ShardedExportRoundTripsByteForByte) {
  testing::TestDir d;
  const model::ModelConfig c = config_with_vocab(40);
  const model::ParamTable table(c);
  const std::vector<float> params = ramp(table);
  HfExportOptions o;
  o.max_shard_bytes = 3000;  // tensors of 64 B to 2.5 KB: 7 shards in table order
  export_hf(c, table, params.data(), (d.path / "a").string(), o);
  const nlohmann::json index =
      nlohmann::json::parse(read_text_file((d.path / "a" / "model.safetensors.index.json").string()));
  EXPECT_EQ(index["weight_map"]["lm_head.weight"], "model-00007-of-00007.safetensors");
  EXPECT_EQ(index["metadata"]["total_size"].get<size_t>(), table.count() * 4);
  const HfModel back = load_hf_model((d.path / "a").string());
  export_hf(back.config, table, back.params.data(), (d.path / "b").string(), o);
  for (const auto& e : fs::directory_iterator(d.path / "a"))
    EXPECT_EQ(read_file(e.path().string()), read_file((d.path / "b" / e.path().filename()).string())) << e.path();
  EXPECT_EQ(nlohmann::json::parse(read_text_file((d.path / "a" / "config.json").string()))["architectures"][0],
            "Olmo3ForCausalLM");
}

}  // namespace
}  // namespace replica::ckpt
