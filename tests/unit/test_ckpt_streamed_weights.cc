// ckpt/streamed_weights: a model evaluated a group at a time from its files gives bitwise the loss and logits of the
// model read whole, in fp32 and bf16, from an HF directory (fp32 or bf16 tensors, tied or untied LM head) and a
// replica checkpoint, while holding no more than its planned group of weights.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <vector>

#include "replica/ckpt/checkpoint.h"
#include "replica/ckpt/hf.h"
#include "replica/ckpt/model_source.h"
#include "replica/ckpt/streamed_weights.h"
#include "replica/core/error.h"
#include "replica/model/transformer.h"
#include "scratch_dir.h"

namespace replica::ckpt {
namespace {

namespace fs = std::filesystem;

model::ModelConfig tiny(bool tied) {
  model::ModelConfig c;
  c.vocab_size = 64, c.d_model = 16, c.ffn_hidden = 32, c.n_layers = 3, c.n_heads = 2, c.n_kv_heads = 1;
  c.head_dim = 8, c.sliding_window = 4, c.sliding = {true, false, true}, c.max_seq_len = 32;
  c.tie_embeddings = tied;
  return c;
}

struct Result {
  double ce = 0.0;
  std::vector<float> logits;
};

// The loss over one batch and the logits of three of its rows.
Result evaluate(const model::ModelConfig& config, Precision precision, model::WeightSource& weights) {
  model::Transformer model(config, precision, model::Remat::none, cpu_backend());
  const int64_t B = 2, T = 12;
  std::vector<int32_t> ids(size_t(B * T));
  for (size_t i = 0; i < ids.size(); i++) ids[i] = int32_t((i * 7 + 3) % size_t(config.vocab_size));
  const std::vector<int32_t> targets = model::shifted_targets(ids.data(), B, T);
  Result r;
  r.ce = model.forward_loss(weights, {ids.data(), targets.data(), B, T}, 0.0f).ce;
  model.forward_hidden(weights, ids.data(), B, T);
  const std::vector<int64_t> rows = {0, 5, 23};
  r.logits.resize(rows.size() * size_t(config.vocab_size));
  model.head_logits(weights, rows.data(), int64_t(rows.size()), r.logits.data());
  return r;
}

void expect_same_as_whole(const std::string& dir, const model::ModelConfig& config) {
  const HfModel whole = load_model_source(dir);
  const model::ParamTable table(config);
  for (Precision precision : {Precision::fp32, Precision::bf16}) {
    model::WholeWeights resident(cpu_backend(), table.total());
    resident.set(whole.params.data());
    const Result expected = evaluate(config, precision, resident);
    StreamedWeights streamed(dir, table, cpu_backend());
    const Result got = evaluate(config, precision, streamed);
    EXPECT_EQ(got.ce, expected.ce) << dir;
    ASSERT_EQ(got.logits, expected.logits) << dir;
    // Every group read from the files at each acquire: two forwards of every group, the LM head's for the logits,
    // and the tied embedding once more for the loss; never more held than planned, nor the whole model.
    EXPECT_EQ(streamed.reads(), 2 * int64_t(table.groups().size()) + 1 + (config.tie_embeddings ? 1 : 0)) << dir;
    EXPECT_LE(streamed.peak_bytes(), StreamedWeights::planned_bytes(table, precision)) << dir;
    EXPECT_LT(streamed.peak_bytes(), table.total() * sizeof(float)) << dir;
  }
}

std::vector<float> random_params(const model::ModelConfig& config) {
  const model::ParamTable table(config);
  std::vector<float> p(table.total(), 0.0f);
  model::init_params(config, table, 7, p.data());
  return p;
}

TEST(CkptStreamedWeights, AnHfDirectoryStreamsToTheSameNumbers) {
  testing::TestDir d;
  for (bool tied : {false, true})
    for (StDtype dtype : {StDtype::F32, StDtype::BF16}) {
      const model::ModelConfig c = tiny(tied);
      const std::string out = (d.path / fmt::format("hf_{}_{}", tied, int(dtype))).string();
      HfExportOptions o;
      o.dtype = dtype;
      o.max_shard_bytes = 20000;  // sharded, with an index
      export_hf(c, model::ParamTable(c), random_params(c).data(), out, o);
      expect_same_as_whole(out, c);
    }
}

TEST(CkptStreamedWeights, ATruncatedVocabularyStreamsPaddedWithZeros) {
  testing::TestDir d;
  const model::ModelConfig c = tiny(false);
  HfExportOptions o;
  o.vocab = 60;  // 64 rows in the model, 60 in the files
  export_hf(c, model::ParamTable(c), random_params(c).data(), (d.path / "hf").string(), o);
  model::ModelConfig padded = load_model_source_config((d.path / "hf").string());
  padded.vocab_size = 64;
  const model::ParamTable table(padded);
  StreamedWeights streamed((d.path / "hf").string(), table, cpu_backend());
  const model::GroupWeights embed = streamed.acquire(table.embed_range(), Precision::fp32);
  const model::ParamEntry& e = table.at("model.embed_tokens.weight");
  EXPECT_NE(embed(e.offset)[0], 0.0f);
  for (size_t i = 60 * 16; i < e.numel; i++) ASSERT_EQ(embed(e.offset)[i], 0.0f) << i;
  streamed.release(table.embed_range());
}

TEST(CkptStreamedWeights, AReplicaCheckpointStreamsToTheSameNumbers) {
  testing::TestDir d;
  const model::ModelConfig c = tiny(false);
  const model::ParamTable table(c);
  const std::vector<float> params = random_params(c);
  TrainState s;
  s.step = 3, s.global_batch_size = 1, s.seq_len = 12, s.model = c;
  const std::string dir = write_checkpoint(d.path.string(), {&table, params.data(), nullptr}, s, 0);
  expect_same_as_whole(dir, c);
}

TEST(CkptStreamedWeights, BadFilesAreNamedWhenOpened) {
  testing::TestDir d;
  const model::ModelConfig c = tiny(false);
  export_hf(c, model::ParamTable(c), random_params(c).data(), (d.path / "hf").string(), {});
  model::ModelConfig other = c;
  other.ffn_hidden = 48;
  try {
    StreamedWeights streamed((d.path / "hf").string(), model::ParamTable(other), cpu_backend());
    FAIL() << "a model of another shape opened";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("has shape [32, 16], expected [48, 16]"), std::string::npos) << e.what();
  }
  StreamedWeights streamed((d.path / "hf").string(), model::ParamTable(c), cpu_backend());
  EXPECT_THROW(streamed.release(model::ParamTable(c).embed_range()), Error);
}

}  // namespace
}  // namespace replica::ckpt
