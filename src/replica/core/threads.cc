// Thread count control via the OpenMP runtime.
#include "replica/core/threads.h"

#include <omp.h>

#include "replica/core/error.h"

namespace replica {

void set_num_threads(int64_t n) {
  // A thread count far beyond any machine is a typo; OpenMP would try to create them all and crash.
  check(n >= 0 && n <= kMaxThreads, "threads: {} is not a thread count (0 = one per core, at most {})", n,
        kMaxThreads);
  if (n > 0) omp_set_num_threads(int(n));
}

int num_threads() { return omp_get_max_threads(); }

}  // namespace replica
