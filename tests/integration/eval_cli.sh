#!/usr/bin/env bash
# replica eval end to end, and the memorisation alarm: a tiny model trained on a small repeated set (the same
# 4 instances every step) must see its held-out loss stall while training loss falls, and the trainer must say
# so (console + metrics.jsonl). Then `replica eval` on the run's final checkpoint prints every surface, the
# KL against itself is 0, and bad inputs fail with exit 2 and a message naming the file and line.
set -euo pipefail
REPLICA=$(realpath "$1"); SRC=$(realpath "$2")
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
export REPLICA_TOKENIZER="$SRC/tests/fixtures/data/cl100k_base.tiktoken"
cd "$W"

# Training text: ~4 instances of 64 tokens, repeated every step. Held-out: different prose and code.
python3 - <<'PY'
import json
train = "The committee met on Tuesday to review the budget. Members agreed that the library needs new shelves, " \
        "longer opening hours and a reading room for children. The treasurer reported a small surplus. " * 8
held = ["Photosynthesis converts light energy into chemical energy stored in glucose molecules.",
        "def add(a, b):\n    return a + b\n\nprint(add(2, 3))\n",
        "In 1869 the transcontinental railroad was completed at Promontory Summit, Utah."]
open("train.txt", "w").write(train)
with open("heldout.jsonl", "w") as f:
    for h in held: f.write(json.dumps({"text": h}) + "\n")
PY
"$REPLICA" data tokenize --input train.txt --output train.npy >/dev/null
"$REPLICA" data tokenize --input heldout.jsonl --output heldout.npy >/dev/null
cat > model.yaml <<'Y'
model_type: olmo3
vocab_size: 100352
hidden_size: 32
intermediate_size: 64
num_hidden_layers: 2
num_attention_heads: 4
num_key_value_heads: 2
head_dim: 8
sliding_window: 16
max_position_embeddings: 128
Y
cat > recipe.yaml <<Y
run: {dir: run, name: alarm}
model: {config: model.yaml}
data: {paths: [train.npy], seq_len: 64, global_batch_size: 4, micro_batch_size: 4, validation_paths: [heldout.npy]}
optim: {lr: 0.01, skip_step: false}
schedule: {type: cosine, warmup_steps: 0, alpha_f: 1.0}
train: {max_steps: 40, threads: 2, log_every: 20}
checkpoint: {every: 0}
eval: {every: 10, alarm_window: 2, alarm_margin: 0.05, suite: loop_suite.yaml}
Y
printf 'perplexity: {files: [heldout.npy], window: 32}\n' > loop_suite.yaml
"$REPLICA" train --config recipe.yaml > train.log 2>&1 || { cat train.log; exit 1; }
grep -q "WARNING memorisation" train.log || { echo "no memorisation alarm:"; cat train.log; exit 1; }
grep -q '"memorisation_alarm"' run/metrics.jsonl || { echo "alarm not in metrics.jsonl"; exit 1; }
grep -q '"suite":{"perplexity"' run/metrics.jsonl || { echo "in-loop suite not in metrics.jsonl"; exit 1; }
grep -q "domain perplexity" train.log || { echo "in-loop suite not on the console"; exit 1; }

# replica eval on the run's final checkpoint (or, while checkpoints are not written, the HF export path).
CKPT=$(ls -d run/checkpoints/step* 2>/dev/null | tail -1 || true)
[ -n "$CKPT" ] || { echo "no checkpoint in run/checkpoints"; ls -R run; exit 1; }
cat > suite.yaml <<Y
batch_tokens: 1024
heldout: {files: [heldout.npy], seq_len: 64}
perplexity: {files: [heldout.npy], window: 32}
tasks: {dir: $SRC/tests/fixtures/eval, max_length: 128}
kl: {reference: $CKPT, files: [heldout.npy], window: 32, max_positions: 64}
Y
"$REPLICA" eval --model "$CKPT" --suite suite.yaml --threads 2 > eval.txt 2>eval.err || { cat eval.txt eval.err; exit 1; }
cat eval.txt
for s in "held-out loss" "domain perplexity" "bits/byte" "downstream tasks (lm-eval format)" "hellaswag" "mmlu" \
         "winogrande" "KL(reference || model)"; do
  grep -qF "$s" eval.txt || { echo "missing '$s' in replica eval output"; exit 1; }
done
# Progress on stderr, as plain lines (stderr is a file here: no carriage returns), each pass reaching 100 %; the
# surfaces' tables in order on stdout.
grep -q "eval: held-out loss (1 files, truncated to 64 tokens): .*(100%)" eval.err || { cat eval.err; exit 1; }
grep -q "eval: task hellaswag (2 docs, 8 requests): .*(100%)" eval.err || { cat eval.err; exit 1; }
if grep -q $'\r' eval.err; then echo "carriage returns in a non-terminal stderr"; exit 1; fi
grep -q "TEST FIXTURES" eval.txt || { echo "the tasks table does not say its documents are the test fixtures"; exit 1; }
# --max-docs caps documents per file and per task; --num-fewshot prefixes lm-eval's sampled shots (the forwards
# grow, the documents do not).
"$REPLICA" eval --model "$CKPT" --suite suite.yaml --threads 2 --max-docs 1 --num-fewshot 2 --json 2>/dev/null > few.json
python3 - <<'PY'
import json
r = json.load(open("few.json"))
assert r["heldout"]["docs"] == 1 and r["perplexity"]["domains"]["heldout"]["docs"] == 1, r["heldout"]
for name in ["arc_easy", "arc_challenge", "hellaswag", "piqa", "boolq", "openbookqa", "winogrande", "mmlu"]:
    assert r["tasks"][name]["docs"] == 1 and r["tasks"][name]["num_fewshot"] == 2, (name, r["tasks"][name])
print("max-docs and num-fewshot ok")
PY
"$REPLICA" eval --model "$CKPT" --suite suite.yaml --threads 2 --json 2>/dev/null > eval.json
python3 - <<'PY'
import json
r = json.load(open("eval.json"))
assert r["kl"]["all"]["kl_mean"] == 0 and r["kl"]["all"]["top1"] == 1, r["kl"]
assert set(r["tasks"]) == {"format", "arc_easy", "arc_challenge", "hellaswag", "piqa", "boolq", "openbookqa",
                           "winogrande", "mmlu"}, r["tasks"].keys()
assert r["tasks"]["mmlu"]["forwards"] * 4 == r["tasks"]["mmlu"]["requests"]
assert r["perplexity"]["domains"]["heldout"]["bits_per_byte"] > 0
print("eval json ok")
PY

# Errors: a malformed task file names file:line; exit status 2.
printf '{"goal": "g", "sol1": "a", "sol2": "b", "label": 0}\n{"goal": \n' > piqa.jsonl
printf 'tasks: {list: [{name: piqa, path: piqa.jsonl}]}\n' > bad.yaml
set +e
"$REPLICA" eval --model "$CKPT" --suite bad.yaml > err.txt 2>&1; rc=$?
set -e
[ "$rc" = 2 ] || { echo "expected exit 2, got $rc"; cat err.txt; exit 1; }
grep -q "piqa.jsonl:2: invalid JSON" err.txt || { cat err.txt; exit 1; }
# Newcomer review 2026-12-03: a mistyped built-in suite names the choices; RUN/checkpoints means its latest checkpoint.
set +e
"$REPLICA" eval --model "$CKPT" --suite defualt > err.txt 2>&1; rc=$?
set -e
[ "$rc" = 2 ] && grep -qF "suite 'defualt': not a built-in suite (default or full) (did you mean 'default'?) and no such file" \
  err.txt || { echo "rc $rc"; cat err.txt; exit 1; }
"$REPLICA" eval --model run/checkpoints --suite suite.yaml --threads 2 --json 2>/dev/null > latest.json
python3 - <<'PY'
import json
a, b = json.load(open("eval.json")), json.load(open("latest.json"))
for k in ("kl", "tasks", "perplexity"):
    assert a[k] == b[k], f"eval of run/checkpoints differs from its latest checkpoint in {k}"
print("run/checkpoints = its latest checkpoint")
PY
echo "eval_cli: ok"
