// CPython's random.Random, bit-exact for integer seeds: the MT19937 generator seeded by init_by_array on the
// 32-bit words of |seed| (Modules/_randommodule.c), and the Lib/random.py methods built on it that OLMo-core
// (source file permutation: Random(123).shuffle) and lm-eval (few-shot sampling: Random(1234).sample) call.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

namespace replica {

class PythonRandom {
 public:
  // random.Random(seed): a negative seed seeds like its absolute value, as in CPython.
  explicit PythonRandom(int64_t seed);

  uint32_t genrand_uint32();  // the next MT19937 output
  // getrandbits(k), 0 <= k <= 64: 32-bit words from least to most significant, the last one cut to its top bits.
  uint64_t getrandbits(int k);
  // _randbelow(n) for n > 0: getrandbits(n.bit_length()) drawn until it is below n.
  uint64_t randbelow(uint64_t n);
  double random();  // random(): 53 bits, (a * 2^26 + b) / 2^53 from a 27-bit and a 26-bit draw

  // shuffle(x): for i = n-1 .. 1, swap x[i] with x[randbelow(i + 1)].
  template <typename T>
  void shuffle(std::span<T> x) {
    for (size_t i = x.size(); i-- > 1;) std::swap(x[i], x[size_t(randbelow(i + 1))]);
  }
  // sample(range(n), k): the positions sample(population, k) picks, in the order it returns them (the pool
  // method for small n, rejection from a set otherwise, with CPython's set-size threshold). Needs k <= n.
  std::vector<size_t> sample(size_t n, size_t k);

 private:
  std::array<uint32_t, 624> state_{};
  size_t index_ = 624;
};

}  // namespace replica
