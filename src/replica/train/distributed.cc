// Data-parallel start and save: broadcasts from rank 0 and gathers to it, over the control communicator and
// in host memory; the weights and this rank's moments then go to the backend.
#include "replica/train/distributed.h"

#include <nlohmann/json.hpp>

#include "replica/core/error.h"
#include "replica/dist/collectives.h"
#ifdef REPLICA_HAVE_NCCL
#include "replica/dist/nccl.h"
#endif

namespace replica {

std::unique_ptr<Communicator> connect_data(Communicator& control, Backend& backend) {
  if (control.size() == 1 || backend.host_memory()) return nullptr;
#ifdef REPLICA_HAVE_NCCL
  return std::make_unique<NcclCommunicator>(control, local_rank(), static_cast<cudaStream_t>(backend.native_stream()));
#else
  fail("train.device={} with {} ranks needs NCCL, which this build does not have", device_name(backend.device()),
       control.size());
#endif
}

RunStart start_run_all_ranks(const Recipe& r, TrainStep& step, const data::DataLoader& loader) {
  DataParallel& dp = step.dp();
  const ParamTable& table = step.model().table();
  SkipStep& skip_step = step.skip_step();
  Communicator& comm = dp.comm();
  const bool root = comm.rank() == 0;
  std::vector<float> host_params(root ? table.total() : 0);
  RunStart start;
  std::string history;
  if (root) {
    start = start_run(r, table, loader, host_params.data(), skip_step);
    history = skip_step.to_json().dump();
  }
  int64_t counters[3] = {start.step, start.adam_step_count, start.exp_avg.empty() ? 0 : 1};
  if (comm.size() > 1) {
    broadcast(comm, counters, sizeof counters);
    broadcast(comm, history);
    broadcast(comm, start.message);
    start.step = counters[0];
    start.adam_step_count = counters[1];
    if (!root) skip_step.load_json(nlohmann::json::parse(history));
  }
  // Rank 0's weights and moments: to every rank, or each rank's shard of them.
  dp.load_weights(host_params.data());
  if (counters[2]) {
    dp.load_state(step.optimizer(), 0, start.exp_avg.data());
    dp.load_state(step.optimizer(), 1, start.exp_avg_sq.data());
    step.optimizer().set_step_count(start.adam_step_count);
  }
  start.exp_avg = {};  // the optimizer holds them now
  start.exp_avg_sq = {};
  return start;
}

std::optional<SaveResult> save_from_rank0(CheckpointSaver& saver, TrainStep& step, TrainState state) {
  DataParallel& dp = step.dp();
  const Optimizer& optimizer = step.optimizer();
  const ParamTable& table = step.model().table();
  Communicator& comm = dp.comm();
  state.world_size = comm.size();
  if (comm.size() == 1)
    return saver.save(table, [&](float* p, float* m, float* v) {
      dp.gather_weights(p);
      optimizer.state_to_host(0, m);
      optimizer.state_to_host(1, v);
    }, std::move(state));
  // Several ranks: every rank takes part in the gathers now; rank 0 copies the result into the snapshot.
  std::vector<float> w, m, v;
  if (comm.rank() == 0) {
    w.resize(table.total());
    m.resize(table.total());
    v.resize(table.total());
  }
  dp.gather_weights(w.data());
  dp.gather_state(optimizer, 0, m.data());
  dp.gather_state(optimizer, 1, v.data());
  if (comm.rank() != 0) return std::nullopt;
  return saver.save(table, [&](float* p, float* m_out, float* v_out) {
    std::copy(w.begin(), w.end(), p);
    std::copy(m.begin(), m.end(), m_out);
    std::copy(v.begin(), v.end(), v_out);
  }, std::move(state));
}

}  // namespace replica
