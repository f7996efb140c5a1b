#!/usr/bin/env python3
"""numpy oracle for replica's data tests (Debian python3-numpy; run by tests/unit/test_data_*.cc).

  numpy_oracle.py order OUT_DIR N:SEED:EPOCH:G ...   OLMo-core's global order for each case, written as
      OUT_DIR/order_N_SEED_EPOCH_G.npy (uint32, shape [N // G, G]): arange(N, uint32) shuffled in place by
      Generator(PCG64(SEED + EPOCH)), truncated to whole batches (NumpyFSLDataLoader._build_global_indices).
  numpy_oracle.py pcg SEED ...   per seed one line: seed, PCG64(SEED)'s state and increment after seeding,
      and its first 6 random_raw() draws.
  numpy_oracle.py ngram IN.npy OUT.npy MAX_PERIOD MIN_PERIOD MAX_COUNT   one uint8 per row of IN (int64,
      [rows, n]): 1 when OLMo-core's repeated n-gram filter keeps the row (row-reshaping algorithm of
      olmo_core/data/utils.py::find_periodic_sequences, re-implemented here as the reference).
"""
import os
import sys

import numpy as np


def order(out_dir, cases):
    for case in cases:
        n, seed, epoch, g = (int(x) for x in case.split(":"))
        indices = np.arange(n, dtype=np.uint32)
        np.random.Generator(np.random.PCG64(seed + epoch)).shuffle(indices)
        indices = indices[: g * (n // g)].reshape(-1, g)
        np.save(os.path.join(out_dir, f"order_{n}_{seed}_{epoch}_{g}.npy"), indices)


def pcg(seeds):
    for seed in seeds:
        bitgen = np.random.PCG64(int(seed))
        state = bitgen.state["state"]
        draws = " ".join(str(x) for x in bitgen.random_raw(6))
        print(seed, state["state"], state["inc"], draws)


def repeats(row, max_period, min_period):
    """Yields the repeat count of every periodic run the OLMo-core algorithm reports in `row`."""
    max_period = min(max_period, len(row) // 3)
    for period in range(min_period, max_period + 1):
        pad = period - len(row) % period
        grid = np.concatenate([row, np.full(pad, -1, dtype=row.dtype)]).reshape(-1, period)
        same = grid == np.roll(grid, 1, axis=0)  # element-wise: equal to the row above
        full_rows = np.where(same.all(axis=1))[0]
        if len(full_rows) == 0:
            continue
        groups = np.split(full_rows, np.where(np.diff(full_rows) != 1)[0] + 1)
        for group in groups:
            first, last = group[0], group[-1]
            before = same[first - 1][::-1]  # trailing equal elements of the row before the group
            lead_in = 0 if not before[0] or before.all() else int(np.argmin(before))
            after = same[last + 1]  # leading equal elements of the row after the group
            lead_out = 0 if not after[0] else (len(after) if after.all() else int(np.argmin(after)))
            start = (first - 1) * period - lead_in
            end = (last + 1) * period + lead_out
            times = (end - start) // period
            if times > 2:
                yield times


def ngram(in_path, out_path, max_period, min_period, max_count):
    rows = np.load(in_path)
    keep = np.ones(len(rows), dtype=np.uint8)
    for i, row in enumerate(rows):
        if any(t >= max_count for t in repeats(row, max_period, min_period)):
            keep[i] = 0
    np.save(out_path, keep)


if __name__ == "__main__":
    mode, args = sys.argv[1], sys.argv[2:]
    if mode == "order":
        order(args[0], args[1:])
    elif mode == "pcg":
        pcg(args)
    elif mode == "ngram":
        ngram(args[0], args[1], int(args[2]), int(args[3]), int(args[4]))
    else:
        sys.exit(f"unknown mode {mode}")
