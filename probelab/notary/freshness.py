"""Fresh stimulus (docs/trust.md row 40): a law read from data is confirmed only on a
stimulus it has not seen. On a deterministic unit a second run of the same cases repeats the
first bit for bit, so a law fitted to one dataset is certain to be CONFIRMED on a replicate:
no test at all. A file that says which archived datasets it was read from (`fitted_from`,
sealed with it) counts a confirmation only on a dataset whose stimulus is new to every one
of them, judged on both what the grids record and what they hold:

- the seed: the dataset's `stimulus_seed` (a probe that draws seeded cases records it in its
  grid; a grid without one is seed "none") differs from every named dataset's; and
- the cases: at least `floor` of the cells the claim scores here lie on cases (A's and B's
  K patterns and C's, in their formats) that none of the named datasets holds. A seed that
  changes no claimed case, a grid that keeps the seen cases under new names or adds its new
  ones where the claim does not look, is seen stimulus still.

A named dataset is believed only as its sweep saved it (`notary.integrity`): one that is not
cannot vouch for which cases the law was read from, and nothing is confirmed against it.
"""

from collections.abc import Iterable
from typing import Any

import numpy as np
import xarray as xr

from probelab.errors import LabError
from probelab.notary.integrity import Judged, judge
from probelab.notary.rules import Finding, Rule
from probelab.numerics.spec import FORMAT_COORDS, GRID
from probelab.paths import lab_root

SEED = "stimulus_seed"  # the grid's 0-d coordinate: what its seeded cases were drawn from


def seed(grid: xr.Dataset) -> str:
    """The grid's stimulus seed, or "none" where it records none."""
    return str(int(grid[SEED].values)) if SEED in grid.variables else "none"


def case_dim(grid: xr.Dataset) -> str | None:
    """The axis a grid's numeric cases lie along (C's), or None where it has none."""
    if any(name not in grid.variables for name in GRID) or grid["c_bits"].ndim != 1:
        return None
    return str(grid["c_bits"].dims[0])


def cases(grid: xr.Dataset) -> list[bytes]:
    """Each numeric case as one key: the formats' names, then A's and B's K patterns and
    C's, as unsigned 64-bit words (a grid of 32-bit patterns keys as one of 64)."""
    formats = "|".join(str(grid[n].values) if n in grid.variables else "" for n in FORMAT_COORDS)
    rows = np.concatenate([grid["a_bits"].values.astype(np.uint64),
                           grid["b_bits"].values.astype(np.uint64),
                           grid["c_bits"].values.astype(np.uint64)[:, None]], axis=1)
    return [formats.encode() + b"|" + row.tobytes() for row in rows]


def judged_fresh(fitted_from: Iterable[str], here: Judged, claimed: np.ndarray | None,
                 floor: int) -> tuple[list[Finding], dict[str, Any]]:
    """Why the dataset `here` is no fresh stimulus for a law read from `fitted_from` (empty
    where it is one), and what was judged: its seed, and the cells the claim scores here
    (`claimed`: per case, how many; None where its grid has no numeric cases) that lie on
    cases none of the named datasets holds."""
    named = tuple(fitted_from)
    account: dict[str, Any] = {"fitted_from": list(named), "stimulus_seed": seed(here.grid),
                               "floor": floor}

    def seen(detail: str) -> tuple[list[Finding], dict[str, Any]]:
        return [Finding(Rule.SEEN_STIMULUS, detail=detail, files=named)], account

    if claimed is None or case_dim(here.grid) is None:
        return seen("its grid has no numeric cases to tell new ones from seen ones")
    held: set[bytes] = set()
    for name in named:
        try:
            other = judge(lab_root() / name)
        except (LabError, OSError) as exc:
            return seen(f"{name} cannot be read ({exc})")
        if other.findings:
            return seen(f"{name} is not what its sweep saved ({other.problem})")
        if seed(other.grid) == account["stimulus_seed"]:
            return seen(f"its stimulus seed ({account['stimulus_seed']}) is {name}'s too")
        if case_dim(other.grid) is not None:
            held.update(cases(other.grid))
    new = np.array([key not in held for key in cases(here.grid)], bool)
    account |= {"claimed_cells": int(claimed.sum()), "new_cells": int(claimed[new].sum())}
    if account["new_cells"] < floor:
        return seen(f"only {account['new_cells']} of the {account['claimed_cells']} cells it "
                    f"claims here lie on cases none of them holds (at least {floor} must)")
    return [], account
