// Thread count control: one setting for OpenMP kernels and oneDNN (which shares the OpenMP runtime).
#pragma once
#include <cstdint>

namespace replica {

inline constexpr int64_t kMaxThreads = 1024;

void set_num_threads(int64_t n);  // 0: the runtime default (all cores); negative or above kMaxThreads is an error
int num_threads();

}  // namespace replica
