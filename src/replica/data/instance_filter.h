// OLMo-core's repeated n-gram instance filter: an instance is masked (its labels ignored, its tokens still
// counted) when some token n-gram of period min_period..max_period repeats max_count or more times in a row.
#pragma once
#include <cstddef>
#include <cstdint>

namespace replica::data {

struct InstanceFilterConfig {
  bool enabled = false;  // off, as in the OLMo 3 7B stage-1 recipe
  int min_period = 1;
  int max_period = 13;
  int max_count = 32;
};

// True when the instance is kept. Same decision as numpy_dataset.py::_validate_instance with
// utils.py::find_periodic_sequences: for each period p <= len/3, a maximal run of positions i with
// x[i] == x[i-p] of length R is a repetition of (R + p) / p times (those below 3 are never reported).
bool instance_passes(const int32_t* tokens, size_t n, const InstanceFilterConfig& config);

}  // namespace replica::data
