#!/usr/bin/env bash
# The trainer on the CUDA backend (skips, exit 77, where no GPU is visible): the same recipe's losses on the
# GPU track the CPU run step by step in fp32 and in bf16, and resume on the GPU is exact (stop at step 18 of 40,
# rerun with train.remat=selective and optim.host_moments: identical metrics and byte-identical final weights and
# moments, as on the CPU), and train.shard_weights=true gives the same bits, profiled or not.
# With REPLICA_CUDA_EMULATION=1 the binary is replica_cuda_emu: the same trainer on the CPU emulation of CUDA
# (tests/cuda_emu), which CI runs on every change, with TRAIN_CUDA_STEPS=12 (stop at step 5) to keep it short.
set -euo pipefail
if [[ -z ${REPLICA_CUDA_EMULATION:-} ]] && ! nvidia-smi -L >/dev/null 2>&1; then
  echo "SKIP: no CUDA device visible (nvidia-smi lists none); bench/gpu/run.sh runs this on a GPU machine"
  exit 77
fi
source "$(dirname "$0")/ckpt_lib.bash"
steps=${TRAIN_CUDA_STEPS:-40}
stop=$((steps * 9 / 20))  # 18 of 40: between checkpoints (every 4)

# track A.jsonl B.jsonl TOLERANCE: every step's loss agrees to TOLERANCE relative.
track() {
  $py - "$@" "$steps" <<'PY'
import sys, json
def losses(path):
    return {j["step"]: j["loss"] for j in map(json.loads, open(path)) if "loss" in j}
a, b, tol, n = losses(sys.argv[1]), losses(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
assert sorted(a) == sorted(b) and len(a) == n, (len(a), len(b))
worst = max(abs(a[s] - b[s]) / abs(a[s]) for s in a)
print(f"{sys.argv[2].split('/')[-2]} vs {sys.argv[1].split('/')[-2]}: worst relative loss difference {worst:.3g} "
      f"over {n} steps (bound {tol:g}); loss {a[1]:.4f} -> {a[n]:.4f} vs {b[1]:.4f} -> {b[n]:.4f}")
assert worst <= tol, "the GPU run does not track the CPU run"
PY
}

# run RUN_DIR [overrides...]: ckpt_lib's train, for $steps steps, with $TRAIN_CUDA_OVERRIDES (bench/gpu/run.sh's
# attention fallback).
run() { train "$@" train.max_steps="$steps" ${TRAIN_CUDA_OVERRIDES:-}; }

# The skip-step rule is off while comparing curves: a loss within rounding of its threshold could be skipped
# on one device and not the other, and the curves would part for a reason that is not the arithmetic.
run "$work/cpu_fp32" train.precision=fp32 optim.skip_step=false
run "$work/gpu_fp32" train.precision=fp32 optim.skip_step=false train.device=cuda
grep -q "on cuda:" "$work/gpu_fp32.log" || { echo "FAIL: the run did not use the GPU"; cat "$work/gpu_fp32.log"; exit 1; }
track "$work/cpu_fp32/metrics.jsonl" "$work/gpu_fp32/metrics.jsonl" 2e-3

run "$work/cpu_bf16" optim.skip_step=false
run "$work/gpu_bf16_noskip" optim.skip_step=false train.device=cuda
track "$work/cpu_bf16/metrics.jsonl" "$work/gpu_bf16_noskip/metrics.jsonl" 2e-2

# Exact resume on the GPU (skip-step on, so its history is checkpointed too). The second half runs with the
# 7B-on-one-GPU layout, selective recomputation and the Adam moments in host memory, which move no bit either.
run "$work/gpu_bf16" train.device=cuda
run "$work/gpu_split" train.device=cuda train.stop_at=$stop
run "$work/gpu_split" train.device=cuda train.remat=selective optim.host_moments=true
grep -q "resuming from $work/gpu_split/checkpoints/$(printf step%08d $stop) (step $stop" "$work/gpu_split.log"
same_metrics "$work/gpu_bf16/metrics.jsonl" "$work/gpu_split/metrics.jsonl" "$steps"
last=$(printf step%08d "$steps")
for f in model.safetensors optim.safetensors; do
  cmp "$work/gpu_bf16/checkpoints/$last/$f" "$work/gpu_split/checkpoints/$last/$f"
done

# Sharded weights (one rank: each group gathered from the rank's own shard, rounded to bf16 on the GPU) give the
# whole-weight run's bits, also while the run is profiled (train.profile: events around every call, which change no
# bit), and the profile lands in the run directory.
run "$work/gpu_sharded" train.device=cuda train.shard_weights=true train.profile=true
same_metrics "$work/gpu_bf16/metrics.jsonl" "$work/gpu_sharded/metrics.jsonl" "$steps"
for f in model.safetensors optim.safetensors; do
  cmp "$work/gpu_bf16/checkpoints/$last/$f" "$work/gpu_sharded/checkpoints/$last/$f"
done
profile=$work/gpu_sharded/profile.md
grep -q "^| attention_backward W=" "$profile" && grep -q "^| gemm " "$profile" ||
  { echo "FAIL: no profile of the steps in $profile"; cat "$profile"; exit 1; }
echo "train_cuda: all checks passed (GPU losses track the CPU; resume on the GPU is exact; sharded weights give the \
same bits; the profile is written)"
