// Launch: who started this process and where the launcher placed it in the job, read from the launcher's
// environment before MPI starts, so that a job MPI cannot join (srun without PMIx starting N singletons, each
// rank 0 of 1) is refused with the option that fixes it instead of N processes training alone into one run dir.
#pragma once
#include <functional>
#include <string>

namespace replica::dist {

enum class Launcher {
  none,    // started by hand (or by a PMIx launcher that says no more than PMIX_RANK)
  mpirun,  // Open MPI's mpirun, also inside a Slurm allocation: OMPI_COMM_WORLD_{RANK,SIZE,LOCAL_RANK}
  srun,    // a task of a Slurm job step: SLURM_PROCID, SLURM_STEP_NUM_TASKS, SLURM_LOCALID
};

struct Launch {
  Launcher launcher = Launcher::none;
  bool mpi = false;    // the launcher offers MPI a world to join: mpirun, or srun --mpi=pmix (PMIX_RANK)
  std::string srun_mpi;  // srun's MPI plugin (SLURM_MPI_TYPE; "none" without --mpi)
  int rank = 0;        // this process's rank, as the launcher numbers them
  int size = 1;        // the processes it started (none: 1)
  int local_rank = 0;  // this process's rank among those on its machine
  bool one_gpu = false;  // srun bound the task to one GPU (CUDA_VISIBLE_DEVICES names one device)
};

// Looks a variable up: std::getenv, or a test's own environment. nullptr when unset.
using Environment = std::function<const char*(const char*)>;

// Reads the launch from `env`; a variable that is set but not a rank is an Error naming it.
Launch detect_launch(const Environment& env);
Launch detect_launch();  // from this process's environment

// Fails (exit 2) when the launcher started more processes than MPI can join, before MPI starts: srun without PMIx
// (--mpi=none, or pmi2, which Debian's Open MPI does not speak: its MPI_Init would fail). check_world fails the
// same way once MPI has made its world (`rank` of `size`) if that is not the launcher's.
void check_launch(const Launch& launch);
void check_world(const Launch& launch, int rank, int size);

// The GPU this process drives (train.device=cuda): its local rank, or 0 when srun bound the task to one GPU.
int local_gpu(const Launch& launch);
int local_gpu();  // of this process's launch

}  // namespace replica::dist
