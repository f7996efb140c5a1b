#!/usr/bin/python3
"""PyTorch speed baseline: forward + backward (CE + z-loss) of a randomly initialised model, CPU or GPU.

usage: /usr/bin/python3 tools/reference/bench_ref.py --config CONFIG.json --batch B --seq T \
           --threads N --steps S [--precision fp32|bf16] [--gemm onednn|blas] [--device cpu|cuda] [--json]
Reports the median over S timed steps (after 1 warmup step) as tokens/s and seconds per step.
"""

import argparse
import json
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import olmo3_ref as ref  # noqa: E402


# Debian's python3-torch runs fp32 matmuls on the generic (netlib reference) BLAS, ~4 GFLOP/s on
# 2 cores, while its bf16 matmuls and fp32 convolutions go to oneDNN. A baseline on the reference
# BLAS would be meaningless, so by default (--gemm onednn) the fp32 GEMMs are issued to oneDNN as
# 1x1 convolutions in channels-last layout: x [n, in] is read in place as 16 NHWC images
# [16, n/16, 1, in] (rows zero-padded to a multiple of 16), w [out, in] as a 1x1 filter. oneDNN
# runs that as one GEMM (~95 GFLOP/s fp32 per core here, vs ~4 on the BLAS), with autograd through
# mkldnn_convolution_backward. Results equal F.linear up to fp32 rounding (checked in selftest.py).

def onednn_linear(x, w, precision="fp32"):
    """x [..., in] @ w [out, in]^T on oneDNN (fp32)."""
    if x.dtype != torch.float32 or w.dtype != torch.float32:  # autocast/bf16: torch's own path
        return torch.nn.functional.linear(x, w)
    k = x.shape[-1]
    x2 = x.reshape(-1, k)
    n = x2.shape[0]
    if n % 16:  # pad rows so that the image batch is 16 (torch picks oneDNN for batch >= 16)
        x2 = torch.cat([x2, x2.new_zeros(16 - n % 16, k)])
    xi = x2.reshape(16, -1, 1, k).permute(0, 3, 1, 2)  # [16, in, n/16, 1], channels-last view
    wi = w.reshape(w.shape[0], k, 1, 1).contiguous(memory_format=torch.channels_last)
    y = torch.nn.functional.conv2d(xi, wi)  # [16, out, n/16, 1], channels-last
    y = y.permute(0, 2, 3, 1).reshape(-1, w.shape[0])[:n]
    return y.reshape(*x.shape[:-1], w.shape[0])


def onednn_attend(q, k, v, window, doc_lens=None):
    """ref.attend with the two fp32 matmuls per (batch, head) on oneDNN; same mask and fp32 softmax."""
    if q.dtype != torch.float32 or doc_lens is not None:  # packed rows: the reference's own masks
        return ORIG_ATTEND(q, k, v, window, doc_lens)
    B, H, T, D = q.shape
    K = k.shape[1]
    mask = ref.attention_mask(T, window)
    rows = []
    for b in range(B):
        for h in range(H):
            g = h // (H // K)
            s = onednn_linear(q[b, h], k[b, g]) * (D ** -0.5)  # [T, T]
            p = torch.softmax(s.masked_fill(~mask, float("-inf")), dim=-1)
            rows.append(onednn_linear(p, v[b, g].t()))  # [T, D]
    return torch.stack(rows).reshape(B, H, T, D)


ORIG_ATTEND = ref.attend
ORIG_ROPE = ref.rope_cos_sin


# On a GPU, what a PyTorch user runs: F.scaled_dot_product_attention (fused kernels; the sliding window as a
# boolean mask, which rules out the FlashAttention backend but not the memory-efficient one) and GQA without
# copies. The reference's explicit [B, H, T, T] attention would not fit at T = 8192.
def sdpa_attend(q, k, v, window, doc_lens=None):
    if doc_lens is not None:
        raise ValueError("bench_ref: the SDPA path has no packed documents")
    T = q.shape[2]
    i = torch.arange(T, device=q.device)[:, None]
    j = torch.arange(T, device=q.device)[None, :]
    if window is None:
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
    mask = (j <= i) & (j > i - window)
    return torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True)


def on_device(device):
    ref.attend = sdpa_attend
    ref.rope_cos_sin = lambda cfg, T: tuple(t.to(device) for t in ORIG_ROPE(cfg, T))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", required=True, help="HF config.json (or a model directory)")
    ap.add_argument("--batch", type=int, required=True)
    ap.add_argument("--seq", type=int, required=True)
    ap.add_argument("--threads", type=int, required=True)
    ap.add_argument("--steps", type=int, required=True)
    ap.add_argument("--precision", choices=("fp32", "bf16"), default="fp32")
    ap.add_argument("--json", action="store_true", help="print one JSON line only")
    ap.add_argument("--train", action="store_true",
                    help="a full training step: also global-norm clipping (1.0) and torch.optim.AdamW(foreach)")
    ap.add_argument("--gemm", choices=("onednn", "blas"), default="onednn",
                    help="fp32 GEMM backend: oneDNN via 1x1 convolutions (default) or torch's BLAS")
    ap.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    args = ap.parse_args()
    cuda = args.device == "cuda"
    if cuda:
        on_device(args.device)
    elif args.gemm == "onednn":  # swap the reference's fp32 GEMMs for oneDNN ones (see above)
        ref.linear, ref.attend = onednn_linear, onednn_attend

    torch.set_num_threads(args.threads)
    cfg = ref.load_config(args.config)
    if cuda:  # timing needs random weights, not the reference's exact ones: draw them on the GPU (seconds, not minutes)
        torch.manual_seed(0)
        params = {name: (torch.nn.init.trunc_normal_(torch.empty(shape, device="cuda"), std=0.02, a=-0.06, b=0.06)
                         if len(shape) == 2 else torch.ones(shape, device="cuda")).requires_grad_()
                  for name, shape in ref.param_shapes(cfg).items()}
    else:
        params = ref.leaf_params(ref.init_params(cfg, seed=0), torch.float32)
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(0, cfg.vocab_size, (args.batch, args.seq), generator=g).to(args.device)

    # Attention: torch 1.13 (Debian) has no F.scaled_dot_product_attention, so the reference's
    # explicit attention (batched matmuls over [B,H,T,T] scores, fp32 softmax) is what is timed.

    # The optimizer a PyTorch user would pick: AdamW with the multi-tensor (foreach) kernels, fp32 states.
    # (fused=True on a GPU: one kernel over all tensors).
    kernels = {"fused": True} if cuda else {"foreach": True}
    optimizer = torch.optim.AdamW(list(params.values()), lr=1e-4, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1,
                                  **kernels) if args.train else None

    def step():
        for p in params.values():
            p.grad = None
        if args.precision == "bf16":
            # bf16 baseline = what a PyTorch user would do: CPU autocast runs the linears and
            # attention matmuls in bf16 (bf16 outputs); RMSNorm, RoPE, softmax and the loss are
            # computed in fp32 by the reference code. This is not the bf16 *emulation* used for
            # fixtures (precision="bf16" in olmo3_ref), which would be slower than plain fp32.
            with torch.autocast(args.device, dtype=torch.bfloat16):
                logits = ref.forward(params, cfg, ids, "fp32")
                total = ref.loss(logits, ids)[0]
        else:
            logits = ref.forward(params, cfg, ids, "fp32")
            total = ref.loss(logits, ids)[0]
        total.backward()
        if optimizer:
            torch.nn.utils.clip_grad_norm_(list(params.values()), 1.0)
            optimizer.step()
        return float(total)  # waits for the GPU

    step()  # warmup
    times = []
    for _ in range(args.steps):
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
    step_s = statistics.median(times)
    tokens = args.batch * args.seq
    result = {"tokens_per_s": tokens / step_s, "step_s": step_s, "batch": args.batch, "seq": args.seq,
              "threads": args.threads, "steps": args.steps, "precision": args.precision, "gemm": "cublas" if cuda else args.gemm, "train": args.train, "device": args.device,
              "params": sum(p.numel() for p in params.values()), "torch": torch.__version__}
    if args.json:
        print(json.dumps(result))
    else:
        print(f"bench_ref: {result['tokens_per_s']:.1f} tokens/s, {step_s * 1000:.1f} ms/step "
              f"(B={args.batch} T={args.seq} threads={args.threads} {args.precision}, "
              f"{result['params']:,} params, median of {args.steps})")


if __name__ == "__main__":
    main()
