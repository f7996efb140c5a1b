#!/usr/bin/env bash
# Packed mixes end to end through the CLI: `data info`, `data show` (document boundaries; ids equal to the numpy
# oracle tools/reference/packing_ref.py), `data order` (numpy's shuffle of the packed instance count), `data audit`
# of a packed recipe (its fingerprint is the one `replica train` records), and bad input (exit 2 naming the key).
# Args: $1 = replica binary, $2 = source dir.
set -euo pipefail
replica="$1"; src="$2"
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
cd "$work"

# Five files of EOS-terminated documents of a few lengths (many equal), up to 40 tokens (longer than seq_len 32).
/usr/bin/python3 - <<'PY'
import numpy as np
rng = np.random.default_rng(3)
for f in range(5):
    tokens = []
    for _ in range(120):
        n = int(rng.choice([1, 3, 8, 16, 31, 32, 40]))
        tokens += [int(t) for t in rng.integers(1, 1000, n - 1)] + [100257]
    np.array(tokens, dtype=np.uint32).tofile(f"f{f}.npy")
PY
files="f0.npy f1.npy f2.npy f3.npy f4.npy"
packing=(--seq-len 32 --packing obfd --source-group-size 2 --source-permutation-seed 123)
mkdir oracle
/usr/bin/python3 "$src/tools/reference/packing_ref.py" pack oracle 32 2 truncate 123 100257 100277 uint32 eos $files
n=$(/usr/bin/python3 -c "import numpy as np; print(np.load('oracle/input_ids.npy').shape[0])")

"$replica" data info --paths $files "${packing[@]}" > info.txt
grep -q "into $n instances of 32 in 3 groups" info.txt

# The packing cache: written on the first run, read on the second, a corrupt file reported and packed again; the
# instances are the same every time.
last=$((n - 1))
"$replica" data show --paths $files "${packing[@]}" --instance $last --ids > uncached.txt 2>/dev/null
"$replica" data info --paths $files "${packing[@]}" --work-dir cache | grep -q "0 of 3 groups read from the cache"
"$replica" data info --paths $files "${packing[@]}" --work-dir cache | grep -q "3 of 3 groups read from the cache"
[ "$(ls cache | wc -l)" = 3 ] || { ls cache; exit 1; }
victim=$(ls cache/packing-*.bin | head -1)
printf 'garbage' | dd of="$victim" bs=1 seek=64 conv=notrunc 2>/dev/null
"$replica" data show --paths $files "${packing[@]}" --work-dir cache --instance $last --ids > cached.txt 2> err.txt
grep -qF "packing cache: $victim: checksum mismatch; packing files" err.txt || { cat err.txt; exit 1; }
cmp uncached.txt cached.txt
"$replica" data info --paths $files "${packing[@]}" --work-dir cache | grep -q "3 of 3 groups read from the cache"

# Three instances, token ids and document boundaries, against the oracle.
for i in 0 $((n / 2)) $((n - 1)); do
  "$replica" data show --paths $files "${packing[@]}" --instance $i --ids > show_$i.txt 2> bounds_$i.txt
  /usr/bin/python3 - "$i" <<'PY'
import sys
import numpy as np
i = int(sys.argv[1])
ids = np.load("oracle/input_ids.npy")[i]
lens = np.load("oracle/doc_lens.npy")
counts = np.load("oracle/doc_counts.npy")
start = int(counts[:i].sum())
lens = lens[start : start + int(counts[i])]
docs = [line.split() for line in open(f"show_{i}.txt")]
bounds = open(f"bounds_{i}.txt").read().splitlines()
assert bounds[0].startswith(f"instance {i}: 32 tokens"), bounds
padded = ids[-1] == 100277
assert len(docs) == len(lens) - padded, (docs, lens)
position = 0
for k, (doc, length) in enumerate(zip(docs, lens)):
    assert [int(t) for t in doc] == ids[position : position + length].tolist(), (k, doc)
    assert bounds[1 + k].startswith(f"document {k}: [{position}, {position + length}) = tokens"), bounds[1 + k]
    position += int(length)
if padded:
    assert bounds[-1] == f"padding: [{position}, 32) = {32 - position} pad tokens", bounds[-1]
PY
done

# The global order is numpy's PCG64 shuffle of arange(number of packed instances).
"$replica" data order --paths $files "${packing[@]}" --seed 7 --global-batch 4 --out order.npy
/usr/bin/python3 - "$n" <<'PY'
import sys
import numpy as np
n = int(sys.argv[1])
expected = np.arange(n, dtype=np.uint32)
np.random.Generator(np.random.PCG64(7 + 1)).shuffle(expected)
assert (np.load("order.npy") == expected[: 4 * (n // 4)].reshape(-1, 4)).all()
PY

# A packed recipe: the audit sees every instance once per epoch and reports padding; its fingerprint is the run's.
cat > recipe.yaml <<YAML
model: {config: $src/configs/models/olmo3_tiny.yaml}
data: {paths: [f0.npy, f1.npy, f2.npy, f3.npy, f4.npy], seq_len: 32, seed: 7, global_batch_size: 4,
       micro_batch_size: 2, packing: obfd, source_group_size: 2, source_permutation_seed: 123}
train: {max_steps: 1}
YAML
"$replica" data audit --config recipe.yaml train.max_steps=80 > audit.txt
grep -q 'OK: no instance was read twice' audit.txt
grep -q '^padding tokens' audit.txt
"$replica" data audit --config recipe.yaml train.max_steps=80 data.packing=none > audit_plain.txt
[ "$(awk '/^fingerprint/ {print $2}' audit.txt)" != "$(awk '/^fingerprint/ {print $2}' audit_plain.txt)" ]
"$replica" train --config recipe.yaml run.dir=run train.threads=1 > train.log
recorded=$(/usr/bin/python3 -c "import json; print(json.load(open('run/checkpoints/step00000001/train_state.json'))['data']['fingerprint'])")
[ "$(awk '/^fingerprint/ {print $2}' audit.txt)" = "$recorded" ]

# Bad input: a packed sequence length that is not a power of two, an unknown packing (exit 2, naming the key).
if "$replica" data audit --config recipe.yaml data.seq_len=24 2> err.txt; then exit 1; else [ $? = 2 ]; fi
grep -q "data.seq_len" err.txt && grep -q "power of two" err.txt
# The flags are overrides of a recipe, so the refusal is the recipe's own, naming the key.
if "$replica" data info --paths $files --seq-len 24 --packing obfd 2> err.txt; then exit 1; else [ $? = 2 ]; fi
grep -q "data.seq_len" err.txt && grep -q "power of two" err.txt
if "$replica" data audit --config recipe.yaml data.packing=first_fit 2> err.txt; then exit 1; else [ $? = 2 ]; fi
grep -q "data.packing" err.txt
# Document boundaries from Dolma sidecars: written at the EOS positions (OLMo-core's write_document_indices), they
# pack exactly as the EOS scan does, under another fingerprint; a bad or missing sidecar, or metadata boundaries
# without packing, is exit 2 naming the file or key.
/usr/bin/python3 - <<'PY'
import gzip
import numpy as np
for f in range(5):
    tokens = np.fromfile(f"f{f}.npy", dtype=np.uint32)
    with gzip.open(f"f{f}.csv.gz", "wt") as out:
        start = 0
        for eos in (tokens == 100257).nonzero()[0]:
            out.write(f"{start},{eos + 1},doc\n")
            start = eos + 1
PY
meta=(--document-boundaries metadata)
"$replica" data show --paths $files "${packing[@]}" "${meta[@]}" --instance $last --ids > metadata.txt 2>/dev/null
cmp uncached.txt metadata.txt
"$replica" data audit --config recipe.yaml train.max_steps=80 data.document_boundaries=metadata > audit_meta.txt
[ "$(awk '/^fingerprint/ {print $2}' audit.txt)" != "$(awk '/^fingerprint/ {print $2}' audit_meta.txt)" ]
if "$replica" data audit --config recipe.yaml data.packing=none data.document_boundaries=metadata 2> err.txt; then
  exit 1; else [ $? = 2 ]; fi
grep -q "data.document_boundaries" err.txt
if "$replica" data info --paths $files --seq-len 32 "${meta[@]}" 2> err.txt; then exit 1; else [ $? = 2 ]; fi
grep -q "data.document_boundaries" err.txt
printf '0,5\n5,3\n' | gzip > f2.csv.gz
if "$replica" data info --paths $files "${packing[@]}" "${meta[@]}" 2> err.txt; then exit 1; else [ $? = 2 ]; fi
grep -q "f2.csv.gz line 2: document \[5, 3) is empty or reversed" err.txt || { cat err.txt; exit 1; }
rm f2.csv.gz
if "$replica" data info --paths $files "${packing[@]}" "${meta[@]}" 2> err.txt; then exit 1; else [ $? = 2 ]; fi
grep -q "f2.csv.gz: missing" err.txt || { cat err.txt; exit 1; }
echo "data packing: ok"
