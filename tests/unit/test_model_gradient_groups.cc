// model/gradient_sink: the backward hands its gradient over group by group (ParamTable::groups, in that order),
// each group's memory separate and fresh, and the gradient is the whole-buffer backward's, bit for bit, with
// the LM head tied to the embedding or not.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <vector>

#include "replica/model/olmo3.h"

namespace replica {
namespace {

ModelConfig model(bool tied) {
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

class GradientGroups : public ::testing::TestWithParam<bool> {};

TEST_P(GradientGroups, AreHandedOverInOrderWithTheWholeBuffersBits) {
  const bool tied = GetParam();
  const ModelConfig config = model(tied);
  Olmo3 net(config);
  const ParamTable& table = net.table();
  std::vector<float> params(table.total());
  init_params(config, table, 7, params.data());
  const int64_t B = 2, T = 12;
  std::vector<int32_t> ids(size_t(B * T));
  for (size_t i = 0; i < ids.size(); i++) ids[i] = int32_t((i * 37 + 5) % 300);
  const std::vector<int32_t> targets = shifted_targets(ids.data(), B, T);
  const Batch batch{ids.data(), targets.data(), B, T};

  std::vector<float> whole(table.total(), 0.0f);
  const LossSums expected = net.forward_backward(params.data(), whole.data(), batch, 1e-4f, 0.01f);
  RecordingSink sink(table.total());
  const LossSums got = net.forward_backward(params.data(), sink, batch, 1e-4f, 0.01f);

  EXPECT_EQ(got.ce, expected.ce);
  EXPECT_TRUE(sink.grads == whole) << "the grouped gradient differs from the whole-buffer one";
  std::vector<size_t> order;
  for (ParamTable::Range g : table.groups()) order.push_back(g.begin);
  EXPECT_EQ(sink.closed, order);
  EXPECT_EQ(sink.most_open, tied ? 2u : 1u);  // the tied embedding stays open from the LM head to the end
  // The groups tile the buffer.
  size_t next = 0;
  for (auto g = order.rbegin(); g != order.rend(); ++g) {
    EXPECT_EQ(*g, next);
    for (ParamTable::Range r : table.groups())
      if (r.begin == *g) next = r.end;
  }
  EXPECT_EQ(next, table.total());
}

INSTANTIATE_TEST_SUITE_P(Model, GradientGroups, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "tied" : "untied"; });

}  // namespace
}  // namespace replica
