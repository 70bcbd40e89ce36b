"""One sweep: compile, gate on evidence, run every kernel `repeats` times, save one dataset.

Nothing is written unless every step succeeded: no device, failed evidence, a guard hit, an
unwritten cell or a non-reproducible cell each stop the sweep before the dataset exists.
"""

import hashlib
import platform
import sys
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import xarray as xr

import probelab
from probelab import codetree, dataset, gitinfo, manifest, storage, targets
from probelab.backends import load_backend
from probelab.backends.guards import POISONS
from probelab.disasm import histogram
from probelab.errors import IntegrityError, UsageError
from probelab.evidence import gate
from probelab.limits import DEFAULT_TIMEOUT_S
from probelab.paths import data_dir, shown, sim_data_dir
from probelab.probe import Probe, get_probe, require_target

Step = Callable[[str], None]


@dataclass
class SweepResult:
    path: Path
    dataset: xr.Dataset
    provenance: dict


def _compare_repeats(kernel: str, runs: list[dict[str, np.ndarray]], poisons: list[int],
                     nondeterministic: frozenset[str]) -> dict[str, int]:
    """Repeats run with alternating poisons, so a cell no launch wrote cannot match. An
    output the probe declares nondeterministic may differ between repeats (the number of
    differing cells is returned for the record), but a cell still holding every repeat's
    poison was never written, and fails the sweep either way."""
    varied = {}
    for name in runs[0]:
        stack = np.stack([run[name] for run in runs])
        differs = np.flatnonzero((stack != stack[0]).any(axis=0))
        if name in nondeterministic:
            # where values may vary, a cell holding its own repeat's poison in any repeat
            # was not written there (a real value equal to it: one chance in 2**32 per cell)
            poison = np.array(poisons, np.uint32)[:, None]
            if (unwritten := np.flatnonzero((stack == poison).any(axis=0))).size:
                raise IntegrityError(f"{kernel}: output {name!r} has {unwritten.size} cells "
                                     f"some repeat did not write (first: index {unwritten[0]})")
            varied[name] = int(differs.size)
        elif differs.size:
            first, i = stack[0], differs[0]
            r = next(r for r in range(1, len(runs)) if stack[r][i] != first[i])
            raise IntegrityError(
                f"{kernel}: output {name!r} differs between repeat 0 and {r} in "
                f"{differs.size} cells (first: index {i}, {int(first[i]):#010x} vs "
                f"{int(stack[r][i]):#010x}); unwritten cells or nondeterminism (a probe "
                "declares outputs that may vary in `nondeterministic`)")
    return varied


def blindness_gate(probe: Probe, grid: xr.Dataset, target: str, allow_blind: bool) -> list:
    """Refuse a stimulus that cannot tell two sealed rivals (or a hypothesis and one of its
    near misses) apart; with `allow_blind`, return those pairs for the record instead."""
    from probelab.power import blind_names

    blind, _ = blind_names(probe, grid, target)
    if blind and not allow_blind:
        named = "; ".join(f"{a} and {b}" for a, b in blind)
        raise IntegrityError(
            f"the stimulus cannot tell apart {named}: they predict the same value on every "
            f"cell both claim, so no data could confirm one and refute the other. Change the "
            f"stimulus (see `probelab prereg power {probe.id}`), or measure anyway with "
            "--allow-blind, which records the blind pairs in the dataset")
    return blind


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


def run_sweep(probe_id: str, backend_name: str | None = None, *, target: str | None = None,
              repeats: int | None = None, out_root: Path | None = None,
              step: Step = lambda _: None, command: list[str] | None = None,
              timeout_s: float | None = None, allow_blind: bool = False) -> SweepResult:
    """Sweep `probe_id` on `backend_name` (default cuda), `repeats` times (default 3), each
    launch within `timeout_s` (default DEFAULT_TIMEOUT_S). A static probe is measured on the
    toolchain: a backend, repeats or a timeout given for one are refused."""
    probe = get_probe(probe_id)
    if getattr(probe, "static", False):
        from probelab.static import run_static_sweep

        for flag, value in (("--backend", backend_name), ("--repeats", repeats),
                            ("--timeout", timeout_s)):
            if value is not None:
                raise UsageError(f"{probe.id} is a static probe, measured on the compiler's "
                                 f"output (each case built twice): {flag} does not apply")
        return run_static_sweep(probe, target, out_root=out_root, step=step, command=command,
                                allow_blind=allow_blind)
    repeats = 3 if repeats is None else repeats
    if repeats < 2:
        raise UsageError("--repeats must be at least 2: repeats alternate the output poison, "
                         "which is how a cell the kernel never wrote is told from a real value")
    backend = load_backend(backend_name or "cuda", probe, target)
    if target is not None and targets.vendor(target) != backend.vendor:  # before any device
        raise UsageError(f"--target {target} is an {targets.vendor(target)} target; the "
                         f"{backend.name} backend runs {backend.vendor} devices")
    backend.timeout_s = DEFAULT_TIMEOUT_S if timeout_s is None else timeout_s
    root = out_root or (sim_data_dir() if backend.simulated else data_dir())
    check_root(root, backend.simulated)
    step("opening device")
    device = backend.device()
    if target is not None and not backend.simulated and target != device.target:
        raise UsageError(f"--target {target}: the device is {device.target} (--target chooses "
                         "the ISA of a simulated device or a static probe only)")
    require_target(probe, device.target)
    kernels = probe.kernels(backend.vendor)
    if not kernels:
        raise UsageError(f"{probe.id} has no {backend.vendor} kernels")
    stimulus = probe.stimulus()
    step("checking that the stimulus can tell the sealed rivals apart")
    blind = blindness_gate(probe, stimulus, device.target, allow_blind)
    launch = probe.launch(stimulus)

    records, codes = {}, {}
    for kernel in kernels:
        step(f"compiling {kernel.name} for {device.target}")
        code = backend.compile(kernel, device.target)
        record = {
            "symbol": kernel.symbol,
            "source": shown(kernel.source),
            "source_sha256": hashlib.sha256(kernel.source.read_bytes()).hexdigest(),
            "code_object_sha256": code.sha256,
            "cache_hit": code.cache_hit,
        }
        if backend.isa is not None:
            functions = code.functions.get(kernel.symbol)
            if functions is None:
                raise IntegrityError(f"{kernel.symbol} not found in the disassembly")
            report = gate(kernel.name, kernel.evidence, functions, backend.isa)
            if not report.ok:
                raise IntegrityError("evidence gate failed: " + "; ".join(report.problems))
            record |= {"histogram": histogram(functions), "evidence": report.to_dict()}
        else:
            record["evidence"] = "not applicable: simulated device"
        records[kernel.name], codes[kernel.name] = record, code

    poisons = [POISONS[r % len(POISONS)] for r in range(repeats)]
    declared = frozenset(getattr(probe, "nondeterministic", ()))
    outputs, varied = {}, {}
    for kernel in kernels:
        runs = []
        for r in range(repeats):
            step(f"running {kernel.name} (repeat {r + 1}/{repeats}, {launch.threads} threads)")
            runs.append(backend.run(codes[kernel.name], kernel, launch, poisons[r]))
        if counts := _compare_repeats(kernel.name, runs, poisons, declared):
            varied[kernel.name] = counts
        outputs[kernel.name] = runs[0]  # repeat 0's values; the record says what varied

    ds = probe.assemble(stimulus, outputs)
    if "decode_problems" in ds and ds["decode_problems"].size:  # kept, and shown
        step(f"the decode could not read everything ({ds['decode_problems'].size} problems, "
             "recorded in the dataset as decode_problems)")
    prov = {
        "backend": backend.name,
        "device": device.name,
        "target": device.target,
        "device_details": dict(device.details),
        "toolchain": backend.describe(),
        "kernels": records,
        "repeats": repeats,
        # undeclared differences never reach here: such a sweep is not saved
        "repeats_identical": not any(n for counts in varied.values() for n in counts.values()),
        "nondeterministic": varied,  # {kernel: {declared output: cells that varied}}
        "poisons": [f"{p:#010x}" for p in poisons],
        "simulated": backend.simulated,
        "blind_pairs": blind,  # rival pairs this stimulus could not separate (--allow-blind)
    }
    return save_sweep(probe, ds, prov, root, step, command)


def save_sweep(probe: Probe, ds: xr.Dataset, prov: dict, root: Path, step: Step,
               command: list[str] | None) -> SweepResult:
    """Add what every dataset records about where and when it was made, and save it."""
    head, dirty = gitinfo.head()
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
        "observables": {name: list(dims) for name, dims in probe.observables.items()},
        "command": command or sys.argv,
        "host": {"python": platform.python_version(), "numpy": np.__version__,
                 "xarray": xr.__version__},
    } | prov
    stem = root / probe.id / prov["target"] / now.strftime("%Y%m%dT%H%M%SZ")
    step(f"saving {shown(stem)}.nc")
    path = dataset.save_new(ds, stem, prov)
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
