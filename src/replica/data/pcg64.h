// numpy's random machinery, bit-exact: SeedSequence seeding, the PCG64 bit generator (XSL-RR 128/64 with
// buffered 32-bit draws) and Generator.shuffle of a 1-D array. OLMo-core's global data order depends on it.
#pragma once
#include <cstddef>
#include <cstdint>

namespace replica::data {

// numpy.random.PCG64(seed) for an integer seed 0 <= seed < 2^64: SeedSequence(seed).generate_state(4, uint64)
// gives (initstate hi, lo, initseq hi, lo), then PCG's srandom: state = 0, inc = initseq << 1 | 1, step,
// state += initstate, step.
class Pcg64 {
 public:
  explicit Pcg64(uint64_t seed);

  uint64_t next_uint64();
  // Low 32 bits of a fresh 64-bit draw; the high 32 bits are kept for the next call (numpy's has_uint32).
  uint32_t next_uint32();

  unsigned __int128 state() const { return state_; }
  unsigned __int128 increment() const { return inc_; }

 private:
  unsigned __int128 state_ = 0, inc_ = 0;
  bool has_uint32_ = false;
  uint32_t uinteger_ = 0;
};

// numpy's random_interval(bitgen, max): uniform in [0, max] by masked rejection sampling, drawing 32-bit
// values while max fits in 32 bits and 64-bit values beyond.
uint64_t random_interval(Pcg64& rng, uint64_t max);

// Generator.shuffle on a 1-D array: Fisher-Yates from the end, i = n-1 .. 1, j = random_interval(rng, i).
void shuffle(uint32_t* values, size_t n, Pcg64& rng);

}  // namespace replica::data
