#!/usr/bin/env bash
# A mix file line naming a file the server does not have (HTTP 404): not retried, an error naming the URL, exit 2.
set -euo pipefail
source "$(dirname "$0")/remote_lib.bash"
serve_faults
printf 'a,tokens/train.npy\nb,tokens/missing.npy\n' >"$work/www/mix_missing.txt"
expect_failure "$fault_url/ok/tokens/missing.npy: HTTP 404 (not found)" \
  "$replica" data info --mix "$fault_url/ok/mix_missing.txt" --seq-len 64 "${http_flags[@]}"
! grep -q retry "$work/err" || { echo "FAIL: a 404 was retried"; cat "$work/err"; exit 1; }
expect_failure "$fault_url/ok/nothing.txt: HTTP 404 (not found)" \
  "$replica" data info --mix "$fault_url/ok/nothing.txt" --seq-len 64 "${http_flags[@]}"
echo "data_remote_fault_404: ok"
