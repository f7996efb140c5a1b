#!/usr/bin/env bash
# The embedded default run (`make train`): fetch the tokenizer and real corpora, tokenize them, and train
# configs/recipes/tiny.yaml, printing held-out loss before and after. Extra arguments are recipe overrides.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/fetch-data.sh --replica build/replica
exec build/replica train --config configs/recipes/tiny.yaml "$@"
