#!/usr/bin/env bash
# replica plan's verdict and estimate: every shipped 7B recipe fits an 80 GB GPU at AI2's number of GPUs as it
# ships; a layout that does not fit says so and names the nearest one that does; --gpu-memory takes GB and GiB; the
# step time and the time to finish are the step's FLOPs (from the plan's own FLOPs per token) over the ranks at the
# stated MFU of the peak; stage 3 plans without extra keys; --model takes a run directory and a checkpoint (and says
# what to give for an OLMo-core checkpoint), and a train.remat override.
# Args: $1 = replica binary, $2 = source dir.
set -euo pipefail
replica="$1"; src="$2"
py=${PYTHON:-/usr/bin/python3}
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
cd "$work"
export XDG_CACHE_HOME="$work/cache"

# Expects exit 2 and the text on stderr, nothing on stdout.
expect_failure() {
  local text=$1 code=0
  shift
  "$@" > out.txt 2> err.txt || code=$?
  if [ "$code" -ne 2 ] || [ -s out.txt ] || ! grep -qF -- "$text" err.txt; then
    echo "FAIL: expected exit 2 and '$text' from: $*"; echo "got exit $code:"; cat out.txt err.txt; exit 1
  fi
  echo "ok: $(cat err.txt)"
}

# The shipped recipes name their model relative to the source tree, as `replica train` resolves it.
plan_recipe() { (cd "$src" && "$replica" plan "$@"); }

# The total per rank of the layout marked "<- train.shard_weights" (the recipe's), and the fit line's figure.
marked_total() { awk '/<- train.shard_weights$/ {m = 1} m && /^  total per rank/ {print $4; exit}' "$1"; }
fit_total() { awk '/^fit / {print $3; exit}' "$1"; }

# 1. Each shipped 7B recipe as it is, at AI2's GPUs (olmo3.md §2, stage3.md §0.1): it fits 80 GB = 74.51 GiB.
for layout in olmo3_7b_stage1:512 olmo3_7b_stage2:128 olmo3_7b_stage3:256 olmo3_7b_stage3_as_run:256; do
  recipe="configs/recipes/${layout%%:*}.yaml" ranks=${layout##*:}
  plan_recipe --config "$recipe" --ranks "$ranks" > "${layout%%:*}.txt"
  grep -q "^fit              yes: .* per rank of 74.51 GiB (80 GB, --gpu-memory), the recipe's layout: .*, $ranks ranks$" \
    "${layout%%:*}.txt"
  total=$(marked_total "${layout%%:*}.txt")
  [ "$total" = "$(fit_total "${layout%%:*}.txt")" ]
  $py -c "import sys; assert 0 < float(sys.argv[1]) <= 80e9 / 2**30, sys.argv[1]" "$total"
  echo "ok: ${layout%%:*} at $ranks ranks: $(grep '^fit ' "${layout%%:*}.txt")"
done
grep -q "remat=selective, weights sharded, 512 ranks$" olmo3_7b_stage1.txt
grep -q "^per rank, 256 ranks (32 data-parallel × 8 context-parallel, 8192 tokens each), 2 micro-batches each" \
  olmo3_7b_stage3.txt

# 2. Stage 3 without extra keys: its context parallelism sets the default ranks (one data-parallel replica).
plan_recipe --config configs/recipes/olmo3_7b_stage3.yaml > stage3_default.txt
grep -q "^per rank, 8 ranks (1 data-parallel × 8 context-parallel, 8192 tokens each), 64 micro-batches each" \
  stage3_default.txt
echo "ok: plan --config olmo3_7b_stage3.yaml: $(grep '^fit ' stage3_default.txt)"

# 3. What does not fit: AI2's stage 1 without recomputation. The verdict, the amount over, the nearest layout that
# fits, and that layout's own plan agreeing with the figure given for it.
stage1=configs/recipes/olmo3_7b_stage1.yaml
plan_recipe --config "$stage1" --ranks 512 train.remat=none train.shard_weights=false > none.txt
grep -q "^fit              no: 135.36 GiB per rank of 74.51 GiB (80 GB, --gpu-memory), the recipe's layout: remat=none, \
weights whole, 512 ranks$" none.txt
grep -q "^  total per rank           135.36 GiB  does not fit 80 GB = 74.51 GiB: 60.86 GiB over$" none.txt
suggested=$(awk '/^                 fits with/ {print $3, $4}' none.txt)
[ "$suggested" = "train.remat=selective train.shard_weights=true:" ]
plan_recipe --config "$stage1" --ranks 512 train.remat=selective train.shard_weights=true > nearest.txt
grep -q "^                 fits with train.remat=selective train.shard_weights=true: $(fit_total nearest.txt) GiB per rank$" \
  none.txt
echo "ok: $(grep -A1 '^fit ' none.txt | tr -s ' ' | tr '\n' ' ')"
# A capacity in GiB between the two layouts' needs: sharded weights alone make it fit; one in GB is converted.
plan_recipe --config "$stage1" --ranks 512 train.remat=none train.shard_weights=false --gpu-memory 100GiB > gib.txt
plan_recipe --config "$stage1" --ranks 512 train.remat=none train.shard_weights=true > sharded.txt
grep -q "per rank of 100.00 GiB (107.4 GB, --gpu-memory)" gib.txt
grep -q "^                 fits with train.remat=none train.shard_weights=true: $(marked_total sharded.txt) GiB per rank$" \
  gib.txt
plan_recipe --config "$stage1" --ranks 512 --gpu-memory "141 GB" | grep -q "fits 141 GB = 131.32 GiB, "
# One rank holds the whole fp32 state: nothing fits, and the least is named.
plan_recipe --config "$stage1" --ranks 1 > one.txt
grep -q "^                 nothing fits at 1 ranks: the least is remat=block with sharded weights, 122.24 GiB per rank$" one.txt
echo "ok: GiB and GB capacities, and a layout nothing makes fit"
expect_failure "--gpu-memory: expected a GPU's memory such as 80GB (10^9 bytes) or 74.5GiB (2^30 bytes), got '80TB'" \
  plan_recipe --config "$stage1" --gpu-memory 80TB
expect_failure "--mfu" plan_recipe --config "$stage1" --mfu 0

# 4. The estimate: the step's FLOPs (FLOPs per token × tokens per step) over ranks × MFU × peak, and max_steps of
# them. Checked at a stated MFU and peak, at the default peak (H100/H200 dense bf16, 989.4 TFLOP/s), and in fp32.
estimate() {  # plan file, ranks, mfu %, peak TFLOP/s, steps
  $py - "$@" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
ranks, mfu, peak, steps = int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5])
fpt = float(re.search(r"^FLOPs per token  (\S+)", text, re.M).group(1))
tokens = int(re.search(r"^to finish .* of ([\d,]+) tokens$", text, re.M).group(1).replace(",", ""))
step = fpt * tokens / (ranks * mfu / 100 * peak * 1e12)
line = re.search(r"^step time        (\S+) (s|min|h|days) at (\S+)% MFU of (\S+) TFLOP/s per GPU .*: (\S+) FLOPs over (\d+) GPUs$",
                 text, re.M)
unit = {"s": 1, "min": 60, "h": 3600, "days": 86400}
assert float(line.group(3)) == mfu and float(line.group(4)) == peak and int(line.group(6)) == ranks, line.group(0)
assert abs(float(line.group(5)) / (fpt * tokens) - 1) < 1e-3, (line.group(5), fpt * tokens)
assert abs(float(line.group(1)) * unit[line.group(2)] / step - 1) < 6e-3  # 3 significant digits, (line.group(0), step)
done = re.search(r"^to finish        (\S+) (s|min|h|days) for ([\d,]+) steps \(train.max_steps\)", text, re.M)
assert int(done.group(3).replace(",", "")) == steps, done.group(0)
assert abs(float(done.group(1).replace(",", "")) * unit[done.group(2)] / (step * steps) - 1) < 0.01, (done.group(0), step * steps)
print(f"ok: {line.group(0)}; {done.group(0)} (expected {step:.4g} s per step)")
PY
}
plan_recipe --config "$stage1" --ranks 512 --mfu 29 --peak-tflops 900 > est.txt
estimate est.txt 512 29 900 1413814
estimate olmo3_7b_stage1.txt 512 36 989.4 1413814  # the defaults
estimate olmo3_7b_stage3.txt 256 36 989.4 11921
plan_recipe --config "$stage1" --ranks 64 train.precision=fp32 train.max_steps=100 > fp32.txt
estimate fp32.txt 64 36 66.9 100

# 5. --model takes a run directory, its checkpoints/ and a checkpoint, as generate and eval do: the same plan as
# the model file the run was trained from (a narrow one: each of its checkpoints is written and fsynced).
mkdir data
$py -c "import numpy as np; np.random.default_rng(0).integers(0, 1000, 4096).astype('<u4').tofile('data/t.npy')"
cat > recipe.yaml <<YAML
run: {dir: $work/run}
model: {config: $src/tests/integration/dolma2_narrow.yaml}
data: {paths: [data/t.npy], seq_len: 16, global_batch_size: 2, micro_batch_size: 2}
train: {max_steps: 2, threads: 1}
checkpoint: {every: 1}
YAML
"$replica" train --config recipe.yaml > train.log
"$replica" plan --model "$src/tests/integration/dolma2_narrow.yaml" --seq-len 64 > from_file.txt
for model in run run/checkpoints run/checkpoints/step00000002 run/checkpoints/step00000001; do
  "$replica" plan --model "$model" --seq-len 64 > from_dir.txt
  diff <(tail -n +2 from_file.txt) <(tail -n +2 from_dir.txt)
  echo "ok: plan --model $model: $(head -1 from_dir.txt)"
done
grep -q "^model            run (its latest checkpoint run/checkpoints/step00000002)$" \
  <("$replica" plan --model run --seq-len 64)
expect_failure "a run directory without a complete checkpoint in checkpoints/" \
  bash -c "mkdir -p empty/checkpoints && '$replica' plan --model empty"

# 6. --model plans remat=block per rank unless train.remat is given, which it then takes and marks.
"$replica" plan --model "$src/configs/models/olmo3_tiny.yaml" --seq-len 8192 > block.txt
"$replica" plan --model "$src/configs/models/olmo3_tiny.yaml" --seq-len 8192 train.remat=none > none_tiny.txt
grep -q "^per rank, 1 ranks, 1 micro-batches each, remat=block," block.txt
! grep -q "<- train.remat" block.txt
grep -q "^per rank, 1 ranks, 1 micro-batches each, remat=none," none_tiny.txt
grep -q "^  remat=none .*<- train.remat$" none_tiny.txt
none_gib=$(awk '/^  remat=none / {print $2}' none_tiny.txt)
[ "$none_gib" != 0.00 ] && [ "$none_gib" = "$(awk '/^  activations / {print $2; exit}' none_tiny.txt)" ]
echo "ok: plan --model takes train.remat for the per-rank plan"

# 7. An OLMo-core checkpoint holds no model config: plan says to give the model file, as train does.
mkdir -p ai2/model_and_optim && touch ai2/model_and_optim/.metadata
expect_failure "ai2: an OLMo-core checkpoint holds no HF model config: give the model with model.config" \
  "$replica" plan --model ai2
