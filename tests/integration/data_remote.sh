#!/usr/bin/env bash
# http:// data read where it lives, from Debian's nginx on 127.0.0.1 (range requests, ETag, Last-Modified): a run
# whose mix file and token files are URLs gives the same losses and checkpoint bytes as the same files read locally;
# stopped mid-run and resumed from the remote mix it is exact; the run records what each file was
# (run.dir/remote_files.json) and refuses a file that changed on the server since; `data info --mix URL` and
# `data audit` read the remote mix as they read the local one.
set -euo pipefail
source "$(dirname "$0")/remote_lib.bash"

mkdir -p "$work/www/mixes" "$work/www/tokens"
cp "$work/train.npy" "$work/other.npy" "$work/www/tokens/"
printf 'a,../tokens/train.npy\nb,../tokens/other.npy\n' >"$work/www/mixes/local.txt"
start_nginx "$work/www"
printf 'a,tokens/train.npy\nb,tokens/other.npy\n' >"$work/www/mixes/two.txt"
remote_mix=$nginx_url/mixes/two.txt

# The same recipe reading the same bytes: local paths, then the mix file and its files over HTTP.
train "$work/local" data.paths=null data.mix_file="$work/www/mixes/local.txt" train.max_steps=12 checkpoint.every=6
train "$work/remote" data.paths=null data.mix_file="$remote_mix" data.base_dir="$nginx_url" train.max_steps=12 \
  checkpoint.every=6 data.cache_dir="$work/cache"
same_metrics "$work/local/metrics.jsonl" "$work/remote/metrics.jsonl" 12
for step in step00000006 step00000012; do
  for f in model.safetensors optim.safetensors; do cmp "$work/local/checkpoints/$step/$f" "$work/remote/checkpoints/$step/$f"; done
done
fingerprint() { $py -c "import json,sys; print(json.load(open(sys.argv[1]))['data']['fingerprint'])" "$1"; }
test "$(fingerprint "$work/local/checkpoints/step00000012/train_state.json")" = \
  "$(fingerprint "$work/remote/checkpoints/step00000012/train_state.json")"
echo "remote mix: metrics, checkpoint bytes and data fingerprint identical to the local files"

# What the run learned of each file, kept for a restart: size, ETag and Last-Modified as nginx sent them.
$py - "$work/remote/remote_files.json" "$nginx_url" "$work/www" <<'PY'
import json, os, sys
index, url, root = json.load(open(sys.argv[1])), sys.argv[2], sys.argv[3]
assert index["format"] == "replica-remote-files-v1", index
files = index["files"]
for name in ("mixes/two.txt", "tokens/train.npy", "tokens/other.npy"):
    f = files[f"{url}/{name}"]
    assert f["size"] == os.path.getsize(f"{root}/{name}"), (name, f)
    assert f["etag"].startswith('"') and f["last_modified"].endswith("GMT"), f
assert "content_hash" in files[f"{url}/tokens/train.npy"]
print("remote_files.json:", len(files), "files with size, ETag and Last-Modified")
PY
ls "$work/cache"/*.range >/dev/null

# Resume mid-run from the remote mix: stop at 5, start again, same bits as the run that went straight through.
train "$work/split" data.paths=null data.mix_file="$remote_mix" data.base_dir="$nginx_url" train.max_steps=12 \
  checkpoint.every=6 train.stop_at=5
train "$work/split" data.paths=null data.mix_file="$remote_mix" data.base_dir="$nginx_url" train.max_steps=12 \
  checkpoint.every=6
grep -q "resuming from $work/split/checkpoints/step00000005" "$work/split.log"
same_metrics "$work/local/metrics.jsonl" "$work/split/metrics.jsonl" 12
cmp "$work/local/checkpoints/step00000012/model.safetensors" "$work/split/checkpoints/step00000012/model.safetensors"
echo "resume mid-run from the remote mix: exact"

# data info and data audit on the remote mix report what they report for the local one.
"$replica" data info --mix "$work/www/mixes/local.txt" --seq-len 64 --scan >"$work/info_local.txt"
"$replica" data info --mix "$remote_mix" --base-dir "$nginx_url" --seq-len 64 --scan >"$work/info_remote.txt"
strip() { sed -E 's#[^ ]*(tokens/[a-z]+\.npy)#\1#' "$1"; }
diff <(strip "$work/info_local.txt") <(strip "$work/info_remote.txt")
grep -q "^total        32768 tokens, 512 instances of 64" "$work/info_remote.txt"
audit_args=(--seq-len 64 --global-batch 8 --steps 12)
"$replica" data audit --mix "$work/www/mixes/local.txt" "${audit_args[@]}" >"$work/audit_local.txt"
"$replica" data audit --mix "$remote_mix" --base-dir "$nginx_url" "${audit_args[@]}" >"$work/audit_remote.txt"
diff "$work/audit_local.txt" "$work/audit_remote.txt"
"$replica" data audit --config "$work/recipe.yaml" data.paths=null data.mix_file="$remote_mix" \
  data.base_dir="$nginx_url" >"$work/audit_recipe.txt"
grep -q "^fingerprint *$(fingerprint "$work/remote/checkpoints/step00000012/train_state.json")\$" "$work/audit_recipe.txt" \
  || { echo "the run's fingerprint is not the audit's:"; cat "$work/audit_recipe.txt"; exit 1; }
echo "data info --mix URL and data audit: the same as for the local files"

# The file changes on the server under the run: its resume refuses it, naming the URL.
$py -c "import numpy as np; np.save('$work/www/tokens/train.npy', np.arange(256 * 64, dtype=np.uint32) % 512)"
touch -d '2030-01-01' "$work/www/tokens/train.npy"
expect_failure "$nginx_url/tokens/train.npy: the file changed on the server" \
  "$replica" train --config "$work/recipe.yaml" run.dir="$work/remote" data.paths=null data.mix_file="$remote_mix" \
  data.base_dir="$nginx_url" train.max_steps=14 checkpoint.every=6
echo "data_remote: all checks passed"
