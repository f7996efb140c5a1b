// SIGINT and SIGTERM while a run trains: the current step finishes, a checkpoint is saved and the loop ends. The
// previous handlers come back when the StopSignal goes.
#pragma once
#include <atomic>
#include <csignal>

namespace replica::train {

class StopSignal {
 public:
  StopSignal() {
    requested() = false;
    previous_int_ = std::signal(SIGINT, request);
    previous_term_ = std::signal(SIGTERM, request);
  }
  ~StopSignal() {
    std::signal(SIGINT, previous_int_);
    std::signal(SIGTERM, previous_term_);
  }
  StopSignal(const StopSignal&) = delete;
  StopSignal& operator=(const StopSignal&) = delete;

  bool asked() const { return requested(); }  // this rank got a signal (the loop asks every rank: any_rank)

 private:
  static std::atomic<bool>& requested() {
    static std::atomic<bool> flag{false};
    return flag;
  }
  static void request(int) { requested() = true; }
  using Handler = void (*)(int);
  Handler previous_int_, previous_term_;
};

}  // namespace replica::train
