// Console progress line.
#include "replica/metrics/progress.h"

#include <fmt/core.h>
#include <unistd.h>

#include <cstdio>

namespace replica::metrics {

Progress::Progress(int64_t log_every)
    : tty_(isatty(fileno(stdout)) != 0), log_every_(log_every > 0 ? log_every : 1),
      start_(std::chrono::steady_clock::now()) {}

std::string Progress::duration(double seconds) {
  const int64_t s = int64_t(seconds + 0.5);
  if (s >= 3600) return fmt::format("{}h{:02}m", s / 3600, (s % 3600) / 60);
  if (s >= 60) return fmt::format("{}m{:02}s", s / 60, s % 60);
  return fmt::format("{}s", s);
}

void Progress::step(const StepReport& r) {
  if (first_step_ < 0) {
    first_step_ = r.step - 1;
    start_ = std::chrono::steady_clock::now();
  }
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const double per_step = elapsed / double(r.step - first_step_);
  const std::string text = fmt::format(
      "step {}/{}  loss {:.4f}  lr {:.3e}  gnorm {:.3f}  {:.0f} tok/s  MFU {:.1f}%  ETA {}{}", r.step, r.total, r.loss,
      r.lr, r.grad_norm, r.tokens_per_s, 100.0 * r.mfu, duration(per_step * double(r.total - r.step)),
      r.skipped ? "  [skipped]" : "");
  if (tty_) {
    fmt::print("\r\033[K{}", text);
    std::fflush(stdout);
    live_ = true;
  } else if (r.step % log_every_ == 0 || r.step == r.total || r.skipped) {
    fmt::print("{}\n", text);
    std::fflush(stdout);
  }
}

void Progress::line(const std::string& text) {
  if (live_) fmt::print("\r\033[K");
  live_ = false;
  fmt::print("{}\n", text);
  std::fflush(stdout);
}

}  // namespace replica::metrics
