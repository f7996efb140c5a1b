#!/usr/bin/env python3
"""float8 e4m3fn and e5m2 from the OCP 8-bit Floating Point Specification (OFP8, rev. 1.0), by exact rationals: the
oracle of replica's casts (kernels/float8.h, tests/unit/test_kernels_float8.cc) and the casts of the float8
reference model (olmo3_ref.py). Written from the specification, not from replica's code; torch 1.13 has no float8
dtypes and ml_dtypes is not installed.

  float8_ref.py table    one line per input: `cast <float32 bits, hex> <e4m3 code> <e5m2 code>` (torchao's saturated
                         cast, to_fp8_saturated: clamp to ±max, then round to nearest, ties to even), for every
                         code's value, its float32 neighbours, every midpoint between neighbouring codes and its
                         neighbours, zeros, infinities, NaNs, float32 subnormals and 120,000 seeded random floats;
                         then `decode <code> <e4m3 value> <e5m2 value>` for all 256 codes (values as float.hex,
                         `nan`, `inf`, `-inf`); then `scale <amax bits> <e4m3> <e4m3 pow2> <e5m2> <e5m2 pow2>`
                         (torchao's amax_to_scale, bits of the float32 scales) for seeded amaxes.
"""
import math
import random
import struct
import sys
from bisect import bisect_left
from fractions import Fraction

# name: (exponent bits, mantissa bits, bias, IEEE-style specials). OFP8 §5.1: E4M3 has no infinities and one NaN
# pattern per sign (S.1111.111); E5M2 follows IEEE 754 (S.11111.00 infinity, S.11111.{01,10,11} NaN).
FORMATS = {"e4m3": (4, 3, 7, False), "e5m2": (5, 2, 15, True)}
NAN_CODE = 0x7F  # the NaN replica and torch produce, with the input's sign


def decode(code: int, fmt: str):
    """The value of `code`: a Fraction (with its sign), or 'nan', 'inf', '-inf'."""
    e_bits, m_bits, bias, ieee = FORMATS[fmt]
    sign = -1 if code & 0x80 else 1
    exponent, mantissa = (code >> m_bits) & ((1 << e_bits) - 1), code & ((1 << m_bits) - 1)
    top = (1 << e_bits) - 1
    if ieee and exponent == top:
        return "nan" if mantissa else ("inf" if sign > 0 else "-inf")
    if not ieee and exponent == top and mantissa == (1 << m_bits) - 1:
        return "nan"
    if exponent == 0:  # subnormal: 0.m × 2^(1 − bias)
        return sign * Fraction(mantissa, 1 << m_bits) * Fraction(2) ** (1 - bias)
    return sign * (1 + Fraction(mantissa, 1 << m_bits)) * Fraction(2) ** (exponent - bias)


def finite_codes(fmt: str):
    """The non-negative finite codes in increasing value, with their values."""
    codes = [c for c in range(0x80) if not isinstance(decode(c, fmt), str)]
    return sorted(codes, key=lambda c: decode(c, fmt)), sorted(decode(c, fmt) for c in codes)


_TABLES = {fmt: finite_codes(fmt) for fmt in FORMATS}


def cast_saturated(x: float, fmt: str) -> int:
    """torchao's to_fp8_saturated: x clamped to ±max, then the nearest code, a tie to the code whose mantissa is even."""
    sign = 0x80 if math.copysign(1.0, x) < 0 else 0
    if math.isnan(x):
        return sign | NAN_CODE
    codes, values = _TABLES[fmt]
    a = min(Fraction(abs(x)) if math.isfinite(x) else values[-1], values[-1])
    i = bisect_left(values, a)
    if values[i] == a:
        return sign | codes[i]
    lo, hi = i - 1, i  # values[lo] < a < values[hi]
    below, above = a - values[lo], values[hi] - a
    pick = lo if below < above else hi if above < below else (lo if codes[lo] % 2 == 0 else hi)
    return sign | codes[pick]


def f32(x: float) -> float:
    return struct.unpack("<f", struct.pack("<f", x))[0]


def bits(x: float) -> int:
    return struct.unpack("<I", struct.pack("<f", x))[0]


def from_bits(b: int) -> float:
    return struct.unpack("<f", struct.pack("<I", b))[0]


def neighbours(x: float):
    """x (a float32) and the float32 values one ulp either side of it."""
    b = bits(x) & 0x7FFFFFFF
    out = [from_bits(b)]
    if b > 0:
        out.append(from_bits(b - 1))
    if b < 0x7F800000:
        out.append(from_bits(b + 1))
    return out


def inputs():
    xs = [0.0, math.inf, from_bits(0x7FC00000), from_bits(0x7F800001), from_bits(0x7FFFFFFF), 1.0e-45, 1.17e-38,
          from_bits(0x00000001), from_bits(0x007FFFFF), 3.4028234663852886e38]
    for fmt in FORMATS:
        _, values = _TABLES[fmt]
        for v in values:
            xs += neighbours(float(v))
        for lo, hi in zip(values, values[1:]):
            xs += neighbours(float((lo + hi) / 2))  # a tie: one more bit than the format has, exact in float32
        # beyond max: the midpoint to the value the next code would have, and far beyond
        top = values[-1]
        step = values[-1] - values[-2]
        xs += neighbours(float(top + step / 2)) + neighbours(float(top + step)) + neighbours(float(top * 4))
    rng = random.Random(8)
    for _ in range(60000):  # any float32 bit pattern
        xs.append(from_bits(rng.getrandbits(32)))
    for _ in range(60000):  # magnitudes where the formats live, 2^-20 … 2^17
        xs.append(f32(rng.uniform(-1, 1) * 2.0 ** rng.uniform(-20, 17)))
    out = []
    for x in xs:
        out += [x, -x] if not math.isnan(x) else [x, from_bits(bits(x) | 0x80000000)]
    return out


def amax_to_scale(amax: float, fmt: str, power_of_two: bool) -> float:
    """torchao float8_utils.amax_to_scale: finfo.max / clamp(amax in float64, min=1e-12), to float32; with
    round_scales_to_power_of_2 the largest power of two not above it (exp2(floor(log2)), exactly)."""
    if math.isnan(amax):
        return amax
    scale = f32(float(_TABLES[fmt][1][-1]) / max(amax, 1e-12))
    if power_of_two and scale > 0:
        scale = 2.0 ** (math.frexp(scale)[1] - 1)  # scale = m · 2^e with 0.5 ≤ m < 1
    return scale


def value_text(code: int, fmt: str) -> str:
    v = decode(code, fmt)
    if isinstance(v, str):
        return v
    return math.copysign(float(v), -1.0 if code & 0x80 else 1.0).hex()  # 0x80 is −0


def table():
    lines = []
    for x in inputs():
        lines.append(f"cast {bits(x):08x} {cast_saturated(x, 'e4m3')} {cast_saturated(x, 'e5m2')}")
    for code in range(256):
        lines.append(f"decode {code} {value_text(code, 'e4m3')} {value_text(code, 'e5m2')}")
    rng = random.Random(16)
    amaxes = [0.0, 1e-30, 1e-12, 1.0, 448.0, 57344.0, 3.4028234663852886e38, math.inf, from_bits(0x7FC00000)]
    amaxes += [f32(2.0 ** rng.uniform(-40, 40)) for _ in range(2000)]
    for a in amaxes:
        row = [bits(amax_to_scale(a, fmt, p2)) for fmt in FORMATS for p2 in (False, True)]
        lines.append("scale " + " ".join(f"{b:08x}" for b in [bits(a)] + row))
    return lines


if __name__ == "__main__":
    if sys.argv[1:] != ["table"]:
        sys.exit(__doc__)
    sys.stdout.write("\n".join(table()) + "\n")
