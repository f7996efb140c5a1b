#!/usr/bin/env bash
# Review 2026-12-03 W2 and W4 with real files: an output that resolves to one of the command's inputs (the same
# path, through `./` and `..`, a symlink on either side, a hard link) or to a file of a training run is refused
# before any work (exit 2), naming both paths, and every input keeps its bytes. Commands: report, data tokenize,
# data encode, data order, forward, export-hf.
set -euo pipefail
source "$(dirname "$0")/ckpt_lib.bash"
export REPLICA_TOKENIZER="$src/tests/fixtures/data/cl100k_base.tiktoken"
cd "$work"

train "$work/r1" train.max_steps=4 checkpoint.every=2
md5sum r1/metrics.jsonl r1/config.yaml train.npy >sums
unchanged() { md5sum -c --quiet sums; }

# ---- W2: report --out --------------------------------------------------------------------------------------
expect_failure "--out r1/metrics.jsonl is the input r1/metrics.jsonl" "$replica" report r1 --out r1/metrics.jsonl
expect_failure "--out r1/config.yaml is the input r1/config.yaml" "$replica" report r1 --out r1/config.yaml
expect_failure "--out ./r1/../r1/metrics.jsonl is the input r1/metrics.jsonl (the same file once links and" \
  "$replica" report r1 --out ./r1/../r1/metrics.jsonl
ln -s r1/metrics.jsonl link.jsonl
expect_failure "--out link.jsonl is the input r1/metrics.jsonl" "$replica" report r1 --out link.jsonl
ln r1/metrics.jsonl hard.jsonl
expect_failure "--out r1/metrics.jsonl is the input hard.jsonl" "$replica" report hard.jsonl --out r1/metrics.jsonl
expect_failure "--out hard.jsonl is the input r1/metrics.jsonl" "$replica" report r1 --out hard.jsonl
# Given as a file, the history is still a run's: the output is named as part of it.
expect_failure "--out r1/metrics.jsonl is the input" "$replica" report r1/metrics.jsonl --out r1/metrics.jsonl
# The reference is an input too; a file of another run that is not given is still a run's file.
cp r1/metrics.jsonl ref.jsonl
expect_failure "--out ref.jsonl is the input ref.jsonl" "$replica" report r1 --reference ref.jsonl --out ref.jsonl
train "$work/r2" train.max_steps=4
expect_failure "--out r2/metrics.jsonl is a file of the training run" "$replica" report r1 --out r2/metrics.jsonl
# An existing file that is not a report, and a directory (case 26), are not replaced.
echo "my notes" >notes.txt
expect_failure "--out notes.txt: exists and is not an HTML report" "$replica" report r1 --out notes.txt
grep -qx "my notes" notes.txt
mkdir outdir
expect_failure "--out outdir: is a directory" "$replica" report r1 --out outdir
test ! -e outdir.tmp
# A report replaces a report, the run's own report.html included (a by-product, not the run's history).
"$replica" report r1 --out r1/report.html >/dev/null
"$replica" report r1 --out page.html >/dev/null
"$replica" report r1 --out page.html >/dev/null
head -c 15 page.html | grep -qx '<!DOCTYPE html>'
unchanged
echo "ok: report --out never replaces an input or a run's file"

# ---- W4: data tokenize --output ----------------------------------------------------------------------------
mkdir tok
printf '{"text":"hello world"}\n{"text":"second document"}\n' >tok/victim.jsonl
md5sum tok/victim.jsonl >>sums
tokenize() { "$replica" data tokenize "$@"; }
expect_failure "--output tok/victim.jsonl is the input tok/victim.jsonl" \
  tokenize --input tok/victim.jsonl --output tok/victim.jsonl
expect_failure "--output ./tok/../tok/victim.jsonl is the input tok/victim.jsonl" \
  tokenize --input tok/victim.jsonl --output ./tok/../tok/victim.jsonl
ln -s victim.jsonl tok/alias.jsonl
expect_failure "--output tok/victim.jsonl is the input tok/alias.jsonl" \
  tokenize --input tok/alias.jsonl --output tok/victim.jsonl
ln tok/victim.jsonl tok/hard.jsonl
expect_failure "--output tok/hard.jsonl is the input tok/victim.jsonl" \
  tokenize --input tok/victim.jsonl --output tok/hard.jsonl
printf 'tok/victim.jsonl\n' >tok/list.txt
md5sum tok/list.txt >>sums
expect_failure "--output tok/list.txt is the input tok/list.txt" tokenize --input-list tok/list.txt --output tok/list.txt
expect_failure "--output tok/victim.jsonl is the input tok/victim.jsonl" \
  tokenize --input-list tok/list.txt --output tok/victim.jsonl
# Case 100: a directory; case 101: a whitespace-only line of the list is skipped, a missing file named by its line.
expect_failure "--output tok: is a directory" tokenize --input tok/victim.jsonl --output tok
test ! -e tok.tmp
printf 'tok/victim.jsonl\n   \nnope.jsonl\n' >tok/list2.txt
expect_failure "tok/list2.txt:3: 'nope.jsonl' is not a file" tokenize --input-list tok/list2.txt --output t.u32
printf 'tok/victim.jsonl\n  \n' >tok/list3.txt
tokenize --input-list tok/list3.txt --output t.u32 >/dev/null
test -s t.u32
unchanged
echo "ok: data tokenize --output never replaces an input"

# ---- the other commands that write ------------------------------------------------------------------------
ckpt=r1/checkpoints/step00000004
expect_failure "--out $ckpt/hf is inside the checkpoint" \
  "$replica" export-hf --checkpoint "$ckpt" --out "$ckpt/hf"
expect_failure "--out $ckpt is the input $ckpt" "$replica" export-hf --checkpoint "$ckpt" --out "$ckpt"
test ! -e "$ckpt/hf"
expect_failure "--out train.npy is the input train.npy" \
  "$replica" forward --model "$ckpt" --tokens train.npy --seq-len 32 --out train.npy
expect_failure "--out $ckpt/model.safetensors" \
  "$replica" forward --model "$ckpt" --tokens train.npy --seq-len 32 --out "$ckpt/model.safetensors"
expect_failure "--out ./train.npy is the input train.npy" \
  "$replica" data order --paths train.npy --seq-len 64 --global-batch 4 --out ./train.npy
expect_failure "--out tok/victim.jsonl is the input tok/victim.jsonl" \
  "$replica" data encode --file tok/victim.jsonl --out tok/victim.jsonl
# Case 107: empty text gives no token file (every reader refuses an empty one).
expect_failure "the text to encode is empty" bash -c "printf '' | '$replica' data encode --out e.u32"
test ! -e e.u32
unchanged
"$replica" forward --model "$ckpt" --tokens train.npy --seq-len 32 --out logits.npy >/dev/null  # still verifies
echo "ok: forward, export-hf, data order and data encode never replace an input"
