// CPU load from /proc/stat (per-core jiffies) and getrusage.
#include "replica/core/cpu_load.h"

#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <sstream>
#include <thread>

namespace replica {

CpuTimes cpu_times() {
  CpuTimes t;
  t.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  rusage usage{};
  if (getrusage(RUSAGE_SELF, &usage) == 0)
    t.own_s = double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
              double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
  cpu_set_t mask;
  CPU_ZERO(&mask);
  const bool have_mask = sched_getaffinity(0, sizeof(mask), &mask) == 0;
  const double tick = double(sysconf(_SC_CLK_TCK));
  std::ifstream stat("/proc/stat");
  for (std::string line; std::getline(stat, line);) {
    // "cpuN user nice system idle iowait irq softirq steal ..." (the first line, "cpu ", is every core's sum)
    if (line.size() < 4 || line.compare(0, 3, "cpu") != 0 || line[3] == ' ') continue;
    std::istringstream fields(line.substr(3));
    int core = -1;
    fields >> core;
    if (core < 0 || (have_mask && (core >= CPU_SETSIZE || !CPU_ISSET(core, &mask)))) continue;
    double value = 0, all = 0, idle = 0;
    for (int i = 0; i < 8 && fields >> value; i++) {
      all += value;
      if (i == 3 || i == 4) idle += value;  // idle, iowait
    }
    t.all_s += all / tick;
    t.busy_s += (all - idle) / tick;
    t.cores++;
  }
  return t;
}

double cores_busy_elsewhere(const CpuTimes& from, const CpuTimes& to) {
  const double all = to.all_s - from.all_s;
  if (to.cores == 0 || from.cores != to.cores || all <= 0) return 0;
  // Busy core-seconds less this process's own, over the wall time the counters advanced by (all / cores).
  const double elsewhere = (to.busy_s - from.busy_s) - (to.own_s - from.own_s);
  return std::clamp(elsewhere / (all / to.cores), 0.0, double(to.cores));
}

ThreadChoice choose_threads(int processes, double sample_s) {
  const CpuTimes before = cpu_times();
  std::this_thread::sleep_for(std::chrono::duration<double>(sample_s));
  const CpuTimes after = cpu_times();
  ThreadChoice c;
  c.cores = after.cores > 0 ? after.cores : std::max(1, int(std::thread::hardware_concurrency()));
  c.busy = cores_busy_elsewhere(before, after);
  const int free = c.cores - int(std::lround(c.busy));
  c.threads = std::max(1, free / std::max(1, processes));
  return c;
}

}  // namespace replica
