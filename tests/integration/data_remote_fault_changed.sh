#!/usr/bin/env bash
# A file that changes on the server between two reads: a new ETag and Last-Modified after the HEAD, or a size that
# grows (Content-Range's total): an error naming the URL, exit 2, never a mix of two versions.
set -euo pipefail
source "$(dirname "$0")/remote_lib.bash"
serve_faults
expect_failure "$fault_url/etag/mix.txt: the file changed on the server: ETag" \
  "$replica" data info --mix "$(fault_mix etag)" --seq-len 64 "${http_flags[@]}"
expect_failure "$fault_url/size/mix.txt: Content-Range 'bytes 0-" \
  "$replica" data info --mix "$(fault_mix size)" --seq-len 64 "${http_flags[@]}"
grep -q "the file's size changed" "$work/err"
echo "data_remote_fault_changed: ok"
