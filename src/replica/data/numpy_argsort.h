// np.argsort(keys) with the default kind ("quicksort") as numpy 1.24 computes it for int64 keys: numpy's own
// introsort (npysort/quicksort.cpp aquicksort_, heapsort below the depth limit, insertion sort for runs of 16
// or fewer). It is not stable, so the order it gives equal keys is part of OLMo-core's packed data; numpy
// >= 1.25 sends this call to x86-simd-sort on AVX-512 CPUs instead, whose tie order differs (docs/data.md).
#pragma once
#include <cstdint>
#include <span>
#include <vector>

namespace replica::data {

std::vector<int64_t> numpy_argsort(std::span<const int64_t> keys);
// np.argsort(keys, kind="heapsort"): numpy's aheapsort_, which the introsort falls back to below its depth limit.
std::vector<int64_t> numpy_argheapsort(std::span<const int64_t> keys);

}  // namespace replica::data
