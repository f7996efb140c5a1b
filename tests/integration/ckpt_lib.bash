# Shared by the ckpt_*.sh, parity_*.sh and data_crafted_input.sh integration tests (sourced; not a test itself):
# a tiny OLMo 3 model (vocab 512, ~0.15M parameters) with synthetic uint32 token files, a recipe, and metric
# comparisons.
replica=$1
src=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
py=${PYTHON:-/usr/bin/python3}  # the GPU machine has numpy in another python3

cat >"$work/model.yaml" <<'YAML'
model_type: olmo3
vocab_size: 512
hidden_size: 64
intermediate_size: 192
num_hidden_layers: 2
num_attention_heads: 4
num_key_value_heads: 2
head_dim: 16
sliding_window: 16
tie_word_embeddings: false
max_position_embeddings: 256
eos_token_id: 0
pad_token_id: 1
YAML

# 256 instances of 64 tokens (32 batches of 8 per epoch), another file, and parity tokens.
$py - "$work" <<'PY'
import sys, numpy as np
rng = np.random.default_rng(1234)
np.save(f"{sys.argv[1]}/train.npy", rng.integers(0, 512, size=256 * 64, dtype=np.uint32))
np.save(f"{sys.argv[1]}/other.npy", rng.integers(0, 512, size=256 * 64, dtype=np.uint32))
np.save(f"{sys.argv[1]}/ids.npy", rng.integers(0, 500, size=(2, 96)).astype(np.int64))
PY

cat >"$work/recipe.yaml" <<YAML
run: {dir: $work/run, name: ckpt-test}
model: {config: $work/model.yaml}
data: {paths: [$work/train.npy], seq_len: 64, seed: 7, global_batch_size: 8, micro_batch_size: 4}
optim: {lr: 1.0e-2, skip_step_window: 4}
schedule: {type: cosine, warmup_steps: 3, alpha_f: 0.1}
train: {max_steps: 40, precision: bf16, threads: 1, seed: 3, log_every: 1}
checkpoint: {every: 4, keep: 0}
YAML

# train RUN_DIR [overrides...]: runs the recipe quietly into RUN_DIR.
train() {
  local dir=$1
  shift
  "$replica" train --config "$work/recipe.yaml" run.dir="$dir" "$@" >"$dir.log" 2>&1 || {
    echo "FAIL: replica train $* (exit $?)"; cat "$dir.log"; exit 1; }
}

# same_metrics A.jsonl B.jsonl N: both hold exactly one training line for steps 1..N with identical loss, ce,
# z_loss, lr, grad_norm and skipped values (compared as the written text of each value).
same_metrics() {
  $py - "$@" <<'PY'
import sys, json
def steps(path):
    out = {}
    for line in open(path):
        j = json.loads(line)
        if "loss" in j:
            assert j["step"] not in out, f"{path}: step {j['step']} written twice"
            out[j["step"]] = {k: json.dumps(j[k]) for k in ("loss", "ce", "z_loss", "lr", "grad_norm", "skipped")}
    return out
a, b, n = steps(sys.argv[1]), steps(sys.argv[2]), int(sys.argv[3])
assert sorted(a) == list(range(1, n + 1)), f"{sys.argv[1]}: steps {sorted(a)}"
assert sorted(b) == list(range(1, n + 1)), f"{sys.argv[2]}: steps {sorted(b)}"
for s in range(1, n + 1):
    assert a[s] == b[s], f"step {s}: {a[s]} != {b[s]}"
print(f"metrics identical at all {n} steps (last loss {a[n]['loss']}, grad_norm {a[n]['grad_norm']})")
PY
}

# expect_failure TEXT cmd...: the command exits 2 and its stderr contains TEXT.
expect_failure() {
  local text=$1
  shift
  set +e
  "$@" >"$work/stdout" 2>"$work/err"
  local code=$?
  set -e
  if [ "$code" -ne 2 ] || ! grep -qF -- "$text" "$work/err"; then
    echo "FAIL: expected exit 2 and '$text' from: $*"; echo "got exit $code:"; cat "$work/err" "$work/stdout"; exit 1
  fi
  echo "ok: $(tail -1 "$work/err")"
}
