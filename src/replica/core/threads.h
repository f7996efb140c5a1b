// Thread count control: one setting for OpenMP kernels and oneDNN (which shares the OpenMP runtime).
#pragma once

namespace replica {

void set_num_threads(int n);  // n <= 0: leave the runtime default (all cores)
int num_threads();

}  // namespace replica
