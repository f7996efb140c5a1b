#!/usr/bin/env bash
# The hostile cases of the reliability review (shared/reviews/reliability-2026-12.md) that need real processes or a
# real disk, each reproduced as the review did and checked to end in a clear exit 2 with nothing lost: two trainers
# on one run.dir (D1), a disk that fills up (D3, D8), incomplete checkpoints and an earlier run's history (D4),
# errors that used to abort (D5), NaN and Inf in recipes, losses and weights (D6), export-hf into DIR/ (D7), a
# resume that changes the recipe (D10) and checks that came after the run directory was written (D11).
set -euo pipefail
source "$(dirname "$0")/ckpt_lib.bash"

run() { "$replica" train --config "$work/recipe.yaml" "$@"; }

# D1: a second trainer on the same run.dir is refused while the first runs; the first finishes untouched.
"$replica" train --config "$work/recipe.yaml" run.dir="$work/a" train.max_steps=40 checkpoint.every=2 \
  >"$work/a.log" 2>&1 &
first=$!
for _ in $(seq 200); do [ -s "$work/a/metrics.jsonl" ] && break; sleep 0.05; done
expect_failure "in use by another replica process (pid $first" run run.dir="$work/a" train.max_steps=40 optim.lr=1e-3
wait "$first"
train "$work/solo" train.max_steps=40 checkpoint.every=2
same_metrics "$work/a/metrics.jsonl" "$work/solo/metrics.jsonl" 40
cmp "$work/a/checkpoints/step00000040/optim.safetensors" "$work/solo/checkpoints/step00000040/optim.safetensors"
echo "ok: the first run is bitwise the run alone"

# D4: a step directory without a manifest is set aside (said so), never deleted, and the one train.resume_from names
# stays where it is; an earlier run's history is not erased by a fresh start.
train "$work/m" train.stop_at=4 checkpoint.every=4
rm "$work/m/checkpoints/step00000004/MANIFEST.json"
expect_failure "missing MANIFEST.json" run run.dir="$work/m" train.resume_from="$work/m/checkpoints/step00000004"
test -f "$work/m/checkpoints/step00000004/model.safetensors"
lines=$(wc -l <"$work/m/metrics.jsonl")
expect_failure "starting at step 0 would erase them" run run.dir="$work/m"
grep -q "set aside .*step00000004 as step00000004.incomplete" "$work/err"
test -f "$work/m/checkpoints/step00000004.incomplete/model.safetensors"
test "$(wc -l <"$work/m/metrics.jsonl")" = "$lines"
# The same run restarting before its first checkpoint recomputes its steps: allowed.
train "$work/n" train.stop_at=3 checkpoint.every=0 train.max_steps=6
rm -r "$work/n/checkpoints"
train "$work/n" train.stop_at=3 checkpoint.every=0 train.max_steps=6
grep -q "training steps of this recipe and no checkpoint: starting at step 0 recomputes" \
  "$work/n.log"
echo "ok: incomplete checkpoints are set aside, history is kept"

# Review #17 and #18: `latest` naming another run's checkpoint, or being a directory, is refused; nothing changes.
cp -r "$work/solo" "$work/l"
echo "../../solo/checkpoints/step00000040" >"$work/l/checkpoints/latest"
expect_failure "which is not a checkpoint directory of this run" run run.dir="$work/l" train.max_steps=44
rm "$work/l/checkpoints/latest"; mkdir "$work/l/checkpoints/latest"
expect_failure "latest: is a directory" run run.dir="$work/l" train.max_steps=44
same_metrics "$work/l/metrics.jsonl" "$work/solo/metrics.jsonl" 40
echo "ok: latest names only this run's checkpoints"

# D5: what used to abort (exit 134/139) is a one-line error with exit 2.
touch "$work/afile"
expect_failure "run.dir: $work/afile exists and is not a directory" run run.dir="$work/afile"
expect_failure "--threads: Value 100000 not in range 0 to 1024" \
  "$replica" forward --model "$work/solo/checkpoints/step00000040" --tokens "$work/ids.npy" --out "$work/l.npy" \
  --threads 100000
mkdir -p "$work/c"; touch "$work/c/checkpoints"
expect_failure "checkpoints: exists and is not a directory" run run.dir="$work/c"

# D6: non-finite numbers in a recipe are refused; a run whose loss becomes non-finite stops before the update,
# and its newest checkpoint is the last finite state.
expect_failure "'optim.lr' expects a finite number" run run.dir="$work/inf" optim.lr=.inf
test ! -e "$work/inf"
expect_failure "stopping before the update" run run.dir="$work/nan" optim.lr=1e30 optim.clip=0 checkpoint.every=1 \
  optim.skip_step=false
$py - "$work/nan" <<'PY'
import sys, json, math, os
run = sys.argv[1]
steps = [json.loads(l) for l in open(f"{run}/metrics.jsonl") if '"loss"' in l]
assert all(math.isfinite(s["loss"]) for s in steps if s["loss"] is not None), steps
assert all(s["loss"] is not None for s in steps), "a null loss was logged"
latest = open(f"{run}/checkpoints/latest").read().strip()
assert int(latest[4:]) == steps[-1]["step"], (latest, steps[-1]["step"])
print(f"ok: stopped after {len(steps)} finite steps; latest checkpoint {latest}")
PY

# NaN weights loaded from an HF directory: evaluation refuses to score them, training stops before its first update.
"$replica" export-hf --checkpoint "$work/solo/checkpoints/step00000040" --out "$work/hfnan" >/dev/null
$py - "$work/hfnan/model.safetensors" <<'PY'
import sys, json, struct, numpy as np
path = sys.argv[1]
raw = bytearray(open(path, "rb").read())
n = struct.unpack("<Q", raw[:8])[0]
entry = json.loads(raw[8:8 + n])["model.layers.0.mlp.down_proj.weight"]
b, e = entry["data_offsets"]
nan = np.full((e - b) // 4, np.nan, np.float32) if entry["dtype"] == "F32" else np.full((e - b) // 2, 0x7FC0, np.uint16)
raw[8 + n + b:8 + n + e] = nan.tobytes()
open(path, "wb").write(raw)
PY
printf 'heldout:\n  files: [%s]\n  max_docs: 2\n' "$work/train.npy" >"$work/nan_suite.yaml"
expect_failure "log-probabilities are not finite" env -C "$src" "$replica" eval --model "$work/hfnan" --suite "$work/nan_suite.yaml"
expect_failure "stopping before the update" run run.dir="$work/fromnan" model.init_from="$work/hfnan"
expect_failure "logits are NaN or infinite: the model's weights are not finite" \
  "$replica" forward --model "$work/hfnan" --tokens "$work/ids.npy" --out "$work/nan_logits.npy"
test ! -e "$work/nan_logits.npy"

# D7: export-hf into DIR/ (a trailing slash) writes DIR and leaves no partial directory.
mkdir -p "$work/hfout"
"$replica" export-hf --checkpoint "$work/solo/checkpoints/step00000040" --out "$work/hfout/" >/dev/null
test -f "$work/hfout/config.json" && test -f "$work/hfout/model.safetensors"
test -z "$(find "$work" -maxdepth 2 -name '*.partial*')"
echo "ok: export-hf DIR/ exports into DIR"

# D10: a resume that changes what the run computes is refused, naming the key and both values, unless
# train.allow_change names it; neutral keys are reported; max_steps below the checkpoint is refused, equal is a no-op.
train "$work/e" train.max_steps=6 checkpoint.every=2
expect_failure "optim.lr: 0.01 -> 0.001" run run.dir="$work/e" train.max_steps=6 optim.lr=1e-3
grep -q "train.allow_change=\[optim.lr\]" "$work/err"
expect_failure "train.max_steps: 6 -> 8" run run.dir="$work/e" train.max_steps=8   # moves the cosine horizon
grep -q "keep its horizon: schedule.t_max=6" "$work/err"
expect_failure "train.max_steps=4 is before the checkpoint's step 6" run run.dir="$work/e" train.max_steps=4
events=$(ls "$work/e/tb" | wc -l)
run run.dir="$work/e" train.max_steps=6 train.threads=2 >"$work/stdout"
grep -q "resume changes train.threads: 1 -> 2" "$work/stdout"
grep -q "nothing to train: the run is at step 6 of 6" "$work/stdout"
grep -q "none run now" "$work/stdout"
test "$(ls "$work/e/tb" | wc -l)" = "$events"  # a no-op resume logs nothing, so it adds no event file
# Extending the finished run on its own schedule: the horizon kept with schedule.t_max, the steps after it are the
# uninterrupted 8-step run's with the same horizon (at another thread count: the bits do not depend on it where
# oneDNN has a bf16 matmul, AVX-512; below it bf16 runs through oneDNN's fp32 matmul, kernels/cpu/gemm.cc, which may
# split its sums across threads, so there the extension keeps the run's one thread).
threads=2
grep -qw avx512f /proc/cpuinfo || threads=1
cp -r "$work/e" "$work/e8"
run run.dir="$work/e8" train.max_steps=8 schedule.t_max=6 train.threads=$threads >"$work/stdout"
grep -q "resume changes schedule.t_max: 0 -> 6" "$work/stdout"
train "$work/e8_whole" train.max_steps=8 schedule.t_max=6 checkpoint.every=2
same_metrics "$work/e8/metrics.jsonl" "$work/e8_whole/metrics.jsonl" 8
cmp "$work/e8/checkpoints/step00000008/model.safetensors" "$work/e8_whole/checkpoints/step00000008/model.safetensors"
run run.dir="$work/e" train.max_steps=8 train.allow_change=[train.max_steps] >"$work/stdout"
grep -q "resume changes train.max_steps: 6 -> 8" "$work/stdout"
echo "ok: resume changes are refused or reported"

# D11: a sequence longer than the model's positions, and a missing eval suite, are refused before anything is written.
expect_failure "data.seq_len=512 exceeds max_position_embeddings=256" run run.dir="$work/long" data.seq_len=512
test ! -e "$work/long"
cp "$work/e/config.yaml" "$work/config.before"
expect_failure "nope.yaml" run run.dir="$work/e" train.max_steps=8 eval.suite="$work/nope.yaml"
cmp "$work/e/config.yaml" "$work/config.before"
echo "ok: late checks come first"

# D3 and D8: a disk that fills up mid-run stops the run with the real reason, naming the file (needs a tmpfs).
full="$work/full"
mkdir -p "$full"
if mount -t tmpfs -o size=2m tmpfs "$full" 2>/dev/null; then
  trap 'umount "$full" 2>/dev/null || true; rm -rf "$work"' EXIT
  head -c $((2048 * 1024 - 12 * 1024)) /dev/zero >"$full/filler" || true
  expect_failure "No space left on device" run run.dir="$full/run" train.max_steps=40 checkpoint.every=0
  grep -Eq "(metrics.jsonl|tfevents|config.yaml)[^ ]*: write failed \(No space left on device\)" "$work/err"
  rm "$full/filler"
  umount "$full"
  echo "ok: a full disk stops the run and says why"
else
  echo "skip: D3/D8 need a tmpfs (mount not permitted here)"
fi
echo "all fault cases ok"
