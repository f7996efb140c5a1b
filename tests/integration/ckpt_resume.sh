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
