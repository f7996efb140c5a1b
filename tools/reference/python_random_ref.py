#!/usr/bin/env python3
"""CPython's own random.Random: the oracle of replica's port (tests/unit/test_core_python_random.cc).

  python_random_ref.py SEED ...   per seed, one line of whitespace-separated fields:
      the seed; 8 x getrandbits(32); getrandbits(k) for k = 1, 7, 31, 33, 53, 63, 64; randbelow(n) for
      n = 1, 2, 3, 7, 1000, 2**32 - 1, 2**32 + 1, 2**63 + 5; 3 x random() as float.hex;
      shuffle(list(range(n))) for n = 0, 1, 2, 10, 998; sample(range(n), k) for (n, k) = (10, 3), (21, 21),
      (22, 5), (100, 6), (1000, 40), (10**6, 100). Lists are written as their length, then their items.
"""
import sys
from random import Random

BITS = [1, 7, 31, 33, 53, 63, 64]
BELOW = [1, 2, 3, 7, 1000, 2**32 - 1, 2**32 + 1, 2**63 + 5]
SHUFFLE = [0, 1, 2, 10, 998]
SAMPLE = [(10, 3), (21, 21), (22, 5), (100, 6), (1000, 40), (10**6, 100)]


def fields(seed):
    rng = Random(seed)
    out = [seed]
    out += [rng.getrandbits(32) for _ in range(8)]
    out += [rng.getrandbits(k) for k in BITS]
    out += [rng._randbelow(n) for n in BELOW]
    out += [rng.random().hex() for _ in range(3)]
    for n in SHUFFLE:
        x = list(range(n))
        rng.shuffle(x)
        out += [n] + x
    for n, k in SAMPLE:
        out += [k] + rng.sample(range(n), k)
    return out


if __name__ == "__main__":
    for seed in sys.argv[1:]:
        print(" ".join(str(f) for f in fields(int(seed))))
