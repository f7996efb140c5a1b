#!/usr/bin/env bash
# The tiny recipe's run (`make train`): fetch the tokenizer and real corpora, tokenize them, and train
# configs/recipes/tiny.yaml, printing held-out loss before and after, then a short sample from the trained model
# (`replica generate` on the run directory). The sample is drawn at temperature 0.8 among the 200 most probable tokens
# with a fixed seed (nanoGPT's sample.py defaults), not greedily: after 300 steps (held-out loss ~6.1) greedy decoding
# falls into a loop at once ("The President said that the,,,,,,,,"), which shows the decoder, not what the model
# learned; the seeded draw is as reproducible. Each invocation is a new run in runs/tiny-<time> (a run
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
sample=(--prompt "The President said that" --max-new-tokens 40 --temperature 0.8 --top-k 200 --seed 0)
printed=$(printf '%q ' "${sample[@]}")
echo "A sample from the trained model (build/replica generate --model $run ${printed% }):"
build/replica generate --model "$run" "${sample[@]}"
