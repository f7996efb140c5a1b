#!/usr/bin/env bash
# Exact resume: 40 steps in one run vs stop_at=18 then a rerun (automatic resume) give identical metrics.jsonl
# values at every step and byte-identical final weights and moments; keep-last-N retention; train.resume_from.
set -euo pipefail
source "$(dirname "$0")/ckpt_lib.bash"

train "$work/full" checkpoint.keep=2
train "$work/split" train.stop_at=18
grep -q "steps: 18" "$work/split.log"
test "$(cat "$work/split/checkpoints/latest")" = step00000018
train "$work/split"
grep -q "resuming from $work/split/checkpoints/step00000018 (step 18" "$work/split.log"
same_metrics "$work/full/metrics.jsonl" "$work/split/metrics.jsonl" 40
for f in model.safetensors optim.safetensors; do
  cmp "$work/full/checkpoints/step00000040/$f" "$work/split/checkpoints/step00000040/$f"
done
echo "final model.safetensors and optim.safetensors byte-identical"

# The memorisation alarm's window is saved with each checkpoint and handed back on resume: the resumed run's
# observer state at the end is the uninterrupted run's, and so is every evaluation line.
with_eval=("data.validation_paths=[$work/other.npy]" eval.every=5 eval.batches=1 eval.alarm_window=2)
train "$work/full_eval" "${with_eval[@]}"
train "$work/split_eval" "${with_eval[@]}" train.stop_at=18
train "$work/split_eval" "${with_eval[@]}"
$py - "$work/full_eval" "$work/split_eval" <<'PY'
import json, sys
def state(run, step):
    return json.load(open(f"{run}/checkpoints/step{step:08d}/train_state.json"))["observers"]
def evals(run):
    return [(j["step"], j["eval"]["heldout_loss"], j["eval"].get("memorisation_alarm"))
            for j in map(json.loads, open(f"{run}/metrics.jsonl")) if "eval" in j]
full, split = sys.argv[1:]
saved = state(split, 18)["memorisation_alarm"]
assert [p["step"] for p in saved["points"]] == [10, 15] and saved["train_n"] == 3, saved
# From the step-20 evaluation on, its training-loss mean covers steps 16-20, three of them before the resume.
for step in range(20, 41, 4):
    assert state(split, step) == state(full, step), (step, state(split, step), state(full, step))
# The split run also evaluated where it stopped (step 18), after its checkpoint: that evaluation is not in the state.
assert [e for e in evals(split) if e[0] != 18] == evals(full), (evals(split), evals(full))
assert any(e[2] for e in evals(full)), "the alarm fires in this run, so its resumed window is what is compared"
print("ok: the alarm's window survives the resume:", saved["points"])
PY

# keep=2: only the two newest remain; latest names the newest.
test "$(ls "$work/full/checkpoints" | tr '\n' ' ')" = "latest step00000036 step00000040 "
test "$(cat "$work/full/checkpoints/latest")" = step00000040
# keep=0: all of them (every 4 steps, the stop at 18, the end).
test "$(ls -d "$work/split/checkpoints"/step* | wc -l)" = 11

$py - "$work/split/checkpoints/step00000040/train_state.json" "$work/full/metrics.jsonl" <<'PY'
import sys, json
s = json.load(open(sys.argv[1]))
skipped = sum(1 for line in open(sys.argv[2]) if json.loads(line).get("skipped"))
assert s["version"] == 1 and s["step"] == 40 and s["tokens"] == 40 * 8 * 64, s
assert s["data"]["epoch"] == 2 and s["data"]["batch"] == 8 and s["data"]["batches_consumed"] == 40, s["data"]
assert skipped > 0 and s["optimizer"]["adam_step_count"] == 40 - skipped, (skipped, s["optimizer"])
assert len(s["optimizer"]["skip_step"]["losses"]) == 5 and s["world_size"] == 1
assert s["model"]["vocab_size"] == 512 and "train:" in s["config"]
print("train_state.json:", {k: s[k] for k in ("step", "tokens", "data")}, "skipped steps:", skipped)
PY

# Explicit resume from an earlier checkpoint of another run re-trains the same steps.
train "$work/again" train.resume_from="$work/split/checkpoints/step00000024"
grep -q "resuming from $work/split/checkpoints/step00000024 (step 24" "$work/again.log"
cmp "$work/full/checkpoints/step00000040/model.safetensors" "$work/again/checkpoints/step00000040/model.safetensors"

# A finished run started again does nothing more.
train "$work/split"
grep -q "steps: 40" "$work/split.log"
same_metrics "$work/full/metrics.jsonl" "$work/split/metrics.jsonl" 40
echo "ckpt_resume: all checks passed"
