// core/threads: one cap on thread counts (reliability review D5: --threads 100000 crashed the OpenMP runtime).
#include <gtest/gtest.h>

#include <string>
#include <thread>

#include "replica/core/error.h"
#include "replica/core/threads.h"

namespace replica {
namespace {

TEST(CoreThreads, CountsAboveTheCapAreRefusedBeforeTheRuntimeSeesThem) {
  const int before = num_threads();
  try {
    set_num_threads(100000);
    FAIL() << "expected replica::Error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "threads: 100000 is not a thread count (0 = one per free core, at most 1024)");
  }
  EXPECT_EQ(num_threads(), before);
  // 0 chooses (OMP_NUM_THREADS when set, else one per core other work leaves free) and says what it chose.
  const std::string chosen = set_num_threads(0);
  EXPECT_NE(chosen.find(std::to_string(num_threads()) + " thread"), std::string::npos) << chosen;
  EXPECT_GE(num_threads(), 1);
  EXPECT_LE(num_threads(), int(std::thread::hardware_concurrency()));
  set_num_threads(before);
}

}  // namespace
}  // namespace replica
