// distributed/context_parallel on every device: two training steps with each 256-token row split over the ranks of a
// context-parallel group (threads, rank_devices.h), packed documents, sliding windows and YaRN, at W_dp × CP = 1×2
// and 2×2. On emulated devices (memory closed to the host, the emulated NCCL) the run gives the CPU run's bits; on
// the CUDA backend (the emulated GPU in CI, cuda_emu.unit_tests_cuda; a real one under bench/gpu/run.sh) it tracks
// the CPU run within train_cuda.sh's bounds and reruns bit for bit, the KV heads gathered at once changing no bit.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "rank_devices.h"
#include "replica/data/order.h"
#include "replica/model/config.h"
#include "replica/train/step.h"

namespace replica::distributed {
namespace {

// The stage-3 shape in small: a sliding layer and a full one with YaRN, GQA, a window that ends inside a tile, and a
// head dim the tensor-core attention takes (so bf16 on CUDA runs the mma.sync kernels with a query offset).
model::ModelConfig two_layer_model() {
  return model::model_config_from_json({{"model_type", "olmo3"},
                                        {"vocab_size", 256},
                                        {"hidden_size", 32},
                                        {"intermediate_size", 64},
                                        {"num_hidden_layers", 2},
                                        {"layer_types", {"sliding_attention", "full_attention"}},
                                        {"num_attention_heads", 4},
                                        {"num_key_value_heads", 2},
                                        {"head_dim", 16},
                                        {"sliding_window", 40},
                                        {"max_position_embeddings", 256},
                                        {"rope_scaling",
                                         {{"rope_type", "yarn"},
                                          {"factor", 4.0},
                                          {"original_max_position_embeddings", 64},
                                          {"beta_fast", 32},
                                          {"beta_slow", 1},
                                          {"attention_factor", 1.1386294361119891}}}},
                                       "context-parallel test model");
}

constexpr int64_t kT = 256, kRows = 2, kSteps = 2;
constexpr double kLr = 1e-2;

// Exchanges begun by start_exchange happen only at their wait(): send buffers are read and receive buffers written
// at the last moment a transport may, so a schedule that touches a buffer in flight gets other bits than exchanges
// made at once (Communicator's own start_exchange, the sequential schedule).
class DeferredExchanges final : public WrappingCommunicator {
 public:
  explicit DeferredExchanges(Communicator& inner) : WrappingCommunicator(inner) {}
  std::string name() const override { return "deferred"; }
  std::unique_ptr<PendingExchange> start_exchange(const std::vector<Send>& sends,
                                                  const std::vector<Recv>& recvs) override {
    return std::make_unique<Deferred>(inner_, sends, recvs);
  }

 private:
  struct Deferred final : PendingExchange {
    Deferred(Communicator& inner, std::vector<Send> sends, std::vector<Recv> recvs)
        : inner(inner), sends(std::move(sends)), recvs(std::move(recvs)) {}
    void wait() override { inner.exchange(sends, recvs); }
    Communicator& inner;
    std::vector<Send> sends;
    std::vector<Recv> recvs;
  };
};

struct TrainedRun {
  std::vector<double> losses, norms;  // per step
  std::vector<float> weights;         // after the last step
};

// kSteps steps of kRows packed rows (one per micro-batch) at W_dp × CP = world / cp × cp on `device`; `deferred`:
// the backend memory's exchanges through DeferredExchanges.
TrainedRun train(RankDevice device, int world, int cp, Precision precision, int64_t head_stride = 0,
                 bool deferred = false) {
  const model::ModelConfig config = two_layer_model();
  TrainedRun run;
  run_ranks(world, device, [&](Communicator& control, Communicator& device_data, Backend& backend) {
    DeferredExchanges deferred_data(device_data);
    Communicator& data = deferred ? deferred_data : device_data;
    train::StepConfig c;
    c.seq_len = kT, c.global_batch = kRows, c.micro_batch = 1;
    c.precision = precision;
    c.context = {.degree = cp, .head_stride = head_stride};
    c.sharding.weights = world > cp;  // FSDP over data × context ranks when there are several replicas
    c.schedule = {.type = optim::ScheduleType::constant, .lr = kLr};
    c.skip_step.enabled = false;
    train::TrainStep step(config, c, control, data, backend);
    std::vector<float> params(step.table().total());
    model::init_params(config, step.table(), 7, params.data());
    step.dp().load_weights(params.data());
    const int W = step.data_ranks();
    for (int64_t s = 1; s <= kSteps; s++) {
      // The same rows every step, so that the loss falls.
      data::Batch batch{.rows = kRows / W,
                        .seq_len = kT,
                        .tokens = {},
                        .keep = std::vector<uint8_t>(size_t(kRows / W), 1),
                        .instances = {},
                        .doc_lens = {}};
      for (uint64_t row : data::rank_rows(kRows, 1, step.data_rank(), W)) {
        for (int64_t t = 0; t < kT; t++)
          batch.tokens.push_back(int32_t((int64_t(row) * 131 + t * 17) % config.vocab_size));
        // Documents across the slices' boundary (128), one longer than the window, one of a single token.
        batch.doc_lens.push_back(row % 2 ? std::vector<int32_t>{130, 126} : std::vector<int32_t>{1, 70, 5, 90, 90});
      }
      const train::StepResult result = step.run(batch, s);
      if (control.rank() == 0) {
        run.losses.push_back(result.loss());
        run.norms.push_back(result.grad_norm);
      }
    }
    std::vector<float> weights(control.rank() == 0 ? step.table().total() : 0);
    if (step.dp().shards_weights())
      step.dp().gather_weights(weights.data());
    else if (control.rank() == 0)
      backend.to_host(weights.data(), step.dp().whole_weights(), weights.size() * sizeof(float));
    if (control.rank() == 0) run.weights = std::move(weights);
  });
  return run;
}

void expect_same_bits(const TrainedRun& want, const TrainedRun& got, const std::string& what) {
  EXPECT_EQ(want.losses, got.losses) << what;
  EXPECT_EQ(want.norms, got.norms) << what;
  EXPECT_TRUE(want.weights == got.weights) << what;
}

// train_cuda.sh's bound on the relative loss difference of a GPU run from the CPU run (fp32: 2e-3, bf16: 2e-2), on the
// norms too; every weight within 2 Σ lr of the CPU's (an AdamW step moves an element by about lr at most, so one
// whose gradient's sign the rounding flips moves by 2 lr).
void expect_tracks(const TrainedRun& cpu, const TrainedRun& gpu, Precision precision, const std::string& what) {
  const double bound = precision == Precision::bf16 ? 2e-2 : 2e-3;
  ASSERT_EQ(cpu.losses.size(), gpu.losses.size()) << what;
  for (size_t s = 0; s < cpu.losses.size(); s++) {
    EXPECT_LE(std::abs(gpu.losses[s] - cpu.losses[s]), bound * std::abs(cpu.losses[s])) << what << " step " << s + 1;
    EXPECT_LE(std::abs(gpu.norms[s] - cpu.norms[s]), bound * std::abs(cpu.norms[s])) << what << " step " << s + 1;
  }
  ASSERT_EQ(cpu.weights.size(), gpu.weights.size()) << what;
  double worst = 0;
  for (size_t i = 0; i < cpu.weights.size(); i++)
    worst = std::max(worst, double(std::abs(gpu.weights[i] - cpu.weights[i])));
  EXPECT_LE(worst, 2 * kSteps * kLr) << what;
}

// The meshes of the tests: W_dp × CP = 1×2 with the KV heads gathered one at a time, and 2×2 (FSDP) with all at once.
struct Mesh {
  int world, cp;
  int64_t head_stride;
};
constexpr Mesh kMeshes[] = {{2, 2, 1}, {4, 2, 0}};

std::string mesh_text(const Mesh& m) { return fmt::format("W_dp × CP = {}×{}", m.world / m.cp, m.cp); }

TEST(ContextParallel, EmulatedDevicesWithExchangesInFlightGiveTheCpuBits) {
  // Keys, values and their gradients move between ranks as device memory the host cannot touch, the documents'
  // offsets are staged to the device, and every exchange begun is deferred to its wait (with two chunks of heads,
  // the next chunk's gather and the last chunk's reduce-scatter are in flight while a kernel runs). The CPU run's
  // exchanges are made at once, one chunk after another, and it gathers all heads at once: heads are independent.
  for (const Mesh& m : kMeshes) {
    const TrainedRun cpu = train(RankDevice::cpu, m.world, m.cp, Precision::bf16);
    EXPECT_LT(cpu.losses.back(), cpu.losses.front()) << mesh_text(m);
    expect_same_bits(cpu, train(RankDevice::emulated, m.world, m.cp, Precision::bf16, m.head_stride, true),
                     mesh_text(m));
  }
}

TEST(ContextParallelCuda, TracksTheCpuRunAndRerunsBitwise) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA backend";
  for (Precision precision : {Precision::fp32, Precision::bf16})
    for (const Mesh& m : kMeshes) {
      if (precision == Precision::fp32 && m.world == 4) continue;  // the 2×2 mesh once, on the tensor-core kernels
      const std::string what = fmt::format("{} at {}", precision_name(precision), mesh_text(m));
      const TrainedRun gpu = train(RankDevice::cuda, m.world, m.cp, precision);
      expect_tracks(train(RankDevice::cpu, m.world, m.cp, precision), gpu, precision, what);
      // The same degree again, gathering the heads in the mesh's chunks: the same bits.
      expect_same_bits(gpu, train(RankDevice::cuda, m.world, m.cp, precision, m.head_stride), what + ", rerun");
    }
}

}  // namespace
}  // namespace replica::distributed
