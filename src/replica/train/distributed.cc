// Data-parallel start and save: broadcasts from rank 0 and gathers to it, over the control communicator and
// in host memory; the weights and this rank's moments then go to the backend.
#include "replica/train/distributed.h"

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
  RunStart start;
  std::string history, observers;
  if (root) {
    start = start_run(r, table, loader, host_params.data(), skip_step);
    if (!start.resume.is_null()) record_resume(r, start.resume, comm.size());
    history = skip_step.to_json().dump();
    observers = start.observers.dump();
  }
  int64_t counters[3] = {start.step, start.adam_step_count, start.exp_avg.empty() ? 0 : 1};
  if (comm.size() > 1) {
    distributed::broadcast(comm, counters, sizeof counters);
    distributed::broadcast(comm, history);
    distributed::broadcast(comm, start.message);
    distributed::broadcast(comm, observers);
    start.step = counters[0];
    start.adam_step_count = counters[1];
    if (!root) skip_step.load_json(nlohmann::json::parse(history));
    if (!root) start.observers = nlohmann::json::parse(observers);
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

std::optional<ckpt::SaveResult> save_from_rank0(ckpt::CheckpointSaver& saver, TrainStep& step, ckpt::TrainState state) {
  distributed::DataParallel& dp = step.dp();
  const optim::Optimizer& optimizer = step.optimizer();
  state.world_size = dp.comm().size();
  // Every rank takes part in the gathers; rank 0 gathers straight into the saver's snapshot buffers, so it never holds
  // the whole weights and moments twice.
  auto gather = [&](float* params, float* exp_avg, float* exp_avg_sq) {
    dp.gather_weights(params);
    dp.gather_state(optimizer, 0, exp_avg);
    dp.gather_state(optimizer, 1, exp_avg_sq);
  };
  if (dp.comm().rank() != 0) {
    gather(nullptr, nullptr, nullptr);
    return std::nullopt;
  }
  return saver.save(step.table(), gather, std::move(state));
}

}  // namespace replica::train
