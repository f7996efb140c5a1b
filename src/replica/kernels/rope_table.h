// The rotary embedding's angles, computed once on the host per sequence length and read by every backend's
// RoPE (kernels/cpu/rope.h states the rotation): cos and sin of t / theta^(2i/D) for t < T, i < D/2.
#pragma once
#include <cstdint>
#include <vector>

namespace replica {

struct RopeTable {
  int64_t T = 0, D = 0;
  std::vector<float> cos, sin;  // [T, D/2], computed in double and rounded once
  uint64_t serial;              // distinct for every table of the process: a GPU backend's key for its copy
  RopeTable(int64_t T, int64_t D, double theta);
};

}  // namespace replica
