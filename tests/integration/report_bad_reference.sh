#!/usr/bin/env bash
# Review 2026-12-03 W5 and the report cases with real files: a W&B panel export of two runs (or a duplicated column)
# and `nan`/`inf` cells are refused with file:line:column (exit 2) instead of a verdict on a stitched or NaN curve; a
# threshold that is not a finite number ≥ 0 is refused; extreme values and steps give a chart without NaN; eval
# entries that are not objects, a metrics.jsonl that is a directory, are refused; a damaged train_state.json costs
# the fingerprint line, not the report; a byte order mark before the CSV header is read.
set -euo pipefail
source "$(dirname "$0")/ckpt_lib.bash"
cd "$work"

train "$work/base" train.max_steps=4
report() { "$replica" report "$@"; }

# ---- W5: the reference ------------------------------------------------------------------------------------
printf 'Step,runA - train/CE loss,runB - train/CE loss\n1,11.0,\n2,10.0,4.0\n3,9.0,\n' >w_mix.csv
expect_failure "w_mix.csv:1: columns 'runA - train/CE loss' and 'runB - train/CE loss' both hold the metric ce" \
  report w_mix.csv --window 1 --out mix.html
expect_failure "w_mix.csv:1: columns 'runA - train/CE loss' and 'runB - train/CE loss'" \
  report base --reference w_mix.csv --out mix.html
printf '_step,train/CE loss,train/CE loss\n1,11.0,11.0\n' >w_dup.csv
expect_failure "w_dup.csv:1: columns 'train/CE loss' and 'train/CE loss' both hold the metric ce" \
  report base --reference w_dup.csv --out dup.html
printf '_step,train/CE loss,train/Z loss\n1,nan,0.001\n2,inf,0.001\n3,10.5,0.001\n' >w_nan.csv
expect_failure "w_nan.csv:2:2: column 'train/CE loss': 'nan' is not a finite number" \
  report base --reference w_nan.csv --out nan.html
printf '_step,train/CE loss\n1,10.5\n2,-inf\n' >w_inf.csv
expect_failure "w_inf.csv:3:2: column 'train/CE loss': '-inf' is not a finite number" \
  report base --reference w_inf.csv --out inf.html
test ! -e mix.html && test ! -e dup.html && test ! -e nan.html && test ! -e inf.html
# Case 41: a UTF-8 byte order mark before the header.
printf '\xef\xbb\xbf_step,train/CE loss\n1,10.5\n2,10.4\n' >w_bom.csv
report base --reference w_bom.csv --out bom.html >bom.txt
grep -q "reference w_bom" bom.txt
# Case 28: the threshold.
for t in nan -1 inf; do
  expect_failure "threshold $t nat: expected a finite number ≥ 0" report base base --threshold "$t" --out t.html
done
echo "ok: a reference that mixes runs or holds NaN is refused"

# ---- cases 30-33: what metrics.jsonl may hold --------------------------------------------------------------
printf '{"step":1,"loss":1e308}\n{"step":2,"loss":-1e308}\n{"step":3,"loss":1e308}\n' >m_extreme.jsonl
report m_extreme.jsonl --out extreme.html >extreme.txt
! grep -qi 'nan' extreme.html
grep -q '1e+308 → 1e+308' extreme.txt  # four significant digits, not 309 of fixed notation
printf '{"step":1,"loss":2.0}\n{"step":9223372036854775807,"loss":2.0}\n' >m_steps.jsonl
report m_steps.jsonl --out steps.html >steps.txt
! grep -qi 'nan' steps.txt steps.html
printf '{"step":-5,"loss":2.0}\n' >m_negative.jsonl
expect_failure 'm_negative.jsonl:1: "step" is -5, expected a step number ≥ 0' report m_negative.jsonl --out neg.html
printf '{"step":1,"eval":"x"}\n' >m_eval_scalar.jsonl
expect_failure "m_eval_scalar.jsonl:1: \"eval\" is \"x\", expected an object" \
  report m_eval_scalar.jsonl --out e.html
printf '{"step":1,"eval":{"files":[1,2]}}\n' >m_eval_files.jsonl
expect_failure "\"eval.files\" is [1,2], expected an object" report m_eval_files.jsonl --out e.html
mkdir -p dirm/metrics.jsonl
expect_failure "dirm/metrics.jsonl: not a file" report dirm --out dirm.html
test ! -e dirm.html
echo "ok: extreme values chart without NaN; malformed histories are refused"

# ---- case 38: a damaged train_state.json -------------------------------------------------------------------
cp -r base r3
echo "{garbage" >r3/checkpoints/step00000004/train_state.json
report r3 --out r3.html >r3.txt 2>r3.err
grep -qF "r3/checkpoints/step00000004/train_state.json: not a train_state.json" r3.err
grep -q "the report shows no data fingerprint" r3.err
test -s r3.html
echo "ok: a damaged checkpoint costs the fingerprint line, not the report"
