#!/usr/bin/env bash
# Issue 34's measures, all in one run on the machine this runs on, as one Markdown report (paste it into
# bench/RESULTS.md):
#   1. the LM head + loss against the GEMM peak of the same process (bench_kernels_cpu_time lm_head, CPU time);
#   2. CPU attention next to PyTorch's scaled_dot_product_attention (bench/attention.sh);
#   3. training steps next to the PyTorch reference (bench/run.sh --train), then `make train` on a fresh clone with
#      each phase's time and the sample it ends with;
#   4. `make test` on a fresh clone: wall and CPU time, what passed, and the slowest tests.
# The fresh clones are of the committed HEAD (not the working tree's changes) and use the packages already installed;
# each is removed at the end. 52 minutes on the 2-core AVX2 VM of bench/RESULTS.md (32 of them the two fresh clones),
# 32 on the AVX-512 BF16 one.
#   bench/first_ten_minutes.sh [--no-fresh]     THREADS=2 JOBS=2 REPS=3 BUILD=build
#   --no-fresh: items 1–3's benchmarks only (about 20 minutes there), no fresh clone.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD:-build}
threads=${THREADS:-2}
jobs=${JOBS:-2}
reps=${REPS:-3}
fresh=1
case "${1:-}" in
  --no-fresh) fresh=0 ;;
  "") ;;
  *) echo "first_ten_minutes: unknown option $1 (expected --no-fresh)" >&2; exit 2 ;;
esac
for tool in bench/bench_kernels_cpu_time bench/bench_attention bench/bench_model; do
  [ -x "$build/$tool" ] || { echo "first_ten_minutes: $build/$tool is not built (make build)" >&2; exit 2; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

cpu=$(grep -m1 '^model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')
flags=$(grep -m1 -o -w -E 'avx512_bf16|amx_bf16|avx512f|avx2' /proc/cpuinfo | sort -u | paste -sd' ' || true)
echo "## The first ten minutes (issue 34), $(date -u +%Y-%m-%d) at $(git rev-parse --short HEAD)"
echo
echo "$(nproc) cores of ${cpu:-an unnamed CPU} (${flags:-no AVX2}), $(free -g | awk '/^Mem:/ {print $2}') GiB;" \
  "$threads threads, load $(cut -d' ' -f1 /proc/loadavg) at the start." \
  "Command: \`bench/first_ten_minutes.sh${1:+ $1}\`."

echo
echo "### 1. LM head + loss (\`OMP_NUM_THREADS=1 $build/bench/bench_kernels_cpu_time $reps lm_head\`)"
echo
OMP_NUM_THREADS=1 "$build/bench/bench_kernels_cpu_time" "$reps" lm_head

echo
echo "### 2. CPU attention next to PyTorch (\`bench/attention.sh\`, T = 2048, H = 12, D = 64)"
echo
BUILD=$build THREADS=$threads REPS=$reps bench/attention.sh

echo
# PyTorch's bf16 needs AVX512-BF16 to finish in minutes (bench/run.sh, TORCH_BF16).
torch_bf16=0
grep -q -w -E 'avx512_bf16|amx_bf16' /proc/cpuinfo && torch_bf16=1
echo "### 3. Training steps next to the PyTorch reference (\`TORCH_BF16=$torch_bf16 bench/run.sh --train\`)"
echo
BUILD=$build THREADS=$threads TORCH_BF16=$torch_bf16 bench/run.sh --train
[ "$fresh" = 1 ] || exit 0

# stamped LOG COMMAND...: runs COMMAND, each output line prefixed with the seconds since it started, into LOG;
# its CPU seconds (user, system; children included) go to LOG.cpu. Returns the command's status.
stamped() {
  local log=$1
  shift
  local start=${EPOCHREALTIME/./} now status
  set +e
  /usr/bin/time -f '%U %S' -o "$log.cpu" "$@" 2>&1 | while IFS= read -r line; do
    now=${EPOCHREALTIME/./}
    printf '%d.%d %s\n' $(((now - start) / 1000000)) $(((now - start) / 100000 % 10)) "$line"
  done >"$log"
  status=${PIPESTATUS[0]}
  set -e
  return "$status"
}
# at LOG PATTERN: the seconds at LOG's first line matching the extended regex PATTERN (nothing when none does).
at() { awk -v p="$2" '{t = $1; sub(/^[^ ]* /, "")} $0 ~ p {print t; exit}' "$1"; }
# span A B: B − A in seconds, "–" when either is missing.
span() {
  if [ -n "$1" ] && [ -n "$2" ]; then awk -v a="$1" -v b="$2" 'BEGIN {printf "%.0f s", b - a}'; else printf '–'; fi
}
# cpu_seconds LOG: stamped's CPU seconds (the last line: time writes a failed command's status before it).
cpu_seconds() { tail -n 1 "$1.cpu" | awk '{printf "%.0f + %.0f CPU-s", $1, $2}'; }
# fresh TARGET: `make TARGET` on a fresh clone of HEAD in $tmp/TARGET, stamped into $log; sets status and end (its
# last line's seconds).
fresh() {
  git clone -q . "$tmp/$1"
  log=$tmp/$1.log
  status=0
  (cd "$tmp/$1" && stamped "$log" make "$1" JOBS="$jobs") || status=$?
  end=$(tail -n 1 "$log" | cut -d' ' -f1)
}

echo
echo "### 3. \`make train\` on a fresh clone (packages present)"
echo
fresh train
built=$(at "$log" '^\[[0-9]+/[0-9]+\] Linking CXX executable replica$')
training=$(at "$log" '^replica train: ')
sampling=$(at "$log" '^A sample from the trained model')
echo "| phase | time |"
echo "|---|---|"
echo "| install (\`install-deps.sh --build\`), build the binary, the corpora downloading | $(span 0 "$built") |"
echo "| the download's log, tokenizing | $(span "$built" "$training") |"
echo "| training: steps, held-out evaluations, checkpoints | $(span "$training" "$sampling") |"
echo "| the sample | $(span "$sampling" "$end") |"
echo "| **total** (exit $status) | **$(span 0 "$end")**, $(cpu_seconds "$log") |"
echo
echo '```'
for line in '^[0-9.]+ step [0-9]+/[0-9]+ ' '^[0-9.]+ held-out loss: '; do
  grep -E "$line" "$log" | tail -n 1 | cut -d' ' -f2-
done
sed -n '/A sample from the trained model/,$p' "$log" | cut -d' ' -f2-
echo '```'
rm -rf "$tmp/train"

echo
echo "### 4. \`make test\` on a fresh clone (packages present)"
echo
fresh test
ctest_start=$(at "$log" '^Test project ')
echo "| phase | time |"
echo "|---|---|"
echo "| install the test tools, configure and build everything | $(span 0 "$ctest_start") |"
echo "| \`ctest -j $jobs\` | $(span "$ctest_start" "$end") |"
echo "| **total** (exit $status) | **$(span 0 "$end")**, $(cpu_seconds "$log") |"
echo
grep -E '^[0-9.]+ [0-9]+% tests passed' "$log" | cut -d' ' -f2- || echo "(no ctest summary: see the build's errors)"
echo
echo "The slowest tests (seconds of \`ctest -j $jobs\`, beside another test):"
echo
grep -E '^[0-9]+/[0-9]+ Test: |^Test time' "$tmp/test/build/Testing/Temporary/LastTest.log" 2>/dev/null |
  paste - - | awk '{print $(NF-1), $3}' | sort -rn | head -n 8 | awk '{printf "- %s: %.0f s\n", $2, $1}' || true
rm -rf "$tmp/test"
