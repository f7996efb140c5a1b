// optim/sgd and optim/optimizers: SGD against torch.optim.SGD's values, with momentum (one state tensor) and without
// (none), on the shard's parts as on the whole buffer, padding untouched; every optimizer names the state
// optim::state_names says it keeps, and its state goes to and from the host exactly.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "optim_model.h"
#include "replica/core/error.h"
#include "replica/model/params.h"
#include "replica/optim/optimizers.h"
#include "replica/optim/sgd.h"

namespace replica::optim {
namespace {

// torch.optim.SGD([p], lr=0.1, momentum=m) from p = 0.5 with gradients 0.2, -0.1, 0.3 (float32), printed by torch:
// momentum 0.9: p = 0.47999998927116394, 0.47200000286102295, 0.43479999899864197, momentum_buffer
//               0.20000000298023224, 0.07999999076128006, 0.3720000088214874;
// momentum 0:   p = 0.47999998927116394, 0.4899999797344208, 0.4599999785423279 (momentum_buffer None).
TEST(Sgd, MatchesTorchWithAndWithoutMomentum) {
  const model::ParamTable table(optim_test_model());
  const size_t at = table.at("model.layers.0.mlp.up_proj.weight").offset + 3;
  const float torch_p[2][3] = {{0.47999998927116394f, 0.47200000286102295f, 0.43479999899864197f},
                               {0.47999998927116394f, 0.4899999797344208f, 0.4599999785423279f}};
  const float torch_buffer[3] = {0.20000000298023224f, 0.07999999076128006f, 0.3720000088214874f};
  for (int with_momentum : {1, 0}) {
    Sgd sgd(table, SgdConfig{with_momentum ? 0.9 : 0.0}, cpu_backend());
    EXPECT_EQ(sgd.state_names(), with_momentum ? std::vector<std::string>{"momentum_buffer"}
                                               : std::vector<std::string>{});
    std::vector<float> params(table.total(), 0.0f), grads(table.total(), 0.0f);
    params[at] = 0.5f;
    const float g[3] = {0.2f, -0.1f, 0.3f};
    for (int s = 0; s < 3; s++) {
      grads[at] = g[s];
      sgd.step(params.data(), grads.data(), 0.1);
      EXPECT_FLOAT_EQ(params[at], torch_p[1 - with_momentum][s]) << with_momentum << " step " << s + 1;
      if (with_momentum) {
        EXPECT_FLOAT_EQ(sgd.momentum_buffer()[at], torch_buffer[s]) << "step " << s + 1;
      }
    }
    EXPECT_EQ(sgd.step_count(), 3);
    EXPECT_EQ(params[at + 1], 0.0f);  // zero gradient, no weight decay: unchanged
  }
}

// A gradient scale (the clipping coefficient) multiplies each gradient as SGD reads it: the weights and momentum
// buffer of scaling the gradient first, bit for bit, with and without momentum.
TEST(Sgd, AGradScaleHasTheBitsOfScalingTheGradientFirst) {
  const model::ParamTable table(optim_test_model());
  const size_t n = table.total();
  for (double momentum : {0.9, 0.0}) {
    Sgd with_scale(table, SgdConfig{momentum}, cpu_backend()), on_scaled(table, SgdConfig{momentum}, cpu_backend());
    std::vector<float> folded(n), scaled_first(n);
    for (size_t i = 0; i < n; i++) folded[i] = scaled_first[i] = 0.001f * float(i % 101);
    for (float scale : {0.37f, 1.0f, 0.0123f}) {
      std::vector<float> g(n);
      for (size_t i = 0; i < n; i++) g[i] = 0.01f * float(int(i % 17) - 8) + scale;
      with_scale.step(folded.data(), g.data(), 0.05, false, scale);
      for (float& x : g) x *= scale;
      on_scaled.step(scaled_first.data(), g.data(), 0.05);
    }
    EXPECT_EQ(folded, scaled_first) << "momentum " << momentum;
    if (momentum > 0) {
      EXPECT_TRUE(std::equal(with_scale.momentum_buffer(), with_scale.momentum_buffer() + n,
                             on_scaled.momentum_buffer()));
    }
  }
}

// A shard's parts, stored one after the other, update as the same floats of the whole buffer do, with whole or with
// shard weights, and padding between tensors (where a part's range runs over it) is left as it is.
TEST(Sgd, PartsUpdateAsTheWholeBufferAndLeavePaddingAlone) {
  const model::ParamTable table(optim_test_model());
  const size_t n = table.total();
  std::vector<float> grads(n), start(n);
  for (size_t i = 0; i < n; i++) grads[i] = 0.01f * float(int(i % 17) - 8), start[i] = 0.001f * float(i);
  Sgd whole(table, SgdConfig{0.9}, cpu_backend());
  std::vector<float> expected = start;
  for (int s = 0; s < 2; s++) whole.step(expected.data(), grads.data(), 0.05);

  const std::vector<Optimizer::Part> parts = {{3, n / 2, 0}, {n / 2 + 5, n, n / 2 - 3}};
  Sgd shard(table, SgdConfig{0.9}, parts, cpu_backend());
  Sgd shard_on_whole(table, SgdConfig{0.9}, parts, cpu_backend());
  ASSERT_EQ(shard.size(), n - 8);
  std::vector<float> shard_grads(shard.size()), shard_params(shard.size()), whole_params = start;
  for (const Optimizer::Part& p : parts)
    for (size_t i = p.begin; i < p.end; i++) {
      shard_grads[p.offset + i - p.begin] = grads[i];
      shard_params[p.offset + i - p.begin] = start[i];
    }
  for (int s = 0; s < 2; s++) {
    shard.step(shard_params.data(), shard_grads.data(), 0.05);
    shard_on_whole.step(whole_params.data(), shard_grads.data(), 0.05, /*whole_params=*/true);
  }
  std::vector<float> buffer(shard.size()), whole_buffer(n);
  shard.state_to_host(0, buffer.data());
  whole.state_to_host(0, whole_buffer.data());
  for (const Optimizer::Part& p : parts)
    for (size_t i = p.begin; i < p.end; i++) {
      ASSERT_EQ(shard_params[p.offset + i - p.begin], expected[i]) << i;
      ASSERT_EQ(whole_params[i], expected[i]) << i;
      ASSERT_EQ(buffer[p.offset + i - p.begin], whole_buffer[i]) << i;
    }
  // Outside the parts and in padding nothing moved.
  for (size_t i : {size_t(0), size_t(2), n / 2 + 1}) EXPECT_EQ(whole_params[i], start[i]) << i;
  std::vector<bool> in_tensor(n, false);
  for (const model::ParamEntry& e : table.entries())
    std::fill_n(in_tensor.begin() + ptrdiff_t(e.offset), e.numel, true);
  ASSERT_NE(std::count(in_tensor.begin(), in_tensor.end(), false), 0);  // the table pads some tensor to 16 floats
  for (size_t i = 0; i < n; i++) {
    if (!in_tensor[i]) {
      ASSERT_EQ(expected[i], start[i]) << "padding " << i;  // though its gradient is not zero
    }
  }
}

TEST(Sgd, StateGoesToAndFromTheHostExactly) {
  const model::ParamTable table(optim_test_model());
  Sgd a(table, SgdConfig{0.5}, cpu_backend()), b(table, SgdConfig{0.5}, cpu_backend());
  std::vector<float> params(table.total(), 0.25f), grads(table.total(), 0.125f), state(table.total());
  a.step(params.data(), grads.data(), 0.1);
  a.state_to_host(0, state.data());
  b.state_from_host(0, state.data());
  std::vector<float> pa = params, pb = params;
  a.step(pa.data(), grads.data(), 0.1);
  b.step(pb.data(), grads.data(), 0.1);
  EXPECT_TRUE(pa == pb);
  EXPECT_THROW(a.state_to_host(1, state.data()), Error);
  Sgd plain(table, SgdConfig{}, cpu_backend());
  EXPECT_THROW(plain.state_to_host(0, state.data()), Error);
  EXPECT_THROW(Sgd(table, SgdConfig{1.0}, cpu_backend()), Error);
}

// What the memory plan and checkpoints are told of an optimizer without making one is what the one made says.
TEST(Optimizers, StateNamesAreThoseTheOptimizerKeeps) {
  const model::ParamTable table(optim_test_model());
  OptimizerConfig adamw, momentum, plain;
  momentum.name = plain.name = OptimizerName::sgd;
  momentum.sgd.momentum = 0.9;
  for (const OptimizerConfig& c : {adamw, momentum, plain}) {
    const std::unique_ptr<Optimizer> made = make_optimizer(c, table, {{0, table.total(), 0}}, cpu_backend());
    EXPECT_EQ(made->state_names(), state_names(c)) << optimizer_name(c.name);
    EXPECT_EQ(made->size(), table.total());
  }
  EXPECT_EQ(state_names(adamw), (std::vector<std::string>{"exp_avg", "exp_avg_sq"}));
  EXPECT_EQ(state_names(momentum), std::vector<std::string>{"momentum_buffer"});
  EXPECT_TRUE(state_names(plain).empty());
  adamw.adamw.host_moments = true;
  momentum.adamw.host_moments = true;  // AdamW's setting: SGD keeps its buffer in backend memory
  EXPECT_TRUE(state_in_host_memory(adamw));
  EXPECT_FALSE(state_in_host_memory(momentum));
  EXPECT_EQ(parse_optimizer_name("sgd"), OptimizerName::sgd);
  EXPECT_THROW(parse_optimizer_name("adam"), Error);
}

}  // namespace
}  // namespace replica::optim
