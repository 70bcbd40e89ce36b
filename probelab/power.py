"""Discriminating power: can this stimulus tell rival hypotheses apart at all?

Every pair of sealed hypotheses of a probe that claim some common cells are rivals; so is a
hypothesis and each near miss it declares (`[near_misses.NAME]`: other predictions for some
observables, the rest of the file unchanged). For each pair this counts, on the probe's own
stimulus grid and before any data exist, the claimed cells where the two predictions differ.
A pair that differs nowhere is *blind*: whatever the device does, the data confirm both or
refute both, as the canonical stimulus of seeds/000 did. `sweep` refuses to run blind
unless told to (`--allow-blind`), and the dataset then records the pairs it was blind to;
`prereg seal` refuses a file that would add such a pair (probelab.rivals.blind_at_seal).

A pair one side declares it restates (`agrees_with`, sealed with the file) is not a rivalry:
it is reported as a restatement, never blind, and where the two differ after all the count
says so (the data then decide between them like any rivals).

A pair told apart on fewer cells than its *floor* is *thin*: one flipped cell could swap the
two verdicts (issue 38). The floor is the probe's (`separation_floor`, ProbeInfo.floor: 32
for the lane-id, sparse and numerics kits, 1 elsewhere), or lower where either file of the
pair declares so with its reason (`[power] floor`, sealed with the file). `sweep` refuses a
thin pair as it does a blind one, unless told to (`--allow-thin`), and records it.
"""

import fnmatch
import json
from itertools import combinations
from typing import NamedTuple

import xarray as xr

from probelab import bounded, vendors
from probelab.hypothesis import Hypothesis
from probelab.prereg import sealed_hypotheses
from probelab.probe import Probe, info, require_target
from probelab.rivals import Pair, near_misses, readings, rivals


def power(probe: Probe, grid: xr.Dataset | None = None, target: str | None = None,
          hypotheses: list[Hypothesis] | None = None) -> tuple[list[Pair], list[str]]:
    """Every rival pair and every (hypothesis, near miss) pair of the probe's sealed
    hypotheses that claim `target` (all targets when None), on `grid` (the probe's own
    stimulus by default), among `hypotheses` (the sealed ones as `sealed_hypotheses` reads
    them, by default). Returns the pairs and notes on what was left out."""
    if target is not None:
        vendors.vendor(target)  # a made-up target is refused, not counted against
        require_target(probe, target)
    grid = probe.stimulus() if grid is None else grid
    hypotheses = sealed_hypotheses(probe.id) if hypotheses is None else hypotheses
    notes: list[str] = []
    found = readings(probe, grid, hypotheses, target, notes)
    pairs = [rivals(x, y, grid, probe)
             for x, y in combinations(sorted(found.values(), key=lambda r: r.name), 2)
             if _targets_meet(x.hypothesis, y.hypothesis, target)]
    for reading in found.values():
        pairs += near_misses(reading, grid, probe, notes)
    floors = {r.name: r.hypothesis.floor for r in found.values()}
    probe_floor = info(probe).floor
    for pair in pairs:  # a near miss "id~name" is held to its file's floor
        declared = [f for name in (pair.a, pair.b)
                    if (f := floors.get(name.split("~")[0])) is not None]
        pair.floor = min([probe_floor, *declared])
    return pairs, notes


def _targets_meet(a: Hypothesis, b: Hypothesis, target: str | None) -> bool:
    if target is not None:
        return a.about_target(target) and b.about_target(target)
    if a.targets is None or b.targets is None:
        return True
    return any(fnmatch.fnmatchcase(x, y) or fnmatch.fnmatchcase(y, x)
               for x in a.targets for y in b.targets)


class Gated(NamedTuple):
    blind: list[list[str]]  # [a, b]
    thin: list[list[str | int]]  # [a, b, differing, floor]


def gated_pairs(probe: Probe, grid: xr.Dataset, target: str,
                hypotheses: list[Hypothesis] | None = None) -> list[Pair]:
    """The pairs a measurement must not rest on: blind, or thin."""
    return [p for p in power(probe, grid, target, hypotheses)[0] if p.blind or p.thin]


def gate_names(probe: Probe, grid: xr.Dataset, target: str) -> tuple[Gated, bool]:
    """The blind pairs' names, the thin ones' ([a, b, differing, floor]), and whether they
    came from the cache. The answer depends only
    on the sealed files (as they are: an edited one still raises), the grid, what the probe
    declares and the code that computes it (this module and what it imports), so it is
    cached under a key of all of them: a repeated sweep pays nothing, and any change to one
    recomputes. An entry that does not verify is recomputed."""
    from probelab import depends
    from probelab.cache import cache_key, cached_bytes
    from probelab.dataset import grid_sha256

    hypotheses = sealed_hypotheses(probe.id)  # read once: for the key, and on a miss
    facts = info(probe)
    key = cache_key(
        probe=probe.id, version=probe.version, target=target, grid=grid_sha256(grid),
        seals=[h.sha256 for h in hypotheses], code=depends.digest(__name__),
        declared=[dict(probe.observables), list(probe.targets),
                  dict(facts.excluded), dict(facts.retired), facts.floor])
    def build() -> bytes:
        pairs = gated_pairs(probe, grid, target, hypotheses)
        return json.dumps({"blind": [[p.a, p.b] for p in pairs if p.blind],
                           "thin": [[p.a, p.b, p.differing, p.floor] for p in pairs if p.thin]}
                          ).encode()

    payload, hit = cached_bytes("blindness", key, build)
    if (gated := _gated(payload)) is None:  # not what this code writes: made again
        payload, hit = cached_bytes("blindness", key, build, fresh=True)
        gated = _gated(payload)
    assert gated is not None
    return gated, hit


def _gated(payload: bytes) -> Gated | None:
    """The gated pairs as `blindness` keeps them, or None where the payload is not that."""
    try:
        doc = bounded.loads(payload)
    except ValueError:
        return None
    if not isinstance(doc, dict) or set(doc) != {"blind", "thin"}:
        return None
    blind, thin = doc["blind"], doc["thin"]
    ok = isinstance(blind, list) and all(
        isinstance(p, list) and len(p) == 2 and all(isinstance(x, str) for x in p)
        for p in blind) and isinstance(thin, list) and all(
        isinstance(p, list) and len(p) == 4 and all(isinstance(x, str) for x in p[:2])
        and all(isinstance(x, int) and not isinstance(x, bool) for x in p[2:]) for p in thin)
    return Gated(blind, thin) if ok else None
