#!/usr/bin/env bash
# train.float8 end to end: a run with float8 block Linears (torchao's tensorwise recipe, model/float8_linear.h)
# tracks the same run without, reruns bit for bit, records the key in config.yaml and every checkpoint, and a resume
# that would turn it off is refused (it changes what the run computes).
# Args: $1 = replica binary, $2 = source dir.
set -euo pipefail
replica=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
py=${PYTHON:-/usr/bin/python3}

# Every block Linear qualifies: C = 32, H·D = 32, K·D = 16, F = 64 are multiples of 16.
cat > model.yaml <<'YAML'
model_type: olmo3
vocab_size: 512
hidden_size: 32
intermediate_size: 64
num_hidden_layers: 2
num_attention_heads: 2
num_key_value_heads: 1
head_dim: 16
sliding_window: 16
max_position_embeddings: 64
eos_token_id: 0
pad_token_id: 1
YAML
$py -c "import numpy as np; np.random.default_rng(8).integers(2, 512, 64 * 64, dtype=np.uint32).tofile('tokens.npy')"
cat > recipe.yaml <<'YAML'
model: {config: model.yaml}
data: {paths: [tokens.npy], seq_len: 64, seed: 3, global_batch_size: 8, micro_batch_size: 4}
optim: {lr: 1.0e-2}
train: {max_steps: 6, threads: 1, log_every: 1, precision: bf16}
checkpoint: {every: 0}
YAML
run() {  # run DIR [overrides...]
  local dir=$1; shift
  "$replica" train --config recipe.yaml run.dir="$dir" "$@" > "$dir.log" 2>&1 || { cat "$dir.log"; exit 1; }
}
run bf16
run float8 train.float8=true
run float8_again train.float8=true

$py - <<'PY'
import json
def losses(run):
    return [j["loss"] for j in map(json.loads, open(f"{run}/metrics.jsonl")) if "loss" in j]
bf16, float8, again = losses("bf16"), losses("float8"), losses("float8_again")
assert len(bf16) == len(float8) == 6, (bf16, float8)
assert float8 == again, f"a float8 rerun differs: {float8} vs {again}"
assert all(a != b for a, b in zip(bf16, float8)), f"float8 changed no loss: {bf16}"
worst = max(abs(a - b) / a for a, b in zip(bf16, float8))
assert worst < 0.02, f"float8 does not track bf16: {bf16} vs {float8}"
state = json.load(open("float8/checkpoints/step00000006/train_state.json"))
assert "float8: true" in json.dumps(state), "train_state.json does not record train.float8"
print(f"float8 tracks bf16 within {worst:.2e} over 6 steps; reruns bit for bit")
PY
grep -q "float8: true" float8/config.yaml || { echo "FAIL: config.yaml lacks train.float8"; exit 1; }
grep -q "float8: false" bf16/config.yaml || { echo "FAIL: config.yaml lacks train.float8 (default)"; exit 1; }

# Resuming the float8 run without float8 would change its numbers: refused, naming the key.
if "$replica" train --config recipe.yaml run.dir=float8 train.max_steps=8 > resume.log 2>&1; then
  echo "FAIL: a resume that turns train.float8 off was accepted"; cat resume.log; exit 1
fi
grep -q "train.float8" resume.log || { echo "FAIL: the refusal does not name train.float8"; cat resume.log; exit 1; }
echo "PASS"
