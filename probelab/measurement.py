"""What every measurement shares, device sweep or static: where its dataset may go, the
separation gate (blind and thin pairs) before any data is taken, and saving it with the
provenance every dataset records (pinned in the manifest when it joins the archive)."""

import os
import platform
import secrets
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import xarray as xr

import probelab
from probelab import codetree, dataset, gitinfo, manifest, storage
from probelab.errors import IntegrityError, UsageError
from probelab.paths import data_dir, shown
from probelab.probe import INFO_KEY, Probe, info
from probelab.records import Provenance

Step = Callable[[str], None]


@dataclass
class SweepResult:
    path: Path
    dataset: xr.Dataset
    provenance: dict


def separation_gate(probe: Probe, grid: xr.Dataset, target: str, allow_blind: bool,
                    simulated: bool = False, allow_thin: bool = False
                    ) -> tuple[list, list]:
    """Refuse a stimulus that cannot tell two sealed rivals (or a hypothesis and one of its
    near misses) apart, or tells them apart on fewer cells than their floor (thin:
    probelab.power); with `allow_blind` / `allow_thin`, return those pairs for the record
    instead. A `simulated` sweep is never evidence, so it only warns (one line on stderr)
    and records them: a probe design can still be tried out on the simulated device."""
    from probelab.power import gate_names

    (blind, thin), _ = gate_names(probe, grid, target)
    refused = []
    if blind and not allow_blind:
        named = "; ".join(f"{a} and {b}" for a, b in blind)
        refused.append((f"the stimulus cannot tell apart {named}: they predict the same value "
                        "on every cell both claim, so no data could confirm one and refute the "
                        "other", "--allow-blind", "blind"))
    if thin and not allow_thin:
        named = "; ".join(f"{a} and {b} ({n} < {floor})" for a, b, n, floor in thin)
        refused.append((f"the stimulus tells apart {named} on fewer cells than their floor, so "
                        "one flipped cell could swap the verdicts", "--allow-thin", "thin"))
    for cannot, flag, kind in refused:
        if not simulated:
            raise IntegrityError(
                f"{cannot}. Change the stimulus (see `probelab prereg power {probe.id}`), or "
                f"measure anyway with {flag}, which records the {kind} pairs in the dataset")
        print(f"warning: {cannot}; simulated data are never evidence, so the sweep goes on "
              f"and the dataset records the {kind} pairs", file=sys.stderr)
    return blind, thin


def check_root(root: Path, simulated: bool) -> None:
    """Simulated datasets never go under data/ (resolved: a sim-data/ or --out linked into
    it is refused too); measured ones go to data/ itself, where the manifest pins them, or
    outside it (saved, but counted nowhere until a sweep saves into the archive)."""
    inside = root.resolve().is_relative_to(data_dir().resolve())
    if simulated and inside:
        raise UsageError("simulated datasets never go under data/ (the measured archive)")
    if inside and root.resolve() != data_dir().resolve():
        raise UsageError(f"--out {root} is inside data/: measured datasets go to data/ "
                         "itself (data/PROBE/TARGET/), or outside the archive")


def run_facts(started: float) -> dict[str, object]:
    """What sets this run apart from any other, even one of the same code on the same
    device giving the same values (a deterministic unit repeats itself bit for bit): a
    random nonce drawn for it, the measuring process, and its wall time from `started`
    (time.time()). A copy of a dataset keeps them; an honest replication cannot."""
    return {"nonce": secrets.token_hex(16), "pid": os.getpid(),
            "started_utc": time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime(started)),
            "seconds": round(time.time() - started, 3)}


def save_sweep(probe: Probe, ds: xr.Dataset, prov: Provenance, root: Path, step: Step,
               command: list[str] | None, started: float) -> SweepResult:
    """Add what every dataset records about where and when it was made (the run that made
    it, begun at `started`), and save it."""
    head, dirty = gitinfo.head()
    facts = info(probe)
    now = datetime.now(UTC)
    prov = {
        "probe": probe.id,
        "probe_version": probe.version,
        "probelab_version": probelab.__version__,
        "git_head": head,
        "git_dirty": dirty,
        "utc": now.isoformat(timespec="seconds"),
        "grid_sha256": dataset.grid_sha256(ds),
        "code_tree": codetree.snapshot(),  # what decoded it: checked against git_head
        # what a check needs, so that it reads this dataset and no probe code: the
        # observables and their dims, those the probe has retired, the plots it offers,
        # and all the probe's facts (probelab.probe.ProbeInfo)
        "observables": {name: list(dims) for name, dims in probe.observables.items()},
        "retired": dict(facts.retired),
        INFO_KEY: facts.record(),  # the probe's facts, for a check to read
        "plots": sorted(probe.plots),
        "command": command or sys.argv,
        "run": run_facts(started),
        "host": {"python": platform.python_version(), "numpy": np.__version__,
                 "xarray": xr.__version__},
    } | prov
    stem = root / probe.id / prov["target"] / now.strftime("%Y%m%dT%H%M%SZ")
    # one static dataset per (target, toolchain): its name says which
    label = prov["toolchain"]["name"] if prov.get("static") else ""
    step(f"saving {shown(stem)}{f'.{label}' if label else ''}.nc")
    path = dataset.save_new(ds, stem, prov, label)
    prov = dataset.stored_provenance(path)  # with the content hash it was saved with
    if not dataset.simulated(prov) and root.resolve() == data_dir().resolve():
        step(f"pinning it in {shown(manifest.manifest_path())}")
        try:
            manifest.pin(path, prov[dataset.CONTENT_KEY], probe.id, prov["target"])
        except BaseException:  # an unpinned dataset cannot count: leave none behind
            path.unlink(missing_ok=True)
            storage.written.remove(path)
            raise
    return SweepResult(path, dataset.with_provenance(ds, prov), prov)
