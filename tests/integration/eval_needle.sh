#!/usr/bin/env bash
# The needle-in-a-haystack surface end to end on two tiny checkpoints: a stage-2 model (64 positions) and the
# stage-3 model trained from it (YaRN, 256 positions). The stage-2 model is refused lengths beyond its context
# (exit 2, the key named) unless needle.extrapolate is set; the stage-3 model reports accuracy and mean rank at 128
# and 256 for every depth.
set -euo pipefail
REPLICA=$(realpath "$1"); SRC=$(realpath "$2")
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
export REPLICA_TOKENIZER="$SRC/tests/fixtures/data/cl100k_base.tiktoken"
py=${PYTHON:-/usr/bin/python3}
cd "$W"

source "$SRC/tests/integration/stage3_tiny.bash"
stage3_model stage2.yaml "max_position_embeddings: 64"
stage3_model stage3.yaml "max_position_embeddings: 256
rope_scaling: {rope_type: yarn, factor: 4.0, original_max_position_embeddings: 64, beta_fast: 32, beta_slow: 1,
  attention_factor: 1.1386294361119891}"

# Training documents, and held-out prose for the haystack.
$py - <<'PY'
import json
train = "The river carried silt past the old mill every spring, and the miller counted the sacks by lamplight. " * 40
hay = ["Glaciers carve valleys slowly; the ice moves a few metres a year and leaves moraines behind it.",
       "A lighthouse keeper wrote the weather in a ledger each morning: wind, swell, cloud and the colour of the sea.",
       "Bees return to the hive and dance to tell the others how far away the flowers are and in which direction."]
open("train.txt", "w").write(train)
with open("hay.jsonl", "w") as f:
    for h in hay: f.write(json.dumps({"text": h}) + "\n")
PY
"$REPLICA" data tokenize --input train.txt --output train.npy >/dev/null
"$REPLICA" data tokenize --input hay.jsonl --output hay.npy >/dev/null

cat > recipe.yaml <<Y
run: {dir: stage2, name: needle}
model: {config: stage2.yaml}
data: {paths: [train.npy], seq_len: 64, global_batch_size: 2, micro_batch_size: 2}
optim: {lr: 0.01, skip_step: false}
schedule: {type: linear, warmup_steps: 0, alpha_f: 0.0}
train: {max_steps: 2, threads: 2}
checkpoint: {every: 0}
Y
train() { "$REPLICA" train --config recipe.yaml "$@" > train.log 2>&1 || { cat train.log; exit 1; }; }
train
train run.dir=stage3 model.config=stage3.yaml model.init_from=stage2/checkpoints/step00000002 data.seq_len=256 \
  data.global_batch_size=1 data.micro_batch_size=1
STAGE2=stage2/checkpoints/step00000002 STAGE3=stage3/checkpoints/step00000002

suite() { printf 'batch_tokens: 2048\nneedle: {files: [hay.npy], lengths: %s, depths: [0, 0.5, 1], trials: 2, distractors: 4}\n' "$1"; }
suite "[64, 128]" > beyond.yaml
suite "[64]" > within.yaml
suite "[64, 128, 256]" > long.yaml

# Stage 2: 128 positions are beyond its context; 64 are not.
set +e
"$REPLICA" eval --model "$STAGE2" --suite beyond.yaml --threads 2 > err.txt 2>&1; rc=$?
set -e
[ "$rc" = 2 ] || { echo "expected exit 2 for the stage-2 model at 128 tokens, got $rc"; cat err.txt; exit 1; }
grep -qF "needle.lengths: 128 tokens is beyond the model's context (max_position_embeddings 64)" err.txt ||
  { cat err.txt; exit 1; }
"$REPLICA" eval --model "$STAGE2" --suite within.yaml --threads 2 --json 2>/dev/null > stage2.json
# With needle.extrapolate the stage-2 model is scored beyond its context, its plain RoPE continued.
sed 's/trials: 2,/trials: 2, extrapolate: true,/' beyond.yaml > extrapolate.yaml
"$REPLICA" eval --model "$STAGE2" --suite extrapolate.yaml --threads 2 > extra.txt 2>extra.err ||
  { cat extra.txt extra.err; exit 1; }
grep -qF "* beyond the model's 64 positions (needle.extrapolate)" extra.txt || { cat extra.txt; exit 1; }
grep -qE "^ +128\* " extra.txt || { cat extra.txt; exit 1; }
"$REPLICA" eval --model "$STAGE2" --suite extrapolate.yaml --threads 2 --json 2>/dev/null > stage2_extra.json

# Stage 3: every length up to 256, every depth, on the console and in the JSON.
"$REPLICA" eval --model "$STAGE3" --suite long.yaml --threads 2 > eval.txt 2>eval.err || { cat eval.txt eval.err; exit 1; }
cat eval.txt
grep -qF "needle in a haystack (the needle's value ranked among 5 candidates, 2 trials per cell" eval.txt ||
  { echo "no needle table"; exit 1; }
"$REPLICA" eval --model "$STAGE3" --suite long.yaml --threads 2 --json 2>/dev/null > stage3.json
$py - <<'PY'
import json
s2, s3 = json.load(open("stage2.json"))["needle"], json.load(open("stage3.json"))["needle"]
assert set(s2["lengths"]) == {"64"}, s2
s2x = json.load(open("stage2_extra.json"))["needle"]
assert set(s2x["lengths"]) == {"64", "128"} and s2x["extrapolate"] is True and s2["extrapolate"] is False, s2x
assert set(s3["lengths"]) == {"64", "128", "256"}, s3
assert (s3["trials"], s3["distractors"], s3["seed"]) == (2, 4, 1234), s3
for length, cells in s3["lengths"].items():
    assert set(cells) == {"0", "0.5", "1", "all"}, cells
    for depth, c in cells.items():
        assert 0 <= c["accuracy"] <= 1 and 1 <= c["mean_rank"] <= 5, (length, depth, c)
        assert c["accuracy"] * 2 == int(c["accuracy"] * 2) or depth == "all", (length, depth, c)
print("needle json ok:", {l: s3["lengths"][l]["all"] for l in ("128", "256")})
PY
echo "eval_needle: ok"
