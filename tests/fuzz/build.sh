#!/usr/bin/env bash
# Configures and builds the fuzz tree (tests/fuzz/CMakeLists.txt: the harnesses and the parsers' unit tests under
# ASan + UBSan) with clang in its own build directory. Used by `make fuzz` and by the ctest fixture fuzz.build.
#   tests/fuzz/build.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$1 build=$2
# Build type "Fuzz" has no flags of its own: the CMakeLists sets the optimisation, and asserts stay on.
mkdir -p "$build"
cmake -S "$src" -B "$build" -G Ninja -DREPLICA_FUZZ=ON -DCMAKE_CXX_COMPILER="${FUZZ_CXX:-clang++-14}" \
  -DCMAKE_BUILD_TYPE=Fuzz > "$build/configure.log" 2>&1 || { cat "$build/configure.log"; exit 1; }
cmake --build "$build" -j "${JOBS:-$(nproc)}"
