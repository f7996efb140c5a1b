#!/usr/bin/env bash
# Long-context training memory and speed: the tiny stage-3 model (olmo3_tiny's block, YaRN on the full-attention
# layers, 65,536 positions) trained for STEPS steps on packed documents (OBFD, intra-document masking) at
# T = 8,192 … 65,536, micro-batch 1. Records each run's peak resident memory (/usr/bin/time -v) and the last step's
# time, and prints a markdown table for bench/RESULTS.md.   bench/long_context.sh    BUILD=build STEPS=2 THREADS=2
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD:-build}
steps=${STEPS:-2}
threads=${THREADS:-2}
lengths=${LENGTHS:-"8192 16384 32768 65536"}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# olmo3_tiny extended as stage 3 extends the 7B: YaRN (OLMo-core's formula, factor 64 from 1,024 positions).
sed 's/^max_position_embeddings: .*/max_position_embeddings: 65536/' configs/models/olmo3_tiny.yaml >"$tmp/model.yaml"
cat >>"$tmp/model.yaml" <<'YAML'
rope_scaling: {rope_type: yarn, factor: 64.0, original_max_position_embeddings: 1024, beta_fast: 32, beta_slow: 1}
YAML

# Documents of log-normal lengths (median 1,024 tokens, σ = 1.5, at most 65,536) of random tokens, each ending in
# EOS: enough for STEPS + 1 packed instances at the longest T. Speed does not depend on the text.
/usr/bin/python3 - "$tmp/docs.npy" "$steps" <<'PY'
import sys, numpy as np
rng = np.random.default_rng(0)
docs, total = [], 0
while total < 65536 * (int(sys.argv[2]) + 2):
    n = int(min(65535, max(1, rng.lognormal(np.log(1024), 1.5))))
    docs.append(np.append(rng.integers(0, 100257, size=n, dtype=np.uint32), np.uint32(100257)))
    total += n + 1
np.save(sys.argv[1], np.concatenate(docs))
PY

echo "| T | peak RSS | RSS / T | step $steps s | tokens/s |"
echo "|---|---|---|---|---|"
for T in $lengths; do
  run="$tmp/run$T"
  /usr/bin/time -v -o "$tmp/time$T.txt" "$build/replica" train --config configs/recipes/tiny.yaml \
    model.config="$tmp/model.yaml" model.init_from="''" data.mix_file="''" "data.paths=[$tmp/docs.npy]" \
    "data.validation_paths=[]" data.seq_len="$T" data.global_batch_size=1 data.micro_batch_size=1 \
    data.packing=obfd train.max_steps="$steps" train.threads="$threads" schedule.warmup_steps=0 \
    checkpoint.every=0 eval.every=0 run.dir="$run" >"$tmp/log$T.txt" 2>&1 || { cat "$tmp/log$T.txt"; exit 1; }
  /usr/bin/python3 - "$T" "$tmp/time$T.txt" "$run/metrics.jsonl" <<'PY'
import json, sys
T = int(sys.argv[1])
rss_kb = next(int(l.split(":")[1]) for l in open(sys.argv[2]) if "Maximum resident set size" in l)
last = [r for r in map(json.loads, open(sys.argv[3])) if "loss" in r][-1]
print(f"| {T:,} | {rss_kb / 2**20:.2f} GiB | {rss_kb * 1024 / T / 1e3:.1f} kB | {T / last['tokens_per_s']:.1f} "
      f"| {last['tokens_per_s']:,.0f} |")
PY
done
