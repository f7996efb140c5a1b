#!/usr/bin/env bash
# replica report end to end: `train` leaves run.dir/report.html; two identical runs are bitwise identical and within
# the threshold, a run with another LR first differs at step 1 (its LR) and is outside it; a W&B CSV export with
# OLMo-core's metric names, written from a run's metrics.jsonl at full precision, reads back as the same run; bad
# input exits 2 naming the file and line.
set -euo pipefail
source "$(dirname "$0")/ckpt_lib.bash"

run_args=(train.max_steps=8 checkpoint.every=4 eval.every=4 eval.batches=2 "data.validation_paths=[$work/other.npy]")
train "$work/a" "${run_args[@]}"
train "$work/b" "${run_args[@]}"
train "$work/c" "${run_args[@]}" optim.lr=2.0e-2
grep -q 'data-chart="loss"' "$work/a/report.html"  # written by the trainer
test ! -e "$work/a/report.html.tmp"

"$replica" report "$work/a" "$work/b" "$work/c" --threshold 0 --out "$work/abc.html" >"$work/abc.txt"
cat "$work/abc.txt"
grep -q "^b vs a: identical at all 8 steps both logged in 1–8" "$work/abc.txt"
grep -q "^c vs a: first differs at step 1: lr " "$work/abc.txt"
grep -q "smoothed loss: max |Δ| 0 (step 1), mean |Δ| 0 over 8 steps both logged in 1–8, window 21 steps: WITHIN ±0 nat" \
  "$work/abc.txt"
grep -q "OUTSIDE ±0 nat" "$work/abc.txt"
# 8 steps against a 21-step window: the first and last loss of the run itself, not one mean twice.
first=$($py -c 'import json,sys; l=[json.loads(x) for x in open(sys.argv[1]) if "\"loss\"" in x]; print("%.4f → %.4f" % (l[0]["loss"], l[-1]["loss"]))' "$work/a/metrics.jsonl")
grep -q "  loss .* $first (every step: the run is shorter than two 21-step windows)" "$work/abc.txt"
# Three runs: one held-out chart of every run's "all", and one of each run's files.
for chart in heldout heldout-a heldout-b heldout-c; do grep -q "data-chart=\"$chart\"" "$work/abc.html"; done
grep -q "wrote $work/abc.html" "$work/abc.txt"
$py - "$work/abc.html" "$work/a/checkpoints/latest" <<'PY'
import re, sys
html = open(sys.argv[1]).read()
assert re.search(r'<tr data-run="b" data-first-difference="none" data-verdict="within">', html), "b row"
assert re.search(r'<tr data-run="c" data-first-difference="1" data-verdict="outside">', html), "c row"
for step in (0, 4, 8):
    assert f'<tr data-step="{step}">' in html, f"eval step {step} missing from the side-by-side table"
assert "ckpt-test" in html, "the resolved config is shown"
assert not re.search(r'<script|https?://(?!www\.w3\.org/2000/svg)', html), "the page fetches nothing and runs nothing"
print("ok: report of three runs")
PY

# A W&B history export of run a with OLMo-core's names; eval/lm/<set>/CE loss at the evaluation steps.
$py - "$work/a/metrics.jsonl" "$work/wandb.csv" <<'PY'
import csv, json, sys
names = {"ce": "train/CE loss", "z_loss": "train/Z loss", "lr": "optim/LR (group 0)",
         "grad_norm": "optim/total grad norm"}
rows = {}
for r in map(json.loads, open(sys.argv[1])):
    row = rows.setdefault(r["step"], {"_step": r["step"]})
    if "loss" in r:
        row.update({names[k]: repr(r[k]) for k in names})
        row["optim/step skipped"] = "1.0" if r["skipped"] else "0.0"
    else:
        row["eval/lm/other/CE loss"] = repr(r["eval"]["files"]["other"])
with open(sys.argv[2], "w", newline="") as f:
    w = csv.DictWriter(f, ["_step", *names.values(), "optim/step skipped", "eval/lm/other/CE loss"])
    w.writeheader()
    w.writerows(rows[s] for s in sorted(rows))
PY
"$replica" report "$work/b" --reference "$work/wandb.csv" --out "$work/ref.html" >"$work/ref.txt"
cat "$work/ref.txt"
grep -q "^b vs reference wandb: identical at all 8 steps both logged in 1–8" "$work/ref.txt"
grep -q "WITHIN ±0.01 nat" "$work/ref.txt"

# Newcomer review 2026-12-03 #1: a reference logged every other step (OLMo 3 logs every 10th) and the first half of a
# run, each with the run's own values, are identical and WITHIN even at a threshold of 0: the curves are compared on
# the steps both logged, not smoothed over their own points.
$py - "$work/wandb.csv" "$work/sparse.csv" "$work/b/metrics.jsonl" "$work/half.jsonl" <<'PY'
import csv, json, sys
rows = list(csv.DictReader(open(sys.argv[1])))
with open(sys.argv[2], "w", newline="") as f:
    w = csv.DictWriter(f, rows[0].keys())
    w.writeheader()
    w.writerows(r for r in rows if int(r["_step"]) % 2 == 0)
with open(sys.argv[4], "w") as f:
    f.writelines(line for line in open(sys.argv[3]) if json.loads(line)["step"] <= 4)
PY
"$replica" report "$work/b" --reference "$work/sparse.csv" --threshold 0 --out "$work/sparse.html" >"$work/sparse.txt"
cat "$work/sparse.txt"
grep -q "^b vs reference sparse: identical at all 4 steps both logged in 2–8" "$work/sparse.txt"
grep -q "mean |Δ| 0 over 4 steps both logged in 2–8, window 21 steps: WITHIN ±0 nat" "$work/sparse.txt"
"$replica" report "$work/half.jsonl" "$work/a" --threshold 0 --out "$work/half.html" >"$work/half.txt"
grep -q "identical at all 4 steps both logged in 1–4" "$work/half.txt"
grep -q "over 4 steps both logged in 1–4, window 21 steps: WITHIN ±0 nat" "$work/half.txt"

printf '_step,train/CE loss\n1,2.5\n2,"2.4\n' >"$work/open.csv"
expect_failure "$work/open.csv:3: a quoted field is not closed" "$replica" report "$work/a" --reference "$work/open.csv"
printf '_step,train/CE loss\n1,2.5\n2,n/a\n' >"$work/bad.csv"
expect_failure "$work/bad.csv:3:2: column 'train/CE loss': 'n/a' is not a number" \
  "$replica" report "$work/a" --reference "$work/bad.csv"
head -c 40 "$work/a/metrics.jsonl" >"$work/cut.jsonl"
expect_failure "$work/cut.jsonl:1: not a metrics record" "$replica" report "$work/cut.jsonl"
expect_failure "$work/nothing: no such run directory or file" "$replica" report "$work/nothing"
expect_failure "smoothing window 4 steps: expected an odd number" "$replica" report "$work/a" --window 4
test ! -e "$work/report.html"
echo "ok: report compares runs and references, refuses bad input"
