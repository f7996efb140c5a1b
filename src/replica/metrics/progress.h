// Progress reporting for long work: on a terminal one line rewritten in place (step/total, loss, lr, grad norm,
// tokens/s, MFU, ETA), with every `log_every`-th step kept in the scrollback; otherwise plain log lines every
// `log_every` steps.
#pragma once
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

namespace replica::metrics {

// train.progress: auto = a live line when stdout is a terminal of this process alone, plain = log lines only.
enum class ProgressStyle { automatic, plain };
ProgressStyle parse_progress_style(const std::string& name);  // "auto" or "plain"; anything else raises
const char* progress_style_name(ProgressStyle style);

// Whether a live line can work here: stdout is a terminal and no MPI launcher started this process. Open MPI and
// MPICH give every rank a pty and merge them into one stream, so a log redirected to a file would fill with `\r`.
bool stdout_is_own_terminal();

struct StepReport {
  int64_t step = 0, total = 0;
  double loss = 0, lr = 0, grad_norm = 0, tokens_per_s = 0;
  std::optional<double> mfu;  // none: no trustworthy peak (printed "n/a")
  bool skipped = false;
};

class Progress {
 public:
  // live: rewrite one line in place (a terminal); otherwise print plain lines.
  Progress(int64_t log_every, bool live);
  void step(const StepReport& r);
  // A line that must stay visible (evaluation results, messages): clears the live line first.
  void line(const std::string& text);
  static std::string duration(double seconds);  // "1h02m", "3m05s", "12s"

 private:
  bool live_;
  int64_t log_every_;
  bool showing_ = false;  // a live line is on screen, to be overwritten
  std::chrono::steady_clock::time_point start_;
  int64_t first_step_ = -1;
};

}  // namespace replica::metrics
