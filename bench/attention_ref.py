#!/usr/bin/env python3
"""PyTorch's attention on the CPU at bench_attention's shape, for bench/attention.sh: forward and forward + backward
(autograd) in fp32 and bf16, FLOPs counted as bench_attention counts them (4·H·D per visible query-key pair forward,
3x that with the backward). F.scaled_dot_product_attention where this torch has it, else (torch < 2.0, Debian's
1.13) the explicit attention a user of that torch writes: q·kᵀ, masked softmax, ·v over [B, H, T, T] scores.
Prints one JSON line per precision.
  attention_ref.py B T H K D [--window W] [--documents N] [--threads N] [--reps R] [--clock wall|cpu]
"""
import argparse
import json
import statistics
import time

import torch
import torch.nn.functional as F


def visible(T, window, documents):
    """[T, T] bool: causal, within the window (0: none), inside each query's document (N equal ones, the last
    taking the remainder), as bench_attention packs them; and the number of visible pairs."""
    i = torch.arange(T).unsqueeze(1)
    j = torch.arange(T).unsqueeze(0)
    mask = j <= i
    if window > 0:
        mask &= j > i - window
    length = T // documents
    doc = torch.clamp(torch.arange(T) // length, max=documents - 1)
    mask &= doc.unsqueeze(1) == doc.unsqueeze(0)
    return mask, int(mask.sum())


def attend(q, k, v, mask):
    group = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(group, 1), v.repeat_interleave(group, 1)
    if hasattr(F, "scaled_dot_product_attention"):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    scores = (q @ k.transpose(-1, -2)) * q.shape[-1] ** -0.5
    return torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1) @ v


def median_seconds(fn, reps, clock=time.perf_counter):
    fn()
    times = []
    for _ in range(reps):
        start = clock()
        fn()
        times.append(clock() - start)
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser()
    for name in ("B", "T", "H", "K", "D"):
        parser.add_argument(name, type=int)
    parser.add_argument("--window", type=int, default=0)
    parser.add_argument("--documents", type=int, default=1)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                        help="cpu: the process's CPU time (time.process_time), as bench_kernels_cpu_time times ours, "
                        "for a machine shared with other jobs (run it with --threads 1)")
    a = parser.parse_args()
    torch.set_num_threads(a.threads)
    mask, pairs = visible(a.T, a.window, a.documents)
    flops = 4.0 * a.H * a.D * a.B * pairs
    g = torch.Generator().manual_seed(0)
    for dtype in (torch.float32, torch.bfloat16):
        q = torch.randn(a.B, a.H, a.T, a.D, generator=g).to(dtype).requires_grad_()
        k = torch.randn(a.B, a.K, a.T, a.D, generator=g).to(dtype).requires_grad_()
        v = torch.randn(a.B, a.K, a.T, a.D, generator=g).to(dtype).requires_grad_()
        dout = torch.randn(a.B, a.H, a.T, a.D, generator=g).to(dtype)

        def forward():
            with torch.no_grad():
                attend(q, k, v, mask)

        def both():
            attend(q, k, v, mask).backward(dout)

        clock = time.process_time if a.clock == "cpu" else time.perf_counter
        fwd, fb = median_seconds(forward, a.reps, clock), median_seconds(both, a.reps, clock)
        print(json.dumps({"torch": torch.__version__, "sdpa": hasattr(F, "scaled_dot_product_attention"),
                          "precision": "bf16" if dtype == torch.bfloat16 else "fp32", "forward_s": fwd,
                          "forward_gflops": flops / fwd / 1e9, "forward_backward_s": fb,
                          "forward_backward_gflops": 3 * flops / fb / 1e9}))


if __name__ == "__main__":
    main()
