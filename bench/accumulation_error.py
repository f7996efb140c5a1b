#!/usr/bin/python3
"""How much the fp32 gradient sum over micro-batches rounds: the chain DataParallel adds (one micro-batch after the
other, the order that does not depend on the number of ranks) against a pairwise tree, both against float64.
Gradient-like terms: a shared direction plus larger per-micro-batch noise, scaled by 1/L as the loss is.

    /usr/bin/python3 bench/accumulation_error.py [L=512] [n=200000]
"""
import sys

import numpy as np

L = int(sys.argv[1]) if len(sys.argv) > 1 else 512
n = int(sys.argv[2]) if len(sys.argv) > 2 else 200_000
rng = np.random.default_rng(0)
mean = rng.standard_normal(n).astype(np.float32) * 1e-3
terms = [((mean + rng.standard_normal(n).astype(np.float32) * 1e-2) / np.float32(L)).astype(np.float32)
         for _ in range(L)]
exact = np.sum(np.array(terms, dtype=np.float64), axis=0)

chain = np.zeros(n, np.float32)
for t in terms:
    chain = chain + t

tree = list(terms)
while len(tree) > 1:
    tree = [tree[i] + tree[i + 1] for i in range(0, len(tree) - 1, 2)] + ([tree[-1]] if len(tree) % 2 else [])

rms = np.sqrt(np.mean(exact ** 2))
print(f"L = {L} micro-batches, {n} parameters; errors relative to the rms of the exact sum")
print("| order | rms error | max error | error of the norm |")
print("|---|---|---|---|")
for name, s in (("chain (replica)", chain), ("pairwise tree", tree[0])):
    err = np.abs(s.astype(np.float64) - exact)
    norm_err = abs(np.linalg.norm(s.astype(np.float64)) - np.linalg.norm(exact)) / np.linalg.norm(exact)
    print(f"| {name} | {np.sqrt(np.mean(err ** 2)) / rms:.2e} | {err.max() / rms:.2e} | {norm_err:.2e} |")
