// The benchmarks' inputs: n standard-normal floats from a seeded generator, the same on every run.
#pragma once
#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

inline std::vector<float> random_floats(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}
