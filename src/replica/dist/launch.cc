// The launch read from the environment: mpirun first (its ranks inherit the SLURM_* variables of the step that
// started its daemons, which describe those daemons, not the ranks), then a Slurm job step, then PMIx alone.
#include "replica/dist/launch.h"

#include <climits>
#include <cstdlib>
#include <string_view>

#include "replica/core/error.h"

namespace replica::dist {

namespace {

// The value of `name` as a number >= `least`, or `fallback` when it is unset or empty.
int number(const Environment& env, const char* name, int least, int fallback) {
  const char* text = env(name);
  if (!text || !*text) return fallback;
  char* end = nullptr;
  const long value = std::strtol(text, &end, 10);
  check(*end == '\0' && value >= least && value <= INT_MAX, "{}='{}': expected a whole number >= {}", name, text,
        least);
  return int(value);
}

bool is_set(const Environment& env, const char* name) { return env(name) != nullptr; }

// CUDA_VISIBLE_DEVICES names exactly one device ("3", "GPU-…"; not "" or "0,1").
bool names_one_device(const char* devices) {
  return devices && *devices && std::string_view(devices).find(',') == std::string_view::npos;
}

const char* kUsePmix =
    "launch the tasks with `srun --mpi=pmix` (Open MPI joins a Slurm step through PMIx; `srun --mpi=list` lists "
    "this Slurm's MPI plugins; SLURM_MPI_TYPE=pmix in the environment or MpiDefault=pmix in slurm.conf do the same), "
    "or start them with mpirun instead";

}  // namespace

Launch detect_launch(const Environment& env) {
  Launch launch;
  if (is_set(env, "OMPI_COMM_WORLD_SIZE")) {
    launch.launcher = Launcher::mpirun;
    launch.mpi = true;
    launch.size = number(env, "OMPI_COMM_WORLD_SIZE", 1, 1);
    launch.rank = number(env, "OMPI_COMM_WORLD_RANK", 0, 0);
    launch.local_rank = number(env, "OMPI_COMM_WORLD_LOCAL_RANK", 0, 0);
  } else if (is_set(env, "SLURM_STEP_NUM_TASKS")) {  // set for srun's tasks, not for an sbatch script itself
    launch.launcher = Launcher::srun;
    launch.mpi = is_set(env, "PMIX_RANK");
    const char* plugin = env("SLURM_MPI_TYPE");
    launch.srun_mpi = plugin && *plugin ? plugin : "none";
    launch.size = number(env, "SLURM_STEP_NUM_TASKS", 1, 1);
    launch.rank = number(env, "SLURM_PROCID", 0, 0);
    launch.local_rank = number(env, "SLURM_LOCALID", 0, 0);
    launch.one_gpu = names_one_device(env("CUDA_VISIBLE_DEVICES"));
  } else if (is_set(env, "PMIX_RANK")) {
    launch.mpi = true;
    launch.rank = number(env, "PMIX_RANK", 0, 0);
  }
  return launch;
}

Launch detect_launch() {
  return detect_launch([](const char* name) -> const char* { return std::getenv(name); });
}

void check_launch(const Launch& launch) {
  if (launch.launcher != Launcher::srun || launch.mpi || launch.size == 1) return;
  fail("srun started {} tasks (SLURM_STEP_NUM_TASKS) with --mpi={}, which gives Open MPI no PMIx to join them by, so "
       "each would train alone as rank 0 of 1 into the same run directory: {}",
       launch.size, launch.srun_mpi, kUsePmix);
}

void check_world(const Launch& launch, int rank, int size) {
  if (launch.launcher != Launcher::srun || (rank == launch.rank && size == launch.size)) return;
  fail("srun started this task as {} of {} (SLURM_PROCID, SLURM_STEP_NUM_TASKS) but MPI joined it as rank {} of {}: "
       "{}",
       launch.rank, launch.size, rank, size, kUsePmix);
}

int local_gpu(const Launch& launch) { return launch.one_gpu ? 0 : launch.local_rank; }

int local_gpu() { return local_gpu(detect_launch()); }

}  // namespace replica::dist
