// How far an evaluation is, for whoever shows it: each pass (one surface's scoring, one task) announces its total
// work, then reports work as it is done; finished parts are told as one-line summaries and finished surfaces with
// their results. The base class is quiet (the in-loop evaluation); `replica eval` shows a progress line with an
// ETA and prints each surface's table as it finishes (cli/eval_progress.h).
#pragma once
#include <cstdint>
#include <string>

namespace replica::eval {

class SurfaceResult;

class Progress {
 public:
  virtual ~Progress() = default;
  // A pass starts: `total` units (tokens fed to the model) of work, described by `what`.
  virtual void start(const std::string& what, int64_t total) { (void)what, (void)total; }
  // `amount` more units of the current pass are done.
  virtual void advance(int64_t amount) { (void)amount; }
  // A finished part's summary ("task arc_easy: acc 0.3333 over 3 docs").
  virtual void line(const std::string& text) { (void)text; }
  // Surface `name` finished with `result` (run_suite keeps it too).
  virtual void finished(const std::string& name, const SurfaceResult& result) { (void)name, (void)result; }
};

// A quiet Progress for callers that show nothing.
Progress& no_progress();

}  // namespace replica::eval
