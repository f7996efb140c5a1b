#!/usr/bin/env bash
# The report in a real browser: headless Chromium (Debian's `chromium`, from scripts/install-deps.sh) loads the page
# of a trained run and a synthetic run that has every kind of record (task scores, skipped steps, a memorisation
# alarm); the DOM it builds must hold every chart with every run's series and marks, and its screenshot must be a
# real picture. Without chromium the test fails: it is a dependency, not an option.
set -euo pipefail
source "$(dirname "$0")/ckpt_lib.bash"
command -v chromium >/dev/null || { echo "FAIL: chromium not found (scripts/install-deps.sh installs it)"; exit 1; }

train "$work/trained" train.max_steps=6 checkpoint.every=3 eval.every=3 eval.batches=2 \
  "data.validation_paths=[$work/other.npy]"

# 30 steps in metrics.jsonl's schema (train/metrics_sinks.cc): skipped steps 7 and 19, evaluations every 10 steps
# with two files and two task scores, and an alarm at step 30.
$py - "$work/synthetic.jsonl" <<'PY'
import json, math, sys
with open(sys.argv[1], "w") as f:
    for step in range(0, 31):
        if step:
            ce = 6.0 - 2.0 * math.log1p(step) / math.log(31) + 0.05 * math.sin(step)
            f.write(json.dumps({"step": step, "tokens": 512 * step, "loss": ce + 1e-3, "ce": ce, "z_loss": 1e-3,
                                "lr": 1e-2 * min(1.0, step / 5), "grad_norm": 1.0 + 0.3 * math.cos(step),
                                "skipped": step in (7, 19), "tokens_per_s": 900.0 + step, "mfu": 0.4,
                                "epoch": 1, "batch": step - 1, "comm_s": 0.0}) + "\n")
        if step % 10 == 0:
            e = {"heldout_loss": 6.1 - step / 20, "heldout_tokens": 100,
                 "files": {"web": 6.0 - step / 20, "code": 6.2 - step / 20},
                 "suite": {"tasks": {"format": "lm_eval",
                                     "arc_easy": {"acc": 0.25 + step / 100, "acc_stderr": 0.1, "docs": 4,
                                                  "requests": 16, "forwards": 16, "path": "arc_easy.jsonl"},
                                     "hellaswag": {"acc_norm": 0.3 + step / 200, "acc_norm_stderr": 0.1,
                                                   "docs": 4, "requests": 16, "forwards": 16,
                                                   "path": "hellaswag.jsonl"}}}}
            if step == 30:
                e["memorisation_alarm"] = {"from_step": 10, "train_loss": [5.0, 4.0], "heldout_loss": [5.6, 5.6]}
            f.write(json.dumps({"step": step, "eval": e}) + "\n")
PY

"$replica" report "$work/trained" "$work/synthetic.jsonl" --out "$work/page.html" >"$work/report.txt"
browse=(timeout 120 chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --user-data-dir="$work/profile")
"${browse[@]}" --dump-dom "file://$work/page.html" >"$work/dom.html" 2>"$work/chromium.log" ||
  { echo "FAIL: chromium --dump-dom"; cat "$work/chromium.log"; exit 1; }
"${browse[@]}" --window-size=1400,2600 --screenshot="$work/page.png" "file://$work/page.html" \
  >>"$work/chromium.log" 2>&1 || { echo "FAIL: chromium --screenshot"; cat "$work/chromium.log"; exit 1; }

$py - "$work/dom.html" "$work/page.png" "$work/trained/metrics.jsonl" <<'PY'
import json, re, struct, sys, zlib
dom = open(sys.argv[1]).read()
# The trained run's MFU is null ("n/a", metrics/peak.h) where its steps beat this machine's cached peak; a run with
# no MFU point has no MFU series to draw.
trained_mfu = any(json.loads(l).get("mfu") is not None for l in open(sys.argv[3]) if '"loss"' in l)
assert "</body></html>" in dom.replace("\n", ""), "chromium did not return the rendered page"
figures = {m.group(1): m.group(0) for m in re.finditer(r'<figure data-chart="([^"]+)".*?</figure>', dom, re.S)}
runs = ["trained", "synthetic"]
expected = {
    "loss": [f"{r}/{k}" for r in runs for k in ("raw", "smoothed")],
    **{m: [f"{r}/{m}" for r in runs] for m in ("ce", "z_loss", "lr", "grad_norm", "tokens_per_s")},
    "mfu": ["trained/mfu", "synthetic/mfu"] if trained_mfu else ["synthetic/mfu"],
    # Two runs: every run's "all" on one chart, each run's files on a chart of its own.
    "heldout": ["trained/all", "synthetic/all"],
    "heldout-trained": ["trained/all", "trained/other"],
    "heldout-synthetic": ["synthetic/all", "synthetic/web", "synthetic/code"],
    "tasks-synthetic": ["synthetic/arc_easy acc", "synthetic/hellaswag acc_norm"],
}
assert sorted(figures) == sorted(expected), f"charts {sorted(figures)}, expected {sorted(expected)}"
for chart, series in expected.items():
    fig = figures[chart]
    drawn = dict(re.findall(r'<g data-series="([^"]+)" data-points="(\d+)"', fig))
    assert sorted(drawn) == sorted(series), f"{chart}: series {sorted(drawn)}, expected {sorted(series)}"
    assert all(int(n) > 0 for n in drawn.values()), f"{chart}: an empty series {drawn}"
    paths = re.findall(r'<g data-series="[^"]+"[^>]*>.*?<path d="(M[^"]+)"', fig, re.S)
    assert len(paths) == len(series), f"{chart}: {len(paths)} drawn paths for {len(series)} series"
    legend = re.findall(r'<span data-legend="([^"]+)"', fig)
    assert sorted(legend) == sorted(series), f"{chart}: legend {legend}"
skipped = re.findall(r'data-mark="skipped"[^>]*><title>synthetic: step (\d+) skipped', figures["grad_norm"])
assert skipped == ["7", "19"], f"synthetic's skipped steps marked: {skipped}"
for chart in ("loss", "heldout"):
    assert len(re.findall(r'data-mark="alarm"', figures[chart])) == 1, f"{chart}: the alarm is marked"
assert 'id="eval-table"' in dom and 'id="comparison"' in dom and 'id="runs"' in dom

png = open(sys.argv[2], "rb").read()
assert png[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
width, height = struct.unpack(">II", png[16:24])
assert (width, height) == (1400, 2600), f"screenshot is {width}x{height}"
idat, pos = b"", 8
while pos < len(png):
    length, kind = struct.unpack(">I4s", png[pos:pos + 8])
    if kind == b"IDAT":
        idat += png[pos + 8:pos + 8 + length]
    pos += 12 + length
pixels = zlib.decompress(idat)
distinct = len(set(pixels))
assert len(png) > 30_000 and distinct > 64, f"a blank-looking screenshot ({len(png)} bytes, {distinct} byte values)"
print(f"ok: {len(figures)} charts with every series in chromium's DOM; screenshot {width}x{height}, {len(png)} bytes")
PY
