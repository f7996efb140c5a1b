#!/usr/bin/env bash
# The tiny recipe's run (`make train`): fetch the tokenizer and real corpora, tokenize them, and train
# configs/recipes/tiny.yaml, printing held-out loss before and after, then a short greedy sample from the trained
# model (`replica generate` on the run directory). Each invocation is a new run in runs/tiny-<time> (a run
# directory that already holds checkpoints would be resumed instead).
# Extra arguments are recipe overrides, e.g. scripts/train-default.sh train.max_steps=100.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/fetch-data.sh --replica build/replica
run="runs/tiny-$(date +%Y%m%d-%H%M%S)"
for arg in "$@"; do  # a run.dir override names the run to sample from
  case $arg in run.dir=*) run=${arg#run.dir=} ;; esac
done
build/replica train --config configs/recipes/tiny.yaml run.dir="$run" "$@"
echo
echo "A sample from the trained model (build/replica generate --model $run --prompt ...):"
build/replica generate --model "$run" --prompt "The President said that" --max-new-tokens 40
