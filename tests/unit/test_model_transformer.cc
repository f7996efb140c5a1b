// The attention kernel is an option of the model (Transformer::use_attention), passed to every attention call, not a
// mode of the process's backend: two models on one GPU run their own kernels, and the CPU refuses the tensor-core
// ones. *Cuda: on the CUDA backend (the CPU emulation in CI).
#include <gtest/gtest.h>

#include "reference_fixtures.h"
#include "replica/core/error.h"
#include "replica/model/transformer.h"

namespace replica::model {
namespace {

// Head size 16, which the tensor-core kernels take (the fixture models' 8 falls back to fp32).
ModelConfig tensor_core_heads() {
  ModelConfig c;
  c.vocab_size = 64, c.d_model = 32, c.ffn_hidden = 48, c.n_layers = 2, c.n_heads = 2, c.n_kv_heads = 1;
  c.head_dim = 16, c.sliding_window = 8, c.sliding = {true, false}, c.max_seq_len = 64;
  return c;
}

std::vector<float> logits(Transformer& model, const float* params, const std::vector<int32_t>& ids) {
  std::vector<float> out(ids.size() * size_t(model.config().vocab_size));
  model.forward_logits(params, ids.data(), 1, int64_t(ids.size()), out.data());
  return out;
}

TEST(ModelAttentionKernel, IsTheModelsOwnOptionCuda) {
  SKIP_WITHOUT_CUDA();
  Backend& gpu = backend_for(Device::cuda);
  const ModelConfig c = tensor_core_heads();
  std::vector<float> host(ParamTable(c).total());
  init_params(c, ParamTable(c), 1, host.data());
  const OnBackend params(gpu, host);
  std::vector<int32_t> ids(40);
  for (size_t i = 0; i < ids.size(); i++) ids[i] = int32_t((i * 7 + 3) % 64);

  Transformer exact(c, Precision::bf16, Remat::none, gpu), tensor_cores(c, Precision::bf16, Remat::none, gpu);
  EXPECT_EQ(exact.attention(), AttentionKernel::mma) << "automatic until chosen";
  EXPECT_EQ(exact.use_attention(AttentionKernel::fp32), AttentionKernel::fp32);
  EXPECT_EQ(tensor_cores.use_attention(AttentionKernel::automatic), AttentionKernel::mma);
  const std::vector<float> first = logits(exact, params.data(), ids);
  const std::vector<float> mma = logits(tensor_cores, params.data(), ids);
  EXPECT_NE(mma, first) << "the mma model rounds attention's operands";
  EXPECT_EQ(logits(exact, params.data(), ids), first) << "the other model's kernel did not become this one's";
}

TEST(ModelAttentionKernel, TensorCoreKernelsAreRefusedOnTheCpu) {
  Transformer model(tensor_core_heads(), Precision::bf16, Remat::none, cpu_backend());
  EXPECT_EQ(model.attention(), AttentionKernel::cpu_bf16);  // the CPU's automatic
  try {
    model.use_attention(AttentionKernel::mma);
    FAIL() << "mma accepted on the CPU";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("needs train.device=cuda"), std::string::npos) << e.what();
  }
  EXPECT_EQ(model.attention(), AttentionKernel::cpu_bf16) << "a refused kernel leaves the model's as it was";
  EXPECT_EQ(model.use_attention(AttentionKernel::fp32), AttentionKernel::fp32);
}

}  // namespace
}  // namespace replica::model
