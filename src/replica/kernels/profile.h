// A device-time profile summed over training steps (Backend::profile records it per call), and its table.
// The recipe key train.profile asks `replica train` for one, the argument `profile` bench_model.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "replica/kernels/backend.h"

namespace replica {

class ProfileSum {
 public:
  // Adds one take of Backend::take_profile (the calls of one or more steps).
  void add(const std::vector<OpTime>& ops);
  bool empty() const { return ops_.empty(); }
  // Markdown: milliseconds per step of each operation (slowest first), its share of a step of `step_ms` and, where
  // its bytes are counted (OpTime::bytes), the bandwidth it reached, over `steps` steps; then all operations together and what they leave of the step, the device waiting for
  // the host.
  std::string table(int64_t steps, double step_ms) const;

 private:
  std::vector<OpTime> ops_;  // in the order first seen
};

}  // namespace replica
