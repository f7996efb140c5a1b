#!/usr/bin/env bash
# Packs what the GPU checks need to run replica itself on a GPU machine that has the CUDA toolkit but none of
# replica's Debian libraries (the device machines here): `replica`, `unit_tests`, `bench_model`, `bench_attention` and
# `check_kernels` (so the GPU machine spends no device time compiling) built for any x86-64 CPU with AVX2 (x86-64-v3;
# the GPU machine's CPU model is not known here) with the CUDA backend, `bench_attention_avx512bf16` (the CPU attention
# on its own kernels, where that CPU has AVX512-BF16), the shared libraries they load that such a machine lacks, and
# the PyTorch reference fixtures. CUDA's own libraries (cudart, cuBLASLt, NCCL) are not packed: the GPU
# machine has them. The bundle's STAMP (scripts/source-stamp.sh: the commit and a hash of the sources) says which
# tree it was built from; bench/gpu/run.sh unpacks the bundle when it is there and refuses one whose STAMP does not
# match the tree it runs in.
#   scripts/device-bundle.sh        → .device/bundle.tar.xz (git-ignored; name .device in the device tool's carry)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD:-build-device}
stamp=$(scripts/source-stamp.sh)
cmake -S . -B "$build" -G Ninja -DREPLICA_NATIVE=OFF -DCMAKE_CXX_FLAGS=-march=x86-64-v3 >/dev/null
ninja -C "$build" replica unit_tests bench_model bench_attention check_kernels reference_fixtures
# bench_attention once more for CPUs with AVX512-BF16 (Sapphire Rapids, Zen 4), without CUDA: on x86-64-v3 the CPU
# attention runs its fp32 emulation of the bf16 products, so only this one measures replica's CPU kernels beside the
# GPU machine's PyTorch and its scaled_dot_product_attention (run.sh's cpu_attention stage; issue 34).
cmake -S . -B "$build-avx512bf16" -G Ninja -DREPLICA_NATIVE=OFF -DREPLICA_CUDA=OFF \
  "-DCMAKE_CXX_FLAGS=-march=x86-64-v4 -mavx512bf16" >/dev/null
ninja -C "$build-avx512bf16" bench_attention

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bin" "$stage/lib"
[ "$(scripts/source-stamp.sh)" = "$stamp" ] ||
  { echo "device-bundle.sh: the sources changed during the build; run it again" >&2; exit 1; }
echo "$stamp" >"$stage/STAMP"
cp "$build/replica" "$build/tests/unit_tests" "$build/bench/bench_model" "$build/bench/bench_attention" \
  "$build/tests/gpu/check_kernels" "$stage/bin/"
cp "$build-avx512bf16/bench/bench_attention" "$stage/bin/bench_attention_avx512bf16"
cp -r "$build/fixtures" "$stage/fixtures"
# Every shared library the binaries load except the C runtime (glibc, present everywhere and tied to the
# loader) and CUDA's (the GPU machine's own, matching its driver).
for bin in "$stage"/bin/*; do ldd "$bin"; done | awk '$3 ~ /^\// {print $3}' | sort -u |
  grep -vE '/(libc|libm|libdl|libpthread|librt|ld-linux[^/]*)\.so|/lib(cuda|cudart|cublas|cublasLt|nccl)\.so' |
  while read -r lib; do cp -L "$lib" "$stage/lib/"; done
mkdir -p .device
tar -C "$stage" -cJf .device/bundle.tar.xz .
echo "bundle: .device/bundle.tar.xz ($(du -h .device/bundle.tar.xz | cut -f1)): $(ls "$stage/bin" | tr '\n' ' ')"
echo "libraries: $(ls "$stage/lib" | tr '\n' ' ')"
echo "stamp: $(tr '\n' ' ' <"$stage/STAMP")"
