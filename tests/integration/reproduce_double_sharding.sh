#!/usr/bin/env bash
# replica reproduce on a run whose loader is double-sharded (data.fault=double_sharding: each of the 2 ranks strides
# its own stream again, the fault `data audit` exists to catch): the run resumes from the reference's own step-4
# checkpoint at world size 2 with the fault injected, so its checkpoints up to step 4 are the reference's and from
# step 5 on it reads other data. reproduce must say "diverged at step 6" (the first checkpoint after the fault),
# name what crossed first (the held-out bits per byte, under a bound set to this tiny model's scale), and show
# the candidate's data audit failing (and the reference's passing) and the resume with what it changed and the KL
# either side, on the console, in the JSON and on the page (headless Chromium).
set -euo pipefail
replica=$1
src=$2
source "$src/tests/integration/dist_common.bash"
export REPLICA_TOKENIZER="$src/tests/fixtures/data/cl100k_base.tiktoken"
py=/usr/bin/python3

printf 'eos_token_id: 0\npad_token_id: 1\n' >>"$work/model.yaml"
$py - "$work" <<'PY'
import sys, numpy as np
work = sys.argv[1]
# 48 instances of 32 tokens (6 batches of 8 an epoch), so a double-sharded loader wraps into the next epoch early.
np.fromfile(f"{work}/train.npy", dtype=np.uint32)[: 48 * 32].tofile(f"{work}/small.npy")
rng = np.random.default_rng(5)
docs = [np.append(rng.integers(2, 256, size=n), 0) for n in rng.integers(20, 60, size=12)]
np.save(f"{work}/heldout.npy", np.concatenate(docs).astype(np.uint32))
PY
cat >"$work/suite.yaml" <<YAML
batch_tokens: 256
heldout: {files: [$work/heldout.npy], seq_len: 32}
perplexity: {files: [$work/heldout.npy], window: 32}
YAML

args=("${train_args[@]}" "data.paths=[$work/small.npy]" train.max_steps=8 checkpoint.every=2 checkpoint.keep=0)
"$replica" train "${args[@]}" run.dir="$work/ref" >"$work/ref.log"
mkdir -p "$work/ds/checkpoints"
cp -r "$work/ref/checkpoints/step00000002" "$work/ref/checkpoints/step00000004" "$work/ds/checkpoints/"
echo step00000004 >"$work/ds/checkpoints/latest"
mpirun -np 2 "$replica" train "${args[@]}" run.dir="$work/ds" data.fault=double_sharding \
  "train.allow_change=[data.fault]" >"$work/ds.log"
grep -q "resume changes data.fault: none -> double_sharding" "$work/ds.log" || { cat "$work/ds.log"; exit 1; }

set +e
"$replica" reproduce --run "$work/ds" --reference "$work/ref" --out "$work/r" --json "$work/ds.json" \
  --suite "$work/suite.yaml" --kl-sequences 3 --kl-length 32 --threads 1 --max-bpb-delta 0.002 >"$work/ds.txt"
code=$?
set -e
cat "$work/ds.txt"
[ "$code" -eq 1 ] || { echo "FAIL: a diverged series exits 1, got $code"; exit 1; }
grep -q "^verdict: diverged at step 6 (perplexity/.*bits_per_byte" "$work/ds.txt"
grep -q "^data audit (reference): OK, no instance read twice within an epoch over 8 steps at world size 1" "$work/ds.txt"
grep -q "^data audit (candidate): ERROR, instances read twice within an epoch over 8 steps at world size 2" "$work/ds.txt"
grep -q "^candidate resumed at step 4 (world size 1 -> 2): resume changes data.fault: none -> double_sharding.*KL mean 0 at step 4 -> .* at step 6" \
  "$work/ds.txt"
$py - "$work/ds.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
assert j["verdict"] == "diverged" and j["diverged_at"] == 6, (j["verdict"], j["diverged_at"])
by_step = {p["step"]: p for p in j["pairs"]}
for s in (2, 4):  # the reference's own checkpoints
    assert by_step[s]["kl_mean"] == 0 and by_step[s]["verdict"] == "tracking", by_step[s]
    assert all(d["delta"] == 0 for d in by_step[s]["surfaces"].values())
six = by_step[6]
assert six["verdict"] == "diverged" and six["kl_mean"] > 0
first = six["crossed"][0]
assert j["first_crossed"] == first["name"] and first["value"] > first["bound"], six["crossed"]
# Two steps on other data: what moves furthest is the held-out text's bits per byte (the bound set to this tiny
# model's scale, --max-bpb-delta 0.002); the logits moved too, within the KL bound.
assert first["name"].startswith("perplexity/") and first["name"].endswith("bits_per_byte"), six["crossed"]
assert 0 < six["kl_mean"] < j["bounds"]["kl"], six["kl_mean"]
assert all(c["name"] != "kl_mean" for c in six["crossed"]), six["crossed"]
audit = j["data_audit"]
assert audit["reference"]["ok"] is True and audit["candidate"]["ok"] is False, audit
assert audit["candidate"]["repeat_fraction"] > 0.1 and audit["candidate"]["world_size"] == 2, audit
(resume,) = j["resumes"]["candidate"]
assert resume["step"] == 4 and resume["saved_world_size"] == 1 and resume["world_size"] == 2, resume
assert any("data.fault" in c for c in resume["changes"]), resume["changes"]
assert resume["before"]["step"] == 4 and resume["before"]["kl_mean"] == 0, resume
assert resume["after"]["step"] == 6 and resume["after"]["kl_mean"] == six["kl_mean"], resume
assert j["resumes"]["reference"] == []
print(f"ok: double sharding diverged at step 6, {first['name']} {first['value']:.4g} > {first['bound']}; "
      f"the candidate's audit: {100 * audit['candidate']['repeat_fraction']:.1f} % repeated reads")
PY

command -v chromium >/dev/null || { echo "FAIL: chromium not found (scripts/install-deps.sh installs it)"; exit 1; }
timeout 120 chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --user-data-dir="$work/profile" \
  --dump-dom "file://$work/r/reproduction.html" >"$work/dom.html" 2>"$work/chromium.log" ||
  { echo "FAIL: chromium --dump-dom"; cat "$work/chromium.log"; exit 1; }
$py - "$work/dom.html" <<'PY'
import re, sys
dom = open(sys.argv[1]).read()
assert "</body></html>" in dom.replace("\n", ""), "chromium did not return the rendered page"
for section in ("summary", "series", "data-audit", "first-pair", "verdicts", "resumes", "charts"):
    assert f'id="{section}"' in dom, f"no #{section}"
assert 'data-audit-role="reference" data-audit="ok"' in dom and 'data-audit-role="candidate" data-audit="repeats"' in dom
row = re.search(r'<tr data-resume-role="candidate" data-resume-step="4">(.*?)</tr>', dom, re.S)
assert row and "data.fault" in row.group(1) and "1 → 2" in row.group(1), "the resume row"
assert 'data-verdict="diverged" data-diverged-at="6"' in dom
print("ok: the page shows the failing audit and the resume in chromium")
PY
echo "reproduce_double_sharding: diverged at the fault, the audit and the resume on the page"
