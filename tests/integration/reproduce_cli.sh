#!/usr/bin/env bash
# replica reproduce on real tiny runs, each verdict proved: a series against itself trained at W = 2 (KL exactly 0,
# every Δ exactly 0: tracking); a run that doubles its learning rate from step 4 on (its checkpoints up to step 4 are
# the reference's own: diverged at step 6, what crossed named); a reference with a missing step (listed, not an
# error); a reference at twice the batch size (paired by tokens seen); an interrupted reproduce that resumes and
# evaluates nothing twice; a changed suite that invalidates the cache visibly; the page in headless Chromium.
set -euo pipefail
replica=$1
src=$2
source "$src/tests/integration/dist_common.bash"
export REPLICA_TOKENIZER="$src/tests/fixtures/data/cl100k_base.tiktoken"
py=/usr/bin/python3

# dist_common's model with an EOS inside its vocabulary, so the held-out file splits into documents.
printf 'eos_token_id: 0\npad_token_id: 1\n' >>"$work/model.yaml"
$py - "$work/heldout.npy" <<'PY'
import sys, numpy as np
rng = np.random.default_rng(5)
docs = [np.append(rng.integers(2, 256, size=n), 0) for n in rng.integers(20, 60, size=12)]
np.save(sys.argv[1], np.concatenate(docs).astype(np.uint32))
PY
cat >"$work/suite.yaml" <<YAML
batch_tokens: 256
heldout: {files: [$work/heldout.npy], seq_len: 32}
perplexity: {files: [$work/heldout.npy], window: 32}
YAML

args=("${train_args[@]}" train.max_steps=8 checkpoint.every=2 checkpoint.keep=0)
"$replica" train "${args[@]}" run.dir="$work/w1" >"$work/w1.log"
mpirun -np 2 "$replica" train "${args[@]}" run.dir="$work/w2" >"$work/w2.log"

reproduce() { "$replica" reproduce --suite "$work/suite.yaml" --kl-sequences 3 --kl-length 32 --threads 1 "$@"; }

# 1. W = 1 vs W = 2: the same bits, so KL exactly 0 and every surface Δ exactly 0.
reproduce --run "$work/w2" --reference "$work/w1" --out "$work/r_same" --json "$work/same.json" >"$work/same.txt"
cat "$work/same.txt"
$py - "$work/same.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
assert j["verdict"] == "tracking" and j["diverged_at"] is None, j["verdict"]
assert [p["step"] for p in j["pairs"]] == [2, 4, 6, 8], j["pairs"]
assert j["pairing"]["by"] == "step" and j["pairing"]["reference_only"] == [] == j["pairing"]["candidate_only"]
for p in j["pairs"]:
    assert p["kl_mean"] == 0 and p["kl_max"] == 0 and p["top1"] == 1 and p["max_abs_logit_diff"] == 0, p
    assert p["verdict"] == "tracking" and p["positions"] == 96, p
    names = set(p["surfaces"])
    assert {"heldout/loss", "perplexity/bits_per_byte", "perplexity/ppl"} <= names, names
    assert all(s["delta"] == 0 and s["reference"] == s["candidate"] for s in p["surfaces"].values()), p["surfaces"]
print("ok: W=1 vs W=2 tracking, KL exactly 0 at", [p["step"] for p in j["pairs"]])
PY
grep -q "8 checkpoint evaluation(s) run, 0 found in the cache" "$work/same.txt"
grep -q "^weights resident: a resident model would plan .* within 80 % of this" "$work/same.txt"
# The same series with the weights streamed from the files a group at a time: bitwise the same numbers.
reproduce --run "$work/w2" --reference "$work/w1" --out "$work/r_streamed" --weights streamed \
  --json "$work/streamed.json" >"$work/streamed.txt"
grep -q "^weights streamed: --weights streamed" "$work/streamed.txt"
grep -q "^planned peak: .*weights .*activations" "$work/streamed.txt"
cmp <($py -c "import json,sys; print([(p['kl_mean'], p['max_abs_logit_diff'], p['surfaces']) for p in json.load(open(sys.argv[1]))['pairs']])" "$work/same.json") \
  <($py -c "import json,sys; print([(p['kl_mean'], p['max_abs_logit_diff'], p['surfaces']) for p in json.load(open(sys.argv[1]))['pairs']])" "$work/streamed.json")
$py -c 'import json,sys; m=json.load(open(sys.argv[1]))["memory"]; assert m["weights"] == "streamed" and m["planned_peak_bytes"] > 0, m' \
  "$work/streamed.json"
# --weights auto streams when a resident model would not fit the memory it plans against.
reproduce --run "$work/w2" --reference "$work/w1" --out "$work/r_streamed" --steps 2 --memory-limit 0.0001 \
  >"$work/auto.txt"
grep -q "^weights streamed: a resident model would plan .* over 80 % of --memory-limit 0.0001 GiB" "$work/auto.txt"
echo "ok: weights streamed a group at a time give the resident numbers bit for bit"
# The training curves are compared as `replica report` compares runs: on the steps both logged.
grep -q "^training curves: identical at all 8 steps both logged in 1–8; smoothed loss: max |Δ| 0 .*WITHIN ±0.01 nat" \
  "$work/same.txt"
$py -c 'import json,sys; t=json.load(open(sys.argv[1]))["training_curves"]; assert t["exact"]["identical_steps"] == 8 and t["distance"]["within"] and t["distance"]["max_abs"] == 0, t' "$work/same.json"
# A reference that logged every second step (as OLMo 3 logs every 10th) is still the same run, not 0.3 nat away.
cp -r "$work/w1" "$work/w1_sparse"
$py - "$work/w1_sparse/metrics.jsonl" <<'PY'
import json, sys
lines = [l for l in open(sys.argv[1]) if "eval" in json.loads(l) or json.loads(l)["step"] % 2 == 0]
open(sys.argv[1], "w").writelines(lines)
PY
reproduce --run "$work/w2" --reference "$work/w1_sparse" --out "$work/r_same" >"$work/sparse.txt"
grep -q "^training curves: identical at all 4 steps both logged in 2–8; smoothed loss: max |Δ| 0 .*WITHIN" \
  "$work/sparse.txt" || { cat "$work/sparse.txt"; exit 1; }
grep -q "0 checkpoint evaluation(s) run, 8 found in the cache" "$work/sparse.txt"

# 2. The learning rate doubled from step 4: the run resumes from the reference's own step-4 checkpoint.
mkdir -p "$work/lr2/checkpoints"
cp -r "$work/w1/checkpoints/step00000002" "$work/w1/checkpoints/step00000004" "$work/lr2/checkpoints/"
echo step00000004 >"$work/lr2/checkpoints/latest"
"$replica" train "${args[@]}" run.dir="$work/lr2" optim.lr=6.0e-3 "train.allow_change=[optim.lr]" >"$work/lr2.log"
set +e
reproduce --run "$work/lr2" --reference "$work/w1" --out "$work/r_same" --json "$work/lr2.json" --max-kl 5e-4 \
  >"$work/lr2.txt"
code=$?
set -e
cat "$work/lr2.txt"
[ "$code" -eq 1 ] || { echo "FAIL: a diverged series exits 1, got $code"; exit 1; }
$py - "$work/lr2.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
assert j["verdict"] == "diverged" and j["diverged_at"] == 6, (j["verdict"], j["diverged_at"])
by_step = {p["step"]: p for p in j["pairs"]}
assert by_step[2]["kl_mean"] == 0 and by_step[4]["kl_mean"] == 0 and by_step[6]["kl_mean"] > 0
assert [by_step[s]["verdict"] for s in (2, 4)] == ["tracking", "tracking"]
first = by_step[6]["crossed"][0]
assert j["first_crossed"] == first["name"] == "kl_mean" and first["value"] > first["bound"], by_step[6]["crossed"]
print(f"ok: doubled LR diverged at step 6, {first['name']} {first['value']:.4g} > {first['bound']}")
PY
# Steps 2 and 4 are the reference's own checkpoints (the same MANIFEST): their suite results come from the cache.
grep -q "verdict: diverged at step 6 (kl_mean" "$work/lr2.txt"
# The resume that doubled the learning rate, with the KL either side of it.
grep -q "^candidate resumed at step 4 (world size 1 -> 1): resume changes optim.lr: 0.003 -> 0.006; .*KL mean 0 at step 4 -> .* at step 6" \
  "$work/lr2.txt" || { echo "FAIL: no resume line"; exit 1; }
cp "$work/r_same/reproduction.html" "$work/diverged.html"
grep -q "evaluating candidate step2 (.*): KL$" "$work/lr2.txt"
grep -q "evaluating candidate step6 (.*): suite + KL$" "$work/lr2.txt"

# 3. A reference with a missing step: listed, not an error.
mkdir -p "$work/gap/checkpoints"
cp -r "$work/w1/checkpoints/step0000000"[268] "$work/gap/checkpoints/"
reproduce --run "$work/w2" --reference "$work/gap" --out "$work/r_same" --json "$work/gap.json" >"$work/gap.txt"
grep -q "candidate step4 (.*) has no reference checkpoint: not compared" "$work/gap.txt"
$py - "$work/gap.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
assert [p["step"] for p in j["pairs"]] == [2, 6, 8] and j["pairing"]["candidate_only"] == [4], j["pairing"]
assert j["verdict"] == "tracking"
print("ok: the missing reference step 4 is listed; pairs", [p["step"] for p in j["pairs"]])
PY

# 4. A reference at twice the batch size (16 x 32 tokens per step), saved every step: paired by tokens seen.
"$replica" train "${args[@]}" data.global_batch_size=16 train.max_steps=4 checkpoint.every=1 \
  run.dir="$work/big" >"$work/big.log"
set +e
reproduce --run "$work/w1" --reference "$work/big" --out "$work/r_big" --json "$work/big.json" >"$work/big.txt"
set -e
grep -q "pairing by tokens seen: the runs see different tokens per step (reference 512, candidate 256)" "$work/big.txt"
$py - "$work/big.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
pairs = [(p["step"], p["reference_step"], p["tokens"]) for p in j["pairs"]]
assert j["pairing"]["by"] == "tokens" and pairs == [(2, 1, 512), (4, 2, 1024), (6, 3, 1536), (8, 4, 2048)], pairs
print("ok: paired by tokens", pairs)
PY

# 5. Interrupted: the candidate's step-6 checkpoint is unreadable (its weights cut short: the run stops there with
# exit 2), then restored; the rerun evaluates only what had not finished (the reference's step-6 logits are already
# on disk), and a third run evaluates nothing.
cp -r "$work/w2" "$work/w2c"
weights="$work/w2c/checkpoints/step00000006/model.safetensors"
mv "$weights" "$work/weights.bak" && head -c 1000 "$work/weights.bak" >"$weights"
set +e
reproduce --run "$work/w2c" --reference "$work/w1" --out "$work/r_kill" >"$work/kill1.txt" 2>&1
code=$?
set -e
[ "$code" -eq 2 ] && grep -q "model.safetensors" "$work/kill1.txt" || { echo "FAIL: exit $code"; cat "$work/kill1.txt"; exit 1; }
mv "$work/weights.bak" "$weights"
reproduce --run "$work/w2c" --reference "$work/w1" --out "$work/r_kill" >"$work/kill2.txt"
reproduce --run "$work/w2c" --reference "$work/w1" --out "$work/r_kill" >"$work/kill3.txt"
$py - "$work/kill1.txt" "$work/kill2.txt" <<'PY'
import re, sys
done = lambda path: re.findall(r"evaluated (\w+ step\d+) ", open(path).read())
first, second = done(sys.argv[1]), done(sys.argv[2])
assert first == ["reference step2", "candidate step2", "reference step4", "candidate step4", "reference step6"], first
assert second == ["candidate step6", "reference step8", "candidate step8"], second
print(f"ok: stopped after {len(first)} evaluations; the rerun ran only {second}")
PY
grep -q "0 checkpoint evaluation(s) run, 8 found in the cache" "$work/kill3.txt"
# A reproduce killed outright leaves whole cache entries only (each is written to a temp name and renamed): a temp
# file the kill interrupted may remain, and the rerun must take nothing half-written for a result.
# The replica process itself in the background (not the shell function's subshell), so that the kill reaches it.
"$replica" reproduce --suite "$work/suite.yaml" --kl-sequences 3 --kl-length 32 --threads 1 \
  --run "$work/w2" --reference "$work/w1" --out "$work/r_sigkill" >/dev/null 2>&1 &
pid=$!
until [ -n "$(ls "$work/r_sigkill/cache/"suite-*/ 2>/dev/null)" ] || ! kill -0 $pid 2>/dev/null; do sleep 0.01; done
kill -9 $pid 2>/dev/null || true
wait $pid 2>/dev/null || true
reproduce --run "$work/w2" --reference "$work/w1" --out "$work/r_sigkill" --json "$work/sigkill.json" >/dev/null
cmp <($py -c "import json,sys; print([p['surfaces'] for p in json.load(open(sys.argv[1]))['pairs']])" "$work/same.json") \
  <($py -c "import json,sys; print([p['surfaces'] for p in json.load(open(sys.argv[1]))['pairs']])" "$work/sigkill.json")

# 6. A changed suite invalidates the cache, and says so.
sed -i 's/seq_len: 32}/seq_len: 32, max_docs: 4}/' "$work/suite.yaml"
reproduce --run "$work/w2" --reference "$work/w1" --out "$work/r_kill" --steps 8 >"$work/suite2.txt" || true
grep -q "NOTE the suite changed (fingerprint .* -> .*): the 8 checkpoint evaluation(s) cached under the old suite" \
  "$work/suite2.txt" || { cat "$work/suite2.txt"; exit 1; }
grep -q "2 checkpoint evaluation(s) run" "$work/suite2.txt"

# 7. Bad input: exit 2, naming the path.
expect_error() {
  set +e; "$@" >"$work/out" 2>"$work/err"; local code=$?; set -e
  [ "$code" -eq 2 ] && grep -q "$work/nowhere" "$work/err" || { echo "FAIL: $*: exit $code"; cat "$work/err"; exit 1; }
}
expect_error reproduce --run "$work/nowhere" --reference "$work/w1" --out "$work/r_bad"

# 8. The page in headless Chromium: every section, a chart per measure, the diverged pair marked.
command -v chromium >/dev/null || { echo "FAIL: chromium not found (scripts/install-deps.sh installs it)"; exit 1; }
browse=(timeout 120 chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --user-data-dir="$work/profile")
for page in "$work/r_same/reproduction.html" "$work/diverged.html"; do
  "${browse[@]}" --dump-dom "file://$page" >"$work/dom.html" 2>"$work/chromium.log" ||
    { echo "FAIL: chromium --dump-dom $page"; cat "$work/chromium.log"; exit 1; }
  $py - "$work/dom.html" "$(basename "$page")" <<'PY'
import re, sys
dom, page = open(sys.argv[1]).read(), sys.argv[2]
assert "</body></html>" in dom.replace("\n", ""), "chromium did not return the rendered page"
for section in ("summary", "series", "data-audit", "first-pair", "verdicts", "resumes", "charts"):
    assert f'id="{section}"' in dom, f"{page}: no #{section}"
figures = re.findall(r'<figure data-chart="([^"]+)"', dom)
for chart in ("kl", "top1", "delta-heldout", "delta-perplexity", "train-loss"):
    assert chart in figures, f"{page}: no {chart} chart in {figures}"
rows = re.findall(r'<tr data-step="(\d+)" data-verdict="(\w+)"', dom)
if page == "diverged.html":  # the doubled learning rate
    assert 'data-verdict="diverged" data-diverged-at="6"' in dom, "the summary's verdict"
    assert rows == [("2", "tracking"), ("4", "tracking"), ("6", "diverged"), ("8", "diverged")], rows
    kl = re.search(r'<figure data-chart="kl".*?</figure>', dom, re.S).group(0)
    assert 'data-mark="diverged"' in kl, "the KL chart marks the step it diverged at"
    assert re.search(r'<tr data-resume-role="candidate" data-resume-step="4">.*?optim\.lr', dom, re.S), "the resume"
    assert 'data-audit-role="candidate" data-audit="ok"' in dom, "the candidate's data audit"
else:  # the reference with a missing step
    assert 'data-verdict="tracking"' in dom
    assert rows == [("2", "tracking"), ("6", "tracking"), ("8", "tracking")], rows
print(f"ok: {page} renders in chromium with {len(figures)} charts and {len(rows)} pairs")
PY
done
echo "reproduce_cli: all verdicts proved"
