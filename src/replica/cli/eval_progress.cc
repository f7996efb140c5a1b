// replica eval's progress line, summaries and streamed results.
#include "replica/cli/eval_progress.h"

#include <fmt/core.h>
#include <unistd.h>

#include <cstdio>

#include "replica/eval/surface.h"
#include "replica/metrics/progress.h"

namespace replica::cli {
namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kTerminalEvery = std::chrono::milliseconds(200);  // redraws of the live line
constexpr auto kPlainEvery = std::chrono::seconds(10);           // plain lines in a log file

}  // namespace

EvalConsole::EvalConsole(bool json) : tty_(isatty(fileno(stderr)) != 0), json_(json) {}

void EvalConsole::start(const std::string& what, int64_t total) {
  end_pass();
  what_ = what, total_ = total, done_ = 0;
  started_ = shown_ = Clock::now();
  show(false);
}

void EvalConsole::advance(int64_t amount) {
  done_ += amount;
  const Clock::duration every = tty_ ? Clock::duration(kTerminalEvery) : Clock::duration(kPlainEvery);
  if (done_ >= total_ || Clock::now() - shown_ >= every) show(done_ >= total_);
  if (stop_.asked()) throw EvalInterrupted{what_};
}

void EvalConsole::show(bool final) {
  shown_ = Clock::now();
  const double elapsed = std::chrono::duration<double>(shown_ - started_).count();
  const double rate = elapsed > 0 ? double(done_) / elapsed : 0.0;
  std::string text = fmt::format("eval: {}: {}/{} tokens ({:.0f}%)", what_, done_, total_,
                                 total_ > 0 ? 100.0 * double(done_) / double(total_) : 100.0);
  if (final) text += fmt::format(", {:.0f} tok/s, done in {}", rate, metrics::Progress::duration(elapsed));
  else if (done_ > 0)
    text += fmt::format(", {:.0f} tok/s, ETA {}", rate, metrics::Progress::duration(double(total_ - done_) / rate));
  if (tty_) {
    fmt::print(stderr, "\r\033[K{}", text);
    live_ = !final;
    if (final) fmt::print(stderr, "\n");
  } else {
    fmt::print(stderr, "{}\n", text);
  }
  std::fflush(stderr);
}

void EvalConsole::end_pass() {
  if (live_) fmt::print(stderr, "\n");
  live_ = false;
}

void EvalConsole::line(const std::string& text) {
  end_pass();
  fmt::print(stderr, "eval: {}\n", text);
  std::fflush(stderr);
}

void EvalConsole::finished(const std::string& name, const eval::SurfaceResult& result) {
  end_pass();
  if (json_) {
    results_[name] = result.to_json();
    return;
  }
  fmt::print("{}", result.format());
  std::fflush(stdout);
}

}  // namespace replica::cli
