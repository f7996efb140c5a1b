// Thread count control via the OpenMP runtime.
#include "replica/core/threads.h"

#include <fmt/core.h>
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <exception>
#include <thread>
#include <vector>

#include "replica/core/cpu_load.h"
#include "replica/core/error.h"

namespace replica {

std::string set_num_threads(int64_t n, int processes) {
  // A thread count far beyond any machine is a typo; OpenMP would try to create them all and crash.
  check(n >= 0 && n <= kMaxThreads, "threads: {} is not a thread count (0 = one per free core, at most {})", n,
        kMaxThreads);
  if (n > 0) {
    omp_set_num_threads(int(n));
    return "";
  }
  if (const char* env = std::getenv("OMP_NUM_THREADS"); env != nullptr && *env != '\0')
    return fmt::format("{} threads (OMP_NUM_THREADS={})", num_threads(), env);
  const ThreadChoice c = choose_threads(processes);
  omp_set_num_threads(c.threads);
  std::string why =
      fmt::format("{} thread{} ({} core{}", c.threads, c.threads == 1 ? "" : "s", c.cores, c.cores == 1 ? "" : "s");
  if (c.busy >= 0.5) why += fmt::format(", {:.1f} busy with other work at start", c.busy);
  if (processes > 1) why += fmt::format(", shared by {} processes of the job", processes);
  return why + ")";
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
