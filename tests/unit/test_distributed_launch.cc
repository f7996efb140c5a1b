// distributed/launch: the launch read from mpirun's, srun's and PMIx's variables (mpirun's first, since its ranks inherit
// the SLURM_* variables of its daemons' step), a variable that is not a rank rejected by name, srun's tasks without
// MPI refused before MPI starts and a world MPI joined differently from srun's refused after, and the GPU index.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "error_of.h"
#include "replica/core/error.h"
#include "replica/distributed/launch.h"

namespace replica::distributed {
namespace {

using Variables = std::map<std::string, std::string>;

Launch launch_in(const Variables& variables) {
  return detect_launch([&](const char* name) -> const char* {
    const auto it = variables.find(name);
    return it == variables.end() ? nullptr : it->second.c_str();
  });
}

TEST(DistLaunch, ByHandIsOneProcess) {
  const Launch l = launch_in({});
  EXPECT_EQ(l.launcher, Launcher::none);
  EXPECT_FALSE(l.mpi);
  EXPECT_EQ(l.rank, 0);
  EXPECT_EQ(l.size, 1);
  EXPECT_EQ(local_gpu(l), 0);
  // An sbatch script itself has SLURM_PROCID and SLURM_NTASKS but is no task of a step.
  EXPECT_EQ(launch_in({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "8"}, {"SLURM_LOCALID", "0"}}).launcher,
            Launcher::none);
}

TEST(DistLaunch, MpirunWinsOverTheSlurmStepOfItsDaemons) {
  const Launch l = launch_in({{"OMPI_COMM_WORLD_SIZE", "8"},
                              {"OMPI_COMM_WORLD_RANK", "5"},
                              {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                              {"PMIX_RANK", "5"},
                              {"SLURM_STEP_NUM_TASKS", "2"},
                              {"SLURM_PROCID", "1"},
                              {"SLURM_LOCALID", "0"}});
  EXPECT_EQ(l.launcher, Launcher::mpirun);
  EXPECT_TRUE(l.mpi);
  EXPECT_EQ(l.rank, 5);
  EXPECT_EQ(l.size, 8);
  EXPECT_EQ(l.local_rank, 1);
  EXPECT_EQ(local_gpu(l), 1);
  EXPECT_NO_THROW(check_launch(l));
  EXPECT_NO_THROW(check_world(l, 5, 8));
}

TEST(DistLaunch, SrunWithPmixIsAnMpiWorldOfItsTasks) {
  const Variables step = {{"SLURM_STEP_NUM_TASKS", "16"}, {"SLURM_PROCID", "11"}, {"SLURM_LOCALID", "3"},
                          {"SLURM_NTASKS", "16"},         {"PMIX_RANK", "11"}};
  const Launch l = launch_in(step);
  EXPECT_EQ(l.launcher, Launcher::srun);
  EXPECT_TRUE(l.mpi);
  EXPECT_EQ(l.rank, 11);
  EXPECT_EQ(l.size, 16);
  EXPECT_EQ(l.local_rank, 3);
  EXPECT_EQ(local_gpu(l), 3);  // the task sees every GPU of its node
  EXPECT_NO_THROW(check_launch(l));
  EXPECT_NO_THROW(check_world(l, 11, 16));

  // Bound to its own GPU (srun --gpus-per-task=1, --gpu-bind): the one device it sees is device 0.
  Variables bound = step;
  bound["CUDA_VISIBLE_DEVICES"] = "3";
  EXPECT_EQ(local_gpu(launch_in(bound)), 0);
  bound["CUDA_VISIBLE_DEVICES"] = "2,3";
  EXPECT_EQ(local_gpu(launch_in(bound)), 3);
}

TEST(DistLaunch, SrunWithoutMpiIsRefusedNamingTheOption) {
  const Launch two = launch_in({{"SLURM_STEP_NUM_TASKS", "2"}, {"SLURM_PROCID", "1"}, {"SLURM_LOCALID", "1"}});
  EXPECT_EQ(two.launcher, Launcher::srun);
  EXPECT_FALSE(two.mpi);
  const std::string message = error_of([&] { check_launch(two); });
  EXPECT_NE(message.find("srun started 2 tasks (SLURM_STEP_NUM_TASKS) with --mpi=none, which gives Open MPI no PMIx"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("srun --mpi=pmix"), std::string::npos) << message;
  // PMI-2, which Debian's Open MPI does not speak: refused before its MPI_Init fails with a message of its own.
  const Launch pmi2 = launch_in({{"SLURM_STEP_NUM_TASKS", "4"}, {"SLURM_PROCID", "2"}, {"SLURM_MPI_TYPE", "pmi2"},
                                 {"PMI_RANK", "2"}, {"PMI_SIZE", "4"}});
  EXPECT_FALSE(pmi2.mpi);
  EXPECT_NE(error_of([&] { check_launch(pmi2); }).find("4 tasks (SLURM_STEP_NUM_TASKS) with --mpi=pmi2"),
            std::string::npos);
  // One task needs no MPI.
  EXPECT_NO_THROW(check_launch(launch_in({{"SLURM_STEP_NUM_TASKS", "1"}, {"SLURM_PROCID", "0"}})));
}

TEST(DistLaunch, AWorldOtherThanSrunsIsRefused) {
  // PMIx that MPI does not join the step by (another MPI's, or a broken PMIx): every task comes up as rank 0 of 1.
  const Launch l = launch_in({{"SLURM_STEP_NUM_TASKS", "4"}, {"SLURM_PROCID", "2"}, {"PMIX_RANK", "2"}});
  EXPECT_TRUE(l.mpi);
  EXPECT_NO_THROW(check_launch(l));
  const std::string message = error_of([&] { check_world(l, 0, 1); });
  EXPECT_NE(message.find("srun started this task as 2 of 4 (SLURM_PROCID, SLURM_STEP_NUM_TASKS) but MPI joined it as "
                         "rank 0 of 1"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("srun --mpi=pmix"), std::string::npos) << message;
  EXPECT_NO_THROW(check_world(l, 2, 4));
}

TEST(DistLaunch, PmixAloneIsMpi) {
  const Launch l = launch_in({{"PMIX_RANK", "3"}});
  EXPECT_EQ(l.launcher, Launcher::none);
  EXPECT_TRUE(l.mpi);
  EXPECT_NO_THROW(check_world(l, 3, 7));  // no launcher to compare the world with
}

TEST(DistLaunch, AVariableThatIsNotARankIsNamed) {
  for (const char* bad : {"x", "-1", "2a"}) {
    EXPECT_EQ(error_of([&] { launch_in({{"OMPI_COMM_WORLD_SIZE", "2"}, {"OMPI_COMM_WORLD_LOCAL_RANK", bad}}); }),
              fmt::format("OMPI_COMM_WORLD_LOCAL_RANK='{}': expected a whole number >= 0", bad));
    EXPECT_EQ(error_of([&] { launch_in({{"SLURM_STEP_NUM_TASKS", "2"}, {"SLURM_LOCALID", bad}}); }),
              fmt::format("SLURM_LOCALID='{}': expected a whole number >= 0", bad));
  }
  EXPECT_EQ(error_of([] { launch_in({{"SLURM_STEP_NUM_TASKS", "0"}}); }),
            "SLURM_STEP_NUM_TASKS='0': expected a whole number >= 1");
}

}  // namespace
}  // namespace replica::distributed
