// Thread count control via the OpenMP runtime.
#include "replica/core/threads.h"

#include <omp.h>

namespace replica {

void set_num_threads(int n) {
  if (n > 0) omp_set_num_threads(n);
}

int num_threads() { return omp_get_max_threads(); }

}  // namespace replica
