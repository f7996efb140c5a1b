#!/usr/bin/env bash
# Curve parity: `replica train` (fp32) and the PyTorch reference trainer (tools/reference/train_ref.py, in
# float64) start from the same HF weights and read the same token file in OLMo-core's shuffled order
# (computed here by numpy itself), for 30 steps of warmup + cosine with clipping and weight decay on.
# Every step's loss must agree to 1e-5 relative, grad norm to 1e-4 relative, and the LR exactly.
set -euo pipefail
replica=$1
src=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

/usr/bin/python3 - "$src/tools/reference" "$work" <<'PY'
import sys
import numpy as np
sys.path.insert(0, sys.argv[1])
import olmo3_ref as ref

work = sys.argv[2]
config = {"model_type": "olmo3", "vocab_size": 256, "hidden_size": 32, "intermediate_size": 64,
          "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 8,
          "sliding_window": 8, "layer_types": ["sliding_attention", "full_attention"], "rms_norm_eps": 1e-6,
          "rope_theta": 500000.0, "max_position_embeddings": 64, "tie_word_embeddings": False}
ref.save_hf(f"{work}/init", config, ref.init_params(ref.load_config(config), seed=0))

# A token stream with structure (a sparse Markov chain over the vocabulary), so the loss has somewhere to go.
rng = np.random.default_rng(0)
successors = rng.integers(0, 256, size=(256, 3))
tokens = np.empty(32 * 150 + 7, dtype=np.uint32)
state = 0
for i in range(len(tokens)):
    state = successors[state, rng.integers(0, 3)]
    tokens[i] = state
tokens.tofile(f"{work}/train.npy")

# OLMo-core's global order: arange(N, uint32) shuffled by Generator(PCG64(seed + epoch)), epoch 1,
# truncated to whole batches of 4 instances.
n = len(tokens) // 32
order = np.arange(n, dtype=np.uint32)
np.random.Generator(np.random.PCG64(1234 + 1)).shuffle(order)
np.save(f"{work}/order.npy", order[: n // 4 * 4])
PY

"$replica" train --config "$src/configs/recipes/tiny.yaml" run.dir="$work/run" run.name=curve_parity \
  model.config="''" model.init_from="$work/init" data.mix_file="''" "data.paths=[$work/train.npy]" \
  "data.validation_paths=[]" data.seq_len=32 data.global_batch_size=4 data.micro_batch_size=2 data.seed=1234 \
  optim.lr=6e-3 optim.clip=0.5 schedule.type=cosine schedule.warmup_steps=5 train.max_steps=30 \
  train.precision=fp32 train.threads=2 train.log_every=10 eval.every=0 checkpoint.every=0 >"$work/train.log"

/usr/bin/python3 "$src/tools/reference/train_ref.py" --recipe "$work/run/config.yaml" --order "$work/order.npy" \
  --out "$work/ref.jsonl"

/usr/bin/python3 - "$work/run/metrics.jsonl" "$work/ref.jsonl" <<'PY'
import json, sys
ours = [r for r in map(json.loads, open(sys.argv[1])) if "loss" in r]
ref = [json.loads(line) for line in open(sys.argv[2])]
assert len(ours) == len(ref) == 30, (len(ours), len(ref))
worst_loss = worst_norm = 0.0
clipped = 0
for a, b in zip(ours, ref):
    assert a["step"] == b["step"]
    assert a["lr"] == b["lr"], (a["step"], a["lr"], b["lr"])
    assert a["skipped"] == b["skipped"]
    dl = abs(a["loss"] - b["loss"]) / abs(b["loss"])
    dn = abs(a["grad_norm"] - b["grad_norm"]) / abs(b["grad_norm"])
    assert dl <= 1e-5, f"step {a['step']}: loss {a['loss']} vs {b['loss']} (rel {dl:.2e})"
    assert dn <= 1e-4, f"step {a['step']}: grad norm {a['grad_norm']} vs {b['grad_norm']} (rel {dn:.2e})"
    worst_loss, worst_norm = max(worst_loss, dl), max(worst_norm, dn)
    clipped += b["grad_norm"] > 0.5
assert clipped >= 5, f"clipping was active on only {clipped} steps"
assert ours[-1]["loss"] < ours[0]["loss"] - 0.2, f"the loss did not fall: {ours[0]['loss']} -> {ours[-1]['loss']}"
print(f"curve parity: 30 steps, loss {ours[0]['loss']:.4f} -> {ours[-1]['loss']:.4f}, worst relative "
      f"difference loss {worst_loss:.2e}, grad norm {worst_norm:.2e}; clipping active on {clipped} steps")
PY
