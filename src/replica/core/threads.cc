// Thread count control via the OpenMP runtime.
#include "replica/core/threads.h"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <exception>
#include <thread>
#include <vector>

#include "replica/core/error.h"

namespace replica {

void set_num_threads(int64_t n) {
  // A thread count far beyond any machine is a typo; OpenMP would try to create them all and crash.
  check(n >= 0 && n <= kMaxThreads, "threads: {} is not a thread count (0 = one per core, at most {})", n,
        kMaxThreads);
  if (n > 0) omp_set_num_threads(int(n));
}

int num_threads() { return omp_get_max_threads(); }

void for_each_concurrently(size_t n, int threads, const std::function<void(size_t)>& fn) {
  std::vector<std::exception_ptr> errors(n);
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next++; i < n; i = next++) try {
        fn(i);
      } catch (...) {
        errors[i] = std::current_exception();
      }
  };
  std::vector<std::thread> pool;
  for (size_t t = 1; t < std::min(n, size_t(std::max(threads, 1))); t++) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
}

}  // namespace replica
