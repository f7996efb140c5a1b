#!/usr/bin/env bash
# replica reproduce against a reference series given as AI2's CSV whose Checkpoint Directory column holds URLs (as
# OLMo-3-1025-7B.csv does), served by Debian's nginx on 127.0.0.1: the paired checkpoints are fetched into the
# reproduce cache and checked (the run's own checkpoints exported as HF directories: KL exactly 0, tracking); a rerun
# fetches and hashes nothing; a local copy that changed is fetched again; a file that changed on the server since it
# was fetched, and a directory that is not there, are errors naming the URL (exit 2).
set -euo pipefail
source "$(dirname "$0")/remote_lib.bash"
export REPLICA_TOKENIZER="$src/tests/fixtures/data/cl100k_base.tiktoken"

train "$work/run" train.max_steps=4 checkpoint.every=2 train.precision=fp32
mkdir -p "$work/www/ai2"
for step in 2 4; do
  "$replica" export-hf --checkpoint "$work/run/checkpoints/step0000000$step" --out "$work/www/ai2/stage1-step$step" \
    --max-shard-gb 0.0002 >/dev/null  # sharded, with an index, as AI2's 7B directories are
done
ls "$work/www/ai2/stage1-step2/model.safetensors.index.json" >/dev/null
start_nginx "$work/www"
printf 'Stage,Step,Checkpoint Directory\nstage1,2,%s/ai2/stage1-step2/\nstage1,4,%s/ai2/stage1-step4\n' \
  "$nginx_url" "$nginx_url" >"$work/ai2.csv"
cat >"$work/suite.yaml" <<YAML
batch_tokens: 512
heldout: {files: [$work/other.npy], seq_len: 64, max_docs: 8}
YAML
reproduce() { "$replica" reproduce --suite "$work/suite.yaml" --kl-sequences 2 --kl-length 64 --threads 1 "$@"; }
gets() { grep -c '"GET ' "$work/nginx/access.log" || true; }

reproduce --run "$work/run" --reference "$work/ai2.csv" --out "$work/r" --json "$work/r.json" >"$work/first.txt"
cat "$work/first.txt"
grep -q "fetched $nginx_url/ai2/stage1-step2/config.json" "$work/first.txt"
grep -q "fetched $nginx_url/ai2/stage1-step4/model.safetensors.index.json" "$work/first.txt"
$py - "$work/r.json" "$work/r/cache/remote" <<'PY'
import hashlib, json, os, sys
j = json.load(open(sys.argv[1]))
assert j["verdict"] == "tracking" and [p["step"] for p in j["pairs"]] == [2, 4], j["verdict"]
for p in j["pairs"]:
    assert p["kl_mean"] == 0 and p["max_abs_logit_diff"] == 0, p
    assert all(s["delta"] == 0 for s in p["surfaces"].values()), p["surfaces"]
records = [json.load(open(os.path.join(sys.argv[2], d, "FETCHED.json"))) for d in sorted(os.listdir(sys.argv[2]))]
assert len(records) == 2 and all(r["complete"] for r in records), records
for r in records:
    d = os.path.join(sys.argv[2], hashlib.sha256(r["url"].encode()).hexdigest()[:16])
    assert len(r["files"]) >= 4, r["files"]  # config.json, the index and its shards
    for name, f in r["files"].items():
        data = open(os.path.join(d, name), "rb").read()
        assert hashlib.sha256(data).hexdigest() == f["sha256"] and len(data) == f["server"]["size"], name
        assert f["server"]["etag"], name
print("ok: both URL checkpoints fetched and checked; KL exactly 0 against the run's own checkpoints")
PY

# A rerun: every file HEADed again, none fetched (no GET reaches nginx), none read to hash it.
before=$(gets)
reproduce --run "$work/run" --reference "$work/ai2.csv" --out "$work/r" >"$work/second.txt"
[ "$(gets)" -eq "$before" ] || { echo "FAIL: the rerun fetched again"; cat "$work/second.txt"; exit 1; }
grep -q "stage1-step4: fetched before, unchanged on the server" "$work/second.txt"
grep -q "content hashes: 0 file(s) read to hash them" "$work/second.txt"
grep -q "0 checkpoint evaluation(s) run, 4 found in the cache" "$work/second.txt"
echo "ok: the rerun fetched nothing and hashed nothing"

# A local copy that changed (cut short) is fetched again, and the result is the same.
local_copy=$(ls -d "$work"/r/cache/remote/*/ | head -1)
shard=$(ls "$local_copy" | grep -m1 'model-.*safetensors')
head -c 100 "$local_copy/$shard" >"$work/cut" && mv "$work/cut" "$local_copy/$shard"
reproduce --run "$work/run" --reference "$work/ai2.csv" --out "$work/r" --json "$work/r3.json" >"$work/third.txt"
grep -q "$shard: the local copy changed since it was fetched: fetching it again" "$work/third.txt"
cmp <($py -c 'import json,sys; print(json.load(open(sys.argv[1]))["pairs"])' "$work/r.json") \
  <($py -c 'import json,sys; print(json.load(open(sys.argv[1]))["pairs"])' "$work/r3.json")
echo "ok: a local copy cut short was fetched again"

# A file that changed on the server since it was fetched: exit 2, naming it.
touch -d '2001-01-01' "$work/www/ai2/stage1-step4/config.json"
expect_failure "$nginx_url/ai2/stage1-step4/config.json: the file changed on the server since it was fetched" \
  reproduce --run "$work/run" --reference "$work/ai2.csv" --out "$work/r"
# A checkpoint directory that is not there.
printf 'Stage,Step,Checkpoint Directory\nstage1,2,%s/ai2/stage1-step9/\n' "$nginx_url" >"$work/missing.csv"
expect_failure "$nginx_url/ai2/stage1-step9/config.json: HTTP 404" \
  reproduce --run "$work/run" --reference "$work/missing.csv" --out "$work/r_missing"
echo "reproduce_remote: URL checkpoints fetched, checked and cached"
