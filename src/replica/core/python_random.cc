// CPython's random.Random: MT19937 as in Modules/_randommodule.c, the methods as in Lib/random.py (3.11).
#include "replica/core/python_random.h"

#include <bit>
#include <cmath>
#include <unordered_set>

#include "replica/core/error.h"

namespace replica {

namespace {

constexpr size_t kN = 624, kM = 397;
constexpr uint32_t kMatrixA = 0x9908b0dfu, kUpperMask = 0x80000000u, kLowerMask = 0x7fffffffu;

void init_genrand(std::array<uint32_t, kN>& mt, uint32_t s) {
  mt[0] = s;
  for (size_t i = 1; i < kN; i++) mt[i] = 1812433253u * (mt[i - 1] ^ (mt[i - 1] >> 30)) + uint32_t(i);
}

void init_by_array(std::array<uint32_t, kN>& mt, std::span<const uint32_t> key) {
  init_genrand(mt, 19650218u);
  size_t i = 1, j = 0;
  for (size_t k = std::max(kN, key.size()); k; k--) {
    mt[i] = (mt[i] ^ ((mt[i - 1] ^ (mt[i - 1] >> 30)) * 1664525u)) + key[j] + uint32_t(j);
    i++, j++;
    if (i >= kN) mt[0] = mt[kN - 1], i = 1;
    if (j >= key.size()) j = 0;
  }
  for (size_t k = kN - 1; k; k--) {
    mt[i] = (mt[i] ^ ((mt[i - 1] ^ (mt[i - 1] >> 30)) * 1566083941u)) - uint32_t(i);
    i++;
    if (i >= kN) mt[0] = mt[kN - 1], i = 1;
  }
  mt[0] = 0x80000000u;  // the most significant bit set: a non-zero initial state
}

}  // namespace

PythonRandom::PythonRandom(int64_t seed) {
  // random_seed(): |seed| split into 32-bit words from the least significant; zero is the one word 0.
  const uint64_t magnitude = seed < 0 ? uint64_t(0) - uint64_t(seed) : uint64_t(seed);
  std::vector<uint32_t> key = {uint32_t(magnitude)};
  if (magnitude >> 32) key.push_back(uint32_t(magnitude >> 32));
  init_by_array(state_, key);
}

uint32_t PythonRandom::genrand_uint32() {
  auto twist = [](uint32_t upper, uint32_t lower) {
    uint32_t y = (upper & kUpperMask) | (lower & kLowerMask);
    return (y >> 1) ^ ((y & 1u) ? kMatrixA : 0u);
  };
  if (index_ >= kN) {  // the next 624 words at once
    for (size_t k = 0; k < kN; k++) state_[k] = state_[(k + kM) % kN] ^ twist(state_[k], state_[(k + 1) % kN]);
    index_ = 0;
  }
  uint32_t y = state_[index_++];
  y ^= y >> 11;
  y ^= (y << 7) & 0x9d2c5680u;
  y ^= (y << 15) & 0xefc60000u;
  y ^= y >> 18;
  return y;
}

uint64_t PythonRandom::getrandbits(int k) {
  check(k >= 0 && k <= 64, "getrandbits({}): this port draws 0 to 64 bits", k);
  if (k == 0) return 0;
  if (k <= 32) return genrand_uint32() >> (32 - k);
  const uint64_t low = genrand_uint32();
  return low | (uint64_t(genrand_uint32() >> (64 - k)) << 32);
}

uint64_t PythonRandom::randbelow(uint64_t n) {
  check(n > 0, "randbelow(0): the range is empty");
  const int k = std::bit_width(n);
  uint64_t r = getrandbits(k);
  while (r >= n) r = getrandbits(k);
  return r;
}

double PythonRandom::random() {
  const uint32_t a = genrand_uint32() >> 5, b = genrand_uint32() >> 6;
  return (double(a) * 67108864.0 + double(b)) * (1.0 / 9007199254740992.0);
}

std::vector<size_t> PythonRandom::sample(size_t n, size_t k) {
  check(k <= n, "sample of {} from a population of {}: larger than the population", k, n);
  std::vector<size_t> result(k);
  size_t setsize = 21;  // the size of a small set minus that of an empty list
  if (k > 5) setsize += size_t(std::pow(4.0, std::ceil(std::log(double(k * 3)) / std::log(4.0))));
  if (n <= setsize) {  // an n-long list is smaller than a k-element set: draw from a shrinking pool
    std::vector<size_t> pool(n);
    for (size_t i = 0; i < n; i++) pool[i] = i;
    for (size_t i = 0; i < k; i++) {
      const size_t j = size_t(randbelow(n - i));
      result[i] = pool[j];
      pool[j] = pool[n - i - 1];  // the unselected last item fills the vacancy
    }
  } else {
    std::unordered_set<size_t> selected;
    for (size_t i = 0; i < k; i++) {
      size_t j = size_t(randbelow(n));
      while (selected.count(j)) j = size_t(randbelow(n));
      selected.insert(j);
      result[i] = j;
    }
  }
  return result;
}

}  // namespace replica
