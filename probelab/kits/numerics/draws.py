"""Values drawn at random for the numerics kit's seeded family (issue 38 item 3): a law read
from data is confirmed only on cases it has not seen, so a probe that declares a seed gets
cases no designed family holds. Every draw is an exact value of its format; `pattern` is how
the stimulus sends one (a drawn NaN keeps its sign and fraction field, a signalling one too).
"""

from __future__ import annotations

import numpy as np

from probelab.formats import Element
from probelab.numerics.exact import Value, encode, largest, magnitude_above


def finite(rng: np.random.Generator, e: Element, lo: int, hi: int, subnormal: float = 0.0
           ) -> Value:
    """A finite nonzero value of `e`, either sign: its leading bit at an exponent drawn from
    [lo, hi] (within e's normals) and its fraction at random; with probability `subnormal`
    one of e's subnormals instead."""
    sign = int(rng.integers(2))
    if rng.random() < subnormal:
        return Value("finite", sign, int(rng.integers(1, 1 << e.fraction)), e.emin - e.fraction)
    lo, hi = max(lo, e.emin), min(hi, largest(e).top())
    while True:  # e4m3's top exponent holds NaN at its largest fraction: drawn again
        top = int(rng.integers(lo, hi + 1))
        v = Value("finite", sign, (1 << e.fraction) | int(rng.integers(1 << e.fraction)),
                  top - e.fraction)
        if not magnitude_above(v, largest(e)):
            return v


def nan(rng: np.random.Generator, e: Element) -> Value:
    """A NaN input: either sign, any fraction field but zero (quiet or signalling), or the
    one NaN field a finite-only format has (e4m3's S.1111.111)."""
    field = (1 << e.fraction) - 1 if e.finite_only else int(rng.integers(1, 1 << e.fraction))
    return Value("nan", int(rng.integers(2)), field)


def pattern(e: Element, v: Value) -> int:
    """The bits the stimulus sends for `v`: a NaN with a fraction field as drawn (sign, the
    all-ones exponent, that field: a signalling NaN stays signalling), anything else as
    exact.encode writes it (a NaN without a field: the default quiet NaN)."""
    if v.kind != "nan" or not v.significand:
        return encode(e, v)
    out = (v.sign << (e.exponent + e.fraction)) | (((1 << e.exponent) - 1) << e.fraction) | \
        v.significand
    return out << (e.stored_in - 1 - e.exponent - e.fraction) if e.stored_in else out
