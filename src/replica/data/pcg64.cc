// numpy-compatible SeedSequence, PCG64 and shuffle (numpy/random/bit_generator.pyx, src/pcg64/pcg64.h,
// src/distributions/distributions.c::random_interval, _generator.pyx::_shuffle_raw), checked against numpy.
#include "replica/data/pcg64.h"

#include <utility>
#include <vector>

namespace replica::data {

namespace {

// SeedSequence constants (bit_generator.pyx), all arithmetic modulo 2^32.
constexpr uint32_t kInitA = 0x43b0d7e5, kMultA = 0x931e8875, kInitB = 0x8b51f9dd, kMultB = 0x58f38ded;
constexpr uint32_t kMixMultL = 0xca01f9dd, kMixMultR = 0x4973f715;
constexpr int kPoolSize = 4;

uint32_t hashmix(uint32_t value, uint32_t& hash_const) {
  value ^= hash_const;
  hash_const *= kMultA;
  value *= hash_const;
  return value ^ (value >> 16);
}

uint32_t mix(uint32_t x, uint32_t y) {
  uint32_t result = kMixMultL * x - kMixMultR * y;
  return result ^ (result >> 16);
}

// SeedSequence(entropy=seed).generate_state(n_words, uint32) for an integer seed.
std::vector<uint32_t> seed_sequence_state(uint64_t seed, int n_words) {
  // The integer as little-endian 32-bit words (0 is one word).
  std::vector<uint32_t> entropy;
  do {
    entropy.push_back(uint32_t(seed));
    seed >>= 32;
  } while (seed);
  uint32_t pool[kPoolSize];
  uint32_t hash_const = kInitA;
  for (int i = 0; i < kPoolSize; i++) pool[i] = hashmix(i < int(entropy.size()) ? entropy[i] : 0, hash_const);
  for (int src = 0; src < kPoolSize; src++)
    for (int dst = 0; dst < kPoolSize; dst++)
      if (src != dst) pool[dst] = mix(pool[dst], hashmix(pool[src], hash_const));
  for (size_t src = kPoolSize; src < entropy.size(); src++)
    for (int dst = 0; dst < kPoolSize; dst++) pool[dst] = mix(pool[dst], hashmix(entropy[src], hash_const));

  std::vector<uint32_t> state(n_words);
  uint32_t out_const = kInitB;
  for (int i = 0; i < n_words; i++) {
    uint32_t value = pool[i % kPoolSize] ^ out_const;
    out_const *= kMultB;
    value *= out_const;
    state[i] = value ^ (value >> 16);
  }
  return state;
}

constexpr unsigned __int128 kMultiplier =
    (unsigned __int128)(0x2360ed051fc65da4ull) << 64 | (unsigned __int128)(0x4385df649fccf645ull);

}  // namespace

Pcg64::Pcg64(uint64_t seed) {
  std::vector<uint32_t> words = seed_sequence_state(seed, 8);
  uint64_t v[4];
  for (int i = 0; i < 4; i++) v[i] = uint64_t(words[2 * i]) | uint64_t(words[2 * i + 1]) << 32;
  unsigned __int128 initstate = (unsigned __int128)(v[0]) << 64 | v[1];
  unsigned __int128 initseq = (unsigned __int128)(v[2]) << 64 | v[3];
  state_ = 0;
  inc_ = (initseq << 1) | 1;
  state_ = state_ * kMultiplier + inc_;
  state_ += initstate;
  state_ = state_ * kMultiplier + inc_;
}

uint64_t Pcg64::next_uint64() {
  state_ = state_ * kMultiplier + inc_;
  uint64_t hi = uint64_t(state_ >> 64), lo = uint64_t(state_);
  unsigned rot = unsigned(hi >> 58);
  uint64_t x = hi ^ lo;
  return (x >> rot) | (x << ((64 - rot) & 63));
}

uint32_t Pcg64::next_uint32() {
  if (has_uint32_) {
    has_uint32_ = false;
    return uinteger_;
  }
  uint64_t next = next_uint64();
  has_uint32_ = true;
  uinteger_ = uint32_t(next >> 32);
  return uint32_t(next);
}

uint64_t random_interval(Pcg64& rng, uint64_t max) {
  if (max == 0) return 0;
  uint64_t mask = max;
  for (int shift = 1; shift <= 32; shift *= 2) mask |= mask >> shift;
  uint64_t value;
  if (max <= 0xffffffffull) {
    while ((value = rng.next_uint32() & mask) > max) {
    }
  } else {
    while ((value = rng.next_uint64() & mask) > max) {
    }
  }
  return value;
}

void shuffle(uint32_t* values, size_t n, Pcg64& rng) {
  for (size_t i = n; i-- > 1;) std::swap(values[i], values[random_interval(rng, i)]);
}

}  // namespace replica::data
