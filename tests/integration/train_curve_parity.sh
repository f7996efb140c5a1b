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
  train.precision=fp32 train.threads=2 train.log_every=10 eval.every=0 checkpoint.every=10 checkpoint.keep=0 \
  >"$work/train.log"

/usr/bin/python3 "$src/tools/reference/train_ref.py" --recipe "$work/run/config.yaml" --order "$work/order.npy" \
  --out "$work/ref.jsonl" --save-every 10 --series "$work/ref_series"

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

# The same two trainings as checkpoint series: replica's checkpoints against the PyTorch reference's HF directories
# (step10, step20, step30), held against each other by `replica reproduce` at every step: tracking, the KL at the
# level of fp32 against float64 arithmetic.
/usr/bin/python3 -c "import numpy as np, sys; np.save(sys.argv[2], np.fromfile(sys.argv[1], dtype=np.uint32)[:2048])" \
  "$work/train.npy" "$work/heldout.npy"
printf 'batch_tokens: 256\nheldout: {files: [%s], seq_len: 32}\n' "$work/heldout.npy" >"$work/suite.yaml"
REPLICA_TOKENIZER="$src/tests/fixtures/data/cl100k_base.tiktoken" "$replica" reproduce --run "$work/run" \
  --reference "$work/ref_series" --suite "$work/suite.yaml" --kl-sequences 4 --kl-length 32 --threads 2 \
  --out "$work/repro" --json "$work/repro.json" >"$work/repro.txt" || { cat "$work/repro.txt"; exit 1; }
/usr/bin/python3 - "$work/repro.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
assert [p["step"] for p in j["pairs"]] == [10, 20, 30], j["pairs"]
assert j["verdict"] == "tracking", j["verdict"]
worst = max(p["kl_mean"] for p in j["pairs"])
assert 0 < worst < 1e-9 and all(p["top1"] == 1 for p in j["pairs"]), [(p["kl_mean"], p["top1"]) for p in j["pairs"]]
delta = max(abs(p["surfaces"]["heldout/loss"]["delta"]) for p in j["pairs"])
assert delta < 1e-5, delta
assert j["training_curves"] is None  # the reference is model directories, not a replica run
print(f"reproduce against the PyTorch series: tracking at steps 10, 20, 30; mean KL at most {worst:.2e}, "
      f"|Δ held-out loss| at most {delta:.2e}")
PY
