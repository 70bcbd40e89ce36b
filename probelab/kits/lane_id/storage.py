"""The lane-id kit's compact storage form: the same numbers, lossless, in a fraction of the
bytes (a probe opts in with `LaneIdProbe(compact=True)`; engine.assemble writes it).

- Raw waves (the D values read as numbers: float64 for a float accumulator, int64 for an
  integer one) are stored as integers when every value is one (finite, integral, no -0.0),
  in the narrowest integer dtype holding every value the plan allows (the values' own
  range where some leave it), and as float64 otherwise; attrs `stored_as` and `read_as`
  say which. An integer stored narrow is the
  same number: the content hash reads every integer kind as <i8 (probelab.dataset).
- 0/1 tables (relations, flags) are uint8: hash-transparent like any integer narrowing.
- A digit-wave table whose every cell the decoded sources already spell (APART's b-named
  waves: digit p of a cell is digit p of its b_src, + 1, or 0 where b_src is NONE) is
  not stored: the sources are, plus the raw values of every digit at each cell the rule
  does not reproduce bit for bit (every INVALID cell among them), named by kernel and flat
  cell index. `positional` is that rule, `factor` finds the exceptions, `unfactor` undoes
  it; nothing here reads a dataset's attrs, so a reader rebuilds from hashed values alone.
"""

from __future__ import annotations

import numpy as np

from probelab.kits.sentinels import INVALID

UNPLANNED = None  # a range nobody planned (exceptions): the values' own


def integer_dtype(low: int, high: int) -> np.dtype:
    """The narrowest integer dtype holding every integer in [low, high] (unsigned where
    none is negative)."""
    if low >= 0:
        return np.min_scalar_type(high)
    # -high - 1 is as wide a signed number as high (min_scalar_type(high) would be unsigned,
    # and int16 with uint16 promotes to int32)
    return np.promote_types(np.min_scalar_type(low), np.min_scalar_type(-max(high, 0) - 1))


def integral(values: np.ndarray) -> bool:
    """Whether every value is an integer a float64 holds as its own number: finite,
    integral, and no -0.0 (its sign is a bit an integer cannot keep)."""
    if values.dtype.kind in "iu":
        return True
    with np.errstate(invalid="ignore"):
        whole = np.isfinite(values) & (values == np.trunc(values))
    return bool(whole.all() and not (np.signbit(values) & (values == 0)).any())


def as_stored(values: np.ndarray, planned: tuple[int, int] | None, read_as: np.dtype
              ) -> tuple[np.ndarray, dict[str, str], bool]:
    """Raw D values -> (what is stored, its attrs, whether they lie in the plan): integers
    in the planned range's narrowest dtype (the values' own range where they leave it, or
    none was planned), float64 when some value is not an integer."""
    read_as = np.dtype(read_as)
    if not integral(values):
        return values.astype(np.float64), {
            "stored_as": "float64: some value is not an integer (NaN, an infinity, a "
                         "fraction or -0.0), so every value is stored as read",
            "read_as": read_as.name}, False
    low, high = (int(values.min()), int(values.max())) if values.size else (0, 0)
    inside = planned is not None and planned[0] <= low and high <= planned[1]
    dtype = integer_dtype(*(planned if inside else (low, high)))
    within = f"within the planned [{planned[0]}, {planned[1]}]" if inside else \
        f"[{low}, {high}]" + (", beyond the planned range" if planned is not None else "")
    return values.astype(dtype), {
        "stored_as": f"{dtype.name}: every value is an integer ({within}), stored exactly; "
                     f"the D values read as numbers are these, as {read_as.name}",
        "read_as": read_as.name}, inside


def flags(values: np.ndarray) -> np.ndarray:
    """A 0/1 table as uint8 (refusing anything else: it would not be one)."""
    values = np.asarray(values)
    if values.size and (values.min() < 0 or values.max() > 1):
        raise ValueError("a 0/1 table holds another value")
    return values.astype(np.uint8)


def positional(src: np.ndarray, base: int, slots: int, p: int, dtype: np.dtype
               ) -> np.ndarray:
    """The raw value digit wave p reads at each cell as its source spells it: digit p of
    the id, + 1, where `src` is an id (< slots); 0 where it is NONE (and, a placeholder
    every exception overrides, where INVALID)."""
    digit = (src.astype(np.int64) // base**p) % base + 1
    return np.where(src < slots, digit, 0).astype(dtype)


def _same_bits(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.dtype.kind == "f":
        return a.view(np.uint64) == b.view(np.uint64)
    return a == b


def factor(raw: np.ndarray, src: np.ndarray, base: int, slots: int
           ) -> tuple[np.ndarray, np.ndarray]:
    """One kernel's digit waves (P, *cells) and their decoded source (*cells) -> (flat cell
    indices, ascending; their raw values (odd, P)): every cell `positional` does not
    reproduce bit for bit in some digit, and every INVALID one."""
    raw = raw.astype(np.float64 if raw.dtype.kind == "f" else np.int64, copy=False)
    odd = src == INVALID
    for p in range(raw.shape[0]):
        odd |= ~_same_bits(positional(src, base, slots, p, raw.dtype), raw[p])
    cells = np.flatnonzero(odd)
    return cells, raw.reshape(raw.shape[0], -1)[:, cells].T


def unfactor(src: np.ndarray, base: int, slots: int, digits: int, cells: np.ndarray,
             values: np.ndarray, read_as: np.dtype) -> np.ndarray:
    """`factor` undone: (P, *cells) raw values, bit for bit."""
    out = np.stack([positional(src, base, slots, p, np.dtype(read_as)) for p in range(digits)])
    flat = out.reshape(digits, -1)
    flat[:, cells] = np.asarray(values, read_as).reshape(len(cells), digits).T
    return out
