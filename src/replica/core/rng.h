// Counter-based random numbers: value i of stream (seed, stream) depends on nothing else, so parallel
// initialisation gives the same bits for any thread count.
#pragma once
#include <cmath>
#include <cstdint>

namespace replica {

// SplitMix64 finaliser: a strong 64-bit mixing function.
inline uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Uniform double in (0, 1) from 53 random bits.
inline double uniform_open(uint64_t bits) { return (double((bits >> 11)) + 0.5) * (1.0 / 9007199254740992.0); }

// Element `index` of a truncated normal N(0, std) cut at ±bound·std, from stream (seed, stream).
// Box-Muller with rejection; each attempt draws fresh counters, so the result is a pure function.
inline float truncated_normal(uint64_t seed, uint64_t stream, uint64_t index, double std, double bound) {
  uint64_t base = mix64(mix64(seed ^ 0x6a09e667f3bcc909ull) ^ mix64(stream + 0x3c6ef372fe94f82bull));
  for (uint64_t attempt = 0;; attempt++) {
    uint64_t key = mix64(base ^ mix64(index * 64 + attempt));
    double u1 = uniform_open(mix64(key ^ 1));
    double u2 = uniform_open(mix64(key ^ 2));
    double z = std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
    if (std::fabs(z) <= bound) return float(z * std);
  }
}

}  // namespace replica
