#!/usr/bin/env bash
# The embedded default run (`make train`): fetch the tokenizer and real corpora, tokenize them, and train
# configs/recipes/tiny.yaml, printing held-out loss before and after. Each invocation is a new run in
# runs/tiny-<time> (a run directory that already holds checkpoints would be resumed instead).
# Extra arguments are recipe overrides, e.g. scripts/train-default.sh train.max_steps=100.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/fetch-data.sh --replica build/replica
exec build/replica train --config configs/recipes/tiny.yaml run.dir="runs/tiny-$(date +%Y%m%d-%H%M%S)" "$@"
