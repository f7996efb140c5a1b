// replica dist-selftest (hidden; run under mpirun by tests/integration/dist_*.sh): a few sharded
// data-parallel steps of a small random model on random tokens through the job's Communicator, printing
// each step's loss and grad norm and a hash of the weights, which must not depend on the rank count; and
// fault injection (a rank that dies or hangs at a given step).
#include <fmt/core.h>
#include <signal.h>
#include <unistd.h>
#include <xxhash.h>

#include <nlohmann/json.hpp>

#include "replica/cli/command.h"
#include "replica/core/threads.h"
#include "replica/data/order.h"
#include "replica/train/step.h"

namespace replica::cli {

static Command dist_selftest_command("dist-selftest", "Data-parallel self-test (run under mpirun)", [](CLI::App& app) {
  app.group("");  // hidden from --help
  struct Options {
    int64_t steps = 3, global_batch = 8, micro_batch = 1, threads = 1;
    int fault_rank = -1;
    int64_t fault_step = 2;
    std::string fault = "none";
    bool shard_weights = false;
  };
  auto o = std::make_shared<Options>();
  app.add_option("--steps", o->steps, "optimizer steps");
  app.add_option("--global-batch", o->global_batch, "instances per step, over all ranks");
  app.add_option("--micro-batch", o->micro_batch, "instances per forward/backward");
  app.add_option("--threads", o->threads, "threads per rank");
  app.add_flag("--shard-weights", o->shard_weights, "shard the weights too (FSDP)");
  app.add_option("--fault", o->fault, "none | die | hang: what --fault-rank does at --fault-step")
      ->check(CLI::IsMember({"none", "die", "hang"}));
  app.add_option("--fault-rank", o->fault_rank, "the rank that fails");
  app.add_option("--fault-step", o->fault_step, "the step at which it fails");
  return std::function<int()>([o] {
    std::unique_ptr<distributed::Communicator> comm = distributed::connect();
    set_num_threads(int(o->threads));
    const model::ModelConfig config =
        model::model_config_from_json({{"model_type", "olmo3"},
                                       {"vocab_size", 1024},
                                       {"hidden_size", 32},
                                       {"intermediate_size", 64},
                                       {"num_hidden_layers", 2},
                                       {"num_attention_heads", 4},
                                       {"num_key_value_heads", 2},
                                       {"head_dim", 8},
                                       {"sliding_window", 4},
                                       {"layer_types", {"sliding_attention", "full_attention"}}},
                                      "dist-selftest model");
    const int64_t G = o->global_batch, M = o->micro_batch, T = 16;
    train::StepConfig c;
    c.seq_len = T, c.global_batch = G, c.micro_batch = M;
    c.sharding.weights = o->shard_weights;
    c.schedule = {.type = optim::ScheduleType::constant, .lr = 1e-2};
    c.skip_step.enabled = false;
    c.z_loss = 1e-4;
    train::TrainStep train_step(config, c, *comm, *comm, cpu_backend());
    const model::ParamTable& table = train_step.model().table();
    std::vector<float> params(table.total(), 0.0f);
    model::init_params(config, table, 0, params.data());
    train_step.dp().load_weights(params.data());
    const int rank = comm->rank(), world = comm->size();
    for (int64_t step = 1; step <= o->steps; step++) {
      if (rank == o->fault_rank && step == o->fault_step) {
        if (o->fault == "die") raise(SIGKILL);
        if (o->fault == "hang") pause();
      }
      // This rank's rows of the step's global batch, micro-batch by micro-batch: token (row, t) is a hash.
      data::Batch batch{.rows = G / world, .seq_len = T, .tokens = {}, .keep = std::vector<uint8_t>(size_t(G / world), 1),
                        .instances = {}, .doc_lens = {}};
      for (uint64_t row : data::rank_rows(uint64_t(G), uint64_t(M), rank, world))
        for (int64_t t = 0; t < T; t++)
          batch.tokens.push_back(int32_t(XXH3_64bits_withSeed(&t, sizeof t, uint64_t(step * 1000 + int64_t(row))) % 1024));
      const LossSums sums = train_step.gradients(batch);
      const train::StepResult result = train_step.update(sums, step);
      if (rank == 0)
        fmt::print("step {} loss {:.17g} z {:.17g} labels {} grad_norm {:.17g}\n", step, sums.ce / double(G * (T - 1)),
                   sums.z, sums.n_labels, result.grad_norm);
    }
    distributed::DataParallel& dp = train_step.dp();
    dp.gather_weights(params.data());
    std::string line = fmt::format("ranks {} weights {:016x}", world, XXH3_64bits(params.data(), params.size() * 4));
    const std::vector<std::string> states = train_step.optimizer().state_names();
    std::vector<float> state(rank == 0 ? params.size() : 0);
    for (size_t i = 0; i < states.size(); i++) {  // each state tensor by name: exp_avg, exp_avg_sq for AdamW
      dp.gather_state(train_step.optimizer(), i, state.data());
      line += fmt::format(" {} {:016x}", states[i], XXH3_64bits(state.data(), state.size() * sizeof(float)));
    }
    if (rank == 0) fmt::print("{} comm {:.3f} s\n", line, comm->comm_seconds());
    return 0;
  });
});

}  // namespace replica::cli
