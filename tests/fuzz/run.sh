#!/usr/bin/env bash
# Runs fuzz harnesses of a built fuzz tree for a set time each, starting from the committed seeds, and prints one
# line per harness with the executions it reached. Any crash, sanitizer report, timeout or leak fails the run, and
# libFuzzer leaves the input in BUILD_DIR/artifacts/.
#   tests/fuzz/run.sh BUILD_DIR SECONDS [NAME...]      (no NAME: every harness)
set -euo pipefail
build=$1 seconds=$2
shift 2
seeds="$(cd "$(dirname "$0")" && pwd)/corpus"
names=("$@")
if [ ${#names[@]} -eq 0 ]; then
  for h in "$build"/fuzz_*; do names+=("$(basename "$h" | sed 's/^fuzz_//')"); done
fi
mkdir -p "$build/artifacts"
for name in "${names[@]}"; do
  # New inputs go to the build tree's corpus; the committed seeds are only read.
  corpus="$build/corpus/$name"
  mkdir -p "$corpus"
  log="$build/artifacts/$name.log"
  if ! "$build/fuzz_$name" "$corpus" "$seeds/$name" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
      -artifact_prefix="$build/artifacts/$name-" -print_final_stats=1 > "$log" 2>&1; then
    tail -n 60 "$log"
    echo "fuzz $name: FAILED (input saved under $build/artifacts/$name-*)"
    exit 1
  fi
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
  echo "fuzz $name: $execs executions in ${seconds} s, corpus $(ls "$corpus" | wc -l) new inputs, no failure"
done
