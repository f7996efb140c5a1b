#!/usr/bin/env bash
# A server that answers 500 twice and then serves each file: retried with backoff, then read as the local files are
# (data info), and a run through it trains the same bits as one on the local files.
set -euo pipefail
source "$(dirname "$0")/remote_lib.bash"
serve_faults
"$replica" data info --mix "$(fault_mix 500x2)" --seq-len 64 --scan "${http_flags[@]}" >"$work/info.txt" 2>"$work/info.err"
grep -q "$fault_url/500x2/tokens/train.npy: HTTP 500; retry 2 of 2" "$work/info.err" || { cat "$work/info.err"; exit 1; }
diff "$work/info_local.txt" <(same_paths <"$work/info.txt")
mkdir "$work/www/run" && cp "$work/train.npy" "$work/www/run/"  # a path whose 500s are still to come
train "$work/local" data.paths="[$work/www/tokens/train.npy]" train.max_steps=4 checkpoint.every=4
train "$work/remote" data.paths="[$fault_url/500x2/run/train.npy]" train.max_steps=4 checkpoint.every=4 \
  data.http_timeout=1 data.http_retries=2
grep -q "$fault_url/500x2/run/train.npy: HTTP 500; retry 2 of 2" "$work/remote.log"
same_metrics "$work/local/metrics.jsonl" "$work/remote/metrics.jsonl" 4
cmp "$work/local/checkpoints/step00000004/model.safetensors" "$work/remote/checkpoints/step00000004/model.safetensors"
echo "data_remote_fault_500_then_ok: retried, then the same bytes and the same run"
