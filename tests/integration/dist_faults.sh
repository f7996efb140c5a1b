#!/usr/bin/env bash
# Faults: a rank that dies ends the whole job at once with a message naming it; a rank that hangs makes the
# others give up after REPLICA_DIST_TIMEOUT seconds with a clear error (no endless hang); and a training job
# whose rank is killed restarts from its last complete checkpoint and ends bitwise equal to an
# uninterrupted run.
set -euo pipefail
replica=$1
src=$2
source "$src/tests/integration/dist_common.bash"

# expect_failure NAME TEXT CMD...: CMD exits non-zero within 30 s and its output contains TEXT.
expect_failure() {
  local name=$1 text=$2
  shift 2
  local began=$SECONDS code=0
  timeout 60 "$@" >"$work/$name.log" 2>&1 || code=$?
  if [ "$code" -eq 0 ] || [ "$code" -eq 124 ] || [ $((SECONDS - began)) -gt 30 ] ||
    ! grep -qF -- "$text" "$work/$name.log"; then
    echo "FAIL: $name: exit $code after $((SECONDS - began)) s, expected a failure mentioning '$text':"
    cat "$work/$name.log"
    exit 1
  fi
  echo "ok: $name: exit $code after $((SECONDS - began)) s: $(grep -F -- "$text" "$work/$name.log" | head -1)"
}

# The self-test gives the same weights at 1, 2, 3 and 4 ranks with gradient accumulation (G = 24, M = 2), with the
# weights whole or sharded.
hashes=$("$replica" dist-selftest --global-batch 24 --micro-batch 2 | tail -1 | cut -d' ' -f3-8)
for run in "2" "3" "4" "2 --shard-weights" "3 --shard-weights"; do
  read -r n flags <<<"$run"
  # shellcheck disable=SC2086
  got=$(mpirun -np "$n" "$replica" dist-selftest --global-batch 24 --micro-batch 2 $flags | tail -1 | cut -d' ' -f3-8)
  [ "$got" = "$hashes" ] || { echo "FAIL: dist-selftest at $run ranks: $got, one rank: $hashes"; exit 1; }
done
echo "ok: dist-selftest weights/moments identical at 1, 2, 3, 4 ranks, and at 2, 3 with sharded weights ($hashes)"

expect_failure die "exited on signal 9" mpirun -np 4 "$replica" dist-selftest --steps 5 --fault die --fault-rank 1
REPLICA_DIST_TIMEOUT=3 expect_failure hang "no progress for 3 s waiting for messages from/to rank(s) 2" \
  mpirun -np 4 "$replica" dist-selftest --steps 5 --fault hang --fault-rank 2

# Kill one rank of a 2-rank training job once its first checkpoint exists; the restart resumes from the newest
# complete checkpoint and finishes.
args=("${train_args[@]}" train.max_steps=60 checkpoint.every=2)
"$replica" train "${args[@]}" run.dir="$work/reference" >/dev/null
kill_rank_at_checkpoint "$work/killed" "$work/killed.log" \
  mpirun -np 2 "$replica" train "${args[@]}" run.dir="$work/killed"
mpirun -np 2 "$replica" train "${args[@]}" run.dir="$work/killed" >"$work/restart.log"
grep "resuming from" "$work/restart.log"
same_run "$work/reference" "$work/killed"
echo "dist_faults: clean failures, and the restarted job matches the uninterrupted run bitwise"
