// Data-parallel start and save: broadcasts from rank 0 and gathers to it.
#include "replica/train/distributed.h"

#include <nlohmann/json.hpp>

#include "replica/dist/collectives.h"

namespace replica {

RunStart start_run_all_ranks(const Recipe& r, DataParallel& dp, const ParamTable& table,
                             const data::DataLoader& loader, float* params, SkipStep& skip_step) {
  Communicator& comm = dp.comm();
  if (comm.size() == 1) return start_run(r, table, loader, params, dp.optimizer(), skip_step);
  AdamW whole(table, dp.optimizer().config());
  RunStart start;
  std::string history;
  if (comm.rank() == 0) {
    start = start_run(r, table, loader, params, whole, skip_step);
    history = skip_step.to_json().dump();
  }
  broadcast(comm, params, table.total() * sizeof(float));
  broadcast(comm, whole.exp_avg.data(), table.total() * sizeof(float));
  broadcast(comm, whole.exp_avg_sq.data(), table.total() * sizeof(float));
  int64_t counters[2] = {start.step, whole.step_count};
  broadcast(comm, counters, sizeof counters);
  broadcast(comm, history);
  broadcast(comm, start.message);
  start.step = counters[0];
  if (comm.rank() != 0) skip_step.load_json(nlohmann::json::parse(history));
  dp.load_moments(whole.exp_avg.data(), whole.exp_avg_sq.data(), counters[1]);
  return start;
}

std::optional<SaveResult> save_from_rank0(CheckpointSaver& saver, DataParallel& dp, const ParamTable& table,
                                          const float* params, TrainState state) {
  Communicator& comm = dp.comm();
  state.world_size = comm.size();
  if (comm.size() == 1) return saver.save(table, params, dp.optimizer(), std::move(state));
  if (comm.rank() != 0) {
    std::vector<float> none, none_sq;  // only rank 0 receives
    dp.gather_moments(none, none_sq);
    return std::nullopt;
  }
  AdamW whole(table, dp.optimizer().config());
  dp.gather_moments(whole.exp_avg, whole.exp_avg_sq);
  whole.step_count = dp.optimizer().step_count;
  return saver.save(table, params, whole, std::move(state));
}

}  // namespace replica
