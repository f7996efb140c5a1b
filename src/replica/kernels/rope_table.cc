// RopeTable: the angles in double, rounded once to fp32.
#include "replica/kernels/rope_table.h"

#include <atomic>
#include <cmath>

namespace replica {

static std::atomic<uint64_t> rope_tables{0};

RopeTable::RopeTable(int64_t T_, int64_t D_, double theta)
    : T(T_), D(D_), cos(size_t(T_ * D_ / 2)), sin(cos.size()), serial(++rope_tables) {
  for (int64_t t = 0; t < T; t++)
    for (int64_t i = 0; i < D / 2; i++) {
      double angle = double(t) / std::pow(theta, double(2 * i) / double(D));
      cos[size_t(t * D / 2 + i)] = float(std::cos(angle));
      sin[size_t(t * D / 2 + i)] = float(std::sin(angle));
    }
}

}  // namespace replica
