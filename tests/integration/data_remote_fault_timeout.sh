#!/usr/bin/env bash
# A server that stops answering (accepts the request, never replies): each attempt times out after
# data.http_timeout, is retried with backoff, and then the read fails clearly naming the URL, exit 2.
set -euo pipefail
source "$(dirname "$0")/remote_lib.bash"
serve_faults
start=$(date +%s)
expect_failure "$fault_url/hang/mix.txt: 3 attempts failed, the last with Timeout was reached" \
  "$replica" data info --mix "$(fault_mix hang)" --seq-len 64 "${http_flags[@]}"
grep -q "retry 2 of 2" "$work/err"
elapsed=$(( $(date +%s) - start ))
[ "$elapsed" -lt 30 ] || { echo "FAIL: gave up after $elapsed s (3 attempts of 1 s were asked for)"; exit 1; }
echo "data_remote_fault_timeout: gave up after $elapsed s"
