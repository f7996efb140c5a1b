#!/usr/bin/env bash
# What a run prints: plain progress lines off a terminal, under mpirun or on request, and every log_every-th line
# kept on one; eval.every=0 evaluates nothing; a resume repeats the held-out summary of the whole run; a signal
# saves and exits without the final evaluation; the MFU peak is measured once and cached, and an MFU that would
# exceed 100 % is "n/a"; an error every rank raises is printed once.
set -euo pipefail
source "$(dirname "$0")/ckpt_lib.bash"
export XDG_CACHE_HOME="$work/cache"
held_out=(data.validation_paths="[$work/other.npy]" eval.batches=1)
sed -i 's/warmup_steps: 3/warmup_steps: 1/' "$work/recipe.yaml"  # runs of 2 steps

# Off a terminal: plain lines, every log_every-th step and the last; the peak is measured now and cached.
train "$work/plain" train.max_steps=5 train.log_every=2
! grep -q $'[\r\033]' "$work/plain.log"
grep -q "^step 2/5 " "$work/plain.log" && grep -q "^step 5/5 " "$work/plain.log" && ! grep -q "^step 3/5 " "$work/plain.log"
grep -q "measured now, cached in $XDG_CACHE_HOME/replica/peak.json" "$work/plain.log"
test -s "$XDG_CACHE_HOME/replica/peak.json"
train "$work/cached" train.max_steps=2
grep -q "peak .* (bf16, cached in $XDG_CACHE_HOME/replica/peak.json; the MFU denominator)" "$work/cached.log"
echo "ok: plain lines off a terminal; the peak measured once, then read from the cache"

# On a terminal (script(1) gives the run a pty): the live line, with steps 2 and 4 kept in the scrollback.
on_tty() { script -qec "$*" /dev/null; }
on_tty "$replica" train --config "$work/recipe.yaml" run.dir="$work/tty" train.max_steps=4 train.log_every=2 \
  >"$work/tty.log"
$py - "$work/tty.log" <<'PY'
import sys
out = open(sys.argv[1], "rb").read().decode().replace("\r\n", "\n")  # the pty writes a newline as \r\n
shown = {}
for piece in out.split("\r"):  # each live-line rewrite starts with \r
    piece = piece.removeprefix("\033[K")
    if piece.startswith("step "):
        shown[piece.split()[1]] = piece
assert set(shown) == {"1/4", "2/4", "3/4", "4/4"}, shown
for step, text in shown.items():  # a kept line ends with a newline; a live one is overwritten by the next
    assert text.endswith("\n") == (step in ("2/4", "4/4")), (step, text)
PY
for plain in "env OMPI_COMM_WORLD_RANK=0" "env PMI_RANK=0" "env"; do
  extra=$([ "$plain" = env ] && echo train.progress=plain || true)
  rm -rf "$work/tty2"
  on_tty $plain "$replica" train --config "$work/recipe.yaml" run.dir="$work/tty2" train.max_steps=2 $extra \
    >"$work/tty2.log"
  # (the pty ends every line with \r\n; a live line is a \r of its own, or ESC)
  ! grep -qP '\r(?!$)|\033' "$work/tty2.log" ||
    { echo "FAIL: live line with '$plain $extra'"; cat -A "$work/tty2.log"; exit 1; }
done
echo "ok: a terminal keeps every log_every-th line; mpirun's variables and train.progress=plain give plain lines"

# A cached peak below what a step achieves (measured under load) is measured again after that step, and the better
# peak cached: MFU from that step on, never above 100 %.
$py - "$XDG_CACHE_HOME/replica/peak.json" <<'PY'
import json, sys
cache = json.load(open(sys.argv[1]))
json.dump({key: 1000.0 for key in cache}, open(sys.argv[1], "w"))
PY
train "$work/low" train.max_steps=2
grep -q "peak measured again at step 1: .* above the 0 GFLOP/s peak (cached in .*); now .* GFLOP/s (measured now" \
  "$work/low.log" || { echo "FAIL: the low peak was not measured again"; cat "$work/low.log"; exit 1; }
! grep -q "MFU n/a" "$work/low.log"
$py - "$work/low/metrics.jsonl" "$XDG_CACHE_HOME/replica/peak.json" <<'PY'
import json, sys
steps = [json.loads(l) for l in open(sys.argv[1]) if '"loss"' in l]
assert steps and all(0 < s["mfu"] <= 1 for s in steps), steps
assert all(v > 1000.0 for v in json.load(open(sys.argv[2])).values()), "the better peak is cached"
PY
echo "ok: a cached peak below the achieved rate is measured again"

# eval.every=0: no evaluation at all, held-out files or not.
train "$work/off" train.max_steps=2 "${held_out[@]}" eval.every=0
! grep -q "held-out" "$work/off.log"
! grep -q '"eval"' "$work/off/metrics.jsonl"
echo "ok: eval.every=0 evaluates nothing"

# A resume repeats the whole run's summary: the step-0 held-out loss comes from metrics.jsonl.
train "$work/split" train.max_steps=4 "${held_out[@]}" eval.every=2 train.stop_at=2
at_zero=$(grep -o "held-out loss: [0-9.]* at step 0" "$work/split.log")
train "$work/split" train.max_steps=4 "${held_out[@]}" eval.every=2
grep -q "resuming from" "$work/split.log" && grep -q "$at_zero -> [0-9.]* at step 4" "$work/split.log"
echo "ok: the resumed run prints '$at_zero -> ... at step 4'"

# SIGTERM: the step's checkpoint is saved, the final evaluation skipped, exit 130.
$py - "$replica" "$work" "${held_out[@]}" <<'PY'
import json, os, signal, subprocess, sys, time
replica, work, held_out = sys.argv[1], sys.argv[2], sys.argv[3:]
run = f"{work}/term"
p = subprocess.Popen([replica, "train", "--config", f"{work}/recipe.yaml", f"run.dir={run}", "train.max_steps=100000",
                      "eval.every=1000", *held_out], stdout=open(f"{run}.log", "w"), stderr=subprocess.STDOUT)
deadline = time.time() + 120
while not (os.path.exists(f"{run}/metrics.jsonl") and '"loss"' in open(f"{run}/metrics.jsonl").read()):
    assert p.poll() is None and time.time() < deadline, "no step was logged"
    time.sleep(0.01)
p.send_signal(signal.SIGTERM)
assert p.wait() == 130, p.returncode
log = open(f"{run}.log").read()
assert "by a signal: checkpoint saved, final evaluation skipped" in log, log
assert "the final evaluation is skipped after a stop" in log, log
evals = [json.loads(l)["step"] for l in open(f"{run}/metrics.jsonl") if '"eval"' in l]
assert evals == [0], evals
PY
echo "ok: SIGTERM saves and exits 130 without the final evaluation"

# train.max_seconds: the run stops at a step boundary once its time is up, as a signal stops it (checkpoint saved,
# no final evaluation), but exits 0; the same command with the limit lifted resumes and ends on the
# uninterrupted run's bytes.
"$replica" train --config "$work/recipe.yaml" run.dir="$work/budget" train.max_steps=6 checkpoint.every=100 \
  train.max_seconds=0.001 >"$work/budget.log" 2>&1 || { echo "FAIL: exit $?"; cat "$work/budget.log"; exit 1; }
grep -q "stopped after step 1 at train.max_seconds=0.001: checkpoint saved, final evaluation skipped" "$work/budget.log"
test -d "$work/budget/checkpoints/step00000001"
train "$work/budget" train.max_steps=6 checkpoint.every=100
train "$work/whole" train.max_steps=6 checkpoint.every=100
cmp "$work/budget/checkpoints/step00000006/model.safetensors" "$work/whole/checkpoints/step00000006/model.safetensors"
echo "ok: train.max_seconds stops at a step with its checkpoint; the resume is exact"

# Under mpirun an error that every rank raises is printed once.
if command -v mpirun >/dev/null; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=self,vader
  export OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_rmaps_base_oversubscribe=1
  set +e
  mpirun -np 2 "$replica" train --config "$work/recipe.yaml" run.dir="$work/mpi" data.global_batch_size=6 \
    >"$work/mpi.log" 2>&1
  code=$?
  set -e
  [ "$code" -ne 0 ] && [ "$(grep -c "must be a multiple of" "$work/mpi.log")" = 1 ] ||
    { echo "FAIL: exit $code, expected the error once:"; cat "$work/mpi.log"; exit 1; }
  echo "ok: under mpirun the ranks' common error is printed once"
fi
