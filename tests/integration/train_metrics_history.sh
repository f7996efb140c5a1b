#!/usr/bin/env bash
# Review 2026-12-03 W2 (cases 24, 25): a resume keeps metrics.jsonl's history. Only an unterminated last line (a run
# killed mid-write) is dropped; a line in the middle that is not a metrics record, or a file that is not JSON lines
# at all (an HTML page written over it), stops the resume with metrics.jsonl:LINE (exit 2) and the file as it was.
# A report.html that cannot be written does not stop a run (case 44).
set -euo pipefail
source "$(dirname "$0")/ckpt_lib.bash"

train "$work/whole" train.max_steps=8 checkpoint.every=4
train "$work/run" train.max_steps=8 train.stop_at=4 checkpoint.every=4
cp -r "$work/run" "$work/pristine"
resume() { "$replica" train --config "$work/recipe.yaml" run.dir="$work/run" train.max_steps=8 checkpoint.every=4; }

# Case 25: one corrupt line in the middle.
sed -i '3s/.*/GARBAGE{not json/' "$work/run/metrics.jsonl"
cp "$work/run/metrics.jsonl" "$work/corrupt.jsonl"
expect_failure "$work/run/metrics.jsonl:3: not a metrics record" resume
grep -qF "a resume drops only a half-written last line" "$work/err"
cmp "$work/run/metrics.jsonl" "$work/corrupt.jsonl"
test ! -e "$work/run/checkpoints/step00000008"

# Case 24: metrics.jsonl replaced by a page (what `report --out RUN/metrics.jsonl` did before it was refused).
"$replica" report "$work/pristine" --out "$work/page.html" >/dev/null
cp "$work/page.html" "$work/run/metrics.jsonl"
expect_failure "$work/run/metrics.jsonl:1: not a metrics record" resume
cmp "$work/run/metrics.jsonl" "$work/page.html"

# A half-written last line is dropped, and the history equals an uninterrupted run's.
cp "$work/pristine/metrics.jsonl" "$work/run/metrics.jsonl"
printf '{"step": 5, "loss": 3.' >>"$work/run/metrics.jsonl"
resume >"$work/resume.log" 2>&1 || { cat "$work/resume.log"; exit 1; }
same_metrics "$work/run/metrics.jsonl" "$work/whole/metrics.jsonl" 8
echo "ok: a resume keeps the whole history and refuses a damaged one"

# Case 44: a report.html that cannot be written (a directory) is a warning, once, and the run trains to the end (case
# 119, the packing cache, is PackingCache.ACacheThatCannotBeWrittenIsAWarningNotAnError).
mkdir -p "$work/rh/report.html"
train "$work/rh" train.max_steps=4 eval.every=1 eval.batches=1 "data.validation_paths=[$work/other.npy]"
test "$(grep -c "warning: the run report was not written" "$work/rh.log")" -eq 1
grep -q '"step":4' "$work/rh/metrics.jsonl"
test ! -e "$work/rh/report.html.tmp"  # the failed rename takes its temporary with it
echo "ok: a report.html that cannot be written does not stop the run"
