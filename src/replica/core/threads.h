// Thread count control: one setting for OpenMP kernels and oneDNN (which shares the OpenMP runtime).
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

namespace replica {

inline constexpr int64_t kMaxThreads = 1024;

// n > 0: n threads. n = 0 chooses: OMP_NUM_THREADS when it is set, else one thread per core that other processes
// leave free now (core/cpu_load.h: a 0.1 s sample), shared among the `processes` of one job on this machine. On a
// busy machine fewer threads run steadier than one per core: a thread the scheduler parks stalls every barrier of
// the others (generation at 2 threads on 2 busy cores: 3-49 tokens/s, at 1 thread 73-89). The kernels' reductions
// do not depend on the count (docs/model.md, "Determinism"; train_faults.sh resumes a run at another count and gets
// the uninterrupted run's bits). Returns what n = 0 chose and why, for the log ("" for n > 0).
// Negative or above kMaxThreads is an error.
std::string set_num_threads(int64_t n, int processes = 1);
int num_threads();

// Runs fn(0) ... fn(n - 1) on up to `threads` std::threads of their own (not OpenMP's, which the kernels size to the
// cores), for work that waits on the network. Every call runs even when one fails; the first exception (by index)
// is then rethrown.
void for_each_concurrently(size_t n, int threads, const std::function<void(size_t)>& fn);

}  // namespace replica
