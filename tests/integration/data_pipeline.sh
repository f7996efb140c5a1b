#!/usr/bin/env bash
# End to end through the CLI: tokenize text and JSONL (identical for any --jobs, EOS after each document,
# bad JSONL named by file and line), inspect, write the global order (equal to numpy's), audit a run.
# Args: $1 = replica binary, $2 = source dir.
set -euo pipefail
replica="$1"; src="$2"
ranks="$src/tests/fixtures/data/cl100k_base.tiktoken"
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
cd "$work"

# Documents: two plain-text files and a JSONL file with two documents (one field ignored, one blank line).
printf 'Hello world' > a.txt
printf 'Ünïcödé ✓ 你好\n' > b.txt
printf '{"text": "First doc", "id": 1}\n\n{"text": "Second"}\n' > c.jsonl
"$replica" data tokenize --input a.txt b.txt c.jsonl --output one.npy --jobs 1 --tokenizer "$ranks"
"$replica" data tokenize --input a.txt b.txt c.jsonl --output two.npy --jobs 2 --tokenizer "$ranks"
cmp one.npy two.npy
# "Hello world" = [9906, 1917]; each document ends with EOS 100257; 4 documents in input order.
ids="$(od -An -tu4 -v one.npy | tr -s ' \n' ' ' | sed 's/^ //;s/ $//')"
case "$ids" in "9906 1917 100257 "*" 100257 5451 4733 100257 16041 100257") ;; *) echo "unexpected ids: $ids"; exit 1 ;; esac
[ "$(echo "$ids" | tr ' ' '\n' | grep -c '^100257$')" = 4 ]
[ ! -e one.npy.tmp ]

# A bad JSONL line is reported with file and line; nothing is written.
printf '{"text": "ok"}\n{"text": 5}\n' > bad.jsonl
if "$replica" data tokenize --input a.txt bad.jsonl --output bad.npy --tokenizer "$ranks" 2> err.txt; then exit 1; fi
grep -q 'bad.jsonl:2' err.txt
[ ! -e bad.npy ] && [ ! -e bad.npy.tmp ]
printf '{"text": "unterminated\n' > broken.jsonl
if "$replica" data tokenize --input broken.jsonl --output bad.npy --tokenizer "$ranks" 2> err.txt; then exit 1; fi
grep -q 'broken.jsonl:1: invalid JSON' err.txt

# A token file of 10000 instances of 8 tokens: order, info and audit.
/usr/bin/python3 -c "import numpy as np; np.arange(80000 + 5, dtype=np.uint32).__mod__(100000).tofile('tokens.npy')"
"$replica" data info --paths tokens.npy --seq-len 8 --global-batch 64 | grep -q '10000 instances'
"$replica" data order --paths tokens.npy --seq-len 8 --seed 34521 --epoch 1 --global-batch 64 --out order.npy
/usr/bin/python3 - <<'PY'
import numpy as np
expected = np.arange(10000, dtype=np.uint32)
np.random.Generator(np.random.PCG64(34521 + 1)).shuffle(expected)
got = np.load("order.npy")
assert got.dtype == np.uint32 and got.shape == (156, 64), (got.dtype, got.shape)
assert (got == expected[: 156 * 64].reshape(156, 64)).all()
PY
"$replica" data audit --paths tokens.npy --seq-len 8 --global-batch 64 --steps 312 --world-size 4 --micro-batch 4 > audit.txt
grep -q 'OK: no instance was read twice' audit.txt
grep -Eq '^epochs planned +2.0000 ' audit.txt
# One column of values: every row's value starts where the first row's does.
/usr/bin/python3 - audit.txt <<'PY'
import re, sys
rows = [l for l in open(sys.argv[1]) if l[0].isalpha() and not l.startswith(("fingerprint", "OK", "ERROR"))]
starts = {re.match(r"^.*?\S  +", l).end() for l in rows}
assert len(rows) > 8 and len(starts) == 1, f"values start at columns {starts}"
PY
# The same plan read from a recipe (data files, seq_len, seed, batch sizes and steps). Its model has the dolma2 vocab
# (the tokens go up to 99,999) and is narrow: the runs below are trained for the fingerprint their checkpoints record.
cat > audit_recipe.yaml <<YAML
model: {config: $src/tests/integration/dolma2_narrow.yaml}
data: {paths: [tokens.npy], seq_len: 8, seed: 34521, global_batch_size: 64, micro_batch_size: 4}
train: {max_steps: 312}
YAML
"$replica" data audit --config audit_recipe.yaml --world-size 4 > audit_recipe.txt
cmp <(grep -v fingerprint audit.txt) <(grep -v fingerprint audit_recipe.txt)
# The audit of a recipe reports the fingerprint its run records (the loader of both: train/recipe.h loader_config),
# with the instance filter off and on.
for filter in false true; do
  "$replica" data audit --config audit_recipe.yaml data.instance_filter=$filter > audit_$filter.txt
  "$replica" train --config audit_recipe.yaml run.dir=run_$filter data.instance_filter=$filter train.max_steps=1 \
    train.threads=1 > train_$filter.log
  audited=$(awk '/^fingerprint/ {print $2}' audit_$filter.txt)
  recorded=$(/usr/bin/python3 -c "import json; print(json.load(open('run_$filter/checkpoints/step00000001/train_state.json'))['data']['fingerprint'])")
  [ -n "$audited" ] && [ "$audited" = "$recorded" ] || { echo "audit $audited, run $recorded (filter $filter)"; exit 1; }
  grep -q "data $recorded" train_$filter.log
done
[ "$(awk '/^fingerprint/ {print $2}' audit_false.txt)" != "$(awk '/^fingerprint/ {print $2}' audit_true.txt)" ]

# Corrupt inputs are errors (exit 2) that name the file.
head -c 10 tokens.npy > short.npy
if "$replica" data info --paths short.npy 2> err.txt; then exit 1; else [ $? = 2 ]; fi
grep -q 'short.npy: truncated' err.txt
: > empty.npy
if "$replica" data info --paths empty.npy 2> err.txt; then exit 1; fi
grep -q 'empty.npy: empty token file' err.txt
echo "data pipeline: ok"
