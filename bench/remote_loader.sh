#!/usr/bin/env bash
# Data-loader throughput over HTTP with added latency: tests/integration/remote_server.py serves a 32 M-token mix
# (8 files) on 127.0.0.1, each response delayed 0, 20 or 100 ms (/delayMS/), and bench_remote_loader reads global
# batches of 64 x 4096 from it as a training loop does, without and with read-ahead (data.read_ahead).
#   bench/remote_loader.sh [BUILD_DIR]      (default build; results go to bench/RESULTS.md by hand)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-$root/build}"
work=$(mktemp -d)
server=
trap '[ -n "$server" ] && kill $server; rm -rf "$work"' EXIT
/usr/bin/python3 - "$work" <<'PY'
import sys, numpy as np
rng = np.random.default_rng(1)
for i in range(8):
    rng.integers(0, 100000, size=4 << 20, dtype=np.uint32).tofile(f"{sys.argv[1]}/{i:06d}.npy")
PY
coproc SERVER { exec /usr/bin/python3 "$root/tests/integration/remote_server.py" "$work"; }
server=$SERVER_PID
read -r port <&"${SERVER[0]}"
for delay in 0 20 100; do
  urls=()
  for i in $(seq 0 7); do urls+=("http://127.0.0.1:$port/delay$delay/$(printf %06d "$i").npy"); done
  for ahead in 0 2; do
    echo -n "added latency $delay ms: "
    "$build/bench/bench_remote_loader" "${urls[@]}" --batches 10 --read-ahead $ahead
  done
done
