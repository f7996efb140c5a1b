#!/usr/bin/env bash
# End-to-end forward + backward throughput: replica next to the PyTorch reference (tools/reference) on the
# same model, shape, precision and thread count, in one run; plus MFU against the GEMM peak measured by
# the same process. Prints a markdown table (paste into bench/RESULTS.md).
#   bench/run.sh                  forward + backward, all cases     THREADS=2 STEPS=3 BUILD=build
#   bench/run.sh --train          full training steps (+ clipping and AdamW; PyTorch: torch.optim.AdamW foreach)
#   bench/run.sh [--train] olmo3_tiny    one model
#   TORCH_BF16=0 bench/run.sh ...        PyTorch's side of the bf16 rows not run ("–"): on a CPU without AVX512-BF16
#                                         Debian's torch runs bf16 at a fifth of its fp32 speed (tiny: 39 against ~190
#                                         tokens/s), which for olmo3_100m is most of an hour
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD:-build}
threads=${THREADS:-2}
steps=${STEPS:-3}
train_ours=""
train_theirs=""
if [ "${1:-}" = "--train" ]; then
  train_ours=train
  train_theirs=--train
  shift
fi
only=${1:-}
cases=("olmo3_tiny 8 256" "olmo3_100m 1 2048")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

echo "| model | B×T | precision | step | replica tok/s | PyTorch tok/s | ratio | replica MFU (vs GEMM peak) | GEMM peak GFLOP/s | optimizer share |"
echo "|---|---|---|---|---|---|---|---|---|---|"
for c in "${cases[@]}"; do
  read -r model batch seq <<<"$c"
  [ -n "$only" ] && [ "$only" != "$model" ] && continue
  /usr/bin/python3 -c "import json, sys, yaml; json.dump(yaml.safe_load(open(sys.argv[1])), open(sys.argv[2], 'w'))" \
    "configs/models/$model.yaml" "$tmp/$model.json"
  for precision in fp32 bf16; do
    ours=$(OMP_NUM_THREADS=$threads "$build/bench/bench_model" "configs/models/$model.yaml" "$batch" "$seq" "$precision" "$steps" $train_ours)
    theirs=null
    if [ "$precision" = fp32 ] || [ "${TORCH_BF16:-1}" != 0 ]; then
      theirs=$(/usr/bin/python3 tools/reference/bench_ref.py --config "$tmp/$model.json" --batch "$batch" --seq "$seq" \
        --threads "$threads" --steps "$steps" --precision "$precision" --json $train_theirs)
    fi
    /usr/bin/python3 - "$ours" "$theirs" "$model" "$batch" "$seq" "$precision" <<'PY'
import json, sys
ours, theirs = json.loads(sys.argv[1]), json.loads(sys.argv[2])
model, b, t, p = sys.argv[3:7]
torch = f"{theirs['tokens_per_s']:.0f}" if theirs else "–"
ratio = f"{ours['tokens_per_s'] / theirs['tokens_per_s']:.1f}×" if theirs else "–"
step = "train" if ours["train"] else "fwd+bwd"
share = f"{100 * ours['optimizer_share']:.1f}%" if ours["train"] else "–"
print(f"| {model} | {b}×{t} | {p} | {step} | {ours['tokens_per_s']:.0f} | {torch} | {ratio} "
      f"| {100 * ours['mfu_vs_gemm_peak']:.1f}% | {ours['gemm_peak_gflops']:.0f} | {share} |")
PY
  done
done
