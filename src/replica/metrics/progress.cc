// Console progress line.
#include "replica/metrics/progress.h"

#include <fmt/core.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "replica/core/error.h"

namespace replica::metrics {

ProgressStyle parse_progress_style(const std::string& name) {
  if (name == "auto") return ProgressStyle::automatic;
  if (name == "plain") return ProgressStyle::plain;
  fail("progress style must be 'auto' (a live line on a terminal) or 'plain' (log lines only), got '{}'", name);
}

const char* progress_style_name(ProgressStyle style) { return style == ProgressStyle::plain ? "plain" : "auto"; }

bool stdout_is_own_terminal() {
  for (const char* launcher_variable : {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"})
    if (std::getenv(launcher_variable) != nullptr) return false;
  return isatty(fileno(stdout)) != 0;
}

Progress::Progress(int64_t log_every, bool live)
    : live_(live), log_every_(log_every > 0 ? log_every : 1), start_(std::chrono::steady_clock::now()) {}

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
  const std::string mfu = r.mfu ? fmt::format("{:.1f}%", 100.0 * *r.mfu) : "n/a";
  const std::string text =
      fmt::format("step {}/{}  loss {:.4f}  lr {:.3e}  gnorm {:.3f}  {:.0f} tok/s  MFU {}  ETA {}{}", r.step, r.total,
                  r.loss, r.lr, r.grad_norm, r.tokens_per_s, mfu, duration(per_step * double(r.total - r.step)),
                  r.skipped ? "  [skipped]" : "");
  const bool kept = r.step % log_every_ == 0 || r.step == r.total || r.skipped;
  if (live_) {
    // Every log_every-th line ends with a newline and stays in the scrollback; the ones between are overwritten.
    fmt::print("\r\033[K{}{}", text, kept ? "\n" : "");
    showing_ = !kept;
  } else if (kept) {
    fmt::print("{}\n", text);
  }
  std::fflush(stdout);
}

void Progress::line(const std::string& text) {
  if (showing_) fmt::print("\r\033[K");
  showing_ = false;
  fmt::print("{}\n", text);
  std::fflush(stdout);
}

}  // namespace replica::metrics
