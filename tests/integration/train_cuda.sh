#!/usr/bin/env bash
# The trainer on the CUDA backend (skips, exit 77, where no GPU is visible): the same recipe's losses on the
# GPU track the CPU run step by step in fp32 and in bf16, and resume on the GPU is exact (stop at step 18,
# rerun: identical metrics and byte-identical final weights and moments, as on the CPU).
set -euo pipefail
if ! nvidia-smi -L >/dev/null 2>&1; then
  echo "SKIP: no CUDA device visible (nvidia-smi lists none); bench/gpu/run.sh runs this on a GPU machine"
  exit 77
fi
source "$(dirname "$0")/ckpt_lib.bash"

# track A.jsonl B.jsonl TOLERANCE: every step's loss agrees to TOLERANCE relative.
track() {
  $py - "$@" <<'PY'
import sys, json
def losses(path):
    return {j["step"]: j["loss"] for j in map(json.loads, open(path)) if "loss" in j}
a, b, tol = losses(sys.argv[1]), losses(sys.argv[2]), float(sys.argv[3])
assert sorted(a) == sorted(b) and len(a) == 40, (len(a), len(b))
worst = max(abs(a[s] - b[s]) / abs(a[s]) for s in a)
print(f"{sys.argv[2].split('/')[-2]} vs {sys.argv[1].split('/')[-2]}: worst relative loss difference {worst:.3g} "
      f"over 40 steps (bound {tol:g}); loss {a[1]:.4f} -> {a[40]:.4f} vs {b[1]:.4f} -> {b[40]:.4f}")
assert worst <= tol, "the GPU run does not track the CPU run"
PY
}

# The skip-step rule is off while comparing curves: a loss within rounding of its threshold could be skipped
# on one device and not the other, and the curves would part for a reason that is not the arithmetic.
train "$work/cpu_fp32" train.precision=fp32 optim.skip_step=false
train "$work/gpu_fp32" train.precision=fp32 optim.skip_step=false train.device=cuda
grep -q "on cuda:" "$work/gpu_fp32.log" || { echo "FAIL: the run did not use the GPU"; cat "$work/gpu_fp32.log"; exit 1; }
track "$work/cpu_fp32/metrics.jsonl" "$work/gpu_fp32/metrics.jsonl" 2e-3

train "$work/cpu_bf16" optim.skip_step=false
train "$work/gpu_bf16_noskip" optim.skip_step=false train.device=cuda
track "$work/cpu_bf16/metrics.jsonl" "$work/gpu_bf16_noskip/metrics.jsonl" 2e-2

# Exact resume on the GPU (skip-step on, so its history is checkpointed too).
train "$work/gpu_bf16" train.device=cuda
train "$work/gpu_split" train.device=cuda train.stop_at=18
train "$work/gpu_split" train.device=cuda
grep -q "resuming from $work/gpu_split/checkpoints/step00000018 (step 18" "$work/gpu_split.log"
same_metrics "$work/gpu_bf16/metrics.jsonl" "$work/gpu_split/metrics.jsonl" 40
for f in model.safetensors optim.safetensors; do
  cmp "$work/gpu_bf16/checkpoints/step00000040/$f" "$work/gpu_split/checkpoints/step00000040/$f"
done
echo "train_cuda: all checks passed (GPU losses track the CPU; resume on the GPU is exact)"
