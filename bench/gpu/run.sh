#!/usr/bin/env bash
# One call on a GPU machine, from the repository root: checks the tools, builds the CUDA kernels and
# check_kernels standalone (bench/gpu needs only the CUDA toolkit with cuBLASLt, CMake, Ninja and g++, not
# replica's Debian dependencies), checks every CUDA kernel against the CPU kernel, times a 1B- and a 7B-class
# training step, and prints a short table last. About 3-5 minutes on an H200; every stage has a time limit
# so the whole run stays under 8 minutes.
#   bench/gpu/run.sh            BUILD=build-gpu; logs go to $OUT (the device tool's folder) or $BUILD/logs
# Exit status: 0 all passed, 1 a kernel check failed, 2 the build or the benchmark failed, 3 a tool is missing.
set -uo pipefail
cd "$(dirname "$0")/../.."
build=${BUILD:-build-gpu}
logs=${OUT:-$build/logs}
mkdir -p "$logs"
summary=()
row() { summary+=("| $1 | $2 |"); }
finish() {
  echo
  echo "| stage | result |"
  echo "|---|---|"
  printf '%s\n' "${summary[@]}"
  [ -s "$logs/bench.md" ] && { echo; grep -E '^\| (model|---|olmo3)' "$logs/bench.md"; }
  printf '%s\n' "${summary[@]}" >"$logs/summary.md"
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

# 2. Build (standalone: bench/gpu/CMakeLists.txt).
start=$SECONDS
echo "building check_kernels in $build (log: $logs/build.log) ..."
if timeout 240 cmake -S bench/gpu -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_COMPILER="$nvcc" \
  >"$logs/build.log" 2>&1 && timeout 240 cmake --build "$build" --target check_kernels >>"$logs/build.log" 2>&1; then
  row build "ok in $((SECONDS - start)) s"
else
  tail -40 "$logs/build.log"
  row build "**FAILED** after $((SECONDS - start)) s (build.log)"
  finish 2
fi

# 3. Kernel checks against the CPU kernels.
status=0
timeout 90 "$build/check_kernels" check | tee "$logs/check.md"
check_rc=${PIPESTATUS[0]}
passed=$(sed -n 's/^CHECKS: //p' "$logs/check.md")
case $check_rc in
  0) row "kernel checks" "ok: ${passed}" ;;
  1) row "kernel checks" "**FAILED**: ${passed} (failing rows: grep NO check.md)"; status=1 ;;
  124) row "kernel checks" "**TIMED OUT** after 90 s"; status=1 ;;
  *) row "kernel checks" "**ERROR** (exit $check_rc; see above)"; status=1 ;;
esac

# 4. Step benchmark.
timeout 150 "$build/check_kernels" bench | tee "$logs/bench.md"
bench_rc=${PIPESTATUS[0]}
if [ "$bench_rc" -eq 0 ]; then
  row benchmark "ok: $(sed -n 's/^GPU: //p' "$logs/bench.md")"
else
  row benchmark "**FAILED** (exit $bench_rc$([ "$bench_rc" -eq 124 ] && echo ', timed out after 150 s'))"
  [ "$status" -eq 0 ] && status=2
fi
finish "$status"
