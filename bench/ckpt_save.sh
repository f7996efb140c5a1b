#!/usr/bin/env bash
# What a checkpoint save costs the training loop (docs/checkpoints.md): the ~100M model
# (configs/models/olmo3_100m.yaml, 3.2 GB checkpoints) trained for STEPS steps with a checkpoint every EVERY
# steps vs. only at the end, same data and shape. Cost per save = (loop time with saves − loop time without) /
# saves, where loop time = Σ step time (steps 2..N) + Σ pauses (waiting for a previous save + copying the
# tensors) of the saves before the last step (both runs save at the end). The writer thread runs at
# SCHED_IDLE, so EVERY × step time must exceed its write time or the next save waits.
#   bench/ckpt_save.sh            BUILD=build THREADS=2 STEPS=20 EVERY=10 BATCH=4 SEQ=256 PRECISION=bf16
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD:-build}
threads=${THREADS:-2}
steps=${STEPS:-20}
every=${EVERY:-10}
batch=${BATCH:-4}
seq=${SEQ:-256}
precision=${PRECISION:-bf16}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
/usr/bin/python3 -c "import numpy as np, sys; np.save(sys.argv[1], np.random.default_rng(0).integers(0, 100278, size=$((batch * seq * (steps + 1))), dtype=np.uint32))" "$tmp/tokens.npy"
cat >"$tmp/recipe.yaml" <<YAML
model: {config: configs/models/olmo3_100m.yaml}
data: {paths: [$tmp/tokens.npy], seq_len: $seq, global_batch_size: $batch, micro_batch_size: $batch}
train: {max_steps: $steps, precision: $precision, threads: $threads}
schedule: {warmup_steps: 1}
YAML
for e in 0 "$every"; do
  "$build/replica" train --config "$tmp/recipe.yaml" run.dir="$tmp/every$e" checkpoint.every=$e >"$tmp/every$e.log"
done
/usr/bin/python3 - "$tmp" "$steps" "$every" <<'PY'
import sys, json, re, os
tmp, steps, every = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
def run(name):
    lines = [json.loads(l) for l in open(f"{tmp}/{name}/metrics.jsonl") if '"loss"' in l]
    step_s = [l["tokens"] / l["step"] / l["tokens_per_s"] for l in lines[1:]]  # step 1 warms up
    log = open(f"{tmp}/{name}.log").read()
    pauses = [float(x) for x in re.findall(r"loop paused ([0-9.]+) s", log)]
    writes = [float(x) for x in re.findall(r"written in ([0-9.]+) s", log)]
    return step_s, pauses, writes
b_steps, _, _ = run("every0")
s_steps, s_pauses, writes = run(f"every{every}")
saves = len(s_pauses) - 1
cost = (sum(s_steps) + sum(s_pauses[:-1]) - sum(b_steps)) / saves
step = sum(b_steps) / len(b_steps)
d = f"{tmp}/every{every}/checkpoints/step{steps:08d}"
size = sum(os.path.getsize(os.path.join(d, f)) for f in os.listdir(d))
print("step s without saves:", [round(x, 2) for x in b_steps], " with:", [round(x, 2) for x in s_steps],
      " snapshot pauses:", s_pauses, " background writes:", writes)
print("| model | checkpoint | step | snapshot pause | background write | cost per save | share of a step |")
print("|---|---|---|---|---|---|---|")
print(f"| olmo3_100m, {os.environ.get('PRECISION', 'bf16')}, {steps} steps, save every {every} | {size / 1e9:.2f} GB | "
      f"{step:.2f} s | {sum(s_pauses[:-1]) / saves:.3f} s | {sum(writes) / len(writes):.1f} s | {cost:.3f} s | "
      f"{100 * cost / step:.1f} % |")
PY
