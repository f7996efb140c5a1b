#!/usr/bin/env bash
# OLMo 3's three stages on a tiny model, chained as AI2 ran them: stage 1 (cosine) → stage 2 (a linear anneal from
# stage 1's weights and optimizer state) → stage 3 (YaRN on the full-attention layers, packed documents with
# intra-document masking, a longer sequence, a linear schedule, from stage 2's weights and optimizer state), with an
# exact resume inside stage 3: the interrupted and resumed stage 3 ends with the same losses and bytes as one run.
set -euo pipefail
replica=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
py=${PYTHON:-/usr/bin/python3}

source "$(dirname "$0")/stage3_tiny.bash"
stage3_model "$work/stage12.yaml" "max_position_embeddings: 64"
stage3_model "$work/stage3.yaml" "max_position_embeddings: 256
rope_scaling: {rope_type: yarn, factor: 4.0, original_max_position_embeddings: 64, beta_fast: 32, beta_slow: 1,
  attention_factor: 1.1386294361119891}"
stage3_documents "$work"
files="[$work/docs0.npy,$work/docs1.npy,$work/docs2.npy,$work/docs3.npy]"

cat >"$work/recipe.yaml" <<YAML
run: {dir: $work/stage1, name: chain}
model: {config: $work/stage12.yaml}
data: {paths: $files, seq_len: 64, seed: 7, global_batch_size: 8, micro_batch_size: 4}
optim: {lr: 1.0e-2, skip_step: false}
schedule: {type: cosine, warmup_steps: 2, alpha_f: 0.1}
train: {max_steps: 6, precision: fp32, threads: 1, seed: 3}
checkpoint: {every: 0}
YAML
run() { "$replica" train --config "$work/recipe.yaml" "$@" >"$work/last.log" 2>&1 || { cat "$work/last.log"; exit 1; }; }
stage2=(run.dir="$work/stage2" model.init_from="$work/stage1/checkpoints/step00000006" optim.load_state=true
        schedule.type=linear schedule.warmup_steps=0 schedule.alpha_f=0.0 train.max_steps=4)
stage3=(model.config="$work/stage3.yaml" model.init_from="$work/stage2/checkpoints/step00000004" optim.load_state=true
        data.seq_len=256 data.global_batch_size=4 data.micro_batch_size=2 data.packing=obfd data.source_group_size=2
        data.source_permutation_seed=123 schedule.type=linear schedule.warmup_steps=2 schedule.alpha_f=0.0
        train.max_steps=8)

# Every run checkpoints only where a later step reads one (each is 77 MB with the dolma2 vocab, fsynced): its end
# (checkpoint.every: 0), and the interrupted stage 3 at train.stop_at.
run
run "${stage2[@]}"
grep -q "optimizer state (step count 6)" "$work/last.log"
run run.dir="$work/stage3" "${stage3[@]}"
grep -q "optimizer state (step count 10)" "$work/last.log"  # stage 1's 6 steps and stage 2's 4
run run.dir="$work/stage3_cut" "${stage3[@]}" train.stop_at=5
run run.dir="$work/stage3_cut" "${stage3[@]}"
grep -q "resuming from .*step00000005" "$work/last.log"

$py - "$work" <<'PY'
import sys, json, math
work = sys.argv[1]
def steps(run):
    return {j["step"]: j for j in map(json.loads, open(f"{work}/{run}/metrics.jsonl")) if "loss" in j}
whole, cut = steps("stage3"), steps("stage3_cut")
assert sorted(whole) == list(range(1, 9)) and sorted(cut) == list(range(1, 9)), (sorted(whole), sorted(cut))
for s in whole:
    for k in ("loss", "ce", "z_loss", "lr", "grad_norm", "skipped"):
        assert json.dumps(whole[s][k]) == json.dumps(cut[s][k]), (s, k, whole[s][k], cut[s][k])
assert all(math.isfinite(j["loss"]) for j in whole.values())
print(f"stage 3 resumed at step 5 equals the whole run at all 8 steps (last loss {whole[8]['loss']})")
PY
for f in model.safetensors optim.safetensors; do
  cmp "$work/stage3/checkpoints/step00000008/$f" "$work/stage3_cut/checkpoints/step00000008/$f"
done
grep -q "packing: obfd" "$work/stage3/config.yaml"

# The packing and the document masking are what stage 3 trains on: without them the first loss differs.
run run.dir="$work/unpacked" "${stage3[@]}" data.packing=none train.stop_at=1
$py - "$work" <<'PY'
import sys, json
work = sys.argv[1]
first = lambda run: next(j for j in map(json.loads, open(f"{work}/{run}/metrics.jsonl")) if "loss" in j)["loss"]
assert first("stage3") != first("unpacked"), first("stage3")
print(f"packed first loss {first('stage3')}, unpacked {first('unpacked')}")
PY
echo "ok: stage 1 -> 2 -> 3 chain, exact resume inside stage 3"
