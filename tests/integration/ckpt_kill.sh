#!/usr/bin/env bash
# Crash safety with real processes and SIGKILL: a run killed mid-save (while a step….partial directory is
# being written) and mid-step at random moments resumes from its last complete checkpoint, re-trains the lost
# steps, and ends with metrics and final weights identical to an uninterrupted run. SIGTERM stops cleanly
# with a checkpoint of the step it finished.
set -euo pipefail
source "$(dirname "$0")/ckpt_lib.bash"

train "$work/ref" checkpoint.every=2
$py - "$replica" "$work" <<'PY'
import os, random, signal, subprocess, sys, time, json
replica, work = sys.argv[1], sys.argv[2]
run = f"{work}/crash"
ckpts = f"{run}/checkpoints"
cmd = [replica, "train", "--config", f"{work}/recipe.yaml", f"run.dir={run}", "checkpoint.every=2"]
random.seed(int(os.environ.get("CKPT_KILL_SEED", "5")))

def start():
    return subprocess.Popen(cmd, stdout=open(f"{run}.log", "a"), stderr=subprocess.STDOUT)

def last_step():
    try:
        steps = [json.loads(l)["step"] for l in open(f"{run}/metrics.jsonl") if l.endswith("\n") and '"loss"' in l]
        return max(steps, default=0)
    except FileNotFoundError:
        return 0

def partials():
    return [d for d in os.listdir(ckpts) if d.endswith(".partial")] if os.path.isdir(ckpts) else []

def wait_for(cond, p, what):
    deadline = time.time() + 60
    while not cond():
        assert p.poll() is None, f"the run ended (exit {p.returncode}) before {what}"
        assert time.time() < deadline, f"timed out waiting for {what}"
        time.sleep(0.0005)

def latest():
    return open(f"{ckpts}/latest").read().strip() if os.path.exists(f"{ckpts}/latest") else None

os.makedirs(run, exist_ok=True)
kills = []
# 1-2: mid-save: SIGKILL as soon as a .partial directory appears (the step's checkpoint being written).
for _ in range(2):
    p = start()
    before = last_step()
    wait_for(lambda: last_step() > before + 2 and partials(), p, "a checkpoint being written")
    p.kill(); p.wait()
    kills.append(("mid-save", last_step(), partials(), latest()))
    assert partials(), "expected a .partial directory left behind by the kill"
# 3-4: mid-step: SIGKILL at a random moment a few steps after the restart.
for _ in range(2):
    p = start()
    before = last_step()
    wait_for(lambda: last_step() > before + 3, p, "progress")
    time.sleep(random.uniform(0.0, 0.05))
    p.kill(); p.wait()
    kills.append(("mid-step", last_step(), partials(), latest()))
# 5: SIGTERM: finishes the step, saves it, exits 130.
p = start()
before = last_step()
wait_for(lambda: last_step() > before + 2, p, "progress")
p.send_signal(signal.SIGTERM)
assert p.wait() == 130, p.returncode
kills.append(("SIGTERM", last_step(), partials(), latest()))
assert latest() == f"step{last_step():08d}", (latest(), last_step())
assert not partials()
# 6: to the end.
p = start()
assert p.wait() == 0
for k in kills:
    print("%-8s at step %2d: partial %s, latest %s" % k)
# (a SIGKILLed process loses its buffered output; the last one exits normally)
last = [l for l in open(f"{run}.log") if l.startswith("resuming from")][-1]
assert f"{ckpts}/step{kills[-1][1]:08d} (step {kills[-1][1]}," in last, last
PY
same_metrics "$work/ref/metrics.jsonl" "$work/crash/metrics.jsonl" 40
for f in model.safetensors optim.safetensors; do
  cmp "$work/ref/checkpoints/step00000040/$f" "$work/crash/checkpoints/step00000040/$f"
done
echo "final model.safetensors and optim.safetensors byte-identical"
echo "ckpt_kill: all checks passed"
