#!/usr/bin/env bash
# The stamp of the sources a device bundle is built from (scripts/device-bundle.sh writes it into the bundle as
# STAMP; bench/gpu/run.sh compares it with the tree it runs in):
#   commit  <git commit>[+changes]   (what the tree was at; "unknown" outside a git checkout)
#   sources <sha256>                 (of every file under src/ tests/ bench/ configs/ scripts/, path and content)
# The sources are the files the device tool copies (tracked, and untracked but not ignored: `git ls-files -co
# --exclude-standard`), or outside a git checkout (the device machine's copy of the tree) every file there but
# Python's caches, so the two agree on the same tree.
#   scripts/source-stamp.sh            both lines
#   scripts/source-stamp.sh --sources  the hash alone
set -euo pipefail
cd "$(dirname "$0")/.."
dirs=(src tests bench configs scripts)
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  files=$(git ls-files -co --exclude-standard -- "${dirs[@]}" | while read -r f; do [ -f "$f" ] && echo "$f"; done)
  commit=$(git rev-parse HEAD)$(git diff --quiet HEAD -- "${dirs[@]}" 2>/dev/null || echo +changes)
else
  files=$(find "${dirs[@]}" -name __pycache__ -prune -o -type f ! -name '*.pyc' -print)
  commit=unknown
fi
sources=$(LC_ALL=C sort <<<"$files" | tr '\n' '\0' | xargs -0 sha256sum | sha256sum | cut -d' ' -f1)
if [ "${1:-}" = --sources ]; then echo "$sources"; else printf 'commit %s\nsources %s\n' "$commit" "$sources"; fi
