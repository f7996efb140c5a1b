#!/usr/bin/env bash
# Hugging Face interop: export-hf of a checkpoint loads in the PyTorch reference with logits equal to
# `replica forward` on the checkpoint; HF → replica → HF is byte-identical in fp32 (also from a directory the
# reference wrote); vocab truncation, sharding with an index, bf16 rounding; init_from an HF directory with a
# truncated vocabulary pads the rows back.
set -euo pipefail
source "$(dirname "$0")/ckpt_lib.bash"
ref="$src/tools/reference"

train "$work/run" train.max_steps=6
ckpt="$work/run/checkpoints/step00000006"
"$replica" export-hf --checkpoint "$ckpt" --out "$work/hf"
"$replica" export-hf --checkpoint "$ckpt" --out "$work/hf_bf16" --dtype bf16
"$replica" export-hf --checkpoint "$ckpt" --out "$work/hf_500" --vocab 500 --max-shard-gb 0.0002
"$replica" forward --model "$ckpt" --tokens "$work/ids.npy" --out "$work/logits_ckpt.npy" --threads 1

$py - "$ref" "$work" "$ckpt" <<'PY'
import sys, json, os, torch, numpy as np
sys.path.insert(0, sys.argv[1])
import olmo3_ref as ref
work, ckpt = sys.argv[2], sys.argv[3]
config, params = ref.load_hf(f"{work}/hf")
assert config["architectures"] == ["Olmo3ForCausalLM"] and config["vocab_size"] == 512, config
saved = ref.load_safetensors(f"{ckpt}/model.safetensors")
assert list(params) == list(saved) and all(torch.equal(params[k], saved[k]) for k in saved)
ids = torch.from_numpy(np.load(f"{work}/ids.npy"))
with torch.no_grad():
    logits = ref.forward(params, ref.load_config(config), ids).numpy()
mine = np.load(f"{work}/logits_ckpt.npy")
err = np.abs(mine - logits).max() / np.abs(logits).max()
assert err <= 1e-5, err
print(f"export-hf → reference forward vs replica forward on the checkpoint: max relative error {err:.2e}")

_, p16 = ref.load_hf(f"{work}/hf_bf16")
assert all(torch.equal(p16[k], saved[k].to(torch.bfloat16).float()) for k in saved)
assert json.load(open(f"{work}/hf_bf16/config.json"))["torch_dtype"] == "bfloat16"
print("bf16 export: every tensor equals torch's bf16 rounding")

index = json.load(open(f"{work}/hf_500/model.safetensors.index.json"))
shards = sorted(set(index["weight_map"].values()))
assert len(shards) > 1 and not os.path.exists(f"{work}/hf_500/model.safetensors"), shards
c500, p500 = ref.load_hf(f"{work}/hf_500")
assert c500["vocab_size"] == 500
for k in saved:
    want = saved[k][:500] if k in ("model.embed_tokens.weight", "lm_head.weight") else saved[k]
    assert torch.equal(p500[k], want), k
assert index["metadata"]["total_size"] == sum(t.numel() * 4 for t in p500.values())
print(f"vocab 500: {len(shards)} shards, index total_size {index['metadata']['total_size']}")

ref.save_hf(f"{work}/hf_by_ref", config, params)  # another writer: its own header order and format
PY

# HF → replica → HF: byte-identical directories.
"$replica" export-hf --checkpoint "$work/hf" --out "$work/hf2"
diff -r "$work/hf" "$work/hf2"
"$replica" export-hf --checkpoint "$work/hf_by_ref" --out "$work/hf3"
diff -r "$work/hf" "$work/hf3"
"$replica" export-hf --checkpoint "$work/hf_500" --out "$work/hf_500b" --max-shard-gb 0.0002
diff -r "$work/hf_500" "$work/hf_500b"
echo "HF → replica → HF byte-identical (replica-written, reference-written and sharded inputs)"

# init_from an HF directory with 500 rows into the 512-row model: padded back with zero rows.
train "$work/from_hf" model.init_from="$work/hf_500" train.max_steps=1 schedule.warmup_steps=0 \
  checkpoint.every=0 optim.lr=1.0e-12
grep -q "weights from $work/hf_500" "$work/from_hf.log"
$py - "$ref" "$work" "$ckpt" <<'PY'
import sys, torch
sys.path.insert(0, sys.argv[1])
import olmo3_ref as ref
work, ckpt = sys.argv[2], sys.argv[3]
after = ref.load_safetensors(f"{work}/from_hf/checkpoints/step00000001/model.safetensors")
before = ref.load_safetensors(f"{ckpt}/model.safetensors")
for k in ("model.embed_tokens.weight", "lm_head.weight"):
    assert after[k].shape[0] == 512 and after[k][500:].abs().max() < 1e-9, k  # zero, then one step at lr 1e-12
    assert torch.allclose(after[k][:500], before[k][:500], rtol=0, atol=1e-9), k
print("init_from HF (vocab 500) into vocab 512: rows 500..511 zero-padded, the rest kept")
PY
echo "ckpt_hf: all checks passed"
