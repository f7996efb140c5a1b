#!/usr/bin/env bash
# The command line's front door: --version names the commit, `help [COMMAND]` prints help, a mistyped command is
# refused with a suggestion (exit 2), and no command at all says one is required.
set -euo pipefail
replica=$1
src=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

for form in --version version; do
  "$replica" $form >"$work/version.txt"
  grep -Eq "^replica [0-9a-f]{12}(-dirty)? \((Release|Debug|RelWithDebInfo)" "$work/version.txt" ||
    grep -q "^replica unknown (not a git checkout)" "$work/version.txt" || { cat "$work/version.txt"; exit 1; }
done
if git -C "$src" rev-parse --git-dir >/dev/null 2>&1; then
  grep -q "$(git -C "$src" rev-parse --short=12 HEAD)" "$work/version.txt"
fi
"$replica" help | grep -q "Also: replica --version, replica help \[COMMAND\]"
"$replica" help train | grep -q -- "--config"
"$replica" --help | grep -q "Subcommands:"

expect_exit2() {  # expect_exit2 TEXT CMD...: exit 2 with TEXT on stderr
  local text=$1 code=0
  shift
  "$@" >"$work/out" 2>"$work/err" || code=$?
  [ "$code" = 2 ] && grep -qF -- "$text" "$work/err" || {
    echo "FAIL: expected exit 2 and '$text' from: $*; got exit $code:"; cat "$work/err"; exit 1; }
}
expect_exit2 "unknown command 'trian' (did you mean 'train'?)" "$replica" trian --config x.yaml
expect_exit2 "help: unknown command 'evl' (did you mean 'eval'?)" "$replica" help evl
expect_exit2 "A subcommand is required" "$replica"
echo "cli_entry: OK"
