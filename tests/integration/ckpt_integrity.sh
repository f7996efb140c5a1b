#!/usr/bin/env bash
# Review 2026-12-03 W1 and W3 with real checkpoints. W1: a step directory of checkpoints/ that is a symbolic link to
# another run's checkpoint is never counted, rotated or deleted through; the other run keeps every file. W3: a
# MANIFEST.json that leaves out a file its reader opens, or has another version or hash, is refused (exit 2) by
# forward, export-hf and a resume, so a corrupted unlisted file is never loaded nor certified by the next save.
set -euo pipefail
source "$(dirname "$0")/ckpt_lib.bash"

# ---- W1: a linked step directory ----------------------------------------------------------------------------
train "$work/victim" train.max_steps=4
victim="$work/victim/checkpoints/step00000004"
(cd "$victim" && md5sum ./* | sort) >"$work/victim.md5"
train "$work/sym" train.max_steps=8 train.stop_at=4 checkpoint.keep=1
ln -s ../../victim/checkpoints/step00000004 "$work/sym/checkpoints/step00000001"
"$replica" train --config "$work/recipe.yaml" run.dir="$work/sym" train.max_steps=8 checkpoint.keep=1 \
  >"$work/sym2.log" 2>&1
grep -qF "ignored $work/sym/checkpoints/step00000001: a symbolic link" "$work/sym2.log"
grep -qF "resuming from $work/sym/checkpoints/step00000004 (step 4" "$work/sym2.log"  # never from the link
(cd "$victim" && md5sum ./* | sort) | diff "$work/victim.md5" -
test -L "$work/sym/checkpoints/step00000001"  # keep=1 rotated step 4 away, not the link nor through it
test ! -e "$work/sym/checkpoints/step00000004" && test -d "$work/sym/checkpoints/step00000008"
"$replica" forward --model "$victim" --tokens "$work/train.npy" --seq-len 32 --out "$work/victim_logits.npy" >/dev/null
echo "ok: rotation with a linked step directory left the other run's checkpoint intact"

# A run whose only step directory is a link has no checkpoint of its own: it starts afresh, the link untouched.
mkdir -p "$work/fresh/checkpoints"
ln -s "$victim" "$work/fresh/checkpoints/step00000004"
"$replica" train --config "$work/recipe.yaml" run.dir="$work/fresh" train.max_steps=4 >"$work/fresh.log" 2>&1
! grep -q "resuming from" "$work/fresh.log"
(cd "$victim" && md5sum ./* | sort) | diff "$work/victim.md5" -
echo "ok: a linked step directory is not resumed from"

# ---- W3: a manifest with gaps -------------------------------------------------------------------------------
train "$work/run" train.max_steps=8 train.stop_at=4
good="$work/run/checkpoints/step00000004"
edited() {  # name, python statement on the manifest m: a copy of the good checkpoint with MANIFEST.json edited
  rm -rf "$work/$1" && cp -r "$good" "$work/$1"
  $py - "$work/$1/MANIFEST.json" "$2" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
exec(sys.argv[2])
json.dump(m, open(sys.argv[1], "w"))
PY
}
resume() { "$replica" train --config "$work/recipe.yaml" run.dir="$work/run" train.max_steps=8 "$@"; }

# The review's case 87: model.safetensors unlisted and 4 KiB of its weights zeroed.
edited nomodel 'del m["files"]["model.safetensors"]'
dd if=/dev/zero of="$work/nomodel/model.safetensors" bs=1 seek=300000 count=4096 conv=notrunc status=none
expect_failure "nomodel/MANIFEST.json: does not list model.safetensors" resume train.resume_from="$work/nomodel"
expect_failure "nomodel/MANIFEST.json: does not list model.safetensors" \
  "$replica" forward --model "$work/nomodel" --tokens "$work/train.npy" --seq-len 32 --out "$work/l.npy"
expect_failure "nomodel/MANIFEST.json: does not list model.safetensors" \
  "$replica" export-hf --checkpoint "$work/nomodel" --out "$work/hf_nomodel"
test ! -e "$work/l.npy" && test ! -e "$work/hf_nomodel"

# A resume reads the Adam moments too; forward reads only the weights and the state.
edited nooptim 'del m["files"]["optim.safetensors"]'
expect_failure "nooptim/MANIFEST.json: does not list optim.safetensors" resume train.resume_from="$work/nooptim"
"$replica" forward --model "$work/nooptim" --tokens "$work/train.npy" --seq-len 32 --out "$work/l.npy" >/dev/null
edited nostate 'del m["files"]["train_state.json"]'
expect_failure "nostate/MANIFEST.json: does not list train_state.json" \
  "$replica" forward --model "$work/nostate" --tokens "$work/train.npy" --seq-len 32 --out "$work/l2.npy"

# The review's case 88: another format's version and hash.
edited version99 'm["version"] = 99'
expect_failure "version99/MANIFEST.json: 'version' is 99, expected 1" \
  "$replica" forward --model "$work/version99" --tokens "$work/train.npy" --seq-len 32 --out "$work/l3.npy"
edited md5 'm["hash"] = "md5"'
expect_failure "md5/MANIFEST.json: 'hash' is \"md5\", expected \"xxh3_128\"" resume train.resume_from="$work/md5"
edited noversion 'del m["version"]'
expect_failure "noversion/MANIFEST.json: 'version' is missing, expected 1" resume train.resume_from="$work/noversion"

# The run's own latest checkpoint with model.safetensors unlisted: the resume stops before training, and the run
# directory is unchanged (no step written, no manifest re-certifying the file).
$py - "$good/MANIFEST.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1])); del m["files"]["model.safetensors"]; json.dump(m, open(sys.argv[1], "w"))
PY
(cd "$work/run" && find . -type f ! -path './tb/*' ! -name .lock -exec md5sum {} + | sort) >"$work/before"
expect_failure "step00000004/MANIFEST.json: does not list model.safetensors" resume
(cd "$work/run" && find . -type f ! -path './tb/*' ! -name .lock -exec md5sum {} + | sort) | diff "$work/before" -
echo "ok: every manifest with a gap is refused and nothing was written"
