// core/cpu_load and what is built on it: the cores other work keeps busy (the busy time less this process's own),
// the default thread count's share of the machine under a launcher, and the run's slowdown note.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <thread>

#include "replica/core/cpu_load.h"
#include "replica/distributed/launch.h"
#include "replica/metrics/slowdown.h"

namespace replica {
namespace {

CpuTimes at(double wall, double busy, double own, int cores = 2) {
  return {.wall_s = wall, .busy_s = busy, .all_s = wall * cores, .own_s = own, .cores = cores};
}

TEST(CpuLoad, BusyElsewhereIsTheBusyTimeLessThisProcesss) {
  // Over 1 s of 2 cores: 1.5 core-seconds busy, 0.5 of them this process's: one core busy elsewhere.
  EXPECT_DOUBLE_EQ(cores_busy_elsewhere(at(10, 4, 1), at(11, 5.5, 1.5)), 1.0);
  EXPECT_DOUBLE_EQ(cores_busy_elsewhere(at(10, 4, 1), at(11, 4, 1)), 0.0);
  // Counter jitter never gives less than none or more than every core.
  EXPECT_DOUBLE_EQ(cores_busy_elsewhere(at(10, 4, 1), at(11, 4.1, 1.5)), 0.0);
  EXPECT_DOUBLE_EQ(cores_busy_elsewhere(at(10, 4, 1), at(11, 9, 1)), 2.0);
  // Unreadable counters (no cores) or a changed core set say nothing.
  EXPECT_DOUBLE_EQ(cores_busy_elsewhere(at(10, 0, 0, 0), at(11, 0, 0, 0)), 0.0);
  EXPECT_DOUBLE_EQ(cores_busy_elsewhere(at(10, 4, 1, 2), at(11, 9, 1, 4)), 0.0);
}

TEST(CpuLoad, TheCountersAreThoseOfTheCoresThisProcessMayUse) {
  const CpuTimes now = cpu_times();
  ASSERT_GT(now.cores, 0) << "/proc/stat has no per-core lines for this process's cores";
  EXPECT_LE(now.cores, int(std::thread::hardware_concurrency()));
  EXPECT_LE(now.busy_s, now.all_s);
  const ThreadChoice c = choose_threads(1, 0.05);
  EXPECT_EQ(c.cores, now.cores);
  EXPECT_GE(c.threads, 1);
  EXPECT_LE(c.threads, c.cores);
  EXPECT_EQ(choose_threads(64, 0.01).threads, 1) << "64 processes share the cores: one thread each at least";
}

TEST(CpuLoad, TheJobsProcessesOnThisMachineComeFromTheLauncher) {
  auto count = [](const std::map<std::string, std::string>& vars) {
    return distributed::processes_on_this_machine([&](const char* name) -> const char* {
      const auto it = vars.find(name);
      return it == vars.end() ? nullptr : it->second.c_str();
    });
  };
  EXPECT_EQ(count({}), 1);
  EXPECT_EQ(count({{"OMPI_COMM_WORLD_LOCAL_SIZE", "4"}}), 4);
  EXPECT_EQ(count({{"SLURM_STEP_TASKS_PER_NODE", "2(x4)"}}), 2);
  EXPECT_EQ(count({{"SLURM_STEP_TASKS_PER_NODE", "3,1"}}), 3);
  EXPECT_EQ(count({{"OMPI_COMM_WORLD_LOCAL_SIZE", "2"}, {"SLURM_STEP_TASKS_PER_NODE", "8"}}), 2);
  EXPECT_EQ(count({{"OMPI_COMM_WORLD_LOCAL_SIZE", "x"}}), 1);
}

TEST(SlowdownWatch, NotesAStepUnderHalfTheBestOnceUntilTheRateRecovers) {
  metrics::SlowdownWatch watch;
  const CpuTimes idle = at(0, 0, 0);
  // The first two steps warm up and are not counted, however slow.
  EXPECT_FALSE(watch.observe(1, 10, idle));
  EXPECT_FALSE(watch.observe(2, 2000, idle));
  EXPECT_FALSE(watch.observe(3, 2000, at(1, 1, 1)));
  EXPECT_FALSE(watch.observe(4, 1100, at(2, 2, 2)));  // above half
  // Over this step the two cores were busy 1.8 core-seconds, 0.3 of them the run's own: 1.5 elsewhere.
  const std::optional<std::string> note = watch.observe(5, 600, at(3, 3.8, 2.3));
  ASSERT_TRUE(note);
  EXPECT_EQ(*note,
            "step 5 ran at 600 tokens/s, under half of this run's best 2000: other work kept 1.5 of the 2 cores busy "
            "during it (fewer train.threads run steadier on a shared machine)");
  EXPECT_FALSE(watch.observe(6, 500, at(4, 4.8, 3.3))) << "one note per slow spell";
  EXPECT_FALSE(watch.observe(7, 1600, at(5, 5.8, 4.3)));  // back above three quarters
  const std::optional<std::string> again = watch.observe(8, 700, at(6, 6.1, 5.1));
  ASSERT_TRUE(again);
  EXPECT_EQ(*again, "step 8 ran at 700 tokens/s, under half of this run's best 2000: other work used 0.0 of the 2 "
                    "cores during it");
}

}  // namespace
}  // namespace replica
