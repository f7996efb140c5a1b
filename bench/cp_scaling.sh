#!/usr/bin/env bash
# Context parallelism on this machine: one 16,384-token sequence of the olmo3_tiny block (fp32, remat none, one
# instance per step) trained at train.context_parallel = 1, 2 and 4 (one process; mpirun -np 2 and 4, 1 thread per
# rank): the step time of the last step, rank 0's communication seconds and share, its peak RSS (every rank's, the
# largest), and the bytes each rank sends per layer by formula (6 (N − 1) (T / N) K D floats: K and V all-gathered
# in the forward and again in the backward, dK and dV reduce-scattered). Prints a markdown table for
# bench/RESULTS.md.   bench/cp_scaling.sh            BUILD=build STEPS=2 SEQ=16384
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD:-build}
steps=${STEPS:-2}
seq=${SEQ:-16384}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_btl=self,vader OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_hwloc_base_binding_policy=none

sed "s/^max_position_embeddings: .*/max_position_embeddings: $seq/" configs/models/olmo3_tiny.yaml >"$tmp/model.yaml"
/usr/bin/python3 -c "import numpy as np; np.random.default_rng(0).integers(0, 100278, $seq * ($steps + 1), dtype=np.uint32).tofile('$tmp/train.npy')"
args=(--config configs/recipes/tiny.yaml model.config="$tmp/model.yaml" model.init_from="''" data.mix_file="''"
  "data.paths=[$tmp/train.npy]" "data.validation_paths=[]" data.seq_len="$seq" data.global_batch_size=1
  data.micro_batch_size=1 train.precision=fp32 train.threads=1 train.max_steps="$steps" schedule.warmup_steps=1
  checkpoint.every=0 eval.every=0 train.log_every=1000)

echo "| CP | ranks | step s | comm s (rank 0) | comm share | peak RSS per rank | sent per layer per rank | loss at step $steps |"
echo "|---|---|---|---|---|---|---|---|"
for cp in 1 2 4; do
  # Each rank's peak RSS (kB) into rss.<rank>.
  rss="/usr/bin/time -f %M -o $tmp/rss.\${OMPI_COMM_WORLD_RANK:-0}"
  if [ "$cp" = 1 ]; then
    sh -c "$rss $build/replica train \"\$@\"" sh "${args[@]}" run.dir="$tmp/cp1" >/dev/null
  else
    mpirun -np "$cp" sh -c "$rss $build/replica train \"\$@\"" sh "${args[@]}" train.context_parallel="$cp" \
      run.dir="$tmp/cp$cp" >/dev/null
  fi
  /usr/bin/python3 - "$cp" "$seq" "$tmp" <<'PY'
import glob, json, sys
cp, T, tmp = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
last = [r for r in map(json.loads, open(f"{tmp}/cp{cp}/metrics.jsonl")) if "loss" in r][-1]
step = T / last["tokens_per_s"]
rss = max(int(open(p).read().split()[-1]) for p in glob.glob(f"{tmp}/rss.*"))
K, D = 2, 32  # olmo3_tiny's KV heads and head dim
sent = 6 * (cp - 1) * (T // cp) * K * D * 4
print(f"| {cp} | {cp} | {step:.2f} | {last['comm_s']:.2f} | {100 * last['comm_s'] / step:.1f} % | {rss / 1024:.0f} MiB "
      f"| {sent / 2**20:.1f} MiB | {last['loss']:.9f} |")
PY
  rm -f "$tmp"/rss.*
done
