// replica eval's console: a progress line per pass on stderr with tokens done / total, rate and ETA (rewritten in
// place on a terminal, a plain line every few seconds otherwise), each finished part's summary on stderr, and each
// surface's table on stdout the moment it finishes (or, with --json, kept for one object at the end). A SIGINT or
// SIGTERM stops the evaluation at the next batch: the finished surfaces are already printed (or kept).
#pragma once
#include <chrono>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "replica/eval/progress.h"
#include "replica/train/stop_signal.h"

namespace replica::cli {

// Thrown by EvalConsole::advance after a SIGINT or SIGTERM.
struct EvalInterrupted {
  std::string during;  // the pass that was running
};

class EvalConsole final : public eval::Progress {
 public:
  explicit EvalConsole(bool json);

  void start(const std::string& what, int64_t total) override;
  void advance(int64_t amount) override;
  void line(const std::string& text) override;
  void finished(const std::string& name, const eval::SurfaceResult& result) override;

  // With --json: every finished surface's object, by name.
  const nlohmann::json& results() const { return results_; }

 private:
  void show(bool final);
  void end_pass();

  bool tty_, json_;
  train::StopSignal stop_;
  nlohmann::json results_ = nlohmann::json::object();
  // The pass in progress.
  std::string what_;
  int64_t total_ = 0, done_ = 0;
  bool live_ = false;  // a pass's line is on a terminal, not yet ended by a newline
  std::chrono::steady_clock::time_point started_, shown_;
};

}  // namespace replica::cli
