// model/activations: the bytes the model allocates for a micro-batch are the bytes activation_bytes (and so
// `replica plan`) reports, under every remat policy and precision.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <vector>

#include "emulated_device.h"
#include "replica/model/transformer.h"

namespace replica::model {
namespace {

ModelConfig model() {  // GQA and untied, so that no two widths coincide: C 32, F 64, H·D 32, K·D 16
  return model_config_from_json({{"model_type", "olmo3"}, {"vocab_size", 300}, {"hidden_size", 32},
                                 {"intermediate_size", 64}, {"num_hidden_layers", 3}, {"num_attention_heads", 4},
                                 {"num_key_value_heads", 2}, {"head_dim", 8}, {"sliding_window", 4}},
                                "test model");
}

TEST(ModelActivations, ActivationBytesAreWhatTheModelAllocates) {
  const ModelConfig config = model();
  const int64_t B = 2, T = 12;
  std::vector<int32_t> ids(size_t(B * T));
  for (size_t i = 0; i < ids.size(); i++) ids[i] = int32_t(i * 37 % 300);
  const std::vector<int32_t> targets = shifted_targets(ids.data(), B, T);
  for (Precision precision : {Precision::fp32, Precision::bf16})
    for (Remat remat : {Remat::none, Remat::block, Remat::keep_attention}) {
      EmulatedDevice device;
      Transformer net(config, precision, remat, device);
      const ParamTable& table = net.table();
      DeviceArray<float> params(device, table.total()), grads(device, table.total());
      // The bf16 copy of the weights is weights, not activations: made before counting.
      net.whole_weights(params.data()).acquire(table.embed_range(), precision);
      const size_t before = device.live_bytes();
      net.forward_backward(params.data(), grads.data(), MicroBatch{ids.data(), targets.data(), B, T}, 1e-4f, 1.0f);
      EXPECT_EQ(device.live_bytes() - before, Transformer::activation_bytes(config, remat, B, T, precision))
          << remat_name(remat) << (precision == Precision::bf16 ? " bf16" : " fp32");
    }
}

}  // namespace
}  // namespace replica::model
