#!/usr/bin/env bash
# Resize on resume: a run checkpointed at step 3 with W = 4 ranks resumes with W = 2 and with W = 1, one
# checkpointed with W = 1 resumes with W = 2, and one checkpointed with sharded weights at W = 4 resumes at W = 1
# with whole weights, at the same global batch: every resumed run reads the same batches (epoch, batch) and ends
# with losses, weights and Adam moments bitwise equal to an unresized run.
set -euo pipefail
replica=$1
src=$2
source "$src/tests/integration/dist_common.bash"

args=("${train_args[@]}" train.max_steps=6 checkpoint.every=3)
"$replica" train "${args[@]}" run.dir="$work/reference" >/dev/null

mpirun -np 4 "$replica" train "${args[@]}" train.stop_at=3 run.dir="$work/from4" >/dev/null
test "$(cat "$work/from4/checkpoints/latest")" = step00000003
grep -q '"world_size": *4' "$work/from4/checkpoints/step00000003/train_state.json"
cp -r "$work/from4" "$work/from4to2"
cp -r "$work/from4" "$work/from4to1"
mpirun -np 2 "$replica" train "${args[@]}" run.dir="$work/from4to2" >"$work/4to2.log"
"$replica" train "${args[@]}" run.dir="$work/from4to1" >"$work/4to1.log"
grep -q "resuming from .*step00000003" "$work/4to2.log"

"$replica" train "${args[@]}" train.stop_at=3 run.dir="$work/from1to2" >/dev/null
mpirun -np 2 "$replica" train "${args[@]}" run.dir="$work/from1to2" >/dev/null
grep -q '"world_size": *2' "$work/from1to2/checkpoints/step00000006/train_state.json"

# Saved with sharded weights at W = 4, resumed with whole weights at W = 1.
mpirun -np 4 "$replica" train "${args[@]}" train.shard_weights=true train.stop_at=3 run.dir="$work/fsdp4to1" >/dev/null
"$replica" train "${args[@]}" run.dir="$work/fsdp4to1" >/dev/null

for run in from4to2 from4to1 from1to2 fsdp4to1; do same_run "$work/reference" "$work/$run"; done
echo "dist_resize: 4 -> 2, 4 -> 1, 1 -> 2 and 4 sharded -> 1 resumed at step 3 and match the unresized run bitwise"
