#!/usr/bin/env bash
# CPU attention next to PyTorch's on the same machine, in one run (issue 34): bench_attention (the fp32 and the
# bf16-product kernels, each against the GEMM peak measured in the same process) and bench/attention_ref.py (torch's
# attention, fp32 and bf16) at T = 2048, H = 12, D = 64: full causal, a sliding window, packed documents.
# FLOPs are counted per visible pair on both sides. Prints a markdown table (paste into bench/RESULTS.md).
#   bench/attention.sh            THREADS=2 REPS=3 BUILD=build
#   BENCH_ATTENTION=FILE          another bench_attention binary (the device bundle's AVX512-BF16 one, bench/gpu/run.sh)
#   TORCH_PYTHON=FILE             another Python with torch (default Debian's, /usr/bin/python3)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD:-build}
tool=${BENCH_ATTENTION:-$build/bench/bench_attention}
python=${TORCH_PYTHON:-/usr/bin/python3}
threads=${THREADS:-2}
reps=${REPS:-3}
shape=(1 2048 12 12 64)

echo "| mask | kernel | precision | fwd GFLOP/s | fwd+bwd GFLOP/s | GEMM peak GFLOP/s | fwd / peak | fwd+bwd / peak | PyTorch fwd | PyTorch fwd+bwd | fwd ratio | fwd+bwd ratio |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
for mask in "" "window=512" "documents=4"; do
  ref_args=()
  case "$mask" in
    window=*) ref_args=(--window "${mask#window=}") ;;
    documents=*) ref_args=(--documents "${mask#documents=}") ;;
  esac
  # shellcheck disable=SC2086 # the mask is one argument or none
  ours=$(OMP_NUM_THREADS=$threads "$tool" cpu "${shape[@]}" $mask kernels=fp32,cpu_bf16 \
    "reps=$reps" | grep '^{')
  theirs=$(OMP_NUM_THREADS=$threads "$python" bench/attention_ref.py "${shape[@]}" "${ref_args[@]}" \
    --threads "$threads" --reps "$reps")
  "$python" - "$ours" "$theirs" "${mask:-causal}" <<'PY'
import json, sys
ours = [json.loads(l) for l in sys.argv[1].splitlines()]
theirs = {r["precision"]: r for r in map(json.loads, sys.argv[2].splitlines())}
for o in ours:
    p = "fp32" if o["kernel"] == "fp32" else "bf16"
    t = theirs[p]
    fwd, both, peak = 1e3 * o["forward_tflops"], 1e3 * o["forward_backward_tflops"], 1e3 * o["gemm_peak_tflops"]
    name = "sdpa" if t["sdpa"] else "explicit"
    print(f"| {sys.argv[3]} | {o['kernel']} | {p} | {fwd:.0f} | {both:.0f} | {peak:.0f} | {100 * fwd / peak:.0f}% "
          f"| {100 * both / peak:.0f}% | {t['forward_gflops']:.1f} ({name}) | {t['forward_backward_gflops']:.1f} "
          f"| {fwd / t['forward_gflops']:.1f}x | {both / t['forward_backward_gflops']:.1f}x |")
PY
done
