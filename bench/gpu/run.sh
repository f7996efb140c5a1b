#!/usr/bin/env bash
# One call on a GPU machine, from the repository root, in the order that brings the most valuable numbers back
# first (the GPU-readiness review of 2026-12-03, §1.7 and §5.2; its expected numbers are printed beside each stage
# and in the summary's last column):
#   0  preflight: the GPU (nvidia-smi, the one tool always needed); the bundle (.device/bundle.tar.xz, from
#      scripts/device-bundle.sh: replica's binaries built on a CPU machine, with the libraries this machine lacks),
#      refused when its STAMP does not match this tree; CUDA 13's runtime, cuBLASLt and NCCL (the toolkit's, else
#      torch's nvidia/* wheels); the wgmma machine code in check_kernels (cuobjdump). Without a usable bundle:
#      nvcc, cuBLASLt's header, CMake, Ninja and g++ to build check_kernels standalone (tests/gpu), which then runs
#      alone;
#   1  the kernel checks but wgmma's (tests/gpu/check_kernels.cu: every CUDA kernel against the CPU kernel), as
#      three processes: the tensor-core attention's mma.sync family, float8, and the rest;
#   2  the wgmma attention's checks, a process of their own;
#   3  the attention's TFLOP/s per tensor-core kernel that passed its checks (bench_attention: a 7B layer at 8192
#      with the sliding window, full causal, and over 8 packed documents; and 16 heads × 256 at 8192, full causal);
#   4  the same attention in PyTorch (bench/gpu/torch_ceiling.py: SDPA on cuDNN and flash, also at 16 × 256);
#   5  the olmo3_1b training step at 1 × 8192 on mma.sync (bench_model: tokens/s, MFU, memory), then profiled;
#   6  the same on wgmma;
#   7  olmo3_7b without block recomputation (remat=selective, the Adam moments in host memory), profiled;
#   8  correctness: the reference parity tests on the CUDA backend (unit_tests *Cuda*) and the trainer's GPU-vs-CPU
#      and exact-resume test (tests/integration/train_cuda.sh);
#   9  float8 linears (train.float8) at 1B and 7B, when the float8 checks ran to the end (not on their bound);
#  10  page-locked copy bandwidth and an 8192³ bf16 GEMM in PyTorch (torch_ceiling.py);
#  11  as time allows: the 1B step in PyTorch, olmo3_7b with block recomputation and with keep_attention;
#  12  the CPU attention beside PyTorch's scaled_dot_product_attention on this machine's CPU (bench/attention.sh).
# Then the ratios of replica's figures to PyTorch's on this GPU (bench/gpu/ratios.py). A stage whose kernels failed
# their checks, or whose process crashed, costs only its own rows: the fp32 attention takes over only when the
# mma.sync attention's own checks failed. Every table is copied to $OUT the moment it exists.
#   bench/gpu/run.sh     BUILD=build-gpu; logs in $BUILD/logs; with $OUT set (the device tool's folder, at most 8
#                        files) summary.md, check.md, attention_bench.md, torch_ceiling.md, train_bench.md,
#                        profile.md and logs.tar.gz there
#   DEADLINE=440         every stage's limit is cut to what is left of it (seconds), so the call ends in time
#   STAGES=a,b           only these stages (checks, checks_wgmma, attention, sdpa, step_1b, step_1b_wgmma, step_7b,
#                        correctness, float8, copy_gemm, extra, cpu_attention; the preflight always runs): a warm
#                        follow-up call
#   BUNDLE=FILE          the bundle (default .device/bundle.tar.xz)
#   REPLICA_ALLOW_STALE_BUNDLE=1   measure a bundle whose STAMP does not match this tree (said so in the summary)
#   REPLICA_GPU_RUN_FAULT=NAME,... those commands crash instead of running (stages.sh: run_limited): a rehearsal
#   REPLICA_GPU_RUN_EMULATED=1     tiny shapes, for a bundle of the CUDA emulation's binaries
#                                  (tests/cuda_emu/gpu_run.sh)
#   FLOAT8_CURVE_MIX=FILE, NEEDLE_STAGES=1   calls of their own, below
# Exit status: 0 all passed, 1 a kernel check or correctness test failed, 2 the build or a training step failed,
# 3 a tool or library is missing or the bundle is stale.
set -uo pipefail
cd "$(dirname "$0")/../.."
deadline=${DEADLINE:-440}
build=${BUILD:-build-gpu}
logs=$build/logs
rm -rf "$logs" && mkdir -p "$logs"
source bench/gpu/stages.sh
export PYTHON=${PYTHON:-python3}
status=0

# What the review expects of each stage (its §5.2; replica counts attention FLOPs as bench_attention does).
declare -A expected=(
  [preflight]="H200, driver 580.x, CUDA 13.0; HGMMA > 0 in check_kernels"
  [checks]="every row ok; bf16 attention errors <= ~6e-3 (as on 11-30); float8 GEMMs 1e-4..1e-3, inside the 14-bit bound"
  [checks_wgmma]="errors like mma's; reruns bitwise"
  [attention]="mma: forward 185-195, fwd+bwd 125-135 TFLOP/s on every mask; wgmma (fill fixed, softmax overlapped, one-pass backward; 12-04 est.): forward 310-440 (+10-15 % overlap), fwd+bwd 190-270 (5 of 7 matmuls, less 10-20 % for the dQ turns), >= 1.15x mma fwd+bwd to become auto; D=256 (1 block/SM): mma forward ~100-150 (the review's estimate), wgmma not estimated"
  [sdpa]="cuDNN forward ~450-550, fwd+bwd ~330-420 TFLOP/s (replica's count) at D=128; D=256 similar or higher"
  [step_1b]="32-34k tokens/s, 29-31 % MFU (11-30: 31.75k); ~55 GiB"
  [step_1b_wgmma]="34-38k tokens/s, above the mma row"
  [step_7b]="6.6-7.4k tokens/s without optimizer (31-35 % MFU, compute part < 1.323 s); PCIe update 1.2-2.5 s; 120-127 GiB"
  [correctness]="all pass (Float8Parity.*Fp32Cuda perhaps not)"
  [float8]="1B 0.9-1.1x bf16; 7B block 1.0-1.15x of 5.85k; losses finite"
  [copy_gemm]="40-55 GB/s each way; GEMM ~770-800 TFLOP/s on random data"
  [extra]="PyTorch 1B ~19k tokens/s; 7B block ~5.85k, keep_attention ~6.2k"
  [cpu_attention]="not estimated: no SDPA on the 2-core VM (its Debian torch 1.13 has none); there bf16 causal 307 fwd / 278 fwd+bwd GFLOP/s"
)

finish() {
  if ls "$logs"/*.json* >/dev/null 2>&1; then
    $PYTHON bench/gpu/ratios.py "$logs" >"$logs/ratios.md" 2>"$logs/ratios.err" &&
      { echo; cat "$logs/ratios.md"; } >>"$logs/summary.md"
  fi
  echo
  cat "$logs/summary.md"
  for f in attention_bench.md torch_ceiling.md train_bench.md; do [ -s "$logs/$f" ] && { echo; cat "$logs/$f"; }; done
  publish summary.md check.md attention_bench.md torch_ceiling.md train_bench.md profile.md float8_curve.md \
    needle_stages.md
  exit "$1"
}

# The shapes measured. REPLICA_GPU_RUN_EMULATED=1: tiny ones, for the CUDA emulation's binaries (tests/cuda_emu),
# and in place of the tensor-core attention's check families (minutes each on the emulation, which
# cuda_emu.check_kernels runs in full) two quick ones: what is rehearsed is what each group's outcome decides.
if [ -n "${REPLICA_GPU_RUN_EMULATED:-}" ]; then
  attention_shape=(1 128 2 1 64) masks=(window=48 window=0 "window=0 documents=3") attention_reps=reps=1
  attention_wide=(1 64 2 1 256)
  model_1b=$build/olmo3_micro.yaml model_7b=$build/olmo3_micro.yaml tokens=64 ceiling=(--dry-run)
  cat >"$model_1b" <<'YAML'
model_type: olmo3
vocab_size: 512
hidden_size: 64
intermediate_size: 128
num_hidden_layers: 2
num_attention_heads: 4
num_key_value_heads: 2
head_dim: 16
sliding_window: 32
tie_word_embeddings: false
YAML
  checks_others=(--only=gemm,rmsnorm,grad_norm) checks_mma=(--only=attention) checks_wgmma=(--only=cached_attention)
else
  attention_shape=(1 8192 32 32 128) masks=(window=4096 window=0 "window=0 documents=8") attention_reps=reps=5
  attention_wide=(1 8192 16 16 256)
  model_1b=configs/models/olmo3_1b.yaml model_7b=configs/models/olmo3_7b.yaml tokens=8192 ceiling=()
  checks_others=(--skip=float8,attention_mma,attention_wgmma) checks_mma=(--only=attention_mma)
  checks_wgmma=(--only=attention_wgmma)
fi

# 0. Preflight.
begin preflight "${expected[preflight]}"
if ! command -v nvidia-smi >/dev/null; then
  echo "MISSING: nvidia-smi"
  row "0. preflight" "**MISSING: nvidia-smi** (no NVIDIA driver on PATH)" "${expected[preflight]}"
  finish 3
fi
gpu=$(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | head -1)
cuda_version=$(nvidia-smi 2>/dev/null | sed -n 's/.*CUDA Version: *\([0-9.]*\).*/\1/p' | head -1)
nvcc=""  # $CUDACXX, then PATH, then /usr/local/cuda
for candidate in "${CUDACXX:-}" "$(command -v nvcc || true)" /usr/local/cuda/bin/nvcc; do
  if [ -n "$candidate" ] && [ -x "$candidate" ]; then nvcc=$candidate; break; fi
done
cuda_home=${CUDA_HOME:-$([ -n "$nvcc" ] && dirname "$(dirname "$(readlink -f "$nvcc")")" || echo /usr/local/cuda)}
echo "GPU: $gpu; CUDA (driver) $cuda_version; nvcc ${nvcc:-none}; CUDA_HOME $cuda_home"

bundle="" stale=""
bundle_file=${BUNDLE:-.device/bundle.tar.xz}
if [ -f "$bundle_file" ]; then
  bundle=$build/bundle
  rm -rf "$bundle" && mkdir -p "$bundle"
  if ! tar -C "$bundle" -xJf "$bundle_file" 2>"$logs/bundle.err"; then
    row "0. preflight" "**CANNOT UNPACK** $bundle_file: $(head -c 300 "$logs/bundle.err")"
    finish 2
  fi
  theirs=$(stamp_of_bundle "$bundle") ours=$(scripts/source-stamp.sh --sources)
  echo "bundle: $(tr '\n' ' ' <"$bundle/STAMP" 2>/dev/null || echo "no STAMP"); this tree: sources $ours"
  if [ "$theirs" != "$ours" ]; then
    stale="**STALE BUNDLE**: built from sources ${theirs:-unknown (no STAMP)}, this tree's are $ours"
    if [ -z "${REPLICA_ALLOW_STALE_BUNDLE:-}" ]; then
      echo "$stale: refused (rebuild it with scripts/device-bundle.sh, or REPLICA_ALLOW_STALE_BUNDLE=1)"
      row "0. preflight" "$stale; refused: rebuild it (scripts/device-bundle.sh) or set REPLICA_ALLOW_STALE_BUNDLE=1"
      finish 3
    fi
    stale+=": measured anyway (REPLICA_ALLOW_STALE_BUNDLE=1), **these numbers are not this tree's**"
    echo "WARNING: $stale" >&2
  fi
  # CUDA 13's runtime, cuBLASLt and NCCL, then whatever else the loader still lacks for the binaries (a library
  # of those libraries' own), from the same places.
  cuda_libraries libcudart.so.13 libcublasLt.so.13 libnccl.so.2
  base_library_path=${LD_LIBRARY_PATH:-}
  export LD_LIBRARY_PATH="$bundle/lib${cuda_lib_dirs:+:$cuda_lib_dirs}${base_library_path:+:$base_library_path}"
  mapfile -t broken < <(unloadable "$bundle"/bin/*)
  if [ ${#broken[@]} -gt 0 ]; then
    cuda_libraries $(printf '%s\n' "${broken[@]}" | awk '{print $2}' | sort -u)
    export LD_LIBRARY_PATH="$bundle/lib${cuda_lib_dirs:+:$cuda_lib_dirs}${base_library_path:+:$base_library_path}"
    mapfile -t broken < <(unloadable "$bundle"/bin/*)
  fi
  if [ ${#cuda_lib_missing[@]} -gt 0 ] || [ ${#broken[@]} -gt 0 ]; then
    row "0. bundle" "**cannot load**: missing ${cuda_lib_missing[*]:-} ${broken[*]:-} (searched $cuda_home, \
$PYTHON's nvidia wheels, the loader's cache); building check_kernels instead"
    bundle=""
  fi
fi

# Without a usable bundle: check_kernels built standalone (tests/gpu/CMakeLists.txt needs only the CUDA toolkit).
if [ -n "$bundle" ]; then
  check_kernels=$bundle/bin/check_kernels
  built="bundled binaries; ${cuda_lib_found[*]}"
else
  missing=()
  [ -n "$nvcc" ] || missing+=("nvcc (CUDA toolkit; set CUDACXX)")
  for tool in cmake ninja g++; do command -v "$tool" >/dev/null || missing+=("$tool"); done
  if [ -n "$nvcc" ]; then
    [ -f "$cuda_home/include/cublasLt.h" ] || missing+=("cublasLt.h under $cuda_home/include")
    ls "$cuda_home"/lib64/libcublasLt.so* "$cuda_home"/targets/*/lib/libcublasLt.so* >/dev/null 2>&1 ||
      missing+=("libcublasLt.so under $cuda_home")
  fi
  if [ ${#missing[@]} -gt 0 ]; then
    echo "MISSING (no usable bundle at $bundle_file, so check_kernels must be built here): ${missing[*]}"
    row "0. preflight" "**MISSING: ${missing[*]}** (needed to build check_kernels: no usable bundle at $bundle_file)" \
      "${expected[preflight]}"
    finish 3
  fi
  check_kernels=$build/check_kernels
  echo "building check_kernels in $build (log: $logs/build.log) ..."
  start=$SECONDS
  if timeout "$(limit 240)" cmake -S tests/gpu -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CUDA_COMPILER="$nvcc" >"$logs/build.log" 2>&1 &&
    timeout "$(limit 240)" cmake --build "$build" --target check_kernels >>"$logs/build.log" 2>&1; then
    built="check_kernels built here in $((SECONDS - start)) s (no usable bundle)"
  else
    tail -40 "$logs/build.log"
    row "0. preflight" "**BUILD FAILED** after $((SECONDS - start)) s (build.log)"
    finish 2
  fi
fi
cuobjdump=$(command -v cuobjdump || echo "$cuda_home/bin/cuobjdump")
hgmma="cuobjdump not found"
[ -x "$cuobjdump" ] && hgmma="$(timeout "$(limit 30)" "$cuobjdump" -sass "$check_kernels" 2>/dev/null | grep -c HGMMA)"
row "0. preflight" "${stale:+$stale; }$gpu; CUDA $cuda_version; $built; HGMMA instructions in check_kernels: $hgmma" \
  "${expected[preflight]}"

# 1-2. Kernel checks, a process per group.
if wanted checks; then
  begin "1. kernel checks" "${expected[checks]}"
  check_group others 60 "${checks_others[@]}"
  row "1. kernel checks: ${checks_others[*]}" "$check_result" "${expected[checks]}"
  check_group float8 30 --only=float8
  row "1. kernel checks: float8" "$check_result" "inside the bound from Hopper's 14-bit fp8 accumulation"
  check_group mma 60 "${checks_mma[@]}"
  row "1. kernel checks: ${checks_mma[*]}" "$check_result" "every row ok"
fi
if wanted checks_wgmma; then
  begin "2. wgmma checks" "${expected[checks_wgmma]}"
  check_group wgmma 45 "${checks_wgmma[@]}"
  row "2. kernel checks: ${checks_wgmma[*]}" "$check_result" "${expected[checks_wgmma]}"
fi
for group in "${!check_rc[@]}"; do [ "${check_rc[$group]}" = 0 ] || status=1; done

# What the checks decide, each group for itself (a group not run in this call, STAGES, counts as passed):
# - the attention replica runs on is mma.sync unless the mma.sync attention's own checks failed or did not finish,
#   then the fp32 kernels (train.attention / bench_model's attention=), so that the other results still come back;
# - the wgmma rows run when the wgmma checks passed;
# - the float8 rows run when the float8 checks ran to the end: a bound is a question for the table, not a reason
#   to lose the timings.
attention=""
if [ -n "${check_rc[mma]+set}" ] && [ "${check_rc[mma]}" != 0 ]; then
  attention=fp32
  row "attention for replica" "**fp32 kernels** (the mma.sync attention's checks: $(describe_exit "${check_rc[mma]}"))"
fi
wgmma_ok=""
{ [ -z "${check_rc[wgmma]+set}" ] || [ "${check_rc[wgmma]}" = 0 ]; } && wgmma_ok=1
float8_ok=""
if [ -z "${check_rc[float8]+set}" ] || { ran_to_the_end float8 && grep -q '^| gemm_float8' "$logs/check_float8.md"; }; then
  float8_ok=1
fi

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
  if float8_curve; then row "float8 vs bf16, 300 steps of olmo3_1b" "ok: $(cat "$logs/float8_curve.md")"; else
    row "float8 vs bf16, 300 steps of olmo3_1b" "**FAILED** (float8_curve.md, curve_*.log)"; status=1; fi
  finish "$status"
fi
# NEEDLE_STAGES=1: a call of its own that trains bench/needle_stages.sh's tiny models on the GPU (STEPS2 stage-2 steps
# at 64 tokens, then STEPS3 stage-3 steps at 256 with YaRN), far longer than two CPU cores allow, and scores both.
if [ -n "${NEEDLE_STAGES:-}" ] && [ -n "$bundle" ]; then
  if timeout "$(limit 480)" env BUILD="$bundle/bin" DEVICE=cuda THREADS=8 STEPS2="${STEPS2:-3000}" \
    STEPS3="${STEPS3:-1500}" PYTHON="$PYTHON" bench/needle_stages.sh >"$logs/needle_stages.md" \
    2>"$logs/needle_stages.log"; then
    row "needle, stage 2 vs stage 3" "ok (needle_stages.md)"
  else
    row "needle, stage 2 vs stage 3" "**FAILED** (needle_stages.log)"; status=2
  fi
  finish "$status"
fi
if [ -z "$bundle" ]; then
  row "replica on GPU" "not run: no usable bundle (scripts/device-bundle.sh, then carry .device)"
  finish "$status"
fi
export FIXTURES=$bundle/fixtures OMP_NUM_THREADS=${OMP_NUM_THREADS:-8}
if ! "$bundle/bin/replica" --help >/dev/null 2>"$logs/bundle.err"; then
  row "replica on GPU" "**CANNOT START** the bundled binary: $(head -c 300 "$logs/bundle.err")"
  finish 2
fi

# torch_ceiling PART... : bench/gpu/torch_ceiling.py's parts, appended to torch_ceiling.md and .jsonl; the stage's
# result in ceiling_result.
torch_ceiling() {
  local name=$1 rc
  shift
  run_limited 120 "$name" $PYTHON bench/gpu/torch_ceiling.py --only "$(IFS=,; echo "$*")" "${ceiling[@]}" \
    >"$logs/$name.out" 2>"$logs/$name.err"
  rc=$?
  if [ $rc -eq 0 ]; then
    [ -s "$logs/torch_ceiling.md" ] || grep -E '^\|( measurement |---)' "$logs/$name.out" >"$logs/torch_ceiling.md"
    grep '^| ' "$logs/$name.out" | grep -v '^| measurement ' >>"$logs/torch_ceiling.md"
    grep '^{' "$logs/$name.out" >>"$logs/torch_ceiling.jsonl"
    publish torch_ceiling.md
    ceiling_result="ok: $(grep -c '^{' "$logs/$name.out") rows (torch_ceiling.md)"
  elif [ $rc -eq 77 ]; then
    ceiling_result="not run: $(tail -c 200 "$logs/$name.err")"
  else
    ceiling_result="$(describe_exit $rc) ($(tail -c 200 "$logs/$name.err" | tr '\n' ' '))"
  fi
}

# 3. Attention TFLOP/s per tensor-core kernel (bench_attention, FLOPs as model/flops.h counts them): one olmo3_7b
# layer at 1 × 8192 (H = K = 32, D = 128) with the sliding layers' window, full causal, and packed into 8 documents
# of 1,024 tokens (the same rate per visible pair is the goal); then the seed's head-shape ablation, 16 heads × 256
# (the same H·D), full causal. fp32 is known (4.5 / 2.9 TFLOP/s) and left out.
if wanted attention; then
  begin "3. attention" "${expected[attention]}"
  kernels=""
  [ -z "$attention" ] && kernels=mma
  [ -n "$wgmma_ok" ] && kernels+=${kernels:+,}wgmma
  { echo "| kernel | shape | forward ms | forward TFLOP/s | forward + backward ms | forward + backward TFLOP/s |"
    echo "|---|---|---|---|---|---|"; } >"$logs/attention_bench.md"
  if [ -z "$kernels" ]; then
    row "3. attention TFLOP/s (bench_attention)" "not run: neither tensor-core attention passed its checks" \
      "${expected[attention]}"
  else
    runs=()
    for mask in "${masks[@]}"; do runs+=("${attention_shape[*]} $mask"); done
    runs+=("${attention_wide[*]} window=0")
    for run in "${runs[@]}"; do
      # shellcheck disable=SC2086 # the shape and the mask are several arguments
      if run_limited 60 attention "$bundle/bin/bench_attention" cuda $run \
        "kernels=$kernels" "$attention_reps" >"$logs/attention_bench.out" 2>>"$logs/attention_bench.err"; then
        grep '^| [a-z0-9]* | B=' "$logs/attention_bench.out" >>"$logs/attention_bench.md"
        grep '^{' "$logs/attention_bench.out" >>"$logs/attention_bench.jsonl"
      else
        echo "| $run | **failed** ($(tail -c 200 "$logs/attention_bench.err" | tr '\n' ' ')) | | | | |" \
          >>"$logs/attention_bench.md"
        status=2
      fi
      cat "$logs/attention_bench.out" >>"$logs/attention_bench.log"
      publish attention_bench.md
    done
    row "3. attention TFLOP/s (bench_attention)" \
      "$(grep -c '^| [a-z0-9]* | B=' "$logs/attention_bench.md") rows, kernels $kernels (attention_bench.md)" \
      "${expected[attention]}"
  fi
fi

# 4. The same attention in PyTorch on this GPU.
if wanted sdpa; then
  begin "4. SDPA ceiling" "${expected[sdpa]}"
  torch_ceiling sdpa attention
  row "4. PyTorch SDPA attention (torch_ceiling.py)" "$ceiling_result" "${expected[sdpa]}"
fi

# Whole training steps (forward, backward, clipping, AdamW) at 1 × 8192: a row of train_bench.md each.
echo "| model | B×T | remat | tokens/s | tokens/s without optimizer | MFU (989 TFLOP/s) | step s | optimizer share | \
GPU memory | expected |" >"$logs/train_bench.md"
echo "|---|---|---|---|---|---|---|---|---|---|" >>"$logs/train_bench.md"
# bench_step MODEL_YAML B T REMAT STEPS SECONDS EXPECTED [profile]: one bench_model run, a row of train_bench.md. With
# `profile` (bench_model's argument): the device time per operation goes to profile.md (the row says "profiled": the
# events cost the step about 1 %). ATTENTION=KIND in the environment runs it with attention=KIND (else the
# fallback above, else mma); FLOAT8=1 with the block Linears in float8 (train.float8; MFU bf16-equivalent);
# HOST_MOMENTS=1 with AdamW's moments in page-locked host memory (optim.host_moments). Tokens/s without optimizer:
# B·T over the step less its optimizer share (each step here updates once per micro-batch; the recipe's 512
# micro-batches per update divide that share by 512).
bench_step() {
  local config=$1 B=$2 T=$3 remat=$4 steps=$5 seconds=$6 expect=$7 profile=${8:-} out line name kernel model
  model=$(basename "$config" .yaml)
  name=${model}_$remat${profile:+_profiled}${ATTENTION:+_$ATTENTION}${FLOAT8:+_float8}${HOST_MOMENTS:+_host_moments}
  kernel=${ATTENTION:-${attention:-mma}}
  out=$(run_limited "$seconds" "bench_$name" "$bundle/bin/bench_model" "$config" "$B" "$T" bf16 \
    "$steps" "$remat" train cuda "attention=$kernel" $profile ${FLOAT8:+float8} ${HOST_MOMENTS:+host_moments} \
    2>"$logs/bench_$name.err")
  echo "$out" | tail -1 >"$logs/bench_$name.json"
  if [ -n "$profile" ]; then
    { echo "### $model, ${B}×$T, remat=$remat"; echo; echo "$out" | grep '^|'; echo; } >>"$logs/profile.md"
    publish profile.md
  fi
  line=$($PYTHON - "$(cat "$logs/bench_$name.json")" \
    "$remat${profile:+ (profiled)}${ATTENTION:+, $ATTENTION attention}${FLOAT8:+, float8}${HOST_MOMENTS:+, host moments}" \
    "$expect" <<'PY' 2>/dev/null
import json, sys
j = json.loads(sys.argv[1])
without_optimizer = j['B'] * j['T'] / (j['step_s'] * (1 - j['optimizer_share']))
print(f"| {j['model'].split('/')[-1].removesuffix('.yaml')} | {j['B']}×{j['T']} | {sys.argv[2]} | "
      f"{j['tokens_per_s']:.0f} | {without_optimizer:.0f} | {100 * j['mfu_vs_gemm_peak']:.1f} % | {j['step_s']:.3f} | "
      f"{100 * j['optimizer_share']:.1f} % | {j['device_memory_gib']:.1f} GiB | {sys.argv[3]} |")
PY
)
  if [ -n "$line" ]; then echo "$line" >>"$logs/train_bench.md"; else
    echo "| $model | ${B}×$T | $remat | **failed** ($(tail -c 200 "$logs/bench_$name.err" | tr '\n|' ' /')) | | | | | | \
$expect |" >>"$logs/train_bench.md"; [ "$status" -eq 0 ] && status=2; fi
  publish train_bench.md
}
# not_run MODEL REMAT WHY: a row for a step left out.
not_run() { echo "| $(basename "$1" .yaml) | 1×$tokens | $2 | not run ($3) | | | | | | |" >>"$logs/train_bench.md"; publish train_bench.md; }
steps_row() { row "$1" "$(grep -c '^| olmo3' "$logs/train_bench.md") rows so far (train_bench.md)" "$2"; }

# 5-7. The 1B step on mma.sync (then profiled: where the time goes after the fused kernels), on wgmma, and the 7B
# without block recomputation, 123.5 of 139 GiB by the plan, profiled (its profile decides whether it needs CUDA
# graphs; its optimizer share is the moments over PCIe, ~1.2 s by docs/gpu.md).
if wanted step_1b; then
  begin "5. 1B step" "${expected[step_1b]}"
  bench_step "$model_1b" 1 $tokens none 5 90 "${expected[step_1b]}"
  if ((deadline - SECONDS > 130)); then bench_step "$model_1b" 1 $tokens none 2 30 "" profile
  else not_run "$model_1b" "none (profiled)" "no time left"; fi
  steps_row "5. 1B step, mma (bench_model)" "${expected[step_1b]}"
fi
if wanted step_1b_wgmma; then
  begin "6. 1B step on wgmma" "${expected[step_1b_wgmma]}"
  if [ -n "$wgmma_ok" ]; then ATTENTION=wgmma bench_step "$model_1b" 1 $tokens none 5 60 "${expected[step_1b_wgmma]}"
  else not_run "$model_1b" "none, wgmma attention" "the wgmma checks did not pass"; fi
  steps_row "6. 1B step, wgmma" "${expected[step_1b_wgmma]}"
fi
if wanted step_7b; then
  begin "7. 7B selective + host moments" "${expected[step_7b]}"
  HOST_MOMENTS=1 bench_step "$model_7b" 1 $tokens selective 3 150 "${expected[step_7b]}" profile
  steps_row "7. 7B, remat=selective, host moments (profiled)" "${expected[step_7b]}"
fi

# 8. Correctness of replica itself on the GPU: the reference parity tests on the CUDA backend, the trainer.
if wanted correctness; then
  begin "8. correctness" "${expected[correctness]}"
  run_limited 90 unit_tests "$bundle/bin/unit_tests" --gtest_filter='*Cuda*' >"$logs/unit_cuda.log" 2>&1
  rc=$?
  summary_line="$(grep -cE '^\[       OK \]' "$logs/unit_cuda.log") passed, $(grep -cE '^\[  SKIPPED \]' \
    "$logs/unit_cuda.log") skipped, $(grep -cE '^\[  FAILED  \] .*\(' "$logs/unit_cuda.log") failed"
  if [ $rc -eq 0 ]; then row "8. parity on CUDA (gtest *Cuda*)" "ok: $summary_line" "${expected[correctness]}"; else
    grep -E 'FAILED|Failure|error|Expected|Which is' "$logs/unit_cuda.log" | head -30
    row "8. parity on CUDA (gtest *Cuda*)" "$(describe_exit $rc): $summary_line (unit_cuda.log)" \
      "${expected[correctness]}"; status=1; fi
  TRAIN_CUDA_OVERRIDES=${attention:+train.attention=$attention} run_limited 150 train_cuda \
    bash tests/integration/train_cuda.sh "$bundle/bin/replica" . >"$logs/train_cuda.log" 2>&1
  rc=$?
  if [ $rc -eq 0 ]; then row "8. train on CUDA vs CPU, exact resume" "ok: $(grep -E 'worst relative' \
    "$logs/train_cuda.log" | sed 's/ over [0-9]* steps.*//' | tr '\n' ';')" "all pass"; else
    tail -30 "$logs/train_cuda.log"
    row "8. train on CUDA vs CPU, exact resume" "$(describe_exit $rc) (train_cuda.log)" "all pass"; status=1; fi
fi

# 9. float8 linears (train.float8, torchao's tensorwise recipe) beside the bf16 steps.
if wanted float8; then
  begin "9. float8 steps" "${expected[float8]}"
  if [ -n "$float8_ok" ]; then
    FLOAT8=1 bench_step "$model_1b" 1 $tokens none 5 60 "0.9-1.1x the bf16 row"
    FLOAT8=1 bench_step "$model_7b" 1 $tokens block 3 150 "1.0-1.15x of 5.85k (7B block, 11-30)"
  else
    not_run "$model_1b" "none, float8" "the float8 checks did not run to the end"
    not_run "$model_7b" "block, float8" "the float8 checks did not run to the end"
  fi
  steps_row "9. float8 steps" "${expected[float8]}"
fi

# 10. Page-locked copies and the bf16 GEMM in PyTorch: the 50 GB/s PCIe the host moments assume (docs/gpu.md), and
# what a GEMM reaches here against the 989.4 TFLOP/s the MFU divides by.
if wanted copy_gemm; then
  begin "10. copies and GEMM" "${expected[copy_gemm]}"
  torch_ceiling copy_gemm copy gemm
  row "10. PyTorch pinned copies, bf16 GEMM (torch_ceiling.py)" "$ceiling_result" "${expected[copy_gemm]}"
fi

# 11. As time allows: the 1B step in PyTorch (tools/reference/bench_ref.py: autocast bf16, SDPA, fused AdamW), the 7B
# with block recomputation (the float8 rows' reference) and keeping every layer's attention output.
if wanted extra; then
  begin "11. as time allows" "${expected[extra]}"
  $PYTHON -c "import json, sys, yaml; json.dump(yaml.safe_load(open(sys.argv[1])), open(sys.argv[2], 'w'))" \
    "$model_1b" "$logs/model_1b.json"
  theirs=$(run_limited 120 bench_torch $PYTHON tools/reference/bench_ref.py --config "$logs/model_1b.json" \
    --batch 1 --seq $tokens --threads 8 --steps 5 --precision bf16 --train --device cuda --json \
    2>"$logs/bench_torch.err" | tail -1)
  line=$($PYTHON - "$(cat "$logs/bench_$(basename "$model_1b" .yaml)_none.json" 2>/dev/null)" "$theirs" <<'PY' 2>/dev/null
import json, sys
ours, theirs = json.loads(sys.argv[1]), json.loads(sys.argv[2])
flops_per_token = ours["model_gflops"] * 1e9 / ours["tokens_per_s"]
mfu = theirs["tokens_per_s"] * flops_per_token / 989.4e12
print(f"| {ours['model'].split('/')[-1].removesuffix('.yaml')}, PyTorch {theirs['torch']} (replica "
      f"{ours['tokens_per_s'] / theirs['tokens_per_s']:.2f}×) | 1×{ours['T']} | - | {theirs['tokens_per_s']:.0f} | | "
      f"{100 * mfu:.1f} % | {theirs['step_s']:.3f} | | | ~19k |")
PY
)
  echo "${line:-| $(basename "$model_1b" .yaml), PyTorch | 1×$tokens | - | **failed** ($(tail -c 200 "$logs/bench_torch.err" | tr '\n|' ' /')) | | | | | | ~19k |}" \
    >>"$logs/train_bench.md"
  publish train_bench.md
  for remat in block keep_attention; do
    if ((deadline - SECONDS > 100)); then
      bench_step "$model_7b" 1 $tokens $remat 3 $((deadline - SECONDS - 60)) "$([ $remat = block ] && echo 5.85k ||
        echo 6.2k) (11-30)"
    else not_run "$model_7b" $remat "no time left"; fi
  done
  steps_row "11. PyTorch 1B, 7B block and keep_attention" "${expected[extra]}"
fi
# 12. The CPU attention beside PyTorch's scaled_dot_product_attention on this machine's CPU (issue 34, item 2: the
# dev VMs' Debian torch 1.13 has no SDPA): bench/attention.sh with the bundle's AVX512-BF16 bench_attention, on all
# cores, where this CPU has AVX512-BF16 and $PYTHON's torch has SDPA. After everything else: a call of its own
# (STAGES=cpu_attention) if the full run's deadline leaves it no time.
if wanted cpu_attention; then
  begin "12. CPU attention beside PyTorch's SDPA" "${expected[cpu_attention]}"
  cpu_bench=${bundle:+$bundle/bin/bench_attention_avx512bf16}
  why=""
  if [ -z "$cpu_bench" ] || [ ! -x "$cpu_bench" ]; then why="no bench_attention_avx512bf16 in the bundle"
  elif ! grep -q -w avx512_bf16 /proc/cpuinfo; then why="this CPU has no AVX512-BF16"
  elif ! $PYTHON -c "import torch; assert hasattr(torch.nn.functional, 'scaled_dot_product_attention')" 2>/dev/null
  then why="$PYTHON's torch has no scaled_dot_product_attention"
  elif ((deadline - SECONDS < 60)); then why="no time left (STAGES=cpu_attention)"
  fi
  if [ -n "$why" ]; then
    row "12. CPU attention beside PyTorch's SDPA" "not run: $why" "${expected[cpu_attention]}"
  else
    cpu=$(grep -m1 '^model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')
    torch_version=$($PYTHON -c 'import torch; print(torch.__version__)')
    printf '\nCPU attention, %s threads of %s, beside PyTorch %s:\n\n' "$(nproc)" "$cpu" "$torch_version" \
      >>"$logs/attention_bench.md"
    if run_limited 300 cpu_attention env BENCH_ATTENTION="$cpu_bench" TORCH_PYTHON="$PYTHON" \
      THREADS="$(nproc)" REPS=3 bench/attention.sh >"$logs/cpu_attention.md" 2>"$logs/cpu_attention.err"; then
      cat "$logs/cpu_attention.md" >>"$logs/attention_bench.md"
      row "12. CPU attention beside PyTorch's SDPA" "ok: $(nproc) threads of $cpu (attention_bench.md)" \
        "${expected[cpu_attention]}"
    else
      row "12. CPU attention beside PyTorch's SDPA" \
        "$(describe_exit $?): $(tail -c 200 "$logs/cpu_attention.err" | tr '\n|' ' /')" "${expected[cpu_attention]}"
    fi
    publish attention_bench.md
  fi
fi
cat "$logs/train_bench.md"
finish "$status"
