// How busy the cores this process may run on are, from the kernel's per-core counters (/proc/stat) and this
// process's own CPU time: what a thread count chosen at start and a slowdown noticed during a run are based on.
#pragma once
#include <string>
#include <vector>

namespace replica {

// The cores this process may run on (its affinity mask), and their counters at one moment.
struct CpuTimes {
  double wall_s = 0;       // a monotonic clock
  double busy_s = 0;       // summed over the cores: time not idle (nor waiting on I/O)
  double all_s = 0;        // summed over the cores: all time
  double own_s = 0;        // this process's user + system time, all its threads
  int cores = 0;           // how many cores the sums are over
};
CpuTimes cpu_times();  // now; zeros where /proc/stat cannot be read (the callers then assume idle cores)

// Cores kept busy by other processes between two readings, on average (0 to `cores`).
double cores_busy_elsewhere(const CpuTimes& from, const CpuTimes& to);

// One thread per core that other processes leave free, sampled over `sample_s` seconds now, at least one; the
// cores are shared by `processes` processes of the same job on this machine.
struct ThreadChoice {
  int threads = 1;
  int cores = 1;      // cores this process may run on
  double busy = 0;    // of them, kept busy by other processes during the sample
};
ThreadChoice choose_threads(int processes = 1, double sample_s = 0.1);

}  // namespace replica
