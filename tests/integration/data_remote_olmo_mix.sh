#!/usr/bin/env bash
# OLMo-core's own stage 1 mix file, OLMo-mix-0625-official.txt (tests/fixtures/data/, unchanged: 1,016
# `label,{TOKENIZER}` lines), read as OLMo-core reads it, with nginx on 127.0.0.1 standing in for AI2's root
# https://olmo-data.org/. The server holds a tiny token file (2 instances of 64 ids) at each of the 1,016 paths the
# mix names once {TOKENIZER} is allenai/dolma3-tokenizer; AI2's real files are not here, only their names and layout.
# The mix file itself is fetched from the server; data.base_dir switches between the server and a local copy of the
# same tree, and the two runs train the same bits. A restart reads the run's remote_files.json: no HEAD again.
set -euo pipefail
source "$(dirname "$0")/remote_lib.bash"
mix=$src/tests/fixtures/data/OLMo-mix-0625-official.txt
mkdir -p "$work/www"
cp "$mix" "$work/www/"
$py - "$mix" "$work/www" <<'PY'
import os, sys, numpy as np
rng = np.random.default_rng(7)
for i, line in enumerate(open(sys.argv[1])):
    path = line.strip().split(",")[1].replace("{TOKENIZER}", "allenai/dolma3-tokenizer")
    os.makedirs(os.path.dirname(f"{sys.argv[2]}/{path}"), exist_ok=True)
    rng.integers(2, 512, size=128, dtype=np.uint32).tofile(f"{sys.argv[2]}/{path}")
print(i + 1, "token files written")
PY
start_nginx "$work/www"

olmo_mix=(data.paths=null data.mix_file="$nginx_url/OLMo-mix-0625-official.txt" train.max_steps=6 checkpoint.every=3)
train "$work/local" "${olmo_mix[@]}" data.base_dir="$work/www"
train "$work/remote" "${olmo_mix[@]}" data.base_dir="$nginx_url" train.stop_at=3
heads=$(grep -c '"HEAD ' "$work/nginx/access.log")
[ "$heads" -ge 1017 ] || { echo "FAIL: $heads HEADs for 1,016 files and the mix"; exit 1; }
train "$work/remote" "${olmo_mix[@]}" data.base_dir="$nginx_url"
grep -q "resuming from $work/remote/checkpoints/step00000003" "$work/remote.log"
[ "$(grep -c '"HEAD ' "$work/nginx/access.log")" = "$heads" ] || { echo "FAIL: the restart sent HEADs again"; exit 1; }
same_metrics "$work/local/metrics.jsonl" "$work/remote/metrics.jsonl" 6
cmp "$work/local/checkpoints/step00000006/model.safetensors" "$work/remote/checkpoints/step00000006/model.safetensors"
echo "OLMo-mix-0625-official.txt unchanged: AI2's layout from the server = the local copy, bit for bit; restart sent no HEAD"

"$replica" data info --mix "$nginx_url/OLMo-mix-0625-official.txt" --base-dir "$nginx_url" --seq-len 64 >"$work/info.txt"
grep -q "^common_crawl_adult_content $nginx_url/preprocessed/dolma3-0625/v0.1-official/allenai/dolma3-tokenizer/common_crawl/adult_content/000000.npy  128 tokens" "$work/info.txt" \
  || { head -3 "$work/info.txt"; exit 1; }
grep -q "^total        130048 tokens, 2032 instances of 64" "$work/info.txt" || { tail -3 "$work/info.txt"; exit 1; }
echo "data_remote_olmo_mix: ok"
