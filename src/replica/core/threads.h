// Thread count control: one setting for OpenMP kernels and oneDNN (which shares the OpenMP runtime).
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>

namespace replica {

inline constexpr int64_t kMaxThreads = 1024;

void set_num_threads(int64_t n);  // 0: the runtime default (all cores); negative or above kMaxThreads is an error
int num_threads();

// Runs fn(0) ... fn(n - 1) on up to `threads` std::threads of their own (not OpenMP's, which the kernels size to the
// cores), for work that waits on the network. Every call runs even when one fails; the first exception (by index)
// is then rethrown.
void for_each_concurrently(size_t n, int threads, const std::function<void(size_t)>& fn);

}  // namespace replica
