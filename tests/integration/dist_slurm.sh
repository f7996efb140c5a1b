#!/usr/bin/env bash
# Slurm launches replica as mpirun does. On a one-node Slurm started here (slurm_cluster.bash): a 2-task
# `srun --mpi=pmix` job gives the same losses and checkpoint bytes as `mpirun -np 2`; an srun without PMIx is
# refused (exit 2) before it trains; and scripts/slurm/olmo3_7b.sbatch (the tiny recipe on the CPU), sent USR1 as
# Slurm does ahead of a time limit, checkpoints, requeues itself, resumes and ends with those same bits.
# Skipped (exit 77) where the daemons cannot start.
set -euo pipefail
replica=$1
src=$2
source "$src/tests/integration/dist_common.bash"
source "$src/tests/integration/slurm_cluster.bash"
start_slurm
export REPLICA_DIST_TIMEOUT=60  # a rank that hangs fails the test in a minute, not ten

# 80 steps, so that a USR1 sent after step 1 lands well before the end; the last step's checkpoint only.
args=("${train_args[@]}" train.max_steps=80 checkpoint.every=0)
mpirun -np 2 "$replica" train "${args[@]}" run.dir="$work/mpirun" >"$work/mpirun.log"

srun -n 2 --mpi=pmix "$replica" train "${args[@]}" run.dir="$work/srun" >"$work/srun.log"
grep -q "machine: 2 rank(s) (mpi)" "$work/srun.log"
same_run "$work/mpirun" "$work/srun"
echo "ok: srun --mpi=pmix -n 2 = mpirun -np 2, bit for bit"

code=0
srun -n 2 --mpi=none "$replica" train "${args[@]}" run.dir="$work/no_pmix" >"$work/no_pmix.log" 2>&1 || code=$?
[ "$code" -eq 2 ] || { cat "$work/no_pmix.log"; echo "FAIL: srun --mpi=none exited $code, expected 2"; exit 1; }
grep -q "srun started 2 tasks (SLURM_STEP_NUM_TASKS) with --mpi=none" "$work/no_pmix.log"
test ! -e "$work/no_pmix"
echo "ok: srun --mpi=none -n 2 refused with exit 2, nothing written"

# The template as a user submits it, on this cluster's one node of 2 CPUs and no GPUs; the overrides after the
# script are the test's recipe less its --config (the template passes RECIPE). 30 minutes, so that the template's
# USR1@900 is not due while the test runs (under 900 s it is due at once, at every start): the test sends it.
[ "${train_args[0]}" = --config ]
out=$work/sbatch.out
job=$(DEVICE=cpu RECIPE="${train_args[1]}" REPLICA="$replica" sbatch --parsable --nodes=1 --ntasks-per-node=2 \
  --cpus-per-task=1 --gpus-per-node=0 --time=30 --output="$out" "$src/scripts/slurm/olmo3_7b.sbatch" \
  "${args[@]:2}" run.dir="$work/sbatch")

job_state() { scontrol show job "$job" | grep -o 'JobState=[A-Z_]*' | cut -d= -f2; }
trained_a_step() { grep -q '"loss"' "$work/sbatch/metrics.jsonl" 2>/dev/null; }
job_ended() {
  case $(job_state) in COMPLETED | FAILED | CANCELLED | TIMEOUT | NODE_FAIL | OUT_OF_MEMORY) ;; *) false ;; esac
}
wait_for 30 trained_a_step || { cat "$out"; echo "FAIL: job $job trained no step in 30 s ($(job_state))"; exit 1; }
scancel --signal=USR1 "$job"  # what --signal=USR1@900 sends every task 900 s before the time limit
wait_for 90 job_ended || { cat "$out"; echo "FAIL: job $job did not end within 90 s ($(job_state))"; exit 1; }
cat "$out"
stopped=$(grep -o 'stopped after step [0-9]* by a signal' "$out" | grep -o '[0-9]*' || true)
[ -n "$stopped" ] || { echo "FAIL: USR1 did not stop the first start of job $job (did it end first?)"; exit 1; }
[ "$(job_state)" = COMPLETED ]
scontrol show job "$job" | grep -q 'Restarts=1 '
grep -q "job $job stopped with a checkpoint: requeued" "$out"
grep -q "job $job start 2:" "$out"
grep -q "resuming from $work/sbatch/checkpoints/step$(printf %08d "$stopped") (step $stopped," "$out"
same_run "$work/mpirun" "$work/sbatch"
/usr/bin/python3 - "$work/sbatch/config.yaml" <<'PY'
import sys, yaml
train = yaml.safe_load(open(sys.argv[1]))["train"]
# the template's settings, FSDP its default
assert (train["device"], train["shard_weights"], train["context_parallel"]) == ("cpu", True, 1), train
PY
echo "ok: sbatch olmo3_7b.sbatch (FSDP) stopped by USR1 after step $stopped, requeued, resumed:" \
  "= mpirun -np 2, bit for bit"
