#!/usr/bin/env bash
# replica generate and replica data encode/decode end to end, on a random tiny model with the dolma2 vocabulary
# written by the PyTorch reference: greedy text equals the decoded ids of the reference's own greedy loop (no
# cache), sampling repeats for a seed and changes with it, a run directory means its latest checkpoint, text
# round-trips through encode/decode, and bad flags or models exit 2 naming the problem.
set -euo pipefail
replica=$1
src=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export REPLICA_TOKENIZER="$src/tests/fixtures/data/cl100k_base.tiktoken"
py=${PYTHON:-/usr/bin/python3}

# The model: 2 layers (sliding W=8, then full), tied embeddings, weights N(0, 0.1) so that logits are decided.
$py - "$src/tools/reference" "$work/model" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
import olmo3_ref as ref
config = {"architectures": ["Olmo3ForCausalLM"], "model_type": "olmo3", "vocab_size": 100352, "hidden_size": 32,
          "intermediate_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
          "head_dim": 8, "sliding_window": 8, "layer_types": ["sliding_attention", "full_attention"],
          "rms_norm_eps": 1e-6, "rope_theta": 500000.0, "max_position_embeddings": 128, "tie_word_embeddings": True,
          "eos_token_id": 100257, "pad_token_id": 100277, "torch_dtype": "float32"}
ref.save_hf(sys.argv[2], config, ref.init_params(ref.load_config(config), 5, std=0.1, norm_jitter=0.1))
PY

prompt="The quick brown fox jumps over"
new=24

# ---- data encode / decode --------------------------------------------------------------------------------
ids=$("$replica" data encode --text "$prompt")
test "$("$replica" data decode --ids "$ids")" = "$prompt"
test "$(printf '%s' "$prompt" | "$replica" data encode)" = "$ids"
test "$(echo "$ids" | "$replica" data decode)" = "$prompt"
printf '%s' "$prompt" >"$work/prompt.txt"
"$replica" data encode --file "$work/prompt.txt" --out "$work/prompt.npy" 2>/dev/null
test "$("$replica" data decode --file "$work/prompt.npy")" = "$prompt"
test "$("$replica" data decode --ids "${ids// /,}")" = "$prompt"
echo "ok: encode/decode round trips: $ids"

# ---- greedy against the reference -------------------------------------------------------------------------
"$replica" generate --model "$work/model" --prompt "$prompt" --max-new-tokens $new --threads 2 \
  >"$work/greedy.txt" 2>"$work/greedy.err"
grep -q "tokens/s" "$work/greedy.err" || { echo "FAIL: no tokens/s line"; cat "$work/greedy.err"; exit 1; }
ref_ids=$($py - "$src/tools/reference" "$work/model" "$ids" $new <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
import torch
import olmo3_ref as ref
config, params = ref.load_hf(sys.argv[2])
params = ref.leaf_params(params, torch.float64, requires_grad=False)
new, margins = ref.greedy(params, ref.load_config(config), [int(i) for i in sys.argv[3].split()], int(sys.argv[4]),
                          vocab=100278, eos=100257)
assert min(margins) > 1e-4, f"a near tie in the reference's greedy loop ({min(margins):.2e}): the test cannot decide"
print(" ".join(str(i) for i in new if i != 100257))
PY
)
expected="$prompt$("$replica" data decode --ids "$ref_ids")"
if [ "$(cat "$work/greedy.txt")" != "$expected" ]; then
  echo "FAIL: greedy text differs from the reference's greedy ids ($ref_ids)"
  echo "replica:   $(cat "$work/greedy.txt")"; echo "reference: $expected"; exit 1
fi
echo "ok: greedy equals the reference ($(cat "$work/greedy.err" | tail -1))"

# ---- sampling -----------------------------------------------------------------------------------------------
sample() { "$replica" generate --model "$work/model" --prompt "$prompt" --max-new-tokens $new --temperature 0.9 \
  --top-k 200 --top-p 0.95 "$@" 2>/dev/null; }
first=$(sample --seed 1)
test "$(sample --seed 1)" = "$first" || { echo "FAIL: seed 1 gave two texts"; exit 1; }
test "$(sample --seed 2)" != "$first" || { echo "FAIL: seeds 1 and 2 gave the same text"; exit 1; }
echo "ok: sampling repeats for a seed and changes with it"

# ---- a run directory means its latest checkpoint --------------------------------------------------------------
$py -c "import numpy as np; np.random.default_rng(3).integers(0, 100278, 64 * 16, dtype=np.uint32).tofile('$work/train.npy')"
cat >"$work/recipe.yaml" <<YAML
run: {dir: $work/run, name: generate-test}
model: {init_from: $work/model}
data: {paths: [$work/train.npy], seq_len: 64, global_batch_size: 4, micro_batch_size: 4}
optim: {lr: 1.0e-3}
schedule: {type: constant, warmup_steps: 0}
train: {max_steps: 2, precision: fp32, threads: 2, log_every: 1}
checkpoint: {every: 1, keep: 0}
YAML
"$replica" train --config "$work/recipe.yaml" >"$work/train.log" 2>&1 || { cat "$work/train.log"; exit 1; }
from_run=$("$replica" generate --model "$work/run" --prompt "$prompt" --max-new-tokens 8 2>"$work/run.err")
from_step=$("$replica" generate --model "$work/run/checkpoints/step00000002" --prompt "$prompt" --max-new-tokens 8 \
  2>/dev/null)
test "$from_run" = "$from_step" && grep -q "step00000002" "$work/run.err" || {
  echo "FAIL: the run directory did not mean its latest checkpoint"; cat "$work/run.err"; exit 1; }
echo "ok: a run directory generates from its latest checkpoint"

# ---- bad input exits 2 -------------------------------------------------------------------------------------------
expect_failure() {  # text, command...: exit status 2 and the text on stderr
  local text=$1
  shift
  set +e
  "$@" 2>"$work/err" >/dev/null </dev/null
  local code=$?
  set -e
  if [ "$code" -ne 2 ] || ! grep -qF -- "$text" "$work/err"; then
    echo "FAIL: expected exit 2 and '$text' from: $*"; echo "got exit $code:"; cat "$work/err"; exit 1
  fi
  echo "ok: $(head -c 200 "$work/err")"
}
m=(--model "$work/model" --prompt "$prompt")
expect_failure "--top-p must be in (0, 1]" "$replica" generate "${m[@]}" --temperature 1 --top-p 0
expect_failure "--temperature must be ≥ 0" "$replica" generate "${m[@]}" --temperature -1
expect_failure "need --temperature > 0" "$replica" generate "${m[@]}" --top-k 5
expect_failure "--top-k must be ≥ 0" "$replica" generate "${m[@]}" --temperature 1 --top-k -3
expect_failure "--prompt is empty" "$replica" generate --model "$work/model" --prompt ""
expect_failure "max_position_embeddings 128" "$replica" generate "${m[@]}" --max-new-tokens 500
expect_failure "--model is required" "$replica" generate --prompt "$prompt"
expect_failure "--max-new-tokens" "$replica" generate "${m[@]}" --max-new-tokens many
expect_failure "$work/nothing" "$replica" generate --model "$work/nothing" --prompt "$prompt"
mkdir -p "$work/empty_run/checkpoints"
expect_failure "a run directory without a complete checkpoint" "$replica" generate --model "$work/empty_run" \
  --prompt "$prompt"
expect_failure "cannot hold dolma2's 100278" "$replica" generate --model "$FIXTURES/gqa_h4k1_tied_t77" \
  --prompt "$prompt"
expect_failure "'12x' is not a token id" "$replica" data decode --ids "1 12x"
expect_failure "100300" "$replica" data decode --ids "100300"
echo "generate_cli: all checks passed"
