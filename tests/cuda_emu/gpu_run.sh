#!/usr/bin/env bash
# bench/gpu/run.sh's failure handling, rehearsed on the CUDA emulation (ctest cuda_emu.gpu_run): the script itself,
# unchanged, over a bundle of the emulation's binaries (check_kernels_emu, bench_attention_cuda_emu, ...) at tiny
# shapes (REPLICA_GPU_RUN_EMULATED=1), with nvidia-smi standing in for the emulated GPU's driver:
#   a  crashes (REPLICA_GPU_RUN_FAULT): a crashing check process costs its own rows only; the later stages still
#      run; the fp32 attention takes over only when the mma.sync attention's own checks fail; a crashing step is
#      one failed row; every table is in $OUT;
#   b  tools: no nvidia-smi stops the call at once (exit 3); a usable bundle needs no nvcc, CMake, Ninja or g++,
#      and takes CUDA's libraries from torch's nvidia/* wheels when CUDA_HOME has none; torch_ceiling.py without a
#      GPU says so and exits 77; the CPU attention's stage without its AVX512-BF16 binary says so;
#   c  the bundle's stamp: a bundle built from other sources is refused (exit 3) before anything runs, and measured
#      with a warning in the summary under REPLICA_ALLOW_STALE_BUNDLE=1.
#   gpu_run.sh SOURCE_DIR CHECK_KERNELS BENCH_ATTENTION BENCH_MODEL REPLICA UNIT_TESTS
set -euo pipefail
src=$1
shift
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# A bundle (scripts/device-bundle.sh's layout) whose binaries are links to the emulation's, stamped with STAMP.
make_bundle() {
  local dir=$tmp/bundle_src name
  rm -rf "$dir" && mkdir -p "$dir/bin" "$dir/lib"
  local names=(check_kernels bench_attention bench_model replica unit_tests) i=0
  for bin in "$@"; do ln -s "$(realpath "$bin")" "$dir/bin/${names[$i]}"; i=$((i + 1)); done
  echo "$STAMP" >"$dir/STAMP"
  [ -n "$STAMP" ] || rm "$dir/STAMP"
  tar -C "$dir" -cJf "$tmp/bundle.tar.xz" .
}
# The emulated GPU as nvidia-smi names one (the driver's tool: nothing else of the driver is needed here).
mkdir -p "$tmp/driver"
cat >"$tmp/driver/nvidia-smi" <<'EOF'
#!/bin/sh
case "$*" in
  *--query-gpu*) echo "CUDA emulation (tests/cuda_emu), 0, 0 MiB" ;;
  *) echo "| NVIDIA-SMI 0.0   Driver Version: 0.0   CUDA Version: 13.0 |" ;;
esac
EOF
chmod +x "$tmp/driver/nvidia-smi"

# gpu_run NAME [VAR=VALUE...]: run.sh with the emulated bundle into $tmp/NAME (BUILD) and $tmp/NAME/out (OUT);
# its exit status in rc, its output in $tmp/NAME.log.
gpu_run() {
  local name=$1
  shift
  mkdir -p "$tmp/$name/out"
  rc=0
  env PATH="$tmp/driver:$PATH" BUILD="$tmp/$name" OUT="$tmp/$name/out" BUNDLE="$tmp/bundle.tar.xz" \
    REPLICA_GPU_RUN_EMULATED=1 PYTHON=/usr/bin/python3 DEADLINE=300 OMP_NUM_THREADS=2 "$@" \
    bash "$src/bench/gpu/run.sh" >"$tmp/$name.log" 2>&1 || rc=$?
}
fail() { echo "FAIL: $*"; echo "--- $log"; cat "$log"; exit 1; }
expect_rc() { [ "$rc" -eq "$1" ] || fail "exit status $rc, expected $1"; }
expect() { grep -qE -- "$2" "$1" || fail "no /$2/ in $1"; }
expect_not() { ! grep -qE -- "$2" "$1" || fail "/$2/ in $1"; }

STAMP=$("$src/scripts/source-stamp.sh")
make_bundle "$@"

# a. The other-kernels and the wgmma check processes crash; a bench_model run crashes. Every later stage runs, on
# mma.sync (its own checks passed), wgmma left out; the float8 steps run (their checks ran to the end).
gpu_run crash STAGES=checks,checks_wgmma,attention,sdpa,step_1b,step_1b_wgmma,step_7b,float8,copy_gemm \
  REPLICA_GPU_RUN_FAULT=checks_others,checks_wgmma,bench_olmo3_micro_selective_profiled_host_moments
log=$tmp/crash.log out=$tmp/crash/out
expect_rc 1
expect "$out/summary.md" '^\| 1\. kernel checks: --only=gemm.* \| \*\*CRASHED\*\* \(signal 11\) after 0 rows'
expect "$out/summary.md" '^\| 2\. kernel checks: .* \| \*\*CRASHED\*\* \(signal 11\)'
expect "$out/summary.md" '^\| 1\. kernel checks: --only=attention \| ok: [0-9]+ of [0-9]+ passed'
expect "$out/summary.md" '^\| 1\. kernel checks: float8 \| ok'
expect_not "$out/summary.md" 'fp32 kernels'
expect "$out/check.md" '^\| \*\*wgmma\*\* .*\*\*CRASHED\*\*'
expect "$out/check.md" '^\| gemm_float8 '
[ "$(grep -c '^| mma | B=1 T=128' "$out/attention_bench.md")" -eq 3 ] || fail "not 3 mma rows in attention_bench.md"
expect "$out/attention_bench.md" '^\| mma \| B=1 T=64 H=2 K=1 D=256 W=0 documents=1 \| [0-9.e+-]+ \|'
expect_not "$out/attention_bench.md" '^\| wgmma '
expect "$out/train_bench.md" '^\| olmo3_micro \| 1×64 \| none \| [0-9]+ \| [0-9]+ \|'
expect "$out/train_bench.md" 'none, wgmma attention \| not run \(the wgmma checks did not pass\)'
expect "$out/train_bench.md" '^\| olmo3_micro \| 1×64 \| selective \| \*\*failed\*\*'
expect "$out/train_bench.md" '^\| olmo3_micro \| 1×64 \| block, float8 \| [0-9]+ \|'
grep -q '"attention": "mma"' "$tmp/crash/logs/bench_olmo3_micro_none.json" || fail "the 1B step did not run on mma"
expect "$out/torch_ceiling.md" '^\| SDPA .* B=1 H=2 T=128 D=64 causal \| [0-9.]+ \|'
expect "$out/torch_ceiling.md" '^\| GEMM '
expect "$out/summary.md" '^\| attention mma forward, H=2 T=128 D=64 causal: .* \| [0-9.]+ \|$'
for f in summary.md check.md attention_bench.md torch_ceiling.md train_bench.md profile.md logs.tar.gz; do
  [ -s "$out/$f" ] || fail "no $f in \$OUT"
done
expect "$tmp/crash.log" '=== 3\. attention \(expected: mma: forward 185-195'

# The mma.sync attention's checks crash: replica runs on the fp32 kernels; wgmma, checked on its own, still runs.
gpu_run mma_crash STAGES=checks,checks_wgmma,attention,step_1b_wgmma,step_7b REPLICA_GPU_RUN_FAULT=checks_mma
log=$tmp/mma_crash.log out=$tmp/mma_crash/out
expect_rc 1
expect "$out/summary.md" '^\| attention for replica \| \*\*fp32 kernels\*\* \(the mma\.sync attention.s checks: \*\*CRASHED'
[ "$(grep -c '^| wgmma | B=1 T=128' "$out/attention_bench.md")" -eq 3 ] || fail "not 3 wgmma rows in attention_bench.md"
expect "$out/attention_bench.md" '^\| wgmma \| B=1 T=64 H=2 K=1 D=256 W=0 documents=1 \| [0-9.e+-]+ \|'
expect_not "$out/attention_bench.md" '^\| (mma|fp32) '
grep -q '"attention": "fp32"' "$tmp/mma_crash/logs/bench_olmo3_micro_selective_profiled_host_moments.json" ||
  fail "the 7B step did not fall back to the fp32 attention"
expect "$out/train_bench.md" 'none, wgmma attention \| [0-9]+ \|'

# b. No nvidia-smi: stopped at once, the reason in $OUT.
log=$tmp/no_driver.log
mkdir -p "$tmp/no_driver/out"
rc=0
env PATH="$PATH" BUILD="$tmp/no_driver" OUT="$tmp/no_driver/out" BUNDLE="$tmp/bundle.tar.xz" \
  bash "$src/bench/gpu/run.sh" >"$log" 2>&1 || rc=$?
if command -v nvidia-smi >/dev/null; then echo "(nvidia-smi is installed here: its absence is not rehearsed)"; else
  expect_rc 3
  expect "$tmp/no_driver/out/summary.md" 'MISSING: nvidia-smi'
fi
# A usable bundle on a machine without nvcc, CMake, Ninja or g++, whose CUDA libraries are torch's wheels'.
mkdir -p "$tmp/path" "$tmp/site/nvidia/cu13/lib"
for f in /usr/bin/* /bin/*; do
  case ${f##*/} in cmake | ninja | g++* | c++* | nvcc | cc | gcc*) ;; *) ln -sf "$f" "$tmp/path/${f##*/}" ;; esac
done
# The wheels' layout (nvidia/cu13/lib); the emulation's binaries load none of these, so the files only need to be
# there: links to the toolkit's where this machine has them.
for lib in libcudart.so.13 libcublasLt.so.13 libnccl.so.2; do
  real=$(find /usr/local/cuda/lib64/ /usr/local/cuda/lib/ -name "$lib" 2>/dev/null | head -1)
  if [ -n "$real" ]; then ln -s "$real" "$tmp/site/nvidia/cu13/lib/$lib"; else touch "$tmp/site/nvidia/cu13/lib/$lib"; fi
done
gpu_run no_tools STAGES=checks,cpu_attention PATH="$tmp/driver:$tmp/path" CUDA_HOME="$tmp/no_toolkit" \
  PYTHONPATH="$tmp/site"
log=$tmp/no_tools.log out=$tmp/no_tools/out
expect_rc 0
expect "$out/summary.md" '^\| 0\. preflight \| CUDA emulation .*bundled binaries; libcudart\.so\.13 \(torch.s wheels\)'
expect "$out/summary.md" '^\| 1\. kernel checks: float8 \| ok'
# The CPU attention's stage needs the bundle's AVX512-BF16 bench_attention, which the emulation's bundle lacks.
expect "$out/summary.md" '^\| 12\. CPU attention beside PyTorch.s SDPA \| not run: no bench_attention_avx512bf16'

# torch_ceiling.py where torch sees no GPU (this machine): skipped, exit 77, saying why (run.sh's row says "not run").
log=$tmp/ceiling.log
rc=0
/usr/bin/python3 "$src/bench/gpu/torch_ceiling.py" >"$log" 2>&1 || rc=$?
expect_rc 77
expect "$log" 'no CUDA device visible to torch .*: not run'

# c. A bundle built from other sources: refused before anything runs; measured, and said so, when allowed.
STAMP=$'commit 0000000\nsources 0000000000000000000000000000000000000000000000000000000000000000'
make_bundle "$@"
gpu_run stale
log=$tmp/stale.log out=$tmp/stale/out
expect_rc 3
expect "$out/summary.md" 'STALE BUNDLE\*\*: built from sources 0{64}, this tree.s are [0-9a-f]{64}; refused'
[ ! -e "$out/check.md" ] || fail "a refused bundle ran the checks"
STAMP=""  # a bundle from before stamps: no STAMP at all
make_bundle "$@"
gpu_run stale_allowed STAGES=checks REPLICA_ALLOW_STALE_BUNDLE=1
log=$tmp/stale_allowed.log out=$tmp/stale_allowed/out
expect_rc 0
expect "$out/summary.md" 'STALE BUNDLE\*\*: built from sources unknown \(no STAMP\).*measured anyway'
expect "$out/summary.md" '^\| 1\. kernel checks: float8 \| ok'
echo "gpu_run: run.sh survives crashing stages (fallback decided by each group alone), missing tools and stale bundles"
