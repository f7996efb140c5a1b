#!/usr/bin/env bash
# A complete response with a truncated body (206 whose Content-Length and body are half the range asked for): an
# error naming the URL, exit 2; nothing of it is used.
set -euo pipefail
source "$(dirname "$0")/remote_lib.bash"
serve_faults
expect_failure "$fault_url/short/mix.txt: short body" \
  "$replica" data info --mix "$(fault_mix short)" --seq-len 64 "${http_flags[@]}"
printf 'a,%s\n' "$fault_url/short/tokens/train.npy" >"$work/short_tokens.txt"
expect_failure "$fault_url/short/tokens/train.npy: short body" \
  "$replica" data info --mix "$work/short_tokens.txt" --seq-len 64 "${http_flags[@]}"
echo "data_remote_fault_truncated: ok"
