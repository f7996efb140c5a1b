#!/usr/bin/env bash
# The optimizer is a seam end to end: with optim.name=sgd, an optimizer that keeps one state tensor (momentum 0.9:
# momentum_buffer) and one that keeps none (plain SGD), a run checkpoints its state by name, resumes exactly (stopped
# at step 3 and resumed, it ends bitwise equal to the uninterrupted run) and reshards (saved at W = 2 with sharded
# weights and resumed at W = 1, saved at W = 1 and resumed at W = 2: the same bits); a checkpoint resumes only with
# the optimizer it was saved with; `replica plan` counts the state the optimizer keeps. AdamW's side of the same seam
# is ckpt_resume.sh, dist_resize.sh and dist_equivalence.sh.
set -euo pipefail
replica=$1
src=$2
source "$src/tests/integration/dist_common.bash"

expect_refusal() {  # TEXT LOG cmd...: exit 2 with TEXT on stderr
  local text=$1 log=$2 code=0
  shift 2
  "$@" >"$log" 2>&1 || code=$?
  if [ "$code" -ne 2 ] || ! grep -qF -- "$text" "$log"; then
    echo "FAIL: expected exit 2 and '$text' from: $*"; cat "$log"; exit 1
  fi
  echo "ok: refused: $(grep -F -- "$text" "$log" | head -1 | cut -c1-200)"
}

for optimizer in momentum plain; do
  case $optimizer in
    momentum) sgd=(optim.name=sgd optim.momentum=0.9) states=momentum_buffer ;;
    plain) sgd=(optim.name=sgd optim.momentum=0) states= ;;
  esac
  args=("${train_args[@]}" "${sgd[@]}" optim.lr=0.5 train.max_steps=6 checkpoint.every=3)
  dir=$work/$optimizer
  "$replica" train "${args[@]}" run.dir="$dir/reference" >/dev/null
  "$replica" train "${args[@]}" train.stop_at=3 run.dir="$dir/split" >/dev/null
  "$replica" train "${args[@]}" run.dir="$dir/split" >"$dir/split.log"
  grep -q "resuming from .*step00000003" "$dir/split.log"
  mpirun -np 2 "$replica" train "${args[@]}" train.shard_weights=true train.stop_at=3 run.dir="$dir/from2" >/dev/null
  grep -q '"world_size": *2' "$dir/from2/checkpoints/step00000003/train_state.json"
  "$replica" train "${args[@]}" run.dir="$dir/from2" >"$dir/from2.log"
  grep -q "resuming from .*step00000003" "$dir/from2.log"
  "$replica" train "${args[@]}" train.stop_at=3 run.dir="$dir/from1" >/dev/null
  mpirun -np 2 "$replica" train "${args[@]}" run.dir="$dir/from1" >/dev/null
  grep -q '"world_size": *2' "$dir/from1/checkpoints/step00000006/train_state.json"
  for run in split from2 from1; do same_run "$dir/reference" "$dir/$run"; done

  # The checkpoint holds exactly the state the optimizer names, and its step count.
  /usr/bin/python3 - "$dir/reference" "$states" <<'PY'
import json, struct, sys
run, states = sys.argv[1], sys.argv[2].split()
ckpt = f"{run}/checkpoints/step00000006"
def names(path):
    with open(path, "rb") as f:
        header = json.loads(f.read(struct.unpack("<Q", f.read(8))[0]))
    return sorted(k for k in header if k != "__metadata__")
params = names(f"{ckpt}/model.safetensors")
expected = sorted(f"{s}.{p}" for s in states for p in params)
assert names(f"{ckpt}/optim.safetensors") == expected, (names(f"{ckpt}/optim.safetensors")[:3], expected[:3])
assert "optim.safetensors" in json.load(open(f"{ckpt}/MANIFEST.json"))["files"]
lines = [json.loads(l) for l in open(f"{run}/metrics.jsonl")]
steps = [l for l in lines if "loss" in l]
skipped = sum(1 for l in steps if l.get("skipped"))
state = json.load(open(f"{ckpt}/train_state.json"))
assert state["optimizer"]["adam_step_count"] == 6 - skipped, state["optimizer"]
assert steps[-1]["loss"] < steps[0]["loss"], (steps[0]["loss"], steps[-1]["loss"])
print(f"ok: {len(expected)} state tensors ({' '.join(states) or 'none'}), step count {6 - skipped}, "
      f"loss {steps[0]['loss']:.4f} -> {steps[-1]['loss']:.4f}")
PY
  echo "ok: sgd ($optimizer): resumed at step 3, 2 -> 1 ranks (sharded weights) and 1 -> 2 ranks, bitwise equal"
done

# A checkpoint's state is of the optimizer it was saved with: a resume may not change optim.name, and a stage
# transition (optim.load_state) from another optimizer's checkpoint names both sets of state.
cp -r "$work/momentum/split" "$work/switch"
expect_refusal "optim.name" "$work/switch.log" \
  "$replica" train "${train_args[@]}" train.max_steps=9 checkpoint.every=3 run.dir="$work/switch"
expect_refusal "holds the optimizer state momentum_buffer, but the optimizer (optim.name) keeps exp_avg, exp_avg_sq" \
  "$work/load.log" "$replica" train "${train_args[@]}" train.max_steps=3 optim.load_state=true \
  model.init_from="$work/momentum/reference/checkpoints/step00000006" model.config="''" run.dir="$work/load"

# The plan counts the optimizer's state: two arrays of the shard for AdamW, one with momentum, none for plain SGD.
plan() { "$replica" plan --model "$work/model.yaml" --seq-len 32 --ranks 1 "$@"; }
plan | grep -q "^optimizer state  .*(adamw: exp_avg + exp_avg_sq, fp32; host memory with optim.host_moments)$"
plan optim.name=sgd optim.momentum=0.9 | grep -q "^  optimizer state fp32 .*  sharded: momentum_buffer$"
plan optim.name=sgd | grep -q "^  optimizer state fp32 .* 0.00 GiB  sharded: none$"
plan optim.name=sgd | grep -q "^optimizer state  0.00 GiB  (sgd keeps none)$"
echo "optim_seam: sgd with one state tensor and with none checkpoints, resumes exactly and reshards by name"
