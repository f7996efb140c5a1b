// core/threads: one cap on thread counts (reliability review D5: --threads 100000 crashed the OpenMP runtime).
#include <gtest/gtest.h>

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
    EXPECT_EQ(std::string(e.what()), "threads: 100000 is not a thread count (0 = one per core, at most 1024)");
  }
  EXPECT_EQ(num_threads(), before);
  set_num_threads(0);  // the runtime default: nothing changes
  EXPECT_EQ(num_threads(), before);
}

}  // namespace
}  // namespace replica
