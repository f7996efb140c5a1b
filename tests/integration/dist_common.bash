# Shared by the dist_*.sh tests (sourced; not a test itself): Open MPI settings for a container without
# network (shared memory only, root allowed, more ranks than cores), a tiny model and a token file, and
# `train_args` for `replica train` on them (fp32, 1 thread per rank, G = 8 rows of 32 tokens, M = 1).
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl=self,vader OMPI_MCA_btl_vader_single_copy_mechanism=none
export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_hwloc_base_binding_policy=none
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cat >"$work/model.yaml" <<'YAML'
model_type: olmo3
vocab_size: 256
hidden_size: 32
intermediate_size: 64
num_hidden_layers: 2
num_attention_heads: 4
num_key_value_heads: 2
head_dim: 8
sliding_window: 8
layer_types: [sliding_attention, full_attention]
max_position_embeddings: 64
YAML

# A token stream with structure (a sparse Markov chain), 200 instances of 32 tokens.
/usr/bin/python3 - "$work/train.npy" <<'PY'
import sys
import numpy as np
rng = np.random.default_rng(0)
successors = rng.integers(0, 256, size=(256, 3))
tokens = np.empty(32 * 200 + 5, dtype=np.uint32)
state = 0
for i in range(len(tokens)):
    state = successors[state, rng.integers(0, 3)]
    tokens[i] = state
tokens.tofile(sys.argv[1])
PY

# The LR is pinned, not the tiny recipe's (`make train` tunes that one): tests compare against 3e-3 (reproduce_cli
# doubles it).
train_args=(--config "$src/configs/recipes/tiny.yaml" model.config="$work/model.yaml" model.init_from="''"
  data.mix_file="''" "data.paths=[$work/train.npy]" "data.validation_paths=[]" data.seq_len=32
  data.global_batch_size=8 data.micro_batch_size=1 train.precision=fp32 train.threads=1 train.log_every=100
  optim.lr=3.0e-3 schedule.warmup_steps=2 eval.every=0)

# same_run A B: metrics.jsonl of run dirs A and B agree exactly on every training field (timings aside),
# and their newest checkpoints hold byte-identical weights and Adam moments.
same_run() {
  /usr/bin/python3 - "$1/metrics.jsonl" "$2/metrics.jsonl" <<'PY'
import json, sys
def steps(path):
    return [{k: r[k] for k in ("step", "epoch", "batch", "tokens", "loss", "ce", "z_loss", "lr", "grad_norm", "skipped")}
            for r in map(json.loads, open(path)) if "loss" in r]
a, b = steps(sys.argv[1]), steps(sys.argv[2])
assert len(a) == len(b) and a, (len(a), len(b))
for x, y in zip(a, b):
    assert x == y, f"step {x['step']} differs:\n{x}\n{y}"
PY
  local ca cb
  ca="$1/checkpoints/$(cat "$1/checkpoints/latest")"
  cb="$2/checkpoints/$(cat "$2/checkpoints/latest")"
  cmp "$ca/model.safetensors" "$cb/model.safetensors"
  cmp "$ca/optim.safetensors" "$cb/optim.safetensors"
}

# kill_rank_at_checkpoint RUN_DIR LOG LAUNCHER...: starts the job (mpirun with 2 or more ranks) in the background,
# SIGKILLs its second rank once RUN_DIR has a complete checkpoint, and checks that the job then failed, mpirun naming
# the signal.
kill_rank_at_checkpoint() {
  local dir=$1 log=$2 code=0
  shift 2
  "$@" >"$log" 2>&1 &
  local launcher=$!
  until [ -e "$dir/checkpoints/latest" ] || ! kill -0 $launcher 2>/dev/null; do sleep 0.02; done
  kill -9 "$(pgrep -P $launcher | sed -n 2p)" || true
  wait $launcher || code=$?
  [ "$code" -ne 0 ] || { echo "FAIL: the job finished before its rank was killed"; exit 1; }
  grep -q "exited on signal 9" "$log"
  echo "ok: killed a rank at checkpoint $(cat "$dir/checkpoints/latest"): the job ended with exit $code"
}
