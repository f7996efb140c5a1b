// Progress reporting for long work: on a terminal one line rewritten in place (step/total, loss, lr,
// grad norm, tokens/s, MFU, ETA); otherwise plain log lines every `log_every` steps.
#pragma once
#include <chrono>
#include <cstdint>
#include <string>

namespace replica::metrics {

struct StepReport {
  int64_t step = 0, total = 0;
  double loss = 0, lr = 0, grad_norm = 0, tokens_per_s = 0, mfu = 0;
  bool skipped = false;
};

class Progress {
 public:
  explicit Progress(int64_t log_every);
  void step(const StepReport& r);
  // A line that must stay visible (evaluation results, messages): clears the live line first.
  void line(const std::string& text);
  static std::string duration(double seconds);  // "1h02m", "3m05s", "12s"

 private:
  bool tty_;
  int64_t log_every_;
  bool live_ = false;  // a live line is on screen
  std::chrono::steady_clock::time_point start_;
  int64_t first_step_ = -1;
};

}  // namespace replica::metrics
