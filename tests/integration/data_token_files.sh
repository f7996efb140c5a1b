#!/usr/bin/env bash
# Token files every command reads, and one fingerprint: `data tokenize` writes a headerless file (OLMo's layout) or,
# with --npy-header, one np.load reads; `forward --tokens` takes both (--seq-len for headerless ones); `data info`
# and `data audit` print the fingerprint `replica train` records; the audit of a recipe reads no held-out files and
# takes overrides; `plan --config` plans the recipe's own shape; a relative path that matches nothing says what it
# was resolved against.
# Args: $1 = replica binary, $2 = source dir.
set -euo pipefail
replica="$1"; src="$2"
ranks="$src/tests/fixtures/data/cl100k_base.tiktoken"
py=${PYTHON:-/usr/bin/python3}
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
cd "$work"
export XDG_CACHE_HOME="$work/cache"

$py -c "print(' '.join(f'Document {i} has a few words about the number {i * 7}.' for i in range(4)))" > doc.txt
"$replica" data tokenize --input doc.txt --output raw.npy --tokenizer "$ranks" | grep -q "headerless uint32"
"$replica" data tokenize --input doc.txt --output with_header.npy --npy-header --tokenizer "$ranks" |
  grep -q ".npy header"
$py - <<'PY'
import numpy as np
raw = np.fromfile("raw.npy", dtype="<u4")
loaded = np.load("with_header.npy")
assert loaded.dtype == np.uint32 and loaded.shape == raw.shape and (loaded == raw).all(), (loaded.shape, raw.shape)
assert raw[-1] == 100257 and 48 <= len(raw) < 64, len(raw)  # three rows of 16 and a tail
np.save("rows.npy", raw[: 3 * 16].reshape(3, 16).astype(np.int64))
PY
echo "ok: --npy-header output equals the headerless one under np.load"

# A model over the dolma2 vocab (narrow: the commands below read only its vocab), one step on the tokenized text.
cat > recipe.yaml <<YAML
run: {dir: $work/run}
model: {config: $src/tests/integration/dolma2_narrow.yaml}
data: {paths: [raw.npy], seq_len: 16, global_batch_size: 2, micro_batch_size: 2, validation_paths: [held/*.npy]}
train: {max_steps: 1, threads: 1, remat: keep_attention}
checkpoint: {every: 0}
YAML
mkdir held && cp raw.npy held/
"$replica" train --config recipe.yaml > train.log
for tokens in "raw.npy --seq-len 16" "with_header.npy --seq-len 16" "rows.npy"; do
  # shellcheck disable=SC2086
  "$replica" forward --model run --tokens $tokens --out "logits_${tokens%% *}" --threads 1 | grep -q "\[3, 16, 100352\]"
done
cmp logits_raw.npy logits_with_header.npy && cmp logits_raw.npy logits_rows.npy
if "$replica" forward --model run --tokens raw.npy --out x.npy 2> err.txt; then exit 1; fi
grep -q "raw.npy: not a .npy file; for a headerless token file (replica data tokenize) give --seq-len T" err.txt
echo "ok: forward reads the headerless file with --seq-len, the .npy one, and rows from np.load alike"

recorded=$($py -c "import json; print(json.load(open('run/checkpoints/step00000001/train_state.json'))['data']['fingerprint'])")
[ "$("$replica" data info --paths raw.npy --seq-len 16 | awk '/^fingerprint/ {print $2}')" = "$recorded" ]
"$replica" data info --paths raw.npy --seq-len 16 | grep -q "a model vocab of 100352"
[ "$("$replica" data info --paths raw.npy --seq-len 16 --vocab-size 100278 | awk '/^fingerprint/ {print $2}')" != \
  "$recorded" ]
"$replica" data audit --paths raw.npy --seq-len 16 --global-batch 2 --steps 1 > audit_flags.txt
[ "$(awk '/^fingerprint/ {print $2}' audit_flags.txt)" = "$recorded" ]
echo "ok: data info and data audit print the fingerprint train recorded ($recorded)"

# The audit of a recipe: overrides apply, and held-out files it does not read need not exist.
rm -r held
"$replica" data audit --config recipe.yaml train.max_steps=3 > audit_recipe.txt
[ "$(awk '/^fingerprint/ {print $2}' audit_recipe.txt)" = "$recorded" ]
grep -Eq "^instance reads +6$" audit_recipe.txt  # 3 steps of 2
echo "ok: data audit --config RECIPE takes overrides and ignores data.validation_paths"

# plan --config: the recipe's model, seq_len, micro-batch, precision and remat; the ranks must divide its batch.
"$replica" plan --config recipe.yaml data.micro_batch_size=1 > plan.txt
grep -q "^activations      B=1 T=16" plan.txt
grep -q "remat=keep_attention .*<- train.remat" plan.txt
grep -q "per rank, 1 ranks, 2 micro-batches each, remat=keep_attention" plan.txt
if "$replica" plan --config recipe.yaml --ranks 4 > refused.txt 2> err.txt; then exit 1; fi
[ ! -s refused.txt ]  # refused before any of the plan is printed
grep -q "recipe.yaml (recipe; model .*): the global batch 2 is not a multiple of the micro-batch 2 times the 4 data-parallel ranks" \
  err.txt
echo "ok: plan --config RECIPE plans the recipe's shape"

# train.float8 is planned as it runs: the float8 Linears' scratch is in the activations (it once was left out;
# about 180 MB at 7B and T = 8192).
seven_b=(model.config="$src/configs/models/olmo3_7b.yaml" data.seq_len=8192 data.micro_batch_size=1)
"$replica" plan --config recipe.yaml "${seven_b[@]}" > plan_7b.txt
"$replica" plan --config recipe.yaml "${seven_b[@]}" train.float8=true > plan_7b_f8.txt
grep -q "^activations      B=1 T=8192 (float8 Linears, train.float8)" plan_7b_f8.txt
per_rank() { awk '/^  activations / {print $2; exit}' "$1"; }
[ -n "$(per_rank plan_7b.txt)" ] && [ "$(per_rank plan_7b_f8.txt)" != "$(per_rank plan_7b.txt)" ]
# --model's flags are overrides of the default recipe: the same plan as the recipe's keys.
"$replica" plan --model "$src/configs/models/olmo3_7b.yaml" --seq-len 8192 --precision fp32 train.float8=true \
  > plan_model_f8.txt
grep -q "^activations      B=1 T=8192 (float8 Linears, train.float8)" plan_model_f8.txt
echo "ok: plan sizes train.float8's scratch, with --config and with --model"

# Recipe paths are resolved against the current directory, and an error says so.
mkdir elsewhere && cd elsewhere
if "$replica" train --config ../recipe.yaml 2> err.txt; then exit 1; fi
grep -qF "'data.paths': raw.npy not found (resolved against the current directory $work/elsewhere, not the recipe's)" \
  err.txt
echo "ok: $(cat err.txt)"
