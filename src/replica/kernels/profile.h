// A device-time profile summed over training steps (Backend::profile records it per call), and its table.
// REPLICA_PROFILE=1 asks `replica train` and bench_model for one.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "replica/kernels/backend.h"

namespace replica {

// True for REPLICA_PROFILE=1, false when it is unset, empty or 0; any other value is a replica::Error.
bool profile_requested();

class ProfileSum {
 public:
  // Adds one take of Backend::take_profile (the calls of one or more steps).
  void add(const std::vector<OpTime>& ops);
  bool empty() const { return ops_.empty(); }
  // Markdown: milliseconds per step of each operation (slowest first) and its share of a step of `step_ms`,
  // over `steps` steps; then all operations together and what they leave of the step, the device waiting for
  // the host.
  std::string table(int64_t steps, double step_ms) const;

 private:
  std::vector<OpTime> ops_;  // in the order first seen
};

}  // namespace replica
