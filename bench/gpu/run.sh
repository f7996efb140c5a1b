#!/usr/bin/env bash
# One call on a GPU machine, from the repository root:
#  1. checks the tools (nvcc with cuBLASLt, CMake, Ninja, g++, nvidia-smi);
#  2. unpacks .device/bundle.tar.xz when it was carried (scripts/device-bundle.sh: replica's binaries built on a
#     CPU machine, with the libraries this machine lacks);
#  3. takes the bundle's check_kernels, or builds it standalone (tests/gpu needs only the CUDA toolkit);
#  4. checks every CUDA kernel against the CPU kernel (tests/gpu/check_kernels.cu);
#  5. runs replica itself on the GPU: the reference parity tests on the CUDA backend (with them context parallelism
#     at 1×2 and 2×2 as ranks in threads sharing the one GPU, ContextParallelCuda.*), the trainer's GPU-vs-CPU
#     and exact-resume test, the attention's TFLOP/s per kernel (bench_attention: a 7B layer at 8192 with the
#     window, full causal, and over packed documents), whole training steps of olmo3_1b and olmo3_7b at 1 × 8192
#     (tokens/s, MFU against the datasheet peak, GPU memory), each also with float8 linears (train.float8), the
#     7B also without block recomputation (remat=selective with the Adam moments in host memory), the same 1B
#     step in PyTorch, and a profile of both steps (device time per operation, bench_model's `profile`: where the
#     time goes).
#     With FLOAT8_CURVE_MIX set, instead the 300-step float8-vs-bf16 loss curves of olmo3_1b (float8_curve below).
#     With NEEDLE_STAGES=1, instead the tiny stage-2 and stage-3 models of bench/needle_stages.sh trained on the GPU
#     and scored on the needle surface (needle_stages.md: does stage 3 beat stage 2 beyond 64 tokens).
# Prints a short table last. Every stage's time limit is cut to what is left of DEADLINE seconds (default 520)
# so the call ends in time.
#   bench/gpu/run.sh            BUILD=build-gpu; logs in $BUILD/logs, and with $OUT set (the device tool's
#                               folder, which returns at most 8 files) the tables plus logs.tar.gz there
# Exit status: 0 all passed, 1 a kernel check failed, 2 the build or a training step failed, 3 a tool is missing.
set -uo pipefail
cd "$(dirname "$0")/../.."
deadline=${DEADLINE:-520}
# limit SECONDS: the stage's limit, cut to what is left before the deadline (at least 1).
limit() { local left=$((deadline - SECONDS)); echo $(( $1 < left ? $1 : (left > 1 ? left : 1) )); }
build=${BUILD:-build-gpu}
logs=$build/logs
rm -rf "$logs" && mkdir -p "$logs"
summary=()
row() { summary+=("| $1 | $2 |"); }
finish() {
  echo
  echo "| stage | result |"
  echo "|---|---|"
  printf '%s\n' "${summary[@]}"
  [ -s "$logs/attention_bench.md" ] && { echo; cat "$logs/attention_bench.md"; }
  [ -s "$logs/train_bench.md" ] && { echo; cat "$logs/train_bench.md"; }
  printf '%s\n' "${summary[@]}" >"$logs/summary.md"
  if [ -n "${OUT:-}" ]; then
    for f in summary.md check.md attention_bench.md train_bench.md profile.md float8_curve.md needle_stages.md; do [ -f "$logs/$f" ] && cp "$logs/$f" "$OUT/"; done
    tar -C "$logs" -czf "$OUT/logs.tar.gz" .
  fi
  exit "$1"
}

# 1. Tools. nvcc: $CUDACXX, then PATH, then /usr/local/cuda.
nvcc=""
for candidate in "${CUDACXX:-}" "$(command -v nvcc || true)" /usr/local/cuda/bin/nvcc; do
  if [ -n "$candidate" ] && [ -x "$candidate" ]; then nvcc=$candidate; break; fi
done
missing=()
[ -n "$nvcc" ] || missing+=("nvcc (CUDA toolkit; set CUDACXX)")
for tool in cmake ninja g++ nvidia-smi; do command -v "$tool" >/dev/null || missing+=("$tool"); done
if [ -n "$nvcc" ]; then
  cuda_home=$(dirname "$(dirname "$(readlink -f "$nvcc")")")
  [ -f "$cuda_home/include/cublasLt.h" ] || missing+=("cublasLt.h under $cuda_home/include")
  ls "$cuda_home"/lib64/libcublasLt.so* "$cuda_home"/targets/*/lib/libcublasLt.so* >/dev/null 2>&1 ||
    missing+=("libcublasLt.so under $cuda_home")
fi
if [ ${#missing[@]} -gt 0 ]; then
  echo "MISSING: ${missing[*]}"
  row tools "**MISSING: ${missing[*]}**"
  finish 3
fi
gpu=$(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | head -1)
cuda_version=$("$nvcc" --version | sed -n 's/.*release \([0-9.]*\).*/\1/p')
echo "GPU: $gpu; nvcc $cuda_version; cmake $(cmake --version | head -1 | awk '{print $3}'); $(g++ --version | head -1)"
row tools "ok: $gpu, CUDA $cuda_version"

# Which of the full build's Debian dependencies this machine has (the trainer on GPU needs them; the
# checks below do not).
have=() lack=()
for dep in oneapi/dnnl/dnnl.hpp yaml-cpp/yaml.h fmt/format.h nlohmann/json.hpp CLI/CLI.hpp pcre2.h xxhash.h \
  gtest/gtest.h benchmark/benchmark.h; do
  if [ -f "/usr/include/$dep" ] || [ -f "/usr/local/include/$dep" ]; then have+=("${dep%%/*}"); else lack+=("${dep%%/*}"); fi
done
command -v mpicxx >/dev/null && have+=(mpi) || lack+=(mpi)
row "full-tree deps" "present: ${have[*]:-none}; missing: ${lack[*]:-none}"

# 2. The bundle built on a CPU machine (scripts/device-bundle.sh, carried as .device): replica's binaries and
# the libraries this machine lacks; CUDA's own libraries come from this machine (the toolkit's; NCCL from
# wherever it is installed).
bundle=""
if [ -f .device/bundle.tar.xz ]; then
  bundle=/tmp/replica-bundle
  rm -rf "$bundle" && mkdir -p "$bundle" && tar -C "$bundle" -xJf .device/bundle.tar.xz
  nccl_dir=$(dirname "$(find /usr/local /usr/lib /opt -name 'libnccl.so.2' 2>/dev/null | head -1)" 2>/dev/null)
  export LD_LIBRARY_PATH="$bundle/lib:$cuda_home/lib64:$cuda_home/lib:${nccl_dir:-.}:${LD_LIBRARY_PATH:-}"
fi

# 3. check_kernels: the bundle's when it loads here (no device time spent compiling), else built standalone
# (tests/gpu/CMakeLists.txt).
start=$SECONDS
if [ -n "$bundle" ] && ! ldd "$bundle/bin/check_kernels" 2>&1 | grep -q "not found"; then
  check_kernels=$bundle/bin/check_kernels
  row build "bundled check_kernels (built on the CPU machine)"
else
  check_kernels=$build/check_kernels
  echo "building check_kernels in $build (log: $logs/build.log) ..."
  if timeout "$(limit 240)" cmake -S tests/gpu -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CUDA_COMPILER="$nvcc" >"$logs/build.log" 2>&1 &&
    timeout "$(limit 240)" cmake --build "$build" --target check_kernels >>"$logs/build.log" 2>&1; then
    row build "ok in $((SECONDS - start)) s"
  else
    tail -40 "$logs/build.log"
    row build "**FAILED** after $((SECONDS - start)) s (build.log)"
    finish 2
  fi
fi

# 4. Kernel checks against the CPU kernels.
status=0
timeout "$(limit 90)" "$check_kernels" | tee "$logs/check.md"
check_rc=${PIPESTATUS[0]}
passed=$(sed -n 's/^CHECKS: //p' "$logs/check.md")
case $check_rc in
  0) row "kernel checks" "ok: ${passed}" ;;
  1) row "kernel checks" "**FAILED**: ${passed} (failing rows: grep NO check.md)"; status=1 ;;
  124) row "kernel checks" "**TIMED OUT** after 90 s"; status=1 ;;
  *) row "kernel checks" "**ERROR** (exit $check_rc; see above)"; status=1 ;;
esac

# 5. replica itself on the GPU, from the bundle.
# FLOAT8_CURVE_MIX=MIX_FILE (a mix file whose token files were carried along): this call instead trains olmo3_1b for
# 300 steps in bf16 and again with train.float8=true on that data, and checks that the float8 loss curve tracks the
# bf16 one: a 20-step mean within 2 % relative at every step after the warmup (a call of its own: the two runs take
# most of the ten minutes).
float8_curve() {
  local recipe=configs/recipes/tiny.yaml common=(model.config=configs/models/olmo3_1b.yaml
    data.mix_file="$FLOAT8_CURVE_MIX" data.validation_paths=[] data.seq_len=4096 data.global_batch_size=8
    data.micro_batch_size=4 train.device=cuda train.max_steps=300 optim.lr=4e-4 optim.skip_step=false eval.every=0
    checkpoint.every=0 checkpoint.keep=1 train.log_every=1 train.progress=plain)
  for kind in bf16 float8; do
    timeout "$(limit 270)" "$bundle/bin/replica" train --config "$recipe" "${common[@]}" run.dir="$build/curve_$kind" \
      train.float8=$([ $kind = float8 ] && echo true || echo false) >"$logs/curve_$kind.log" 2>&1 ||
      { tail -20 "$logs/curve_$kind.log"; row "float8 vs bf16, 300 steps of olmo3_1b" "**$kind run FAILED**"; return 1; }
  done
  $PYTHON - "$build/curve_bf16/metrics.jsonl" "$build/curve_float8/metrics.jsonl" <<'PY' | tee "$logs/float8_curve.md"
import json, sys
def losses(path):
    return [j["loss"] for j in map(json.loads, open(path)) if "loss" in j]
bf16, float8 = losses(sys.argv[1]), losses(sys.argv[2])
mean = lambda xs, i: sum(xs[i - 20:i]) / 20
worst = max(abs(mean(float8, i) - mean(bf16, i)) / mean(bf16, i) for i in range(50, len(bf16) + 1))
print(f"float8 vs bf16 over {len(bf16)} steps: worst relative difference of the 20-step mean loss {worst:.4f} "
      f"(bound 0.02); final 20-step means {mean(bf16, len(bf16)):.4f} (bf16), {mean(float8, len(float8)):.4f} (float8)")
sys.exit(0 if len(bf16) == len(float8) == 300 and worst <= 0.02 else 1)
PY
}
if [ -n "${FLOAT8_CURVE_MIX:-}" ] && [ -n "$bundle" ]; then
  export PYTHON=${PYTHON:-python3}
  if float8_curve; then row "float8 vs bf16, 300 steps of olmo3_1b" "ok: $(cat "$logs/float8_curve.md")"; else
    row "float8 vs bf16, 300 steps of olmo3_1b" "**FAILED** (float8_curve.md, curve_*.log)"; status=1; fi
  finish "$status"
fi
# NEEDLE_STAGES=1: a call of its own that trains bench/needle_stages.sh's tiny models on the GPU (STEPS2 stage-2 steps
# at 64 tokens, then STEPS3 stage-3 steps at 256 with YaRN), far longer than two CPU cores allow, and scores both.
if [ -n "${NEEDLE_STAGES:-}" ] && [ -n "$bundle" ]; then
  if timeout "$(limit 480)" env BUILD="$bundle/bin" DEVICE=cuda THREADS=8 STEPS2="${STEPS2:-3000}" \
    STEPS3="${STEPS3:-1500}" bench/needle_stages.sh >"$logs/needle_stages.md" 2>"$logs/needle_stages.log"; then
    row "needle, stage 2 vs stage 3" "ok (needle_stages.md)"
  else
    row "needle, stage 2 vs stage 3" "**FAILED** (needle_stages.log)"; status=2
  fi
  finish "$status"
fi
if [ -z "$bundle" ]; then
  row "replica on GPU" "not run: no .device/bundle.tar.xz (scripts/device-bundle.sh, then carry .device)"
  finish "$status"
fi
# A failing tensor-core attention check would fail everything below for the same reason: run the rest on the
# fp32 attention kernels (the recipe key train.attention, bench_model's attention=) so the other results still
# come back. The parity unit tests keep the default (mma.sync).
attention=""
if [ "$check_rc" -ne 0 ] && [ "$check_rc" -ne 1 ]; then
  attention=fp32
  row "attention for replica" "**fp32 kernels** (check_kernels did not finish)"
elif grep -E '^\| attention(_[a-z]*)?_mma ' "$logs/check.md" 2>/dev/null | grep -q 'NO'; then
  attention=fp32
  row "attention for replica" "**fp32 kernels** (the mma.sync attention failed its check)"
fi
export FIXTURES=$bundle/fixtures PYTHON=${PYTHON:-python3} OMP_NUM_THREADS=${OMP_NUM_THREADS:-8}
if ! "$bundle/bin/replica" --help >/dev/null 2>"$logs/bundle.err"; then
  row "replica on GPU" "**CANNOT START** the bundled binary: $(head -c 300 "$logs/bundle.err")"
  finish 2
fi

timeout "$(limit 90)" "$bundle/bin/unit_tests" --gtest_filter='*Cuda*' >"$logs/unit_cuda.log" 2>&1
rc=$?
summary_line="$(grep -cE '^\[       OK \]' "$logs/unit_cuda.log") passed, $(grep -cE '^\[  SKIPPED \]' \
  "$logs/unit_cuda.log") skipped, $(grep -cE '^\[  FAILED  \] .*\(' "$logs/unit_cuda.log") failed"
if [ $rc -eq 0 ]; then row "parity on CUDA (gtest *Cuda*)" "ok: $summary_line"; else
  grep -E 'FAILED|Failure|error|Expected|Which is' "$logs/unit_cuda.log" | head -30
  row "parity on CUDA (gtest *Cuda*)" "**FAILED** (exit $rc): $summary_line (unit_cuda.log)"; status=1; fi

TRAIN_CUDA_OVERRIDES=${attention:+train.attention=$attention} timeout "$(limit 150)" \
  bash tests/integration/train_cuda.sh "$bundle/bin/replica" . >"$logs/train_cuda.log" 2>&1
rc=$?
if [ $rc -eq 0 ]; then row "train on CUDA vs CPU, exact resume" "ok: $(grep -E 'worst relative' "$logs/train_cuda.log" |
  sed 's/ over 40 steps.*//' | tr '\n' ';')"; else
  tail -30 "$logs/train_cuda.log"
  row "train on CUDA vs CPU, exact resume" "**FAILED** (exit $rc; train_cuda.log)"; status=1; fi

# Attention per kernel (bench_attention, TFLOP/s as model/flops.h counts them): one olmo3_7b layer at 1 × 8192 (H = K
# = 32, D = 128) with the sliding layers' window, full causal, and packed into 8 documents of 1,024 tokens (document
# masking: the same rate per visible pair is the goal). The tensor-core kernels only where their checks passed.
wgmma_rows=$(grep -E '^\| attention[a-z_]*_wgmma ' "$logs/check.md" 2>/dev/null)
wgmma_ok=""
[ -n "$wgmma_rows" ] && ! grep -q 'NO' <<<"$wgmma_rows" && wgmma_ok=1
attention_kernels=fp32
[ -z "$attention" ] && attention_kernels+=,mma${wgmma_ok:+,wgmma}
{ echo "| kernel | shape | forward ms | forward TFLOP/s | forward + backward ms | forward + backward TFLOP/s |"
  echo "|---|---|---|---|---|---|"; } >"$logs/attention_bench.md"
for mask in window=4096 window=0 "window=0 documents=8"; do
  # shellcheck disable=SC2086 # the mask is one or two arguments
  if timeout "$(limit 60)" "$bundle/bin/bench_attention" cuda 1 8192 32 32 128 $mask "kernels=$attention_kernels" \
    >"$logs/attention_bench.out" 2>>"$logs/attention_bench.err"; then
    grep '^| [a-z0-9]* | B=' "$logs/attention_bench.out" >>"$logs/attention_bench.md"
  else
    echo "| $mask | **failed** ($(tail -c 200 "$logs/attention_bench.err" | tr '\n' ' ')) | | | | |" \
      >>"$logs/attention_bench.md"
    status=2
  fi
  cat "$logs/attention_bench.out" >>"$logs/attention_bench.log"
done
row "attention TFLOP/s (bench_attention)" \
  "$(grep -c '^| [a-z0-9]* | B=' "$logs/attention_bench.md") rows, kernels $attention_kernels (attention_bench.md)"

# Whole training steps (forward, backward, clipping, AdamW): olmo3_1b and the real olmo3_7b at 1 × 8192.
echo "| model | B×T | remat | tokens/s | MFU (989 TFLOP/s) | step s | optimizer share | GPU memory |" \
  >"$logs/train_bench.md"
echo "|---|---|---|---|---|---|---|---|" >>"$logs/train_bench.md"
# bench_step MODEL B T REMAT STEPS SECONDS [profile]: one bench_model run, a row of train_bench.md. With
# `profile` (bench_model's argument): the device time per operation goes to profile.md (the row says "profiled": the
# events cost the step about 1 %). ATTENTION=KIND in the environment runs it with attention=KIND (else the
# fallback above, else mma); FLOAT8=1 with the block Linears in float8 (train.float8; MFU bf16-equivalent);
# HOST_MOMENTS=1 with AdamW's moments in page-locked host memory (optim.host_moments).
bench_step() {
  local model=$1 B=$2 T=$3 remat=$4 steps=$5 seconds=$6 profile=${7:-} out line name kernel
  name=${model}_$remat${profile:+_profiled}${ATTENTION:+_$ATTENTION}${FLOAT8:+_float8}${HOST_MOMENTS:+_host_moments}
  kernel=${ATTENTION:-${attention:-mma}}
  out=$(timeout "$(limit "$seconds")" "$bundle/bin/bench_model" "configs/models/$model.yaml" "$B" "$T" bf16 \
    "$steps" "$remat" train cuda "attention=$kernel" $profile ${FLOAT8:+float8} ${HOST_MOMENTS:+host_moments} \
    2>"$logs/bench_$name.err")
  echo "$out" | tail -1 >"$logs/bench_$name.json"
  if [ -n "$profile" ]; then
    { echo "### $model, ${B}×$T, remat=$remat"; echo; echo "$out" | grep '^|'; echo; } >>"$logs/profile.md"
  fi
  line=$($PYTHON - "$(cat "$logs/bench_$name.json")" \
    "$remat${profile:+ (profiled)}${ATTENTION:+, $ATTENTION attention}${FLOAT8:+, float8}${HOST_MOMENTS:+, host moments}" \
    <<'PY' 2>/dev/null
import json, sys
j = json.loads(sys.argv[1])
print(f"| {j['model'].split('/')[-1].removesuffix('.yaml')} | {j['B']}×{j['T']} | {sys.argv[2]} | "
      f"{j['tokens_per_s']:.0f} | {100 * j['mfu_vs_gemm_peak']:.1f} % | {j['step_s']:.3f} | "
      f"{100 * j['optimizer_share']:.1f} % | {j['device_memory_gib']:.1f} GiB |")
PY
)
  if [ -n "$line" ]; then echo "$line" >>"$logs/train_bench.md"; else
    echo "| $model | ${B}×$T | $remat | **failed** ($(tail -c 200 "$logs/bench_$name.err" | tr '\n' ' ')) | | | | |" \
      >>"$logs/train_bench.md"; [ "$status" -eq 0 ] && status=2; fi
}
bench_step olmo3_1b 1 8192 none 5 90
# The wgmma attention (not the default until a GPU has confirmed it): the same 1B step, when its checks passed.
[ -n "$wgmma_ok" ] && ATTENTION=wgmma bench_step olmo3_1b 1 8192 none 5 60
# float8 linears (train.float8, torchao's tensorwise recipe) beside each bf16 step, when the float8 checks passed.
float8_rows=$(grep -E '^\| (quantize_float8|gemm_float8) ' "$logs/check.md" 2>/dev/null)
float8_ok=""
[ -n "$float8_rows" ] && ! grep -q 'NO' <<<"$float8_rows" && float8_ok=1
[ -n "$float8_ok" ] && FLOAT8=1 bench_step olmo3_1b 1 8192 none 5 60
bench_step olmo3_7b 1 8192 block 3 200
# 7B without block recomputation (the GPU-speed issue's item 3): remat=selective with the moments in host memory,
# 123.5 of 139 GiB by the plan. Each step here updates once per micro-batch, so its optimizer share (the moments
# over PCIe, ~1.2 s by docs/gpu.md) is what the recipe's 512 micro-batches per update divide by 512.
HOST_MOMENTS=1 bench_step olmo3_7b 1 8192 selective 3 150
[ -n "$float8_ok" ] && FLOAT8=1 bench_step olmo3_7b 1 8192 block 3 150
# The same 1B step in PyTorch on this GPU (tools/reference/bench_ref.py: autocast bf16, SDPA, fused AdamW).
$PYTHON -c "import json, sys, yaml; json.dump(yaml.safe_load(open(sys.argv[1])), open(sys.argv[2], 'w'))" \
  configs/models/olmo3_1b.yaml "$logs/olmo3_1b.json"
theirs=$(timeout "$(limit 120)" $PYTHON tools/reference/bench_ref.py --config "$logs/olmo3_1b.json" --batch 1 \
  --seq 8192 --threads 8 --steps 5 --precision bf16 --train --device cuda --json 2>"$logs/bench_torch.err" | tail -1)
line=$($PYTHON - "$(cat "$logs/bench_olmo3_1b_none.json")" "$theirs" <<'PY' 2>/dev/null
import json, sys
ours, theirs = json.loads(sys.argv[1]), json.loads(sys.argv[2])
flops_per_token = ours["model_gflops"] * 1e9 / ours["tokens_per_s"]
mfu = theirs["tokens_per_s"] * flops_per_token / 989.4e12
print(f"| olmo3_1b, PyTorch {theirs['torch']} (replica {ours['tokens_per_s'] / theirs['tokens_per_s']:.2f}×) | "
      f"1×8192 | - | {theirs['tokens_per_s']:.0f} | {100 * mfu:.1f} % | {theirs['step_s']:.3f} | | |")
PY
)
echo "${line:-| olmo3_1b, PyTorch | 1×8192 | - | **failed** ($(tail -c 200 "$logs/bench_torch.err" | tr '\n' ' ')) | | | | |}" \
  >>"$logs/train_bench.md"
# Both models profiled (the 7B in the layout without block recomputation, whose profile decides whether it needs
# CUDA graphs), then the 7B keeping every layer's attention output (137 of 139 GiB by the plan), with time to spare.
((deadline - SECONDS > 130)) && bench_step olmo3_1b 1 8192 none 2 30 profile
((deadline - SECONDS > 160)) &&
  HOST_MOMENTS=1 bench_step olmo3_7b 1 8192 selective 2 $((deadline - SECONDS - 100)) profile
if ((deadline - SECONDS > 160)); then
  bench_step olmo3_7b 1 8192 keep_attention 3 $((deadline - SECONDS - 100))
else
  echo "| olmo3_7b | 1×8192 | keep_attention | not run (no time left) | | | | |" >>"$logs/train_bench.md"
fi
cat "$logs/train_bench.md"
measured=$(grep '^| olmo3' "$logs/train_bench.md" | grep -vEc 'failed|not run')
row "training steps (bench_model)" "$measured measured (train_bench.md; per operation: profile.md)"
finish "$status"
