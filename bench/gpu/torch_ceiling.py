#!/usr/bin/env python3
"""What PyTorch reaches on the same GPU, in the same call as replica's own numbers, so every replica figure has its
ratio (bench/gpu/run.sh, bench/gpu/ratios.py):

  attention  scaled_dot_product_attention on the cuDNN and the flash backends, causal, bf16, at (B, H, T, D) =
             (1, 32, 8192, 128) (a 7B layer, bench_attention's shape) and (1, 16, 8192, 256) (the seed's 16 x 256 head
             ablation), forward and forward + backward, in TFLOP/s as replica counts them (bench/bench_attention.cc:
             4·H·D FLOPs per visible query-key pair forward, 3x that for forward + backward) and as FlashAttention
             counts them (4·T²·H·D / 2 causal forward, 2.5x that backward);
  copy       page-locked host memory to the GPU and back, each way alone and both at once (the host-held Adam
             moments, optim.host_moments, stream both ways at once);
  gemm       an 8192 x 8192 x 8192 bf16 matrix product (the MFU denominator's achievable rate).

Prints a Markdown table, then one JSON line per measurement. Exit 77 (skipped) where torch sees no CUDA device.
  torch_ceiling.py [--only attention,copy,gemm] [--reps N]
  torch_ceiling.py --dry-run   the same code on the CPU at tiny shapes (a check of the script, not a measurement;
                               a torch without sdpa_kernel (torch < 2.3) runs a plain softmax attention instead)
"""
import argparse
import json
import statistics
import sys
import time

import torch

PARTS = ("attention", "copy", "gemm")


def median_seconds(fn, reps, sync):
    """The median wall time of `reps` calls after a warm-up call, each timed to the device's completion."""
    fn()
    sync()
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def causal_pairs(T):
    return T * (T + 1) / 2  # visible (query, key) pairs of a causal row, as bench_attention counts them


def sdpa_backends():
    """(name, context manager factory) per backend; plain softmax attention where torch has no sdpa_kernel."""
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel
    except ImportError:
        return None
    return [("cudnn", lambda: sdpa_kernel([SDPBackend.CUDNN_ATTENTION])),
            ("flash", lambda: sdpa_kernel([SDPBackend.FLASH_ATTENTION]))]


def plain_attention(q, k, v):
    T = q.shape[-2]
    scores = (q @ k.transpose(-1, -2)) / q.shape[-1] ** 0.5
    mask = torch.ones(T, T, dtype=torch.bool, device=q.device).tril()
    return scores.masked_fill(~mask, float("-inf")).softmax(-1) @ v


def attention(shapes, device, dtype, reps, sync):
    rows = []
    backends = sdpa_backends()
    if backends is None:
        if device.type == "cuda":
            raise SystemExit(f"torch_ceiling: torch {torch.__version__} has no torch.nn.attention.sdpa_kernel")
        backends = [("plain softmax", None)]
    for B, H, T, D in shapes:
        q, k, v, dout = (torch.randn(B, H, T, D, device=device, dtype=dtype) for _ in range(4))
        for t in (q, k, v):
            t.requires_grad_(True)
        forward_flops = 4.0 * H * D * B * causal_pairs(T)
        fa_forward_flops = 4.0 * B * H * T * T * D / 2
        for name, context in backends:
            def forward():
                if context is None:
                    return plain_attention(q, k, v)
                with context():
                    return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)

            def both():
                forward().backward(dout)
                q.grad = k.grad = v.grad = None  # no accumulation into the last call's gradients

            row = {"what": "sdpa", "backend": name, "B": B, "H": H, "T": T, "D": D, "causal": True,
                   "torch": torch.__version__}
            try:
                with torch.no_grad():
                    fwd = median_seconds(forward, reps, sync)
                fwd_bwd = median_seconds(both, reps, sync)
            except RuntimeError as e:  # the backend does not take this shape or dtype here
                row["error"] = str(e).splitlines()[0][:200]
                rows.append(row)
                continue
            row.update(forward_s=fwd, forward_backward_s=fwd_bwd, forward_tflops=forward_flops / fwd / 1e12,
                       forward_backward_tflops=3 * forward_flops / fwd_bwd / 1e12,
                       fa_forward_tflops=fa_forward_flops / fwd / 1e12,
                       fa_forward_backward_tflops=3.5 * fa_forward_flops / fwd_bwd / 1e12)
            rows.append(row)
    return rows


def copy(nbytes, device, reps, sync):
    """Page-locked host memory to the device and back, each way alone and both at once on two streams."""
    cuda = device.type == "cuda"
    host_up = torch.empty(nbytes, dtype=torch.uint8, pin_memory=cuda)
    host_down = torch.empty(nbytes, dtype=torch.uint8, pin_memory=cuda)
    dev_up, dev_down = (torch.empty(nbytes, dtype=torch.uint8, device=device) for _ in range(2))
    streams = (torch.cuda.Stream(), torch.cuda.Stream()) if cuda else (None, None)

    def on(stream, fn):
        if stream is None:
            return fn()
        with torch.cuda.stream(stream):
            return fn()

    def h2d():
        on(streams[0], lambda: dev_up.copy_(host_up, non_blocking=True))

    def d2h():
        on(streams[1], lambda: host_down.copy_(dev_down, non_blocking=True))

    def both():
        h2d()
        d2h()

    rows = []
    for direction, fn, moved in (("host to device", h2d, nbytes), ("device to host", d2h, nbytes),
                                 ("both at once (each way)", both, nbytes)):
        seconds = median_seconds(fn, reps, sync)
        rows.append({"what": "copy", "direction": direction, "bytes": moved, "pinned": cuda, "seconds": seconds,
                     "gb_per_s": moved / seconds / 1e9})
    return rows


def gemm(n, device, dtype, reps, sync):
    a, b = (torch.randn(n, n, device=device, dtype=dtype) for _ in range(2))
    seconds = median_seconds(lambda: a @ b, reps, sync)
    return [{"what": "gemm", "M": n, "N": n, "K": n, "dtype": str(dtype).removeprefix("torch."), "seconds": seconds,
             "tflops": 2.0 * n ** 3 / seconds / 1e12}]


def table(rows):
    lines = ["| measurement | shape | forward ms | forward TFLOP/s | forward + backward ms | "
             "forward + backward TFLOP/s | FA's count: forward, forward + backward TFLOP/s |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        if r["what"] == "sdpa":
            shape = f"B={r['B']} H={r['H']} T={r['T']} D={r['D']} causal"
            if "error" in r:
                lines.append(f"| SDPA {r['backend']} | {shape} | **not run**: {r['error']} | | | | |")
            else:
                lines.append(f"| SDPA {r['backend']} | {shape} | {1e3 * r['forward_s']:.3g} | {r['forward_tflops']:.4g} | "
                             f"{1e3 * r['forward_backward_s']:.3g} | {r['forward_backward_tflops']:.4g} | "
                             f"{r['fa_forward_tflops']:.4g}, {r['fa_forward_backward_tflops']:.4g} |")
        elif r["what"] == "copy":
            kind = "pinned" if r["pinned"] else "pageable (dry run)"
            lines.append(f"| copy {r['direction']} | {r['bytes'] / 2**20:.0f} MiB {kind} | {1e3 * r['seconds']:.3g} | "
                         f"{r['gb_per_s']:.4g} GB/s | | | |")
        else:
            lines.append(f"| GEMM {r['dtype']} | {r['M']}x{r['N']}x{r['K']} | {1e3 * r['seconds']:.3g} | "
                         f"{r['tflops']:.4g} | | | |")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", default=",".join(PARTS), help="comma-separated parts: " + ", ".join(PARTS))
    parser.add_argument("--reps", type=int, default=10)
    parser.add_argument("--dry-run", action="store_true", help="the CPU at tiny shapes: checks the script only")
    args = parser.parse_args()
    parts = args.only.split(",")
    unknown = [p for p in parts if p not in PARTS]
    if unknown:
        parser.error(f"--only: unknown part(s) {', '.join(unknown)} (expected {', '.join(PARTS)})")
    if args.dry_run:
        device, dtype, reps = torch.device("cpu"), torch.float32, 1
        shapes, copy_bytes, gemm_n = [(1, 2, 128, 64), (1, 1, 128, 128)], 1 << 20, 64
        sync = lambda: None  # noqa: E731
    elif not torch.cuda.is_available():
        print(f"torch_ceiling: no CUDA device visible to torch {torch.__version__}: not run (skipped; --dry-run "
              "checks the script on the CPU)", file=sys.stderr)
        return 77
    else:
        device, dtype, reps = torch.device("cuda"), torch.bfloat16, args.reps
        shapes, copy_bytes, gemm_n = [(1, 32, 8192, 128), (1, 16, 8192, 256)], 1 << 30, 8192
        sync = torch.cuda.synchronize
    torch.manual_seed(0)
    rows = []
    if "attention" in parts:
        rows += attention(shapes, device, dtype, reps, sync)
    if "copy" in parts:
        rows += copy(copy_bytes, device, reps, sync)
    if "gemm" in parts:
        rows += gemm(gemm_n, device, torch.bfloat16 if device.type == "cuda" else dtype, reps, sync)
    gpu = torch.cuda.get_device_name() if device.type == "cuda" else "cpu (dry run)"
    print(table(rows))
    for r in rows:
        print(json.dumps({"impl": "torch", "device": gpu, **r}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
