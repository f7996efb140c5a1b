#!/usr/bin/env python3
"""Replica's figures over PyTorch's on the same GPU in the same call (bench/gpu/run.sh's last table):

  - each tensor-core attention kernel's TFLOP/s at full causal over SDPA's best backend at the same (H, T, D)
    (bench_attention against torch_ceiling.py, the same FLOP count);
  - each training step's model FLOP/s over the bf16 GEMM that torch reaches here (MFU against what this GPU's
    matrix units deliver, beside bench_model's MFU against the datasheet's 989.4 TFLOP/s);
  - the host-moment step's optimizer time over the time its moments take on the copy engines at the measured
    both-ways bandwidth (m and v, 4 bytes each per parameter, read and written back every update).

  ratios.py LOGS   reads LOGS/attention_bench.jsonl, LOGS/torch_ceiling.jsonl and LOGS/bench_*.json (a step each,
                   named by the file); prints Markdown.
"""
import glob
import json
import os
import sys


def json_lines(path):
    if not os.path.exists(path):
        return []
    rows = []
    for line in open(path):
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            pass  # a run cut off mid-line
    return rows


def main(logs):
    ours = json_lines(os.path.join(logs, "attention_bench.jsonl"))
    torch_rows = json_lines(os.path.join(logs, "torch_ceiling.jsonl"))
    steps = [(os.path.basename(path).removeprefix("bench_").removesuffix(".json"), row)
             for path in sorted(glob.glob(os.path.join(logs, "bench_*.json"))) for row in json_lines(path)]
    sdpa = [r for r in torch_rows if r.get("what") == "sdpa" and "forward_tflops" in r]
    gemm = next((r for r in torch_rows if r.get("what") == "gemm"), None)
    both_ways = next((r for r in torch_rows if r.get("what") == "copy" and r["direction"].startswith("both")), None)

    lines = ["| replica | over PyTorch on this GPU | ratio |", "|---|---|---|"]
    for r in ours:
        if r["window"] != 0 or r["documents"] != 1:
            continue
        same = [s for s in sdpa if (s["H"], s["T"], s["D"]) == (r["H"], r["T"], r["D"])]
        if not same:
            continue
        best = max(same, key=lambda s: s["forward_backward_tflops"])
        shape = f"H={r['H']} T={r['T']} D={r['D']} causal"
        for what, key in (("forward", "forward_tflops"), ("forward + backward", "forward_backward_tflops")):
            lines.append(f"| attention {r['kernel']} {what}, {shape}: {r[key]:.4g} TFLOP/s | SDPA {best['backend']}: "
                         f"{best[key]:.4g} | {r[key] / best[key]:.2f} |")
    for run, r in steps:
        if "model_gflops" not in r:
            continue
        name = f"{run} ({r['B']}×{r['T']}, {r['attention']} attention)"
        achieved = r["model_gflops"] / 1e3
        if gemm:
            lines.append(f"| step {name}: {achieved:.4g} model TFLOP/s | bf16 GEMM {gemm['M']}³: {gemm['tflops']:.4g} "
                         f"TFLOP/s | {achieved / gemm['tflops']:.2f} |")
        if both_ways and r["host_moments"]:
            optimizer_s = r["optimizer_share"] * r["step_s"]
            floor_s = 8 * r["params"] / (both_ways["gb_per_s"] * 1e9)
            lines.append(f"| step {name}: optimizer {optimizer_s:.3g} s | moments both ways at "
                         f"{both_ways['gb_per_s']:.3g} GB/s: {floor_s:.3g} s | {optimizer_s / floor_s:.2f} |")
    if len(lines) == 2:
        lines.append("| (nothing to compare: no PyTorch rows beside replica's) | | |")
    print("### Ratios (bench/gpu/ratios.py)\n")
    print("\n".join(lines))


if __name__ == "__main__":
    if len(sys.argv) != 2 or not os.path.isdir(sys.argv[1]):
        sys.exit("usage: ratios.py LOGS_DIR")
    main(sys.argv[1])
