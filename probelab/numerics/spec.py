"""A hypothesis's `[model]` table read as one of the model families, and evaluated over a
calibration grid: the lab's own implementation runs; the file supplies only data (a family
name and its parameters, each checked against what the family takes)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields

import numpy as np

from probelab.formats import FORMATS, Element
from probelab.numerics import batch
from probelab.numerics.exact import NANS, decode, encode
from probelab.numerics.models import ZERO_EXPONENT, FmaChain, FusedDot, PairwiseTree

FAMILIES = {"fused-dot": FusedDot, "fma-chain": FmaChain, "pairwise-tree": PairwiseTree}
GRID = ("a_bits", "b_bits", "c_bits")  # per case: A's and B's K patterns, C's pattern
FORMAT_COORDS = ("a_format", "b_format", "d_format")  # C is read in D's format
MAX_CASES = 1 << 20  # exact integer arithmetic per case: bounded work
# What an integer parameter may be before any format is known: no format's terms span more
# bits (f64's about 4,300), nor does a K-block hold more k than a grid has cases.
MAX_PARAMETER = 1 << 13


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_text(value: object) -> bool:
    return isinstance(value, str)


# the parameters that are not text, and what each must be
_TYPED = {"fraction_bits": _is_int, "group": _is_int, "result_bits": _is_int,
          "order": lambda v: isinstance(v, list) and all(_is_int(x) for x in v)}


def model_of(spec: Mapping[str, object]) -> FusedDot | FmaChain | PairwiseTree:
    """The model a `[model]` table names: `family` and that family's parameters (and `nan`,
    how D spells a NaN); any other key, a wrong type or a value outside the family's range is
    refused (ValueError)."""
    spec = dict(spec)
    nan = spec.pop("nan", "quiet")
    if not isinstance(nan, str) or nan not in NANS:  # how D spells a NaN: predicted_bits
        raise ValueError(f"[model] nan must be one of {NANS}")
    family = spec.pop("family", None)
    if not isinstance(family, str) or family not in FAMILIES:
        raise ValueError(f"[model] family must be one of {sorted(FAMILIES)}, not {family!r}")
    cls = FAMILIES[family]
    known = {f.name: f for f in fields(cls)}
    if unknown := sorted(set(spec) - set(known)):
        raise ValueError(f"[model] {family} takes {sorted(known)}, not {unknown}")
    for name, value in spec.items():
        if not _TYPED.get(name, _is_text)(value):
            raise ValueError(f"[model] {name} = {value!r} is not a value {family} takes")
        if (_is_int(value) and not 0 <= value <= MAX_PARAMETER) or \
                (name == "order" and len(value) > MAX_PARAMETER):  # type: ignore[arg-type]
            raise ValueError(f"[model] {name} = {value!s:.40} is out of range (an integer "
                             f"from 0 to {MAX_PARAMETER:,}, a list of at most as many)")
    if "order" in spec:
        spec["order"] = tuple(spec["order"])
    try:
        return cls(**spec)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"[model] {exc}") from exc


def predicted_bits(spec: Mapping[str, object], grid) -> np.ndarray:
    """The model's D, as D's bit patterns, for every case of the grid (dims of `c_bits`),
    from the grid's `a_bits`/`b_bits` (case dims, then k) and formats: int64 (an f64's
    pattern in two's complement, so `model >> 32 & 0xFFFFFFFF` is its high word)."""
    model = model_of(spec)
    nan = spec.get("nan", "quiet")
    if nan not in NANS:
        raise ValueError(f"[model] nan = {nan!r}: D spells a NaN one of {NANS}")
    missing = [n for n in (*GRID, *FORMAT_COORDS) if n not in grid.variables]
    if missing:
        raise ValueError(f"[model] needs the grid's {missing}: this grid has no numeric cases")
    names = [str(grid[n].values) for n in FORMAT_COORDS]
    if unknown := [n for n in names if n not in FORMATS]:
        raise ValueError(f"[model] the grid names formats {unknown}; known: {sorted(FORMATS)}")
    fa, fb, fd = (FORMATS[n] for n in names)
    for name in ("fraction_bits", "result_bits"):  # bounded by the formats, before any work
        if (bits := getattr(model, name, None)) is not None and bits > span(fa, fb, fd):
            raise ValueError(f"[model] {name} = {bits}: more than the {span(fa, fb, fd)} bits "
                             f"a sum over {fa.name} x {fb.name} + {fd.name} can hold (set "
                             "it to nothing, the whole sum, for an exact one)")
    a, b, c = (np.asarray(grid[n].values).astype(np.uint64) for n in GRID)
    c_shape = c.shape
    if a.shape != b.shape or a.shape[:-1] != c.shape or c.size > MAX_CASES:
        raise ValueError(f"[model] a_bits {a.shape}, b_bits {b.shape} and c_bits {c.shape} "
                         f"are not K-long cases of one grid (at most {MAX_CASES:,} cases)")
    k = a.shape[-1]
    a, b, c = a.reshape(c.size, k), b.reshape(c.size, k), c.reshape(-1)
    out = np.zeros(c.shape, np.uint64)
    todo = np.arange(c.size)
    batched = batch.evaluate(model, batch.decode(fa, a), batch.decode(fb, b),
                             batch.decode(fd, c), (fa, fb, fd))
    if batched is not None:  # every case at once; the scalar model for any it cannot vouch
        got, covered = batched
        out, todo = batch.encode(fd, got, str(nan)), np.flatnonzero(~covered)
    for i in todo.tolist():  # decode is cached: a grid repeats its patterns
        out[i] = encode(fd, model([decode(fa, x) for x in a[i].tolist()],
                                  [decode(fb, y) for y in b[i].tolist()],
                                  decode(fd, int(c[i])), (fa, fb, fd)), str(nan))
    return out.reshape(c_shape).view(np.int64)


def span(fa: Element, fb: Element, fd: Element) -> int:
    """How far below the largest term of a fused sum of fa x fb products and an fd value any
    term's lowest bit can lie (a little over): truncating to more fraction bits keeps every
    term whole, and no format keeps more bits of a result."""
    top = max(fa.bias + fb.bias + 2, fd.bias + 1)
    low = min(fa.emin - fa.fraction + fb.emin - fb.fraction, fd.emin - fd.fraction,
              2 * ZERO_EXPONENT)
    return top - low + 64

