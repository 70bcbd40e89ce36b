"""Fresh stimulus (docs/trust.md row 40): a law read from data is confirmed only on a
stimulus it has not seen. On a deterministic unit a second run of the same cases repeats the
first bit for bit, so a law fitted to one dataset is certain to be CONFIRMED on a replicate:
no test at all. A file that says which archived datasets it was read from (`fitted_from`,
sealed with it) counts a confirmation only on a dataset whose stimulus is new to every
dataset it could have been read from: those it names, and every other pinned dataset of its
probe not provably measured after its seal (naming some does not hide the rest). Judged on
both what the grids record and what they hold:

- the seed: the dataset's `stimulus_seed` (a probe that draws seeded cases records it in its
  grid; a grid without one is seed "none") differs from every held dataset's; and
- the cases: for each claimed kernel, at least FLOOR of the cells it is confirmed on here
  (under the scoring that confirms it: a translation's scope, not only the literal one) lie
  on cases none of the held datasets holds. A case is the bits the launch sends: A's and B's
  K patterns and C's, each masked to its format's width (tf32's ignored low bits dropped),
  whatever integer type spells them. A seed that changes no claimed case, a grid that keeps
  the seen cases under new names, in other formats or another K, or adds its new ones where
  the claim does not look, is seen stimulus still.

A held dataset is believed only as its sweep saved it and the manifest pins it
(`notary.integrity`, measured, its content the pin's): one that is not, or that cannot be
read, cannot vouch for which cases the law was read from, and nothing is confirmed against
it. Whatever cannot be read for certain (a seed that is no integer, a grid whose cases do
not key) reads as seen.
"""

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import xarray as xr

from probelab import dataset, manifest
from probelab.errors import IntegrityError, LabError
from probelab.formats import FORMATS, Element
from probelab.hypothesis import Hypothesis
from probelab.notary.integrity import Judged, judge
from probelab.notary.rules import Finding, Rule
from probelab.numerics.spec import FORMAT_COORDS, GRID
from probelab.paths import lab_root, relative

SEED = "stimulus_seed"  # the grid's 0-d coordinate: what its seeded cases were drawn from
FLOOR = 32  # new claimed cells per kernel: fixed, whatever [power] floor the file declares


class Unkeyed(ValueError):
    """A grid whose numeric cases cannot be keyed as launched (why, in words)."""


def seed(grid: xr.Dataset) -> str | None:
    """The grid's stimulus seed, "none" where it records none, or None where it records one
    that is no single integer."""
    if SEED not in grid.variables:
        return "none"
    values = grid[SEED].values
    if values.ndim != 0 or not np.issubdtype(values.dtype, np.integer):
        return None
    return str(int(values))


def case_dim(grid: xr.Dataset) -> str | None:
    """The axis a grid's numeric cases lie along (C's), or None where it has none."""
    if any(name not in grid.variables for name in GRID) or grid["c_bits"].ndim != 1:
        return None
    return str(grid["c_bits"].dims[0])


def _mask(element: Element) -> int:
    """The bits of a stored pattern the unit reads: its width (tf32: its top 19 of 32)."""
    meaningful = 1 + element.exponent + element.fraction if element.stored_in else element.bits
    return ((1 << meaningful) - 1) << (element.bits - meaningful)


def _formats(grid: xr.Dataset) -> list[Element]:
    out = []
    for name in FORMAT_COORDS:
        value = grid[name].values if name in grid.variables else None
        if value is None or value.ndim != 0 or str(value) not in FORMATS:
            raise Unkeyed(f"its {name} is no format the lab knows")
        out.append(FORMATS[str(value)])
    return out


def _bits(grid: xr.Dataset, name: str, axis: str, ndim: int) -> np.ndarray:
    var = grid[name]
    if var.ndim != ndim or axis not in var.dims or not np.issubdtype(var.dtype, np.integer):
        raise Unkeyed(f"its {name} is no integer pattern per case")
    return var.transpose(axis, ...).values.astype(np.uint64)  # a signed one, sign-extended


def spelling(grid: xr.Dataset) -> str:
    """What a grid's case keys are read in: its formats and K (Unkeyed where it has none)."""
    if (axis := case_dim(grid)) is None:
        raise Unkeyed("its grid has no numeric cases")
    k = [_bits(grid, n, axis, 2).shape[1] for n in GRID[:2]]
    return "|".join([*(e.name for e in _formats(grid)), *map(str, k)])


def cases(grid: xr.Dataset) -> list[bytes]:
    """Each numeric case as one key, as launched: its spelling, then A's and B's K patterns
    and C's as unsigned 64-bit words, C masked to D's format and A and B both to the
    narrower of theirs (the kit packs B at A's width). Unkeyed where the grid has none."""
    spelt, axis = spelling(grid), case_dim(grid)
    assert axis is not None  # spelling refuses a grid without cases
    a_format, b_format, d_format = _formats(grid)
    ab = np.uint64(_mask(a_format) & _mask(b_format))
    rows = np.concatenate([_bits(grid, "a_bits", axis, 2) & ab,
                           _bits(grid, "b_bits", axis, 2) & ab,
                           (_bits(grid, "c_bits", axis, 1) & np.uint64(_mask(d_format)))[:, None]],
                          axis=1)
    return [spelt.encode() + b"|" + row.tobytes() for row in rows]


def judged_fresh(h: Hypothesis, here: Judged, claimed: Mapping[str, np.ndarray] | None,
                 after_seal: Callable[[Judged], bool]) -> tuple[list[Finding], dict[str, Any]]:
    """Why the dataset `here` is no fresh stimulus for the law `h` (empty where it is one),
    and what was judged: its seed, and the cells the claim is confirmed on here (`claimed`:
    per claimed kernel, per case, under the scoring that confirms it; None where the grid has
    no numeric cases) that lie on cases none of the held datasets holds, for the kernel with
    fewest. Held: what `h` names, and each other pinned dataset of its probe that
    `after_seal` does not prove measured after its seal; each judged as `here` was (verify
    judges every dataset's git history once, for the whole archive)."""
    named = h.fitted_from
    account: dict[str, Any] = {"fitted_from": list(named), "stimulus_seed": seed(here.grid),
                               "floor": FLOOR}

    def seen(detail: str) -> tuple[list[Finding], dict[str, Any]]:
        return [Finding(Rule.SEEN_STIMULUS, detail=detail, files=named)], account

    if account["stimulus_seed"] is None:
        return seen(f"its {SEED} is no single integer")
    if claimed is None:
        return seen("its grid has no numeric cases to tell new ones from seen ones")
    try:
        keys, spelt = cases(here.grid), spelling(here.grid)
        entries = manifest.read()
    except (Unkeyed, IntegrityError) as exc:
        return seen(f"{exc}")
    pins, own = {e["path"]: e for e in entries}, relative(here.path)
    held: set[bytes] = set()
    for name in sorted({*named, *(p for p, e in pins.items()
                                  if e["probe"] == h.probe and p != own)}):
        try:
            other = judge(lab_root() / name, history=here.history, pins=entries)
        except (LabError, OSError) as exc:
            return seen(f"{name} cannot be read ({exc})")
        if other.findings:
            return seen(f"{name} is not what its sweep saved ({other.problem})")
        if dataset.simulated(other.prov) or pins.get(name, {}).get("content_sha256") \
                != other.content:
            return seen(f"{name} is not the measured dataset its pin holds")
        if name not in named and after_seal(other):
            continue  # a test of the sealed law, not what it was read from
        if (theirs := seed(other.grid)) is None:
            return seen(f"{name}'s {SEED} is no single integer")
        if theirs == account["stimulus_seed"]:
            return seen(f"its stimulus seed ({theirs}) is {name}'s too")
        try:
            if (spelt_there := spelling(other.grid)) != spelt:
                return seen(f"its cases are not spelled as {name}'s ({spelt} against "
                            f"{spelt_there}): new ones cannot be told from seen ones")
            held.update(cases(other.grid))
        except Unkeyed as exc:
            return seen(f"{name}: {exc}")
    new = np.array([key not in held for key in keys], bool)
    fewest = min(claimed, key=lambda kernel: int(claimed[kernel][new].sum()))
    account |= {"claimed_cells": int(claimed[fewest].sum()),
                "new_cells": int(claimed[fewest][new].sum())}
    if account["new_cells"] < FLOOR:
        return seen(f"only {account['new_cells']} of the {account['claimed_cells']} cells it "
                    f"claims here ({fewest}) lie on cases none of them holds (at least {FLOOR} "
                    "must)")
    return [], account
