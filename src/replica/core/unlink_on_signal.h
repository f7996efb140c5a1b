// Temporary outputs removed when a signal ends the process: while an UnlinkOnSignal lives, SIGINT, SIGTERM and SIGHUP
// unlink its paths and the process then dies of the signal as it would have (exit status 128 + signal), so a command
// cut short (`data tokenize` killed mid-file) leaves no half-written OUT.tmp behind. Not for `replica train`, whose
// StopSignal finishes the step and saves a checkpoint instead.
#pragma once
#include <string>
#include <vector>

namespace replica {

class UnlinkOnSignal {
 public:
  explicit UnlinkOnSignal(const std::vector<std::string>& paths);  // at most kMaxPaths, each shorter than 4096 bytes
  ~UnlinkOnSignal();                                               // the handlers before it are back
  UnlinkOnSignal(const UnlinkOnSignal&) = delete;
  UnlinkOnSignal& operator=(const UnlinkOnSignal&) = delete;

  static constexpr size_t kMaxPaths = 4;
};

}  // namespace replica
