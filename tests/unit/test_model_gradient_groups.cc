// model/gradient_sink and model/weight_source: the model reads its weights group by group from copies that exist
// only between acquire and release, and hands its gradient over group by group (ParamTable::groups, in that order),
// each group's memory separate and fresh; loss and gradient are the whole-buffer pass's, bit for bit, with the LM
// head tied to the embedding or not.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <vector>

#include "replica/model/transformer.h"

namespace replica::model {
namespace {

ModelConfig grouped_model(bool tied) {
  return model_config_from_json({{"model_type", "olmo3"}, {"vocab_size", 300}, {"hidden_size", 32},
                                 {"intermediate_size", 64}, {"num_hidden_layers", 3}, {"num_attention_heads", 4},
                                 {"num_key_value_heads", 2}, {"head_dim", 8}, {"sliding_window", 4},
                                 {"tie_word_embeddings", tied}},
                                "test model");
}

// Gives every group its own zeroed buffer, copies it into `grads` when the group is closed, and records the
// order of events.
class RecordingSink final : public GradientSink {
 public:
  explicit RecordingSink(size_t total) : grads(total, 0.0f) {}

  float* open(ParamTable::Range r) override {
    EXPECT_EQ(open_.count(r.begin), 0u) << "group opened twice";
    open_[r.begin] = std::vector<float>(r.end - r.begin, 0.0f);
    most_open = std::max(most_open, open_.size());
    return open_[r.begin].data();
  }
  void close(ParamTable::Range r) override {
    auto it = open_.find(r.begin);
    ASSERT_NE(it, open_.end()) << "closing a group that is not open";
    ASSERT_EQ(it->second.size(), r.end - r.begin);
    std::copy(it->second.begin(), it->second.end(), grads.begin() + ptrdiff_t(r.begin));
    open_.erase(it);
    closed.push_back(r.begin);
  }

  std::vector<float> grads;
  std::vector<size_t> closed;  // group begins, in order of closing
  size_t most_open = 0;

 private:
  std::map<size_t, std::vector<float>> open_;
};

// Serves every acquired group from a copy of its own, so a read outside an acquired group's range shows up as a wrong
// result; records the order of acquisitions.
class CopyingWeights final : public WeightSource {
 public:
  explicit CopyingWeights(const std::vector<float>& params) : params_(params) {}

  GroupWeights acquire(ParamTable::Range r, Precision) override {
    EXPECT_EQ(copies_.count(r.begin), 0u) << "group acquired twice";
    copies_[r.begin].assign(params_.begin() + ptrdiff_t(r.begin), params_.begin() + ptrdiff_t(r.end));
    most_acquired = std::max(most_acquired, copies_.size());
    acquired.push_back(r.begin);
    return {copies_[r.begin].data(), nullptr, r.begin};
  }
  void release(ParamTable::Range r) override { EXPECT_EQ(copies_.erase(r.begin), 1u) << "release without acquire"; }
  bool all_released() const { return copies_.empty(); }

  std::vector<size_t> acquired;  // group begins, in order
  size_t most_acquired = 0;

 private:
  const std::vector<float>& params_;
  std::map<size_t, std::vector<float>> copies_;
};

class GradientGroups : public ::testing::TestWithParam<bool> {};

TEST_P(GradientGroups, WeightsAndGradientsMoveGroupByGroupWithTheWholeBuffersBits) {
  const bool tied = GetParam();
  const ModelConfig config = grouped_model(tied);
  Transformer net(config, Precision::fp32, Remat::none, cpu_backend());
  const ParamTable& table = net.table();
  std::vector<float> params(table.total());
  init_params(config, table, 7, params.data());
  const int64_t B = 2, T = 12;
  std::vector<int32_t> ids(size_t(B * T));
  for (size_t i = 0; i < ids.size(); i++) ids[i] = int32_t((i * 37 + 5) % 300);
  const std::vector<int32_t> targets = shifted_targets(ids.data(), B, T);
  const MicroBatch batch{ids.data(), targets.data(), B, T};

  std::vector<float> whole(table.total(), 0.0f);
  const LossSums expected = net.forward_backward(params.data(), whole.data(), batch, 1e-4f, 0.01f);
  RecordingSink sink(table.total());
  CopyingWeights weights(params);
  const LossSums got = net.forward_backward(weights, sink, batch, 1e-4f, 0.01f);

  EXPECT_EQ(got.ce, expected.ce);
  EXPECT_EQ(got.z, expected.z);
  EXPECT_TRUE(weights.all_released());
  // Forward: embedding, blocks 0 … L-1; head group (and the tied embedding); backward: blocks L-1 … 0.
  const std::vector<ParamTable::Range> groups = table.groups();  // head, blocks L-1 … 0, embedding
  const size_t L = table.blocks.size();
  std::vector<size_t> expected_order{table.embed_range().begin};
  for (size_t l = 0; l < L; l++) expected_order.push_back(table.block_range(l).begin);
  expected_order.push_back(table.head_range().begin);
  if (tied) expected_order.push_back(table.embed_range().begin);
  for (size_t l = L; l-- > 0;) expected_order.push_back(table.block_range(l).begin);
  EXPECT_EQ(weights.acquired, expected_order);
  EXPECT_EQ(weights.most_acquired, tied ? 2u : 1u);
  CopyingWeights eval_weights(params);
  EXPECT_EQ(net.forward_loss(eval_weights, batch, 1e-4f).ce, net.forward_loss(params.data(), batch, 1e-4f).ce);
  EXPECT_TRUE(eval_weights.all_released());
  EXPECT_TRUE(sink.grads == whole) << "the grouped gradient differs from the whole-buffer one";
  std::vector<size_t> order;
  for (ParamTable::Range g : groups) order.push_back(g.begin);
  EXPECT_EQ(sink.closed, order);
  EXPECT_EQ(sink.most_open, tied ? 2u : 1u);  // the tied embedding stays open from the LM head to the end
  // The groups tile the buffer.
  size_t next = 0;
  for (auto g = order.rbegin(); g != order.rend(); ++g) {
    EXPECT_EQ(*g, next);
    for (ParamTable::Range r : groups)
      if (r.begin == *g) next = r.end;
  }
  EXPECT_EQ(next, table.total());
}

INSTANTIATE_TEST_SUITE_P(Model, GradientGroups, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "tied" : "untied"; });

}  // namespace
}  // namespace replica::model
