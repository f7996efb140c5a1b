#!/usr/bin/env bash
# The reliability review's crafted inputs through the CLI (docs/reliability.md): each exits 2 with a message naming
# the file or flag, where it used to read out of bounds, abort on an uncaught exception or run on nonsense.
set -euo pipefail
source "$(dirname "$0")/ckpt_lib.bash"
cd "$work"

# D2: a 132-byte .npy whose header claims 2^62 + 1 uint32 tokens (the byte count wraps to 4).
$py - <<'PY'
import struct
def npy(name, shape):
    h = ("{'descr': '<u4', 'fortran_order': False, 'shape': %s, }" % shape).encode()
    h += b' ' * ((64 - (10 + len(h) + 1) % 64) % 64) + b'\n'
    open(name, 'wb').write(b'\x93NUMPY\x01\x00' + struct.pack('<H', len(h)) + h + b'\0\0\0\0')
npy('evil.npy', '(4611686018427387905,)')
npy('text_shape.npy', '(abc,)')
PY
expect_failure "evil.npy: truncated .npy data" "$replica" data info --paths evil.npy --seq-len 64
expect_failure "evil.npy: truncated .npy data" "$replica" data show --paths evil.npy --seq-len 64 --instance 100
# D5: std::stoll on the shape, std::bad_alloc from reading a directory.
expect_failure "dimension 'abc' is not a non-negative integer" "$replica" data info --paths text_shape.npy --seq-len 64
expect_failure "$work: is a directory (expected a file)" "$replica" data info --mix "$work" --seq-len 64
expect_failure "$work: is a directory (expected a file)" "$replica" data info --paths "$work" --seq-len 64
# D13, D14: nonsense flag values.
expect_failure "--instance" "$replica" data show --paths train.npy --seq-len 64 --instance -1
expect_failure "--seq-len" "$replica" data info --paths train.npy --seq-len -64
expect_failure "--seq-len" "$replica" plan --model model.yaml --seq-len -1
expect_failure "--threads" "$replica" forward --model model.yaml --tokens evil.npy --out l.npy --threads 100000
# D14: tokenizing nothing writes nothing.
: > empty.jsonl
expect_failure "empty.jsonl: no documents to tokenize" "$replica" data tokenize --input empty.jsonl \
  --output empty.npy --tokenizer "$src/tests/fixtures/data/cl100k_base.tiktoken"
test ! -e empty.npy && test ! -e empty.npy.tmp
echo "crafted inputs: all refused with exit 2"
