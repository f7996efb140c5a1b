// dist/communicator: local_rank() reads mpirun's OMPI_COMM_WORLD_LOCAL_RANK (0 without it) and rejects
// anything that is not a rank.
#include <gtest/gtest.h>

#include <cstdlib>

#include "replica/core/error.h"
#include "replica/dist/communicator.h"

namespace replica::dist {
namespace {

TEST(DistCommunicator, LocalRankFromEnvironment) {
  unsetenv("OMPI_COMM_WORLD_LOCAL_RANK");
  EXPECT_EQ(local_rank(), 0);
  setenv("OMPI_COMM_WORLD_LOCAL_RANK", "3", 1);
  EXPECT_EQ(local_rank(), 3);
  for (const char* bad : {"x", "-1", "2a"}) {
    setenv("OMPI_COMM_WORLD_LOCAL_RANK", bad, 1);
    EXPECT_THROW(local_rank(), Error) << bad;
  }
  unsetenv("OMPI_COMM_WORLD_LOCAL_RANK");
}

}  // namespace
}  // namespace replica::dist
