#!/usr/bin/env bash
# The everyday loop around a run: --print-config shows the recipe as it would run, a mistyped key gets a "did you
# mean", and forward / export-hf / eval take a run directory for its latest checkpoint.
set -euo pipefail
source "$(dirname "$0")/ckpt_lib.bash"

"$replica" train --config "$work/recipe.yaml" --print-config optim.lr=0.5 >"$work/printed.yaml"
grep -q "lr: 0.5" "$work/printed.yaml"
test ! -e "$work/run"  # nothing trained, nothing written
expect_failure "unknown key 'optim.lrr' (did you mean 'optim.lr'?)" \
  "$replica" train --config "$work/recipe.yaml" optim.lrr=0.5
printf 'run: {dir: %s}\ntrian: {max_steps: 2}\n' "$work/x" >"$work/typo.yaml"
expect_failure "unknown section 'trian' (did you mean 'train'?)" "$replica" train --config "$work/typo.yaml"

train "$work/run" train.max_steps=4
"$replica" forward --model "$work/run" --tokens "$work/ids.npy" --out "$work/from_run.npy" >/dev/null
"$replica" forward --model "$work/run/checkpoints/step00000004" --tokens "$work/ids.npy" --out "$work/from_ckpt.npy" \
  >/dev/null
cmp "$work/from_run.npy" "$work/from_ckpt.npy"
"$replica" export-hf --checkpoint "$work/run" --out "$work/hf" >/dev/null
test -f "$work/hf/config.json"
echo "ok: print-config, did-you-mean, a run directory as a model"
