#!/usr/bin/env bash
# The needle surface on a stage-2 and a stage-3 tiny checkpoint, beyond the stage-2 context. Stage 2 (64 positions,
# plain RoPE) trains on documents of at most 64 tokens; stage 3 continues from it (YaRN factor 4, 256 positions,
# packed documents of up to ~250 tokens). The training text is prose of common words in which a span holding a
# 7-digit number comes back later in the same document, so copying from far back is what lowers the loss; the
# needle's template, keys and haystack never appear in it. Both checkpoints are then scored at 64, 128 and 256
# (stage 2 with needle.extrapolate; starred). Prints a markdown table (accuracy / mean rank) for bench/RESULTS.md.
#   bench/needle_stages.sh        BUILD=build STEPS2=200 STEPS3=100 THREADS=2 LR=0.01 DEVICE=cpu
# (DEVICE=cuda trains both on the GPU; bench/gpu/run.sh runs it so with NEEDLE_STAGES=1. On two CPU cores 300 steps
# leave both models at chance: copying from far back is learned only after millions of tokens.)
set -euo pipefail
cd "$(dirname "$0")/.."
src=$PWD
replica=$(realpath "${BUILD:-build}/replica")
export REPLICA_TOKENIZER=$PWD/tests/fixtures/data/cl100k_base.tiktoken
steps2=${STEPS2:-200} steps3=${STEPS3:-100} threads=${THREADS:-2} py=${PYTHON:-/usr/bin/python3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"

"$py" - <<'PY'
import json, random
WORDS = ("time year people way day man thing woman life child world school state family student group country "
         "problem hand part place case week company system program question work government night point home water "
         "room mother area money story fact month lot right study book eye job word business issue side kind head "
         "house service friend father power hour game line end member law car city community name team minute idea "
         "kid body information back parent face level office door health person art war history party result change "
         "morning reason research girl guy moment air teacher force education river stone field garden bird tree road "
         "horse winter summer bread milk glass paper window wall light green small old new long great little good big "
         "high different large early young important few public bad same able came went made saw took found gave told "
         "felt left kept held brought began seemed").split()
def prose(rng, n):
    words = []
    while len(words) < n:
        s = [rng.choice(WORDS) for _ in range(rng.randint(5, 12))]
        words += [s[0].capitalize()] + s[1:-1] + [s[-1] + "."]
    return words[:n]
def document(rng, most):  # a span with a number, other prose, the span again: at most `most` words
    n = rng.randint(16, most)
    k = rng.randint(4, n // 3)
    span = prose(rng, k)
    span.insert(rng.randint(0, k), str(rng.randint(1000000, 9999999)))
    return " ".join(span + prose(rng, n - 2 * k) + span)
for name, seed, count, most in (("stage2", 1, 4000, 45), ("stage3", 2, 2000, 190)):
    rng = random.Random(seed)
    with open(f"{name}.jsonl", "w") as f:
        for _ in range(count): f.write(json.dumps({"text": document(rng, most)}) + "\n")
rng = random.Random(3)
with open("hay.jsonl", "w") as f:  # held-out prose: no numbers, no repeated spans
    for _ in range(4): f.write(json.dumps({"text": " ".join(prose(rng, 400))}) + "\n")
PY
for f in stage2 stage3 hay; do "$replica" data tokenize --input $f.jsonl --output $f.npy >/dev/null; done

source "$src/tests/integration/stage3_tiny.bash"
stage3_model stage2.yaml "max_position_embeddings: 64"
stage3_model stage3.yaml "max_position_embeddings: 256
rope_scaling: {rope_type: yarn, factor: 4.0, original_max_position_embeddings: 64, beta_fast: 32, beta_slow: 1}"
cat >recipe.yaml <<YAML
run: {dir: stage2, name: needle}
model: {config: stage2.yaml}
data: {paths: [stage2.npy], seq_len: 64, global_batch_size: 16, micro_batch_size: 16, packing: obfd}
optim: {lr: ${LR:-0.01}, skip_step: false}
schedule: {type: cosine, warmup_steps: $((steps2 / 20)), alpha_f: 0.1}
train: {max_steps: $steps2, threads: $threads, precision: bf16, device: ${DEVICE:-cpu}}
checkpoint: {every: 0}
YAML
train() { "$replica" train --config recipe.yaml "$@" >train.log 2>&1 || { cat train.log; exit 1; }; }
train
train run.dir=stage3 model.config=stage3.yaml model.init_from=stage2/checkpoints/step$(printf %08d "$steps2") \
  "data.paths=[stage3.npy]" data.seq_len=256 data.global_batch_size=4 data.micro_batch_size=4 \
  train.max_steps="$steps3" schedule.type=linear schedule.warmup_steps=$((steps3 / 20)) schedule.alpha_f=0.0

printf 'batch_tokens: 4096\nneedle: {files: [hay.npy], lengths: [64, 128, 256], depths: [0, 0.5, 1], trials: 8,
  distractors: 4, extrapolate: true}\n' >suite.yaml
"$replica" eval --model stage2/checkpoints/step$(printf %08d "$steps2") --suite suite.yaml --threads "$threads" \
  --json 2>/dev/null >stage2.json
"$replica" eval --model stage3/checkpoints/step$(printf %08d "$steps3") --suite suite.yaml --threads "$threads" \
  --json 2>/dev/null >stage3.json
"$py" - <<'PY'
import json
print("| model | length | depth 0 | depth 0.5 | depth 1 | all |")
print("|---|---|---|---|---|---|")
for stage in ("stage2", "stage3"):
    lengths = json.load(open(f"{stage}.json"))["needle"]["lengths"]
    for length, cells in sorted(lengths.items(), key=lambda item: int(item[0])):
        row = [f"{cells[d]['accuracy']:.3f} / {cells[d]['mean_rank']:.2f}" for d in ("0", "0.5", "1", "all")]
        print(f"| {stage} | {length}{'*' if stage == 'stage2' and int(length) > 64 else ''} | " + " | ".join(row) + " |")
PY
