// Data-parallel start and save: broadcasts from rank 0 and gathers to it, over the control communicator and
// in host memory; the weights and this rank's shard of each optimizer state tensor then go to the backend.
#include "replica/train/rank_sync.h"

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "replica/core/error.h"
#include "replica/distributed/collectives.h"
#ifdef REPLICA_HAVE_NCCL
#include "replica/distributed/launch.h"
#include "replica/distributed/nccl.h"
#endif

namespace replica::train {

std::unique_ptr<distributed::Communicator> connect_data(distributed::Communicator& control, Backend& backend) {
  if (control.size() == 1 || backend.host_memory()) return nullptr;
#ifdef REPLICA_HAVE_NCCL
  return std::make_unique<distributed::NcclCommunicator>(control, distributed::local_gpu(),
                                                  static_cast<cudaStream_t>(backend.native_stream()));
#else
  fail("train.device={} with {} ranks needs NCCL, which this build does not have", device_name(backend.device()),
       control.size());
#endif
}

namespace {

// One line per resume in run.dir/resumes.jsonl (docs/checkpoints.md), read by `replica reproduce`'s page: the step
// and checkpoint resumed from, the world size saved and now, what the resume changed.
void record_resume(const Recipe& r, nlohmann::json event, int world_size) {
  event["world_size"] = world_size;
  event["time"] = double(std::chrono::duration_cast<std::chrono::milliseconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count()) /
                  1000.0;
  std::filesystem::create_directories(r.run.dir);  // train.resume_from may name a checkpoint of another run
  const std::string path = (std::filesystem::path(r.run.dir) / "resumes.jsonl").string();
  std::ofstream out(path, std::ios::app);
  out << event.dump() << "\n";
  check(out.good(), "{}: cannot record the resume", path);
}

}  // namespace

RunStart start_run_all_ranks(const Recipe& r, TrainStep& step, const data::DataLoader& loader) {
  distributed::DataParallel& dp = step.dp();
  const model::ParamTable& table = step.model().table();
  optim::SkipStep& skip_step = step.skip_step();
  distributed::Communicator& comm = dp.comm();
  const bool root = comm.rank() == 0;
  std::vector<float> host_params(root ? table.total() : 0);
  optim::Optimizer& optimizer = step.optimizer();
  RunStart start;
  std::string history, observers;
  if (root) {
    start = start_run(r, table, loader, optimizer.state_names(), host_params.data(), skip_step);
    if (!start.resume.is_null()) record_resume(r, start.resume, comm.size());
    history = skip_step.to_json().dump();
    observers = start.observers.dump();
  }
  int64_t counters[3] = {start.step, start.optimizer_step_count, start.optimizer_loaded};
  if (comm.size() > 1) {
    distributed::broadcast(comm, counters, sizeof counters);
    distributed::broadcast(comm, history);
    distributed::broadcast(comm, start.message);
    distributed::broadcast(comm, observers);
    start.step = counters[0];
    start.optimizer_step_count = counters[1];
    start.optimizer_loaded = counters[2] != 0;
    if (!root) skip_step.load_json(nlohmann::json::parse(history));
    if (!root) start.observers = nlohmann::json::parse(observers);
  }
  // Rank 0's weights and optimizer state: to every rank, or each rank's shard of them. Every rank makes the same
  // optimizer, so each takes part in one load per state tensor it names (rank 0 read exactly those).
  dp.load_weights(host_params.data());
  if (start.optimizer_loaded) {
    const size_t states = optimizer.state_names().size();
    for (size_t i = 0; i < states; i++) dp.load_state(optimizer, i, root ? start.optimizer.tensors[i].data() : nullptr);
    optimizer.set_step_count(start.optimizer_step_count);
  }
  start.optimizer = {};  // the optimizer holds it now
  return start;
}

std::optional<ckpt::SaveResult> save_from_rank0(ckpt::CheckpointSaver& saver, TrainStep& step, ckpt::TrainState state) {
  distributed::DataParallel& dp = step.dp();
  const optim::Optimizer& optimizer = step.optimizer();
  state.world_size = dp.comm().size();
  // Every rank takes part in the gathers, one per state tensor the optimizer names; rank 0 gathers straight into the
  // saver's snapshot buffers (made for the same names: CheckpointObserver), so it never holds the whole weights and
  // optimizer state twice.
  const size_t states = optimizer.state_names().size();
  if (dp.comm().rank() != 0) {
    dp.gather_weights(nullptr);
    for (size_t i = 0; i < states; i++) dp.gather_state(optimizer, i, nullptr);
    return std::nullopt;
  }
  return saver.save(
      step.table(),
      [&](float* params, ckpt::OptimizerState& whole) {
        dp.gather_weights(params);
        for (size_t i = 0; i < states; i++) dp.gather_state(optimizer, i, whole.tensors[i].data());
      },
      std::move(state));
}

}  // namespace replica::train
