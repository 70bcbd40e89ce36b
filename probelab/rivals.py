"""Hypotheses compared cell by cell on a stimulus grid: the pairs `prereg power` and the
sweep's blindness gate judge (probelab.power), and those `prereg seal` judges before it
writes anything (`blind_at_seal`). A pair is blind where it differs on none of the cells
both claim; a declared restatement (`agrees_with`) never is.
"""

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import xarray as xr

from probelab import vendors
from probelab.errors import LabError
from probelab.hypothesis import Hypothesis, evaluate_claim, retired_observables
from probelab.probe import Probe, supports

EXAMPLES = 3


@dataclass
class Reading:
    """One hypothesis, or one near miss of it, evaluated literally on the grid."""

    name: str  # "id", or "id~near-miss"
    hypothesis: Hypothesis
    tables: dict[str, np.ndarray]
    scopes: dict[str, np.ndarray] | None


@dataclass
class Pair:
    a: str
    b: str
    kind: str  # "rivals", "near miss" or "restatement" (declared with agrees_with)
    compared: int = 0  # claimed cells both predict
    differing: int = 0
    examples: list[dict[str, Any]] = field(default_factory=list)
    floor: int = 1  # the fewest differing cells that tell them apart (probelab.power)

    @property
    def blind(self) -> bool:
        return self.compared > 0 and self.differing == 0 and self.kind != "restatement"

    @property
    def thin(self) -> bool:
        """Told apart, but on fewer cells than the floor: one flipped cell could swap them."""
        return self.kind != "restatement" and 0 < self.differing < self.floor

    def to_dict(self) -> dict[str, Any]:
        return {"a": self.a, "b": self.b, "kind": self.kind, "compared": self.compared,
                "differing": self.differing, "blind": self.blind, "floor": self.floor,
                "thin": self.thin, "examples": self.examples}


def read(h: Hypothesis, grid: xr.Dataset, probe: Probe) -> Reading:
    tables, scopes = evaluate_claim(h, grid, probe.observables)
    return Reading(h.id, h, tables["literal"], scopes["literal"] if scopes else None)


def _cell(grid: xr.Dataset, dims: tuple[str, ...], index: tuple[int, ...]) -> dict[str, Any]:
    out = {}
    for dim, i in zip(dims, index, strict=True):
        value = grid[dim].values[i] if dim in grid.coords else i
        out[dim] = value.item() if isinstance(value, np.generic) else value
    return out


def compare(x: Reading, y: Reading, grid: xr.Dataset, probe: Probe, kind: str) -> Pair:
    """Cells both claim, per common observable, and where their predictions differ."""
    pair = Pair(x.name, y.name, kind)
    names = [str(k) for k in grid["kernel"].values] if "kernel" in grid.coords else []
    kx, ky = x.hypothesis.kernels, y.hypothesis.kernels
    kernels = ky if kx is None else kx if ky is None else tuple(set(kx) & set(ky))
    if kernels is not None and not kernels:
        return pair  # they claim different kernels: nothing to tell apart
    for observable in sorted(x.tables.keys() & y.tables.keys()):
        dims = tuple(probe.observables[observable])
        a, b = x.tables[observable], y.tables[observable]
        mask = np.ones(a.shape, bool)
        for scopes in (x.scopes, y.scopes):
            if scopes is not None:
                mask &= scopes[observable]
        if dims and dims[0] == "kernel" and kernels is not None:
            mask &= np.isin(np.array(names), list(kernels)).reshape(-1, *[1] * (a.ndim - 1))
        diff = (a != b) & mask
        pair.compared += int(mask.sum())
        pair.differing += int(diff.sum())
        for flat in np.flatnonzero(diff)[: EXAMPLES - len(pair.examples)]:
            index = tuple(int(i) for i in np.unravel_index(flat, diff.shape))
            pair.examples.append(_cell(grid, dims, index) | {
                "observable": observable, x.name: int(a[index]), y.name: int(b[index])})
    return pair


def readings(probe: Probe, grid: xr.Dataset, hypotheses: list[Hypothesis],
             target: str | None, notes: list[str]) -> dict[str, Reading]:
    """Each hypothesis about `target` (any, when None) read literally on the grid, by id;
    those left out (about other targets, sealed for an earlier version of the probe, not
    evaluable) said in `notes`."""
    found: dict[str, Reading] = {}
    for h in hypotheses:
        if target is not None and not h.about_target(target):
            notes.append(f"{h.id}: left out, about targets {list(h.targets or ())}, not "
                         f"{target}")
            continue
        if retired := retired_observables(h):  # sealed for an earlier version: not a rival
            notes.append(f"{h.id}: left out, sealed for an earlier version of {probe.id} "
                         f"(predicts {retired}, which it no longer observes)")
            continue
        try:
            found[h.id] = read(h, grid, probe)
        except LabError as exc:
            notes.append(f"{h.id}: not compared ({exc})")
    return found


def rivals(x: Reading, y: Reading, grid: xr.Dataset, probe: Probe) -> Pair:
    """Two hypotheses compared: rivals, or a restatement where either declares it."""
    declared = x.name in y.hypothesis.agrees_with or y.name in x.hypothesis.agrees_with
    return compare(x, y, grid, probe, "restatement" if declared else "rivals")


def near_misses(reading: Reading, grid: xr.Dataset, probe: Probe, notes: list[str]
                ) -> list[Pair]:
    """A hypothesis against each near miss it declares."""
    pairs = []
    for name in sorted(reading.hypothesis.near_misses):
        try:
            near = read(reading.hypothesis.near_miss(name), grid, probe)
        except LabError as exc:
            notes.append(f"{reading.name}~{name}: not compared ({exc})")
            continue
        pairs.append(compare(reading, near, grid, probe, "near miss"))
    return pairs


def blind_at_seal(probe: Probe, new: Hypothesis, sealed: list[Hypothesis]) -> list[Pair]:
    """The blind pairs sealing `new` would add to the probe's, on its own stimulus: `new`
    against each of the `sealed` hypotheses it shares a target of the probe with, and
    against each near miss it declares. Every sweep on such a target would then be blind
    (probelab.power's gate). Pairs among the files already sealed are not judged again."""
    grid = probe.stimulus()
    notes: list[str] = []  # a sealed file that cannot be read was said at its own seal
    mine = read(new, grid, probe)
    pairs = [rivals(mine, other, grid, probe)
             for other in readings(probe, grid, sealed, None, notes).values()
             if _share_a_target(probe, new, other.hypothesis)]
    if _share_a_target(probe, new):
        pairs += near_misses(mine, grid, probe, notes)
    return [p for p in pairs if p.blind]


def _share_a_target(probe: Probe, *hypotheses: Hypothesis) -> bool:
    """Whether some known target of the probe is one every hypothesis is about."""
    return any(supports(probe, t) and all(h.about_target(t) for h in hypotheses)
               for known in vendors.TARGETS.values() for t in known)
