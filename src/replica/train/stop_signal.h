// SIGINT, SIGTERM and SIGUSR1 while a run trains: the current step finishes, a checkpoint is saved and the loop ends.
// SIGUSR1 is the one to ask Slurm for ahead of a time limit (`sbatch --signal=USR1@600`): unhandled it would kill the
// process, and unlike SIGTERM no one else sends it. The previous handlers come back when the StopSignal goes.
#pragma once
#include <atomic>
#include <csignal>

namespace replica::train {

class StopSignal {
 public:
  StopSignal() {
    requested() = false;
    for (int i = 0; i < kCount; i++) previous_[i] = std::signal(kSignals[i], request);
  }
  ~StopSignal() {
    for (int i = 0; i < kCount; i++) std::signal(kSignals[i], previous_[i]);
  }
  StopSignal(const StopSignal&) = delete;
  StopSignal& operator=(const StopSignal&) = delete;

  bool asked() const { return requested(); }  // this rank got a signal (the loop asks every rank: any_rank)

 private:
  static constexpr int kCount = 3;
  static constexpr int kSignals[kCount] = {SIGINT, SIGTERM, SIGUSR1};
  static std::atomic<bool>& requested() {
    static std::atomic<bool> flag{false};
    return flag;
  }
  static void request(int) { requested() = true; }
  using Handler = void (*)(int);
  Handler previous_[kCount];
};

}  // namespace replica::train
