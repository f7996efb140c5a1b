// CheckpointSaver: saves checkpoints on a background thread (SCHED_IDLE) so training continues. save() has
// the step's weights and optimizer state (its state tensors by name) copied into host buffers it owns (the only time
// the loop waits, besides waiting for a previous save still in flight), then writes the directory with
// write_checkpoint().
#pragma once
#include <atomic>
#include <exception>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "replica/ckpt/checkpoint.h"

namespace replica::ckpt {

struct SaveResult {
  std::string dir;
  int64_t step = 0;
  double snapshot_s = 0.0;  // time the caller was blocked: waiting for the previous save, copying tensors
  double write_s = 0.0;     // background time: files, fsyncs, manifest, rename
};

class CheckpointSaver {
 public:
  // Saves the weights and the optimizer state tensors `state_names` (optim::Optimizer::state_names, in its order).
  // `floats`: the parameter buffer length, to allocate (and page in) the snapshot buffers now rather than in the
  // first save; 0 = on the first save.
  CheckpointSaver(std::string root, int64_t keep, std::vector<std::string> state_names, size_t floats = 0);
  ~CheckpointSaver();  // waits for a save in flight (errors are dropped here: call wait() to see them)
  CheckpointSaver(const CheckpointSaver&) = delete;
  CheckpointSaver& operator=(const CheckpointSaver&) = delete;

  // Fills the host buffers params and each of optimizer.tensors (table.total() floats each, laid out by the table;
  // optimizer.names are the constructor's state_names).
  using Snapshot = std::function<void(float* params, OptimizerState& optimizer)>;

  // Takes a snapshot of the step's tensors and starts writing. A previous save still running is waited for
  // first. Returns the finished previous save, if there was one in flight.
  std::optional<SaveResult> save(const model::ParamTable& table, const Snapshot& snapshot, TrainState state);
  // The save that finished since the last call, if any; rethrows a background failure.
  std::optional<SaveResult> poll();
  // Waits for the save in flight (if any) and returns it; rethrows a background failure.
  std::optional<SaveResult> wait();

 private:
  std::optional<SaveResult> join();
  std::string root_;
  int64_t keep_;
  const model::ParamTable* table_ = nullptr;
  std::vector<float> params_;
  OptimizerState optimizer_;
  std::thread thread_;
  std::atomic<bool> done_{false};
  SaveResult result_;
  std::exception_ptr error_;
};

}  // namespace replica::ckpt
