#!/usr/bin/env bash
# data.instance_filter end to end: OLMo-core's repeated n-gram filter turned on by a run. Instances that repeat a
# short n-gram 32 or more times keep no labels (their tokens are still read), the loss keeps OLMo-core's denominator
# (every label the batch would have without the filter), and the filter is part of the data fingerprint, which the
# run records exactly as `replica data audit --filter` reports it.
# Args: $1 = replica binary, $2 = source dir.
set -euo pipefail
replica=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
py=${PYTHON:-/usr/bin/python3}

cat > model.yaml <<'YAML'
model_type: olmo3
vocab_size: 512
hidden_size: 32
intermediate_size: 64
num_hidden_layers: 1
num_attention_heads: 2
num_key_value_heads: 1
head_dim: 16
sliding_window: 16
max_position_embeddings: 64
eos_token_id: 0
pad_token_id: 1
YAML
# 64 instances of 64 tokens: every other instance one token repeated (a period-1 n-gram 64 times), the rest
# random; and a file where every instance repeats.
$py - <<'PY'
import numpy as np
rng = np.random.default_rng(5)
rows = [np.full(64, 7, np.uint32) if i % 2 else rng.integers(2, 512, 64, dtype=np.uint32) for i in range(64)]
np.concatenate(rows).tofile("mixed.npy")
np.full(64 * 64, 9, np.uint32).tofile("repeated.npy")
PY
cat > recipe.yaml <<'YAML'
model: {config: model.yaml}
data: {paths: [mixed.npy], seq_len: 64, seed: 3, global_batch_size: 8, micro_batch_size: 4}
optim: {lr: 1.0e-2}
train: {max_steps: 3, threads: 1, log_every: 1}
checkpoint: {every: 0}
YAML
run() {  # run DIR [overrides...]
  local dir=$1; shift
  "$replica" train --config recipe.yaml run.dir="$dir" "$@" > "$dir.log" 2>&1 || { cat "$dir.log"; exit 1; }
}
run off
run on data.instance_filter=true
run all_masked data.instance_filter=true data.paths=[repeated.npy]
run all_kept data.paths=[repeated.npy]

$py - <<'PY'
import json
def steps(run):
    return [j for j in map(json.loads, open(f"{run}/metrics.jsonl")) if "eval" not in j]
def state(run):
    return json.load(open(f"{run}/checkpoints/step00000003/train_state.json"))
off, on = steps("off"), steps("on")
# Step 1 starts from the same weights: the masked half of the batch adds no loss, the denominator is unchanged.
assert 0 < on[0]["ce"] < off[0]["ce"], (on[0], off[0])
assert on[0]["grad_norm"] != off[0]["grad_norm"]
# Every instance masked: nothing to learn from, exactly.
for s in steps("all_masked"):
    assert s["ce"] == 0 and s["z_loss"] == 0 and s["grad_norm"] == 0, s
assert all(s["ce"] > 0 for s in steps("all_kept"))
assert state("on")["data"]["fingerprint"] != state("off")["data"]["fingerprint"]
assert "instance_filter: true" in state("on")["config"]
print("filter on: step 1 ce", on[0]["ce"], "< off", off[0]["ce"], "; all masked: ce 0")
PY
"$replica" data audit --config recipe.yaml data.instance_filter=true > audit_recipe.txt
recorded=$($py -c "import json; print(json.load(open('on/checkpoints/step00000003/train_state.json'))['data']['fingerprint'])")
grep -q "^fingerprint *$recorded\$" audit_recipe.txt || { echo "run recorded $recorded:"; cat audit_recipe.txt; exit 1; }
echo "instance filter: ok"
