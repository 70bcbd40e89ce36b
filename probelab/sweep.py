"""One sweep: compile, gate on evidence, run every kernel `repeats` times, save one dataset.

Nothing is written unless every step succeeded: no device, failed evidence, a guard hit, an
unwritten cell or a non-reproducible cell each stop the sweep before the dataset exists.
A static probe is measured on the toolchain instead (probelab.static); both save through
probelab.measurement.
"""

import hashlib
import time
from pathlib import Path

import numpy as np

from probelab import dataset, vendors
from probelab.backends import Backend, DeviceInfo, load_backend
from probelab.backends.guards import POISONS
from probelab.codeobject import CodeObject
from probelab.disasm import histogram
from probelab.errors import IntegrityError, UsageError
from probelab.evidence import gate
from probelab.limits import DEFAULT_TIMEOUT_S
from probelab.measurement import Step, SweepResult, check_root, save_sweep, separation_gate
from probelab.paths import data_dir, shown, sim_data_dir
from probelab.probe import Kernel, Launch, Probe, get_probe, info, require_target
from probelab.records import KernelRecord, Provenance

__all__ = ["SweepResult", "run_sweep"]


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


def run_sweep(probe_id: str, backend_name: str | None = None, *, target: str | None = None,
              repeats: int | None = None, out_root: Path | None = None,
              step: Step = lambda _: None, command: list[str] | None = None,
              timeout_s: float | None = None, allow_blind: bool = False,
              allow_thin: bool = False) -> SweepResult:
    """Sweep `probe_id` on `backend_name` (default: vendors.default_backend), `repeats` times
    (default 3), each launch within `timeout_s` (default DEFAULT_TIMEOUT_S). A static probe
    is measured on the toolchain: a backend, repeats or a timeout given for one are refused."""
    started = time.time()
    probe = get_probe(probe_id)
    facts = info(probe)
    if facts.static:
        from probelab.static import refuse_device_options, run_static_sweep

        refuse_device_options(probe, backend=backend_name, repeats=repeats, timeout=timeout_s)
        return run_static_sweep(probe, target, out_root=out_root, step=step, command=command,
                                allow_blind=allow_blind, allow_thin=allow_thin,
                                started=started)
    repeats = 3 if repeats is None else repeats
    if repeats < 2:
        raise UsageError("--repeats must be at least 2: repeats alternate the output poison, "
                         "which is how a cell the kernel never wrote is told from a real value")
    backend = _backend(probe, backend_name, target, timeout_s)
    root = out_root or (sim_data_dir() if backend.simulated else data_dir())
    check_root(root, backend.simulated)
    device, kernels = _open(probe, backend, target, step)
    stimulus = probe.stimulus()
    if declared := getattr(probe, "declared_bytes", None):  # known before the device runs
        dataset.refuse_declared(declared(stimulus), probe.id, "not swept")
    step("checking that the stimulus can tell the sealed rivals apart")
    blind, thin = separation_gate(probe, stimulus, device.target, allow_blind,
                                  backend.simulated, allow_thin)
    launch = probe.launch(stimulus)
    records, codes = _compile_and_gate(backend, kernels, device.target, step)
    poisons = [POISONS[r % len(POISONS)] for r in range(repeats)]
    outputs, varied = _run_repeats(facts.nondeterministic, backend, kernels, codes, launch,
                                   poisons, step)
    ds = probe.assemble(stimulus, outputs)
    if (said := facts.problems) and said in ds and ds[said].size:  # kept, and shown
        step(f"the decode could not read everything ({ds[said].size} problems, "
             f"recorded in the dataset as {said})")
    prov: Provenance = {
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
        "thin_pairs": thin,  # [a, b, cells, floor]: told apart on too few (--allow-thin)
    }
    if maps := getattr(backend, "tensor_maps", ()):  # each by-value map, as it was passed
        prov["tensor_maps"] = list(maps)
    if not backend.simulated and (outside := vendors.unpinned()):
        prov["vendor_code"] = outside  # code no commit pins ran here: never evidence
    return save_sweep(probe, ds, prov, root, step, command, started)


def _backend(probe: Probe, name: str | None, target: str | None,
             timeout_s: float | None) -> Backend:
    """The backend, refusing a target of the other vendor before any device is opened."""
    backend = load_backend(name or vendors.default_backend(), probe, target)
    if target is not None and vendors.vendor(target) != backend.vendor:
        raise UsageError(f"--target {target} is an {vendors.vendor(target)} target; the "
                         f"{backend.name} backend runs {backend.vendor} devices")
    backend.timeout_s = DEFAULT_TIMEOUT_S if timeout_s is None else timeout_s
    return backend


def _open(probe: Probe, backend: Backend, target: str | None, step: Step
          ) -> tuple[DeviceInfo, list[Kernel]]:
    """The device, checked against --target and the probe's targets, and its kernels."""
    step("opening device")
    device = backend.device()
    if target is not None and not backend.simulated and target != device.target:
        raise UsageError(f"--target {target}: the device is {device.target} (--target chooses "
                         "the ISA of a simulated device or a static probe only)")
    require_target(probe, device.target)
    kernels = probe.kernels(backend.vendor)
    if not kernels:
        raise UsageError(f"{probe.id} has no {backend.vendor} kernels")
    return device, kernels


def _compile_and_gate(backend: Backend, kernels: list[Kernel], target: str, step: Step
                      ) -> tuple[dict[str, KernelRecord], dict[str, CodeObject]]:
    """Every kernel compiled and, on a real device, its code object through the evidence
    gate: {kernel: its provenance record}, {kernel: its code object}."""
    records, codes = {}, {}
    for kernel in kernels:
        step(f"compiling {kernel.name} for {target}")
        code = backend.compile(kernel, target)
        record: KernelRecord = {
            "symbol": kernel.symbol,
            "source": shown(kernel.source),
            "source_sha256": hashlib.sha256(kernel.source_bytes()).hexdigest(),
            "code_object_sha256": code.sha256,
            "cache_hit": code.cache_hit,
            "built_for": code.target,  # the target's arch-specific variant where asked (sm_90a)
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
    return records, codes


def _run_repeats(declared: frozenset[str], backend: Backend, kernels: list[Kernel],
                 codes: dict[str, CodeObject], launch: Launch, poisons: list[int], step: Step
                 ) -> tuple[dict[str, dict[str, np.ndarray]], dict[str, dict[str, int]]]:
    """Each kernel run once per poison, the repeats compared: repeat 0's outputs per
    kernel, and per kernel the declared-nondeterministic (`declared`) cells that varied."""
    outputs, varied = {}, {}
    for kernel in kernels:
        runs = []
        for r, poison in enumerate(poisons):
            step(f"running {kernel.name} (repeat {r + 1}/{len(poisons)}, "
                 f"{launch.threads} threads)")
            runs.append(backend.run(codes[kernel.name], kernel, launch, poison))
        if counts := _compare_repeats(kernel.name, runs, poisons, declared):
            varied[kernel.name] = counts
        outputs[kernel.name] = runs[0]  # repeat 0's values; the record says what varied
    return outputs, varied
