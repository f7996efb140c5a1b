#!/usr/bin/env bash
# replica parity: identical models (checkpoint vs its HF export, vs its own logits .npy) give KL 0 and top-1
# 100 %; the reference's logits agree to float rounding; bf16 vs fp32 gives small non-zero KL and a threshold
# that is missed exits 1; a padded vs truncated vocabulary is compared over the shared rows.
set -euo pipefail
source "$(dirname "$0")/ckpt_lib.bash"

train "$work/run" train.max_steps=6
ckpt="$work/run/checkpoints/step00000006"
"$replica" export-hf --checkpoint "$ckpt" --out "$work/hf"
"$replica" export-hf --checkpoint "$ckpt" --out "$work/hf_500" --vocab 500
"$replica" forward --model "$work/hf" --tokens "$work/ids.npy" --out "$work/logits.npy" --threads 1
$py - "$src/tools/reference" "$work" <<'PY'
import sys, torch, numpy as np
sys.path.insert(0, sys.argv[1])
import olmo3_ref as ref
config, params = ref.load_hf(f"{sys.argv[2]}/hf")
with torch.no_grad():
    logits = ref.forward(params, ref.load_config(config), torch.from_numpy(np.load(f"{sys.argv[2]}/ids.npy")))
np.save(f"{sys.argv[2]}/logits_ref.npy", logits.numpy().astype(np.float32))
PY

parity() { "$replica" parity --tokens "$work/ids.npy" --threads 1 --json "$@"; }
check() {  # JSON line, python condition on j
  $py -c "import json,sys; j=json.loads(sys.argv[1]); assert $2, j; print(sys.argv[1])" "$1"
}
check "$(parity --reference "$ckpt" --candidate "$work/hf" --max-kl 0 --min-top1 1)" \
  'j["kl_mean"] == 0 and j["kl_max"] == 0 and j["top1"] == 1 and j["top10_overlap"] == 1 and j["max_abs_logit_diff"] == 0 and j["positions"] == 192 and j["pass"]'
check "$(parity --reference "$ckpt" --candidate "$work/logits.npy" --max-kl 0)" 'j["kl_mean"] == 0 and j["top1"] == 1'
check "$(parity --reference "$work/logits_ref.npy" --candidate "$ckpt" --max-kl 1e-9 --min-top1 0.99)" \
  'j["kl_mean"] < 1e-9 and j["top1"] >= 0.99 and j["max_abs_logit_diff"] < 1e-4'
check "$(parity --reference "$ckpt" --candidate "$work/hf_500" --min-top1 0.99)" 'j["vocab"] == 500 and j["top1"] >= 0.99'

set +e
out=$(parity --reference "$ckpt" --candidate "$ckpt" --precision bf16 --max-kl 0)
code=$?
set -e
test "$code" = 1
check "$out" '0 < j["kl_mean"] < 1e-3 and j["top1"] > 0.8 and 0 < j["max_abs_logit_diff"] < 0.5 and not j["pass"]'
"$replica" parity --reference "$ckpt" --candidate "$ckpt" --precision bf16 --tokens "$work/ids.npy" --threads 1 | tee "$work/text"
grep -q "top-1 agreement" "$work/text"
# The verdict line names each bound: PASS when all hold, FAIL (exit 1) naming the ones missed.
"$replica" parity --reference "$ckpt" --candidate "$work/hf" --tokens "$work/ids.npy" --threads 1 --max-kl 0 \
  --min-top1 1 | grep -qx "PASS: KL mean 0 <= --max-kl 0; top-1 1 >= --min-top1 1"
set +e
"$replica" parity --reference "$ckpt" --candidate "$ckpt" --precision bf16 --tokens "$work/ids.npy" --threads 1 \
  --max-kl 0 >"$work/fail.txt"
code=$?
set -e
test "$code" = 1
grep -Eq "^FAIL: KL mean [0-9.e-]+ > --max-kl 0$" "$work/fail.txt"

$py -c "import numpy as np; np.save('$work/ids1.npy', np.load('$work/ids.npy')[:1])"
expect_failure "logits have shape [2, 96, V], the tokens are [1, 96]" \
  "$replica" parity --reference "$work/logits.npy" --candidate "$ckpt" --tokens "$work/ids1.npy"
echo "parity_cli: all checks passed"
