#!/usr/bin/env bash
# A stage transition from an OLMo-core checkpoint, as from AI2's published OLMo 3 ones: a tiny stage 1 in replica,
# its weights, AdamW moments and step written by PyTorch's torch.distributed.checkpoint in OLMo-core's layout
# (write_olmo_core_checkpoint.py; chunked as FSDP shards; torch 1.13's and torch 2.x/OLMo-core's class names), then
# stage 2 with model.init_from=THAT optim.load_state=true. It must be the very same run, byte for byte, as stage 2
# from replica's own checkpoint of those tensors: every loss, and the checkpoint it ends with (weights, moments and
# the Adam step all enter it). Then damaged checkpoints: each refused with exit 2 and a message naming what.
set -euo pipefail
replica=$1
here=$(dirname "$0")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
py=${PYTHON:-/usr/bin/python3}

cat >"$work/model.yaml" <<YAML
model_type: olmo3
vocab_size: 384
hidden_size: 32
intermediate_size: 96
num_hidden_layers: 2
num_attention_heads: 4
num_key_value_heads: 2
head_dim: 8
sliding_window: 16
tie_word_embeddings: false
eos_token_id: 0
pad_token_id: 1
max_position_embeddings: 64
YAML
$py -c "
import sys, numpy as np
rng = np.random.default_rng(1)
for f in range(2): np.save(f'{sys.argv[1]}/tokens{f}.npy', rng.integers(2, 384, size=4096, dtype=np.uint32))
" "$work"
cat >"$work/recipe.yaml" <<YAML
run: {dir: $work/stage1, name: olmo_core}
model: {config: $work/model.yaml}
data: {paths: [$work/tokens0.npy, $work/tokens1.npy], seq_len: 32, seed: 7, global_batch_size: 4, micro_batch_size: 2}
optim: {lr: 1.0e-2, skip_step: false}
schedule: {type: cosine, warmup_steps: 2, alpha_f: 0.1}
train: {max_steps: 3, precision: fp32, threads: 1, seed: 3}
checkpoint: {every: 0}
YAML
run() { "$replica" train --config "$work/recipe.yaml" "$@" >"$work/last.log" 2>&1 || { cat "$work/last.log"; exit 1; }; }
stage2=(optim.load_state=true schedule.type=linear schedule.warmup_steps=0 schedule.alpha_f=0.0 train.max_steps=3)

run
stage1=$work/stage1/checkpoints/step00000003
$py "$here/write_olmo_core_checkpoint.py" "$stage1" "$work/oc1" --chunks 3 --layout torch1
$py "$here/write_olmo_core_checkpoint.py" "$stage1" "$work/oc2" --chunks 2 --layout torch2

run run.dir="$work/from_replica" model.init_from="$stage1" "${stage2[@]}"
run run.dir="$work/from_torch1" model.init_from="$work/oc1" "${stage2[@]}"
grep -q "optimizer state (step count 3) from the OLMo-core checkpoint $work/oc1" "$work/last.log"
run run.dir="$work/from_torch2" model.init_from="$work/oc2/model_and_optim" "${stage2[@]}"
grep -q "optimizer state (step count 3) from the OLMo-core checkpoint" "$work/last.log"
for from in from_torch1 from_torch2; do
  for f in model.safetensors optim.safetensors; do
    cmp "$work/from_replica/checkpoints/step00000003/$f" "$work/$from/checkpoints/step00000003/$f"
  done
done
$py - "$work" <<'PY'
import sys, json
work = sys.argv[1]
keys = ("loss", "ce", "z_loss", "lr", "grad_norm")
curve = lambda run: [[j[k] for k in keys] for j in map(json.loads, open(f"{work}/{run}/metrics.jsonl")) if "loss" in j]
ref = curve("from_replica")
assert len(ref) == 3, ref
for run in ("from_torch1", "from_torch2"):
    assert json.dumps(curve(run)) == json.dumps(ref), (run, curve(run), ref)
print(f"stage 2 from the OLMo-core checkpoints equals stage 2 from replica's: losses {[c[0] for c in ref]}")
PY
# Weights only (no optim.load_state): the same first step as from replica's checkpoint; a fresh optimizer.
run run.dir="$work/weights_replica" model.init_from="$stage1" train.max_steps=1 schedule.warmup_steps=0
run run.dir="$work/weights_oc" model.init_from="$work/oc1" train.max_steps=1 schedule.warmup_steps=0
cmp "$work/weights_replica/checkpoints/step00000001/optim.safetensors" \
    "$work/weights_oc/checkpoints/step00000001/optim.safetensors"

# ---- refusals: exit 2, naming the file or key ----
refused() {  # refused PATTERN ARGS...: the run fails with exit 2 and a message matching PATTERN
  local pattern=$1 status=0
  shift
  "$replica" train --config "$work/recipe.yaml" run.dir="$work/refused" "$@" >"$work/last.log" 2>&1 || status=$?
  [[ $status == 2 ]] || { echo "expected exit 2, got $status"; cat "$work/last.log"; exit 1; }
  grep -q -- "$pattern" "$work/last.log" || { echo "expected '$pattern' in:"; cat "$work/last.log"; exit 1; }
}
damaged() { rm -rf "$work/bad"; cp -r "$work/oc1" "$work/bad"; }

# No HF config in an OLMo-core checkpoint: model.config must give the model.
refused "holds no HF model config" model.config= model.init_from="$work/oc1" "${stage2[@]}"
# A model that is not the checkpoint's.
sed 's/^intermediate_size: 96/intermediate_size: 64/' "$work/model.yaml" >"$work/other.yaml"
refused "'model.blocks.0.feed_forward.w1.weight' has shape \[96, 32\], the model expects \[64, 32\]" \
  model.config="$work/other.yaml" model.init_from="$work/oc1" "${stage2[@]}"
# A pickle that would run a command when Python loads it names a global that is not allowed; nothing runs.
damaged
$py - "$work/pwned" >"$work/bad/model_and_optim/.metadata" <<'PY'
import sys
command = f"touch {sys.argv[1]}".encode()
sys.stdout.buffer.write(b"\x80\x02cos\nsystem\nX" + len(command).to_bytes(4, "little") + command + b"\x85R.")
PY
refused "refers to 'os.system', which is not one of the classes this reader knows" model.init_from="$work/bad" "${stage2[@]}"
[[ ! -e "$work/pwned" ]]
# A truncated .distcp file.
damaged
size=$(stat -c %s "$work/bad/model_and_optim/__0_0.distcp")
truncate -s $((size / 2)) "$work/bad/model_and_optim/__0_0.distcp"
refused "__0_0.distcp: truncated: '.*' needs bytes" model.init_from="$work/bad" "${stage2[@]}"
# A flipped byte inside a tensor's data: its archive's CRC-32 no longer matches.
damaged
$py - "$work/bad/model_and_optim" "$here" <<'PY'
import io, pickle, struct, sys, zipfile
sys.path.insert(0, sys.argv[2])
import write_olmo_core_checkpoint  # noqa: F401  (torch 1.13's DCP classes, importable)
md = pickle.load(open(f"{sys.argv[1]}/.metadata", "rb"))
info = next(s for i, s in md.storage_data.items() if i.fqn == "model.embeddings.weight")
path = f"{sys.argv[1]}/{info.relative_path}"
data = bytearray(open(path, "rb").read())
archive = zipfile.ZipFile(io.BytesIO(bytes(data[info.offset:info.offset + info.length])))
entry = next(e for e in archive.infolist() if e.filename.endswith("/data/0"))
header = info.offset + entry.header_offset
name_len, extra_len = struct.unpack("<HH", data[header + 26:header + 30])
data[header + 30 + name_len + extra_len + 5] ^= 0x40  # a bit of the tensor's sixth byte
open(path, "wb").write(data)
PY
refused "fails its CRC-32 check" model.init_from="$work/bad" "${stage2[@]}"
# A tensor the model needs that the checkpoint lacks.
damaged
$py - "$work/bad/model_and_optim/.metadata" "$here" <<'PY'
import pickle, sys
sys.path.insert(0, sys.argv[2])
import write_olmo_core_checkpoint  # noqa: F401  (torch 1.13's DCP classes, importable)
md = pickle.load(open(sys.argv[1], "rb"))
del md.state_dict_metadata["optim.state.lm_head.w_out.weight.exp_avg_sq"]
pickle.dump(md, open(sys.argv[1], "wb"))
PY
refused "no tensor 'optim.state.lm_head.w_out.weight.exp_avg_sq' in the checkpoint" model.init_from="$work/bad" \
  "${stage2[@]}"
echo "ok: stage 2 from OLMo-core checkpoints (torch 1.13 and 2.x layouts) equals stage 2 from replica's; bad ones refused"
