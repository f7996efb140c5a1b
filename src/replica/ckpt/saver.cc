// Background checkpoint saving.
#include "replica/ckpt/saver.h"

#include <pthread.h>
#include <sched.h>

#include <chrono>

#include "replica/core/error.h"

namespace replica::ckpt {

namespace {

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

CheckpointSaver::CheckpointSaver(std::string root, int64_t keep, std::vector<std::string> state_names, size_t floats)
    : root_(std::move(root)), keep_(keep), params_(floats), optimizer_(std::move(state_names), floats) {}

CheckpointSaver::~CheckpointSaver() {
  if (thread_.joinable()) thread_.join();
}

std::optional<SaveResult> CheckpointSaver::save(const model::ParamTable& table, const Snapshot& snapshot,
                                                TrainState state) {
  const auto start = std::chrono::steady_clock::now();
  std::optional<SaveResult> previous = wait();
  table_ = &table;
  params_.resize(table.total());
  for (std::vector<float>& tensor : optimizer_.tensors) tensor.resize(table.total());
  snapshot(params_.data(), optimizer_);
  result_ = SaveResult{"", state.step, seconds_since(start), 0.0};
  done_ = false;
  thread_ = std::thread([this, state = std::move(state)] {
    // SCHED_IDLE: the writer runs on cycles the training threads leave idle, so it does not stall their
    // OpenMP barriers; the save takes longer, the steps do not.
    const sched_param idle{};
    pthread_setschedparam(pthread_self(), SCHED_IDLE, &idle);
    const auto begin = std::chrono::steady_clock::now();
    try {
      const CheckpointTensors tensors{table_, params_.data(), &optimizer_};
      result_.dir = write_checkpoint(root_, tensors, state, keep_);
    } catch (...) {
      error_ = std::current_exception();
    }
    result_.write_s = seconds_since(begin);
    done_ = true;
  });
  return previous;
}

std::optional<SaveResult> CheckpointSaver::join() {
  thread_.join();
  if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
  return result_;
}

std::optional<SaveResult> CheckpointSaver::poll() {
  if (!thread_.joinable() || !done_) return std::nullopt;
  return join();
}

std::optional<SaveResult> CheckpointSaver::wait() {
  if (!thread_.joinable()) return std::nullopt;
  return join();
}

}  // namespace replica::ckpt
