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
from probelab import dataset, gitinfo
from probelab.backends import load_backend
from probelab.backends.guards import POISONS
from probelab.disasm import histogram
from probelab.errors import IntegrityError, UsageError
from probelab.evidence import gate
from probelab.paths import data_dir, shown, sim_data_dir
from probelab.probe import Probe, get_probe, require_target

Step = Callable[[str], None]


@dataclass
class SweepResult:
    path: Path
    dataset: xr.Dataset
    provenance: dict


def _compare_repeats(kernel: str, runs: list[dict[str, np.ndarray]]) -> None:
    """Repeats run with alternating poisons, so a cell no launch wrote cannot match."""
    for name in runs[0]:
        first = runs[0][name]
        for r, run in enumerate(runs[1:], start=1):
            diff = np.flatnonzero(run[name] != first)
            if diff.size:
                raise IntegrityError(
                    f"{kernel}: output {name!r} differs between repeat 0 and {r} in {diff.size} "
                    f"cells (first: index {diff[0]}, {int(first[diff[0]]):#010x} vs "
                    f"{int(run[name][diff[0]]):#010x}); unwritten cells or nondeterminism")


def run_sweep(probe_id: str, backend_name: str = "cuda", *, target: str | None = None,
              repeats: int = 3, out_root: Path | None = None, step: Step = lambda _: None,
              command: list[str] | None = None) -> SweepResult:
    if repeats < 2:
        raise UsageError("--repeats must be at least 2: repeats alternate the output poison, "
                         "which is how a cell the kernel never wrote is told from a real value")
    probe = get_probe(probe_id)
    if getattr(probe, "static", False):
        from probelab.static import run_static_sweep

        return run_static_sweep(probe, target, out_root=out_root, step=step, command=command)
    backend = load_backend(backend_name, probe, target)
    if backend.simulated and out_root is not None and \
            out_root.resolve().is_relative_to(data_dir().resolve()):
        raise UsageError("simulated datasets never go under data/ (the measured archive)")
    step("opening device")
    device = backend.device()
    require_target(probe, device.target)
    kernels = probe.kernels(backend.vendor)
    if not kernels:
        raise UsageError(f"{probe.id} has no {backend.vendor} kernels")
    stimulus = probe.stimulus()
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
    outputs = {}
    for kernel in kernels:
        runs = []
        for r in range(repeats):
            step(f"running {kernel.name} (repeat {r + 1}/{repeats}, {launch.threads} threads)")
            runs.append(backend.run(codes[kernel.name], kernel, launch, poisons[r]))
        _compare_repeats(kernel.name, runs)
        outputs[kernel.name] = runs[0]

    ds = probe.assemble(stimulus, outputs)
    prov = {
        "backend": backend.name,
        "device": device.name,
        "target": device.target,
        "device_details": dict(device.details),
        "toolchain": backend.describe(),
        "kernels": records,
        "repeats": repeats,
        "repeats_identical": True,  # a sweep whose repeats differ is never saved
        "poisons": [f"{p:#010x}" for p in poisons],
        "simulated": backend.simulated,
    }
    root = out_root or (sim_data_dir() if backend.simulated else data_dir())
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
        "command": command or sys.argv,
        "host": {"python": platform.python_version(), "numpy": np.__version__,
                 "xarray": xr.__version__},
    } | prov
    path = root / probe.id / prov["target"] / f"{now.strftime('%Y%m%dT%H%M%SZ')}.nc"
    if path.exists():
        raise UsageError(f"{path} already exists; not overwriting a dataset")
    step(f"saving {path}")
    dataset.save(ds, path, prov)
    return SweepResult(path, dataset.with_provenance(ds, prov), prov)
