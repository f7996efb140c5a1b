// model/activations: the bytes the model allocates for a micro-batch are the bytes activation_bytes (and so
// `replica plan`) reports, under every remat policy and precision.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "emulated_device.h"
#include "replica/kernels/forwarding_backend.h"
#include "replica/model/transformer.h"

namespace replica::model {
namespace {

// GQA and untied, so that no two widths coincide: C 32, F 64, H·D 32, K·D 16; `extra` keys on top.
ModelConfig three_layer_model(const nlohmann::json& extra = nlohmann::json::object()) {
  nlohmann::json j = {{"model_type", "olmo3"}, {"vocab_size", 300}, {"hidden_size", 32}, {"intermediate_size", 64},
                      {"num_hidden_layers", 3}, {"num_attention_heads", 4}, {"num_key_value_heads", 2},
                      {"head_dim", 8}, {"sliding_window", 4}};
  j.update(extra);
  return model_config_from_json(j, "test model");
}

// The same with a full-attention layer in the middle, which YaRN scales.
ModelConfig yarn_model() {
  return three_layer_model({{"layer_types", {"sliding_attention", "full_attention", "sliding_attention"}},
                            {"rope_scaling", {{"rope_type", "yarn"}, {"factor", 8.0}}}});
}

// With YaRN on its full layer the model keeps a second RoPE table, cos and sin [T, D/2], in the activation table.
TEST(ModelActivations, AYarnModelCountsItsSecondRopeTable) {
  const int64_t B = 2, T = 12;
  for (Remat remat : {Remat::none, Remat::block})
    EXPECT_EQ(Transformer::activation_bytes(yarn_model(), remat, B, T, Precision::fp32) -
                  Transformer::activation_bytes(three_layer_model(), remat, B, T, Precision::fp32),
              2 * size_t(T) * 4 * sizeof(float));
}

TEST(ModelActivations, ActivationBytesAreWhatTheModelAllocates) {
  const int64_t B = 2, T = 12;
  std::vector<int32_t> ids(size_t(B * T));
  for (size_t i = 0; i < ids.size(); i++) ids[i] = int32_t(i * 37 % 300);
  const std::vector<int32_t> targets = shifted_targets(ids.data(), B, T);
  for (const ModelConfig& config : {three_layer_model(), yarn_model()})
    for (Precision precision : {Precision::fp32, Precision::bf16})
      for (Remat remat : {Remat::none, Remat::selective, Remat::keep_attention, Remat::block}) {
        EmulatedDevice device;
        Transformer net(config, precision, remat, device);
        const ParamTable& table = net.table();
        DeviceArray<float> params(device, table.total()), grads(device, table.total());
        // The bf16 copy of the weights is weights, not activations: made before counting.
        net.whole_weights(params.data()).acquire(table.embed_range(), precision);
        const size_t before = device.live_bytes();
        net.forward_backward(params.data(), grads.data(), MicroBatch{ids.data(), targets.data(), B, T}, 1e-4f, 1.0f);
        EXPECT_EQ(device.live_bytes() - before, Transformer::activation_bytes(config, remat, B, T, precision))
            << remat_name(remat) << (precision == Precision::bf16 ? " bf16" : " fp32")
            << (config.rope_scaling ? " yarn" : "");
      }
}

// In bf16 the attention's inputs are kept rounded (q, k, v: N·(H·D + 2·K·D) bf16 values per set of the cheap
// outputs), except in a context-parallel slice, whose keys and values arrive in fp32.
TEST(ModelActivations, AContextParallelSliceKeepsNoBf16CopiesOfTheAttentionInputs) {
  const ModelConfig c = three_layer_model();
  const int64_t B = 1, T = 12, L = c.n_layers;
  const size_t copies = size_t(B * T * (c.q_width() + 2 * c.kv_width())) * sizeof(bf16);
  const std::pair<Remat, int64_t> policies[] = {{Remat::none, L}, {Remat::selective, 1}, {Remat::block, 1}};
  for (const auto& [remat, sets] : policies) {
    EXPECT_EQ(Transformer::activation_bytes(c, remat, B, T, Precision::bf16) -
                  Transformer::activation_bytes(c, remat, B, T, Precision::bf16, true),
              size_t(sets) * copies)
        << remat_name(remat);
    EXPECT_EQ(Transformer::activation_bytes(c, remat, B, T, Precision::fp32),
              Transformer::activation_bytes(c, remat, B, T, Precision::fp32, true));
  }
}

// Each remat policy keeps less than the one before it.
TEST(ModelActivations, EachRematPolicyKeepsLessThanTheOneBefore) {
  for (Precision precision : {Precision::fp32, Precision::bf16}) {
    size_t previous = SIZE_MAX;
    for (Remat remat : {Remat::none, Remat::selective, Remat::keep_attention, Remat::block}) {
      const size_t bytes = Transformer::activation_bytes(three_layer_model(), remat, 2, 12, precision);
      EXPECT_LT(bytes, previous) << remat_name(remat);
      previous = bytes;
    }
  }
}

// The CPU backend, counting its calls by the first word of their names.
class CallCounter final : public ForwardingBackend {
 public:
  CallCounter() : ForwardingBackend(cpu_backend()) {}
  std::map<std::string, int> calls;

 private:
  void enter(const CallName& name) override {
    const std::string s = name.str();
    calls[s.substr(0, s.find(' '))]++;
  }
};

// What each policy runs again in the backward: selective only the memory-bound passes (here QK-norm + RoPE),
// keep_attention the GEMMs too, block the attention as well.
TEST(ModelActivations, SelectiveRecomputationRepeatsOnlyTheMemoryBoundPasses) {
  const int64_t B = 2, T = 12, L = three_layer_model().n_layers;
  std::vector<int32_t> ids(size_t(B * T));
  for (size_t i = 0; i < ids.size(); i++) ids[i] = int32_t(i * 37 % 300);
  const std::vector<int32_t> targets = shifted_targets(ids.data(), B, T);
  auto count = [&](Remat remat) {
    CallCounter backend;
    Transformer net(three_layer_model(), Precision::bf16, remat, backend);
    std::vector<float> params(net.table().total(), 0.01f), grads(net.table().total());
    net.forward_backward(params.data(), grads.data(), MicroBatch{ids.data(), targets.data(), B, T}, 1e-4f, 1.0f);
    return backend.calls;
  };
  std::map<std::string, int> none = count(Remat::none), selective = count(Remat::selective),
                             keep_attention = count(Remat::keep_attention), block = count(Remat::block);
  ASSERT_EQ(none["attention_forward"], L);
  EXPECT_EQ(selective["gemm"], none["gemm"]);
  EXPECT_EQ(selective["attention_forward"], L);
  EXPECT_EQ(selective["rmsnorm_rope_forward"], 2 * none["rmsnorm_rope_forward"]);
  EXPECT_EQ(selective["swiglu_forward"], 2 * none["swiglu_forward"]);
  EXPECT_EQ(keep_attention["gemm"], none["gemm"] + 7 * L);  // the block's seven products again
  EXPECT_EQ(keep_attention["attention_forward"], L);
  EXPECT_EQ(block["gemm"], keep_attention["gemm"]);
  EXPECT_EQ(block["attention_forward"], 2 * L);
}

}  // namespace
}  // namespace replica::model
