#!/usr/bin/env bash
# Data-parallel scaling on this machine: `replica train` on the olmo3_tiny model (bf16, seq 256, global batch
# 16, micro-batch 8) in one process with 2 threads, and under mpirun as 2 ranks × 1 thread, with whole and with
# sharded weights; tokens/s (median over the measured steps), communication seconds per step (gradient groups,
# weight all-gather or group gathers, and the small exchanges, as rank 0 waits for them) and their share of the
# step. Prints a markdown table for bench/RESULTS.md.   bench/dist_scaling.sh            BUILD=build STEPS=30
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD:-build}
steps=${STEPS:-30}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl=self,vader OMPI_MCA_btl_vader_single_copy_mechanism=none

# Random tokens over the dolma2 vocabulary (speed does not depend on the text).
/usr/bin/python3 -c "import numpy as np; np.random.default_rng(0).integers(0, 100278, 256 * 16 * ($steps + 2), dtype=np.uint32).tofile('$tmp/train.npy')"
args=(--config configs/recipes/tiny.yaml model.init_from="''" data.mix_file="''" "data.paths=[$tmp/train.npy]"
  "data.validation_paths=[]" data.global_batch_size=16 data.micro_batch_size=8 train.max_steps="$steps"
  schedule.warmup_steps=2 checkpoint.every=0 eval.every=0 train.log_every=1000)

summarize() {  # label, ranks, threads, run dir
  /usr/bin/python3 - "$@" <<'PY'
import json, statistics, sys
label, ranks, threads, run = sys.argv[1:]
rows = [r for r in map(json.loads, open(f"{run}/metrics.jsonl")) if "loss" in r][3:]  # warm-up steps left out
tps = statistics.median(r["tokens_per_s"] for r in rows)
step = statistics.median(256 * 16 / r["tokens_per_s"] for r in rows)
comm = statistics.median(r["comm_s"] for r in rows)
print(f"| {label} | {ranks} × {threads} | {tps:,.0f} | {step * 1e3:.1f} | {comm * 1e3:.1f} | {100 * comm / step:.1f} % | {rows[-1]['loss']:.9f} |")
PY
}

echo "| run | ranks × threads | tokens/s | step ms | comm ms/step | comm share | loss at step $steps |"
echo "|---|---|---|---|---|---|---|"
"$build/replica" train "${args[@]}" train.threads=2 run.dir="$tmp/one" >/dev/null
summarize "1 process" 1 2 "$tmp/one"
mpirun -np 2 --bind-to core "$build/replica" train "${args[@]}" train.threads=1 run.dir="$tmp/two" >/dev/null
summarize "mpirun -np 2" 2 1 "$tmp/two"
mpirun -np 2 --bind-to core "$build/replica" train "${args[@]}" train.threads=1 train.shard_weights=true \
  run.dir="$tmp/sharded" >/dev/null
summarize "mpirun -np 2, sharded weights" 2 1 "$tmp/sharded"
