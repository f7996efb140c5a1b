#!/usr/bin/env bash
# A connection dropped mid-body (headers and half the bytes, then the socket closes): retried, and what is read is
# the whole range (data info --scan sees every token as the local read does). Never trained on half a read.
set -euo pipefail
source "$(dirname "$0")/remote_lib.bash"
serve_faults
"$replica" data info --mix "$(fault_mix drop1)" --seq-len 64 --scan "${http_flags[@]}" >"$work/info.txt" 2>"$work/info.err"
grep -q "$fault_url/drop1/tokens/train.npy: .*retry 1 of 2" "$work/info.err" || { cat "$work/info.err"; exit 1; }
diff "$work/info_local.txt" <(same_paths <"$work/info.txt")
echo "data_remote_fault_dropped: retried, then the same bytes"
