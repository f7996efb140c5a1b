// distributed/collectives and distributed/data_parallel with W ranks as threads: shard bounds, all-gather, and a whole step with
// sharded gradients (group-by-group gradients, loss sums, norm, clipping, AdamW, weight all-gather, moment gather)
// bitwise equal at W = 1, 2, 3 and 4, and equal to the unsharded norm and AdamW; the same on emulated devices
// (emulated_device.h), where gradients and weights move between ranks as device memory; and the real model trained
// through the training step (train/step.h) with sharded weights (FSDP) to the bits of whole weights; SGD's one state
// tensor and plain SGD's none gathered and resharded by name.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <nlohmann/json.hpp>
#include <vector>

#include "error_of.h"
#include "rank_devices.h"
#include "replica/core/error.h"
#include "replica/distributed/collectives.h"
#include "replica/data/order.h"
#include "replica/distributed/data_parallel.h"
#include "replica/kernels/cpu/sum_of_squares.h"
#include "replica/model/config.h"
#include "replica/optim/adamw.h"
#include "replica/optim/optimizers.h"
#include "replica/train/step.h"
#include "thread_communicator.h"

namespace replica::distributed {
namespace {

TEST(DistCollectives, AllGather) {
  const size_t n = 70000;
  ThreadGroup group(4);
  group.run([&](Communicator& comm) {
    const std::vector<size_t> bounds{0, 16384, 17000, 52000, n};
    const int r = comm.rank();
    std::vector<double> buf(n, -1.0);
    for (size_t i = bounds[size_t(r)]; i < bounds[size_t(r) + 1]; i++) buf[i] = double(i);
    all_gather(comm, buf.data(), bounds);
    for (size_t i = 0; i < n; i += 997) ASSERT_EQ(buf[i], double(i));
  });
}

model::ModelConfig sharded_model() {  // about 110k parameters: every rank of 4 gets a shard
  return model::model_config_from_json({{"model_type", "olmo3"},
                                        {"vocab_size", 512},
                                        {"hidden_size", 64},
                                        {"intermediate_size", 128},
                                        {"num_hidden_layers", 1},
                                        {"num_attention_heads", 4},
                                        {"num_key_value_heads", 4},
                                        {"head_dim", 16},
                                        {"sliding_window", 4}},
                                       "test model");
}

TEST(DistShardLayout, EveryGroupIsSplitOverEveryRankInWholeNormBlocks) {
  // Groups of 16,016 (head), ~49,000 (the block) and 32,768 (embedding) floats.
  const model::ParamTable table(sharded_model());
  for (int world : {1, 2, 3, 4}) {
    const ShardLayout layout(table, world);
    ASSERT_EQ(layout.groups(), table.groups().size());
    size_t next = 0, total = 0, blocks = 0;
    std::vector<size_t> stored(size_t(world), 0);
    for (size_t g = 0; g < layout.groups(); g++) {
      const model::ParamTable::Range group = layout.group(g);
      EXPECT_EQ(group.begin, next) << "groups tile the buffer in flat order";
      size_t at = group.begin, most = 0, least = SIZE_MAX;
      for (int r = 0; r < world; r++) {
        const ShardLayout::Part& p = layout.part(g, r);
        EXPECT_EQ(p.begin, at) << "parts tile the group in rank order";
        EXPECT_EQ((p.begin - group.begin) % kSquareSumBlock, 0u) << "parts start on a norm block";
        EXPECT_EQ(p.first_block, blocks + (p.begin - group.begin) / kSquareSumBlock) << "blocks numbered in flat order";
        EXPECT_EQ(p.offset, stored[size_t(r)]) << "a rank stores its parts one after the other";
        stored[size_t(r)] += p.length();
        most = std::max(most, p.length());
        least = std::min(least, p.length());
        at = p.end;
      }
      EXPECT_EQ(at, group.end);
      EXPECT_LE(most - least, kSquareSumBlock) << "balanced to a block";
      EXPECT_EQ(layout.group_at(group.begin), g);
      blocks += (group.end - group.begin + kSquareSumBlock - 1) / kSquareSumBlock;
      next = group.end;
    }
    EXPECT_EQ(next, table.total());
    EXPECT_EQ(layout.blocks(), blocks);
    for (int r = 0; r < world; r++) total += layout.shard_size(r);
    EXPECT_EQ(total, table.total());
  }
}

// A stand-in for forward/backward: the gradient of a micro-batch adds, row by row, values of mixed magnitude that
// depend on the row's global id, so any change of summation order changes the bits.
float row_gradient(int32_t row, size_t i) {
  const uint32_t h = uint32_t(row) * 2654435761u ^ uint32_t(i) * 40503u;
  return std::ldexp(float(h % 2001) / 1000.0f - 1.0f, int(h % 23) - 11);
}

struct RankResult {
  std::vector<float> params, exp_avg, exp_avg_sq;
  LossSums sums;
  double norm = 0;
};

// Two steps at W ranks with G = 24 rows, micro-batches of 2 rows (12 micro-batches), on the CPU or, with `emulated`,
// each rank on its own emulated device with an emulated NCCL between them. Returns each rank's result (the whole
// weights: every rank's own copy, or with sharded weights rank 0's gather; moments: rank 0 only). A small
// `sharding.receive_floats` splits each group's reduction into many pieces.
std::vector<RankResult> run(int world, bool emulated = false, Sharding sharding = {}) {
  const model::ParamTable table(sharded_model());
  const size_t n = table.total();
  const int64_t G = 24, M = 2;
  const size_t n_ranks = size_t(world);
  std::vector<RankResult> results(n_ranks);
  run_ranks(world, emulated ? RankDevice::emulated : RankDevice::cpu, [&](Communicator& comm, Communicator& data,
                                                                         Backend& backend) {
    DataParallel dp(comm, data, backend, table, G, M, sharding);
    optim::AdamW adamw(table, optim::AdamWConfig{}, dp.shard_parts(), backend);
    EXPECT_EQ(dp.micro_batches(), G / (M * world));
    RankResult& result = results[size_t(comm.rank())];
    DeviceArray<float> micro_batch_grads(backend, n);
    const std::vector<float> half(n, 0.5f);
    dp.load_weights(half.data());
    for (int step = 0; step < 2; step++) {
      std::vector<int32_t> rows;  // the rank's rows of the global batch, micro-batch by micro-batch: the row ids
      for (uint64_t g : data::rank_rows(G, M, comm.rank(), world)) rows.push_back(int32_t(g) + 100 * step);
      result.sums = dp.gradients([&](int64_t k, model::GradientSink& sink) {
        const int32_t* mb = rows.data() + k * M;
        EXPECT_EQ(mb[1] - mb[0], G / M) << "micro-batch rows are G/M apart";
        EXPECT_EQ((mb[0] % 100) % (G / M), comm.rank() + world * k) << "micro-batch c = rank + W k";
        LossSums s;
        std::vector<float> host(n, 0.0f);
        for (int64_t j = 0; j < M; j++) {
          for (size_t i = 0; i < n; i++) host[i] += row_gradient(mb[j], i);
          s.ce += 1.0 / (1.0 + mb[j]);  // order-sensitive doubles
          s.z += std::sqrt(double(mb[j]));
          s.n_labels += mb[j];
        }
        backend.to_device(micro_batch_grads.data(), host.data(), n * sizeof(float));
        // Group by group in the backward's order, with the embedding open throughout (as with a tied LM head).
        auto add = [&](model::ParamTable::Range r, float* g) {
          backend.add(g, g, micro_batch_grads.data() + r.begin, int64_t(r.end - r.begin));
        };
        const std::vector<model::ParamTable::Range> groups = table.groups();
        const model::ParamTable::Range embed = groups.back();
        float* embed_grads = sink.open(embed);
        for (size_t i = 0; i + 1 < groups.size(); i++) {
          add(groups[i], sink.open(groups[i]));
          sink.close(groups[i]);
        }
        add(embed, embed_grads);
        sink.close(embed);
        return s;
      });
      result.norm = dp.clip(100.0);
      dp.step(adamw, 1e-3);
    }
    if (comm.rank() == 0 || !sharding.weights) result.params.resize(n);
    if (sharding.weights) dp.gather_weights(result.params.data());
    else backend.to_host(result.params.data(), dp.whole_weights(), n * sizeof(float));
    if (comm.rank() == 0) {
      result.exp_avg.resize(n);
      result.exp_avg_sq.resize(n);
    }
    dp.gather_state(adamw, 0, result.exp_avg.data());
    dp.gather_state(adamw, 1, result.exp_avg_sq.data());
  });
  return results;
}

TEST(DistDataParallel, StepIsBitwiseIndependentOfWorldSize) {
  const RankResult one = run(1)[0];
  EXPECT_EQ(one.sums.n_labels, 24 * 100 + 276);  // rows 100..123 of the second step
  EXPECT_GT(one.norm, 100.0);                     // so clipping was active
  for (int world : {2, 3, 4}) {
    const std::vector<RankResult> ranks = run(world);
    for (const RankResult& r : ranks) {
      EXPECT_EQ(one.sums.ce, r.sums.ce) << world;
      EXPECT_EQ(one.sums.z, r.sums.z) << world;
      EXPECT_EQ(one.sums.n_labels, r.sums.n_labels) << world;
      EXPECT_EQ(one.norm, r.norm) << world;
      EXPECT_TRUE(one.params == r.params) << world;
    }
    EXPECT_TRUE(one.exp_avg == ranks[0].exp_avg) << world;
    EXPECT_TRUE(one.exp_avg_sq == ranks[0].exp_avg_sq) << world;
    EXPECT_TRUE(ranks[1].exp_avg.empty());
  }
}

TEST(DistDataParallel, ReductionInPiecesGivesTheSameBits) {
  const RankResult one = run(1)[0];
  for (int world : {2, 3}) {
    const std::vector<RankResult> ranks = run(world, false, Sharding{false, 1000});  // pieces of 500 or 333 floats
    EXPECT_EQ(one.norm, ranks[0].norm) << world;
    EXPECT_TRUE(one.params == ranks[world - 1].params) << world;
    EXPECT_TRUE(one.exp_avg == ranks[0].exp_avg && one.exp_avg_sq == ranks[0].exp_avg_sq) << world;
  }
}

TEST(DistDataParallel, EmulatedDevicesGiveTheCpuBits) {
  const RankResult cpu = run(1)[0];
  for (bool shard_weights : {false, true})
    for (int world : {1, 3, 4}) {
      const std::vector<RankResult> ranks = run(world, true, Sharding{shard_weights});
      for (const RankResult& r : ranks) {
        EXPECT_EQ(cpu.sums.ce, r.sums.ce) << world;
        EXPECT_EQ(cpu.norm, r.norm) << world;
      }
      for (size_t r = 0; r < (shard_weights ? 1 : ranks.size()); r++)
        EXPECT_TRUE(cpu.params == ranks[r].params) << world << (shard_weights ? " sharded" : "");
      EXPECT_TRUE(cpu.exp_avg == ranks[0].exp_avg && cpu.exp_avg_sq == ranks[0].exp_avg_sq) << world;
    }
}

// The real model (tied embeddings, block recomputation), two steps of G = 12 rows of 16 random tokens in
// micro-batches of 2, at W ranks, with the weights whole or sharded, on the CPU or (`emulated`) each rank on its own
// emulated device with an emulated NCCL between them: rank 0's loss sums, norm, weights and moments.
RankResult train_model(int world, Precision precision, bool shard_weights, bool emulated = false, bool float8 = false) {
  model::ModelConfig config = sharded_model();
  config.tie_embeddings = true;
  const int64_t G = 12, M = 2, T = 16;
  RankResult result;
  run_ranks(world, emulated ? RankDevice::emulated : RankDevice::cpu, [&](Communicator& comm, Communicator& data,
                                                                         Backend& backend) {
    train::StepConfig c;
    c.seq_len = T, c.global_batch = G, c.micro_batch = M;
    c.precision = precision;
    c.remat = model::Remat::block;
    c.sharding.weights = shard_weights;
    c.float8 = float8;
    c.schedule = {.type = optim::ScheduleType::constant, .lr = 1e-2};
    c.skip_step.enabled = false;
    c.z_loss = 1e-4;
    train::TrainStep train_step(config, c, comm, data, backend);
    const model::ParamTable& table = train_step.model().table();
    std::vector<float> params(table.total());
    model::init_params(config, table, 5, params.data());
    train_step.dp().load_weights(params.data());
    for (int step = 1; step <= 2; step++) {
      data::Batch batch{.rows = G / world, .seq_len = T, .tokens = {}, .keep = std::vector<uint8_t>(size_t(G / world), 1),
                        .instances = {}, .doc_lens = {}};  // the rank's rows, micro-batch by micro-batch
      for (uint64_t row : data::rank_rows(G, M, comm.rank(), world))
        for (int64_t t = 0; t < T; t++)
          batch.tokens.push_back(int32_t((int64_t(row) * 131 + t * 17 + step * 7) % config.vocab_size));
      const LossSums sums = train_step.gradients(batch);
      const double norm = train_step.update(sums, step).grad_norm;
      if (comm.rank() == 0) {
        result.sums = sums;
        result.norm = norm;
      }
    }
    std::vector<float> w(comm.rank() == 0 ? table.total() : 0), m(w.size()), v(w.size());
    train_step.dp().gather_weights(w.data());
    train_step.dp().gather_state(train_step.optimizer(), 0, m.data());
    train_step.dp().gather_state(train_step.optimizer(), 1, v.data());
    if (comm.rank() == 0) result = {w, m, v, result.sums, result.norm};
  });
  return result;
}

TEST(DistDataParallel, ShardedWeightsTrainTheModelToTheSameBits) {
  for (Precision precision : {Precision::fp32, Precision::bf16}) {
    const RankResult whole = train_model(1, precision, false);
    EXPECT_GT(whole.sums.n_labels, 0);
    for (int world : {1, 2, 3}) {
      const RankResult sharded = train_model(world, precision, true);
      const std::string what = fmt::format("{} at W = {}", precision_name(precision), world);
      EXPECT_EQ(whole.sums.ce, sharded.sums.ce) << what;
      EXPECT_EQ(whole.norm, sharded.norm) << what;
      EXPECT_TRUE(whole.params == sharded.params) << what;
      EXPECT_TRUE(whole.exp_avg == sharded.exp_avg && whole.exp_avg_sq == sharded.exp_avg_sq) << what;
    }
  }
}

// float8 linears under FSDP: each weight's scale comes from the amax of the whole weight (the model casts the group it
// gathered, as torchao's all-reduced precompute), not of a rank's shard, so sharding changes no bit; activations and
// gradients are scaled per micro-batch, whose rows do not depend on the world size.
TEST(DistDataParallel, ShardedWeightsTrainTheFloat8ModelToTheSameBits) {
  const RankResult whole = train_model(1, Precision::bf16, false, false, true);
  EXPECT_NE(whole.sums.ce, train_model(1, Precision::bf16, false).sums.ce);  // float8 is on
  for (int world : {2, 3}) {
    const RankResult sharded = train_model(world, Precision::bf16, true, false, true);
    EXPECT_EQ(whole.sums.ce, sharded.sums.ce) << world;
    EXPECT_EQ(whole.norm, sharded.norm) << world;
    EXPECT_TRUE(whole.params == sharded.params) << world;
  }
}

TEST(DistDataParallel, ShardedWeightsOnEmulatedDevicesGiveTheCpuBits) {
  // Groups gathered into device memory the host cannot touch, over the emulated NCCL, and read by the model there.
  const RankResult cpu = train_model(1, Precision::bf16, false);
  for (int world : {1, 3}) {
    const RankResult device = train_model(world, Precision::bf16, true, true);
    EXPECT_EQ(cpu.sums.ce, device.sums.ce) << world;
    EXPECT_EQ(cpu.norm, device.norm) << world;
    EXPECT_TRUE(cpu.params == device.params) << world;
    EXPECT_TRUE(cpu.exp_avg == device.exp_avg && cpu.exp_avg_sq == device.exp_avg_sq) << world;
  }
}

TEST(DistDataParallel, NormAndUpdateMatchTheUnshardedOnes) {
  // The sharded norm equals the norm's blocks (kSquareSumBlock floats from each group's start) summed in flat order
  // over the whole buffer, and the sharded update equals AdamW over the whole buffer.
  const model::ParamTable table(sharded_model());
  std::vector<float> grads(table.total());
  for (size_t i = 0; i < grads.size(); i++) grads[i] = row_gradient(3, i);
  std::vector<float> params_full(table.total(), 0.25f);
  optim::AdamW full(table, optim::AdamWConfig{}, cpu_backend());
  full.step(params_full.data(), grads.data(), 1e-2);
  double norm = 0.0;
  for (const ShardLayout::Part& g : ShardLayout(table, 1).parts_of(0))  // one part per group
    for (double s : cpu::block_sums_of_squares(grads.data() + g.begin, g.length())) norm += s;
  ThreadGroup group(4);
  group.run([&](Communicator& comm) {
    DataParallel dp(comm, table, 4, 1);
    optim::AdamW adamw(table, optim::AdamWConfig{}, dp.shard_parts(), cpu_backend());
    for (const ShardLayout::Part& p : dp.layout().parts_of(comm.rank()))
      std::copy_n(grads.begin() + ptrdiff_t(p.begin), p.length(), dp.grads() + p.offset);
    EXPECT_EQ(dp.clip(0.0), std::sqrt(norm));
    std::vector<float> params(table.total(), 0.25f);
    dp.load_weights(params.data());
    dp.step(adamw, 1e-2);
    std::copy_n(dp.whole_weights(), params.size(), params.begin());
    EXPECT_TRUE(params == params_full);
    const std::vector<float> full_m(full.exp_avg(), full.exp_avg() + table.total());
    const std::vector<float> full_v(full.exp_avg_sq(), full.exp_avg_sq() + table.total());
    std::vector<float> m(comm.rank() == 0 ? table.total() : 0), v(m.size());
    dp.gather_state(adamw, 0, m.data());
    dp.gather_state(adamw, 1, v.data());
    if (comm.rank() == 0) {
      EXPECT_TRUE(m == full_m && v == full_v);
    }
    // Resharding on load: every rank takes its shard of the whole moments.
    optim::AdamW loaded(table, optim::AdamWConfig{}, dp.shard_parts(), cpu_backend());
    dp.load_state(loaded, 0, full.exp_avg());
    dp.load_state(loaded, 1, full.exp_avg_sq());
    EXPECT_TRUE(std::equal(loaded.exp_avg(), loaded.exp_avg() + adamw.size(), adamw.exp_avg()));
    EXPECT_TRUE(std::equal(loaded.exp_avg_sq(), loaded.exp_avg_sq() + adamw.size(), adamw.exp_avg_sq()));
  });
}

// The optimizer seam with one state tensor and with none: SGD with momentum and plain SGD on sharded gradients give the
// whole-buffer update, their state (momentum_buffer, or nothing) gathers to rank 0 by name, and a run resharded from
// W = 3 to W = 2 after two steps takes the third to the bits of the unsharded one.
TEST(DistDataParallel, SgdStateGathersAndReshardsByName) {
  const model::ParamTable table(sharded_model());
  const size_t n = table.total();
  auto gradient = [&](int step) {
    std::vector<float> g(n);
    for (size_t i = 0; i < n; i++) g[i] = row_gradient(step, i);
    return g;
  };
  const std::vector<float> start(n, 0.25f);
  for (double momentum : {0.9, 0.0}) {
    optim::OptimizerConfig config;
    config.name = optim::OptimizerName::sgd;
    config.sgd.momentum = momentum;
    const std::vector<std::string> names = optim::state_names(config);
    ASSERT_EQ(names.size(), momentum > 0 ? 1u : 0u);
    std::vector<float> expected = start, expected_state(n);
    const std::unique_ptr<optim::Optimizer> whole = optim::make_optimizer(config, table, {{0, n, 0}}, cpu_backend());
    for (int step = 0; step < 3; step++) {
      whole->step(expected.data(), gradient(step).data(), 1e-2, false, 1.0f);
      if (step == 1 && !names.empty()) whole->state_to_host(0, expected_state.data());
    }
    auto step_sharded = [&](DataParallel& dp, optim::Optimizer& optimizer, int step, int rank) {
      const std::vector<float> g = gradient(step);
      for (const ShardLayout::Part& p : dp.layout().parts_of(rank))
        std::copy_n(g.begin() + ptrdiff_t(p.begin), p.length(), dp.grads() + p.offset);
      dp.step(optimizer, 1e-2);
    };
    std::vector<float> saved_params(n), resumed(n);
    std::vector<std::vector<float>> saved_state(names.size(), std::vector<float>(n));
    ThreadGroup(3).run([&](Communicator& comm) {
      DataParallel dp(comm, table, 6, 1);
      const std::unique_ptr<optim::Optimizer> sgd =
          optim::make_optimizer(config, table, dp.shard_parts(), cpu_backend());
      EXPECT_EQ(sgd->state_names(), names);
      dp.load_weights(start.data());
      for (int step = 0; step < 2; step++) step_sharded(dp, *sgd, step, comm.rank());
      const bool root = comm.rank() == 0;
      dp.gather_weights(root ? saved_params.data() : nullptr);
      for (size_t i = 0; i < names.size(); i++) dp.gather_state(*sgd, i, root ? saved_state[i].data() : nullptr);
    });
    if (!names.empty()) {
      EXPECT_TRUE(saved_state[0] == expected_state);
    }
    ThreadGroup(2).run([&](Communicator& comm) {
      DataParallel dp(comm, table, 6, 1);
      const std::unique_ptr<optim::Optimizer> sgd =
          optim::make_optimizer(config, table, dp.shard_parts(), cpu_backend());
      dp.load_weights(saved_params.data());
      for (size_t i = 0; i < names.size(); i++) dp.load_state(*sgd, i, saved_state[i].data());
      step_sharded(dp, *sgd, 2, comm.rank());
      dp.gather_weights(comm.rank() == 0 ? resumed.data() : nullptr);
    });
    EXPECT_TRUE(resumed == expected) << "momentum " << momentum;
  }
}

TEST(DistDataParallel, RejectsBatchNotDivisibleByRanksTimesMicroBatch) {
  const model::ParamTable table(sharded_model());
  ThreadGroup group(2);
  group.run([&](Communicator& comm) { EXPECT_THROW(DataParallel dp(comm, table, 6, 2), Error); });
  // The refusal names a micro-batch size that fits, where one does (a global batch of 8 in micro-batches of 8 over
  // 4 ranks: 2 fits).
  ThreadGroup four(4);
  four.run([&](Communicator& comm) {
    const std::string message = error_of([&] { DataParallel dp(comm, table, 8, 8); });
    EXPECT_NE(message.find("data.global_batch_size=8 must be a multiple of data.micro_batch_size=8 times the 4 "
                           "data-parallel ranks; data.micro_batch_size=2 fits 4 data-parallel ranks"),
              std::string::npos)
        << message;
  });
}

TEST(DistDataParallel, MicroBatchHintNamesTheLargestSizeThatFits) {
  EXPECT_EQ(micro_batch_hint(8, 8, 4), "; data.micro_batch_size=2 fits 4 data-parallel ranks");
  EXPECT_EQ(micro_batch_hint(24, 5, 2), "; data.micro_batch_size=4 fits 2 data-parallel ranks");  // 12 = 4 × 3
  EXPECT_EQ(micro_batch_hint(14, 4, 2), "; data.micro_batch_size=1 fits 2 data-parallel ranks");  // 7 is prime
  EXPECT_EQ(micro_batch_hint(6, 2, 4), "; no micro-batch size splits 6 instances evenly over 4 data-parallel ranks");
}

}  // namespace
}  // namespace replica::distributed
