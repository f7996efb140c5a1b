// Background checkpoint saving.
#include "replica/ckpt/saver.h"

#include <pthread.h>
#include <sched.h>

#include <chrono>
#include <cstring>

#include "replica/core/error.h"

namespace replica {

namespace {

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// memcpy split over the OpenMP threads (fixed partition).
void parallel_copy(float* dst, const float* src, size_t n) {
  const int64_t chunks = 64;
  const size_t per = (n + chunks - 1) / chunks;
#pragma omp parallel for schedule(static)
  for (int64_t c = 0; c < chunks; c++) {
    const size_t begin = std::min(n, size_t(c) * per), end = std::min(n, begin + per);
    if (end > begin) std::memcpy(dst + begin, src + begin, (end - begin) * sizeof(float));
  }
}

}  // namespace

CheckpointSaver::CheckpointSaver(std::string root, int64_t keep, size_t floats)
    : root_(std::move(root)), keep_(keep), params_(floats), exp_avg_(floats), exp_avg_sq_(floats) {}

CheckpointSaver::~CheckpointSaver() {
  if (thread_.joinable()) thread_.join();
}

std::optional<SaveResult> CheckpointSaver::save(const ParamTable& table, const float* params, const AdamW& adamw,
                                                TrainState state) {
  check(adamw.exp_avg.size() == table.total(),
        "checkpoint: the optimizer holds a shard of the state; gather it before saving");
  const auto start = std::chrono::steady_clock::now();
  std::optional<SaveResult> previous = wait();
  table_ = &table;
  params_.resize(table.total());
  exp_avg_.resize(table.total());
  exp_avg_sq_.resize(table.total());
  parallel_copy(params_.data(), params, table.total());
  parallel_copy(exp_avg_.data(), adamw.exp_avg.data(), table.total());
  parallel_copy(exp_avg_sq_.data(), adamw.exp_avg_sq.data(), table.total());
  result_ = SaveResult{"", state.step, seconds_since(start), 0.0};
  done_ = false;
  thread_ = std::thread([this, state = std::move(state)] {
    // SCHED_IDLE: the writer runs on cycles the training threads leave idle, so it does not stall their
    // OpenMP barriers; the save takes longer, the steps do not.
    const sched_param idle{};
    pthread_setschedparam(pthread_self(), SCHED_IDLE, &idle);
    const auto begin = std::chrono::steady_clock::now();
    try {
      const CheckpointTensors tensors{table_, params_.data(), exp_avg_.data(), exp_avg_sq_.data()};
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

}  // namespace replica
