#!/usr/bin/env bash
# replica forward on model directories written by the PyTorch reference: logits match the reference's (also for a
# config.json with every key of the released Olmo-3-1025-7B, YaRN included, at T past its original context), and
# broken model directories (missing tensor, wrong shape, truncated safetensors, bad config, a rope_type or YaRN
# factor replica refuses) exit 2 with a message naming the tensor, file or key.
set -euo pipefail
replica=$1
fixture=$FIXTURES/gqa_h4k1_tied_t77
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

check_forward() {  # model directory: replica's fp32 logits against the reference's
  "$replica" forward --model "$1" --tokens "$1/tokens.npy" --out "$work/logits.npy" --threads 2
  /usr/bin/python3 - "$work/logits.npy" "$1/logits_fp32.npy" <<'PY'
import sys, numpy as np
a, b = np.load(sys.argv[1]), np.load(sys.argv[2])
assert a.shape == b.shape and a.dtype == np.float32, (a.shape, b.shape, a.dtype)
err = np.abs(a - b).max() / np.abs(b).max()
assert err <= 1e-5, f"logits max relative error {err}"
print(f"forward: logits {a.shape} max relative error {err:.2e}")
PY
}
check_forward "$fixture"

released=$FIXTURES/released_7b_yarn
/usr/bin/python3 - "$released" <<'PY'
import json, sys
import numpy as np
c = json.load(open(sys.argv[1] + "/config.json"))
T = np.load(sys.argv[1] + "/tokens.npy").shape[1]
y = c["rope_scaling"]
assert y["rope_type"] == "yarn" and c["max_position_embeddings"] == 65536 and "layer_types" in c, c
assert T > y["original_max_position_embeddings"], (T, y)
print(f"released config: {len(c)} keys, YaRN factor {y['factor']}, T {T} > original context "
      f"{y['original_max_position_embeddings']}")
PY
check_forward "$released"

# Expects: the command fails with exit code 2 and stderr contains the given text.
expect_failure() {
  local text=$1
  shift
  set +e
  "$@" 2>"$work/err" >/dev/null
  local code=$?
  set -e
  if [ "$code" -ne 2 ] || ! grep -qF -- "$text" "$work/err"; then
    echo "FAIL: expected exit 2 and '$text' from: $*"; echo "got exit $code:"; cat "$work/err"; exit 1
  fi
  echo "ok: $(cat "$work/err")"
}

ref_tools="$2/tools/reference"
make_broken() {  # name, python statement editing `params` (a dict name -> tensor) or `config`, [model directory]
  mkdir -p "$work/$1"
  /usr/bin/python3 - "$ref_tools" "${3:-$fixture}" "$work/$1" "$2" <<'PY'
import sys, json
sys.path.insert(0, sys.argv[1])
import olmo3_ref as ref
config, params = ref.load_hf(sys.argv[2])
exec(sys.argv[4])
ref.save_hf(sys.argv[3], config, params)
PY
}

make_broken missing "del params['model.layers.1.mlp.up_proj.weight']"
expect_failure "missing tensor 'model.layers.1.mlp.up_proj.weight'" \
  "$replica" forward --model "$work/missing" --tokens "$fixture/tokens.npy" --out "$work/x.npy"

make_broken shape "params['model.norm.weight'] = params['model.norm.weight'][:-1]"
expect_failure "tensor 'model.norm.weight' has shape" \
  "$replica" forward --model "$work/shape" --tokens "$fixture/tokens.npy" --out "$work/x.npy"

make_broken truncated "pass"
size=$(stat -c %s "$work/truncated/model.safetensors")
truncate -s $((size - 100)) "$work/truncated/model.safetensors"
expect_failure "truncated" \
  "$replica" forward --model "$work/truncated" --tokens "$fixture/tokens.npy" --out "$work/x.npy"

make_broken badconfig "config['num_hidden_layerz'] = 2"
expect_failure "unknown model config key 'num_hidden_layerz'" \
  "$replica" forward --model "$work/badconfig" --tokens "$fixture/tokens.npy" --out "$work/x.npy"

make_broken linear "config['rope_scaling']['rope_type'] = 'linear'" "$released"
expect_failure "'rope_scaling.rope_type' is 'linear'" \
  "$replica" forward --model "$work/linear" --tokens "$released/tokens.npy" --out "$work/x.npy"
make_broken factor "config['rope_scaling']['factor'] = 0.0" "$released"
expect_failure "rope_scaling.factor must be positive" \
  "$replica" forward --model "$work/factor" --tokens "$released/tokens.npy" --out "$work/x.npy"

mkdir -p "$work/noweights" && cp "$fixture/config.json" "$work/noweights/"
expect_failure "no model.safetensors" \
  "$replica" forward --model "$work/noweights" --tokens "$fixture/tokens.npy" --out "$work/x.npy"
test ! -e "$work/x.npy" && test ! -e "$work/x.npy.tmp"
echo "forward_cli: all checks passed"
