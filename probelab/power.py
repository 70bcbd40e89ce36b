"""Discriminating power: can this stimulus tell rival hypotheses apart at all?

Every pair of sealed hypotheses of a probe that claim some common cells are rivals; so is a
hypothesis and each near miss it declares (`[near_misses.NAME]`: other predictions for some
observables, the rest of the file unchanged). For each pair this counts, on the probe's own
stimulus grid and before any data exist, the claimed cells where the two predictions differ.
A pair that differs nowhere is *blind*: whatever the device does, the data confirm both or
refute both, as the canonical stimulus of seeds/000 did. `sweep` refuses to run blind
unless told to (`--allow-blind`), and the dataset then records the pairs it was blind to.

A pair one side declares it restates (`agrees_with`, sealed with the file) is not a rivalry:
it is reported as a restatement, never blind, and where the two differ after all the count
says so (the data then decide between them like any rivals).
"""

import fnmatch
import json
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

import numpy as np
import xarray as xr

from probelab import bounded, targets
from probelab.errors import IntegrityError, LabError
from probelab.hypothesis import Hypothesis, evaluate_claim, load_hypothesis
from probelab.paths import lab_root
from probelab.prereg import ledger_entries, retired_observables
from probelab.probe import Probe, require_target

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

    @property
    def blind(self) -> bool:
        return self.compared > 0 and self.differing == 0 and self.kind != "restatement"

    def to_dict(self) -> dict[str, Any]:
        return {"a": self.a, "b": self.b, "kind": self.kind, "compared": self.compared,
                "differing": self.differing, "blind": self.blind, "examples": self.examples}


def sealed_hypotheses(probe_id: str) -> list[Hypothesis]:
    """The probe's sealed hypotheses, as sealed. A file that no longer hashes to its seal is
    an IntegrityError: the rivals cannot be judged from an edited record."""
    found = []
    for entry in (e for e in ledger_entries() if e["probe"] == probe_id):
        path = lab_root() / entry["path"]
        try:
            h = load_hypothesis(path)
        except LabError as exc:
            raise IntegrityError(f"sealed hypothesis {entry['path']} cannot be read ({exc}); "
                                 "`probelab prereg verify` says more") from exc
        if h.sha256 != entry["file_sha256"]:
            raise IntegrityError(f"sealed hypothesis {entry['path']} was edited after sealing; "
                                 "`probelab prereg verify` says more")
        found.append(h)
    return found


def _read(h: Hypothesis, grid: xr.Dataset, probe: Probe) -> Reading:
    tables, scopes = evaluate_claim(h, grid, probe.observables)
    return Reading(h.id, h, tables["literal"], scopes["literal"] if scopes else None)


def _targets_meet(a: Hypothesis, b: Hypothesis, target: str | None) -> bool:
    if target is not None:
        return a.about_target(target) and b.about_target(target)
    if a.targets is None or b.targets is None:
        return True
    return any(fnmatch.fnmatchcase(x, y) or fnmatch.fnmatchcase(y, x)
               for x in a.targets for y in b.targets)


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


def power(probe: Probe, grid: xr.Dataset | None = None, target: str | None = None,
          hypotheses: list[Hypothesis] | None = None) -> tuple[list[Pair], list[str]]:
    """Every rival pair and every (hypothesis, near miss) pair of the probe's sealed
    hypotheses that claim `target` (all targets when None), on `grid` (the probe's own
    stimulus by default), among `hypotheses` (the sealed ones as `sealed_hypotheses` reads
    them, by default). Returns the pairs and notes on what was left out."""
    if target is not None:
        targets.vendor(target)  # a made-up target is refused, not counted against
        require_target(probe, target)
    grid = probe.stimulus() if grid is None else grid
    hypotheses = sealed_hypotheses(probe.id) if hypotheses is None else hypotheses
    notes: list[str] = []
    readings: dict[str, Reading] = {}
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
            readings[h.id] = _read(h, grid, probe)
        except LabError as exc:
            notes.append(f"{h.id}: not compared ({exc})")
    pairs = []
    for x, y in combinations(sorted(readings.values(), key=lambda r: r.name), 2):
        if _targets_meet(x.hypothesis, y.hypothesis, target):
            declared = x.name in y.hypothesis.agrees_with or y.name in x.hypothesis.agrees_with
            pairs.append(compare(x, y, grid, probe, "restatement" if declared else "rivals"))
    for reading in readings.values():
        for name in sorted(reading.hypothesis.near_misses):
            try:
                near = _read(reading.hypothesis.near_miss(name), grid, probe)
            except LabError as exc:
                notes.append(f"{reading.name}~{name}: not compared ({exc})")
                continue
            pairs.append(compare(reading, near, grid, probe, "near miss"))
    return pairs, notes


def blind_pairs(probe: Probe, grid: xr.Dataset, target: str,
                hypotheses: list[Hypothesis] | None = None) -> list[Pair]:
    return [p for p in power(probe, grid, target, hypotheses)[0] if p.blind]


def blind_names(probe: Probe, grid: xr.Dataset, target: str) -> tuple[list[list[str]], bool]:
    """The blind pairs' names, and whether they came from the cache. The answer depends only
    on the sealed files (as they are: an edited one still raises), the grid, what the probe
    declares and the code that computes it (this module and what it imports), so it is
    cached under a key of all of them: a repeated sweep pays nothing, and any change to one
    recomputes. An entry that does not verify is recomputed."""
    from probelab import depends
    from probelab.cache import cache_key, cached_bytes
    from probelab.dataset import grid_sha256

    hypotheses = sealed_hypotheses(probe.id)  # read once: for the key, and on a miss
    key = cache_key(
        probe=probe.id, version=probe.version, target=target, grid=grid_sha256(grid),
        seals=[h.sha256 for h in hypotheses], code=depends.digest(__name__),
        declared=[dict(probe.observables), list(probe.targets),
                  dict(getattr(probe, "excluded", {})), dict(getattr(probe, "retired", {}))])
    def build() -> bytes:
        return json.dumps([[p.a, p.b] for p in blind_pairs(probe, grid, target, hypotheses)]
                          ).encode()

    payload, hit = cached_bytes("blindness", key, build)
    if (pairs := _pairs(payload)) is None:  # not what this code writes: made again
        payload, hit = cached_bytes("blindness", key, build, fresh=True)
        pairs = _pairs(payload)
    assert pairs is not None
    return pairs, hit


def _pairs(payload: bytes) -> list[list[str]] | None:
    """The blind pairs as `blindness` keeps them, or None where the payload is not that."""
    try:
        pairs = bounded.loads(payload)
    except ValueError:
        return None
    ok = isinstance(pairs, list) and all(
        isinstance(p, list) and len(p) == 2 and all(isinstance(x, str) for x in p)
        for p in pairs)
    return pairs if ok else None
