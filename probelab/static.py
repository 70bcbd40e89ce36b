"""Static sweeps: probes whose measurement is the compiler's output, not a device's.

The toolchain is the device: a dataset is one (target, toolchain), saved as
data/PROBE/TARGET/TIME.TOOLCHAIN.nc. Two kinds of probe:
- kernel probes (`variant`, `decode`): each cell of the grid is compiled to its own code
  object (constant builtin arguments must be literals), twice, and must be byte-identical;
  what `decode` reads off the instruction under test becomes the cell's observables;
- pipeline probes (`measure`): the probe drives the toolchain's tools itself (llc with
  either instruction selector, llvm-mc on its text, ...); the core measures the grid twice
  and refuses a difference.
Either way the object's disassembly of each case passes the evidence gate (a forbidden
relative, e.g. a call where the instruction should be, stops the sweep), and a case the
target cannot build is data too (builds = 0, with the compiler's first diagnostic line).
"""

import hashlib
import re
import time
from pathlib import Path

import numpy as np
import xarray as xr

from probelab.errors import IntegrityError, Unavailable, UsageError
from probelab.evidence import gate
from probelab.measurement import Step, SweepResult, check_root, save_sweep, separation_gate
from probelab.paths import data_dir, shown
from probelab.probe import STATIC_PIPELINE, BuiltCase, Evidence, info, supports
from probelab.records import Provenance
from probelab.vendors import Vendor, of, unpinned

KERNEL = "static"  # the single `kernel` label of a static dataset
KERNEL_TEXTS = ("instruction", "diagnostic")


def refuse_device_options(probe, **given: object) -> None:
    """A static probe is measured on the compiler's output: device options do not apply."""
    for flag, value in given.items():
        if value is not None:
            raise UsageError(f"{probe.id} is a static probe, measured on the compiler's "
                             f"output (each case built twice): --{flag} does not apply")


def static_targets(probe) -> list[str]:
    """The concrete targets a static probe lists (its patterns without wildcards)."""
    return [t for t in probe.targets if not set(t) & set("*?[")]


def run_static_sweeps(probe, target: str | None, toolchain: str | None, *,
                      out_root: Path | None = None, step: Step = lambda _: None,
                      command: list[str] | None = None, allow_blind: bool = False,
                      allow_thin: bool = False) -> tuple[list[SweepResult], dict[str, str]]:
    """One dataset per (target, toolchain): `target` None means every target the probe
    lists, `toolchain` a name, "all" or None (the default). Returns the results and, for
    each pair a toolchain cannot build, why it was skipped. Nothing built: Unavailable."""
    chosen = [target] if target is not None else static_targets(probe)
    results, skipped = [], {}
    for name in chosen:
        vendor = _vendor(probe, name)
        for tc in vendor.tools().select(toolchain):
            try:
                vendor.tools().check_target(name, tc)
            except Unavailable as exc:
                skipped[f"{name} × {tc.name}"] = str(exc)
                continue
            results.append(run_static_sweep(probe, name, toolchain=tc.name, out_root=out_root,
                                            step=step, command=command,
                                            allow_blind=allow_blind, allow_thin=allow_thin))
    if not results:
        raise Unavailable(f"no toolchain here builds {probe.id} for "
                          f"{', '.join(chosen)}: " + "; ".join(skipped.values()))
    return results, skipped


def _vendor(probe, target: str | None) -> Vendor:
    vendor = of(target) if target is not None else None  # a made-up target: refused
    if vendor is None or not supports(probe, target):
        raise UsageError(f"{probe.id} is a static probe, measured on a toolchain's output: "
                         f"give --target, one of {', '.join(probe.targets)}")
    return vendor


def run_static_sweep(probe, target: str | None, *, toolchain: str | None = None,
                     out_root: Path | None = None, step: Step = lambda _: None,
                     command: list[str] | None = None, allow_blind: bool = False,
                     allow_thin: bool = False, started: float | None = None) -> SweepResult:
    """One dataset of `probe` for `target` built by the toolchain named `toolchain` (None:
    the default; "all" is for `run_static_sweeps`), its run begun at `started` (now)."""
    started = time.time() if started is None else started
    vendor = _vendor(probe, target)
    tools = vendor.tools()
    if toolchain == tools.ALL:
        raise UsageError("one toolchain per dataset: name one, or sweep with run_static_sweeps")
    (tc,) = tools.select(toolchain)
    tools.check_target(target, tc)
    root = out_root or data_dir()
    check_root(root, simulated=False)
    grid = probe.stimulus()
    blind, thin = separation_gate(probe, grid, target, allow_blind, allow_thin=allow_thin)
    if info(probe).instrument == STATIC_PIPELINE:
        built = probe.measure(grid, target, tc, step)
        again = probe.measure(grid, target, tc, lambda text: step(f"again: {text}"))
        if built != again:
            first = next(i for i, (a, b) in enumerate(zip(built, again, strict=True)) if a != b)
            raise IntegrityError(f"case {first}: two runs of the pipeline differ; the "
                                 "toolchain is not deterministic")
        texts, source, compiled = probe.texts, probe.source, probe.source.read_bytes()
        described = tools.describe(tc, probe.tools)  # the LLVM tools it ran, too
    else:
        built = _build_kernels(probe, grid, target, tools, tc, step)
        kernel = probe.variant(_case(grid, 0))  # its text, as a build compiles it
        texts, source, compiled = KERNEL_TEXTS, kernel.source, kernel.source_bytes()
        described = tools.describe(tc)
    ds = _dataset(probe, grid, built, texts, vendor)
    prov: Provenance = {
        "backend": "toolchain",
        "device": "none: static probe, measured on the compiler's output",
        "target": target,
        "static": True,
        "toolchain": described,
        "kernels": {KERNEL: {"source": shown(source),
                             "source_sha256": hashlib.sha256(compiled).hexdigest(),
                             "code_object_sha256": [c.object_sha256 for c in built]}},
        "repeats": 2,
        "repeats_identical": True,  # each case was built twice; differing builds stop the sweep
        "simulated": False,
        "blind_pairs": blind,
        "thin_pairs": thin,
    }
    if outside := unpinned():
        prov["vendor_code"] = outside  # code no commit pins ran here: never evidence
    return save_sweep(probe, ds, prov, root, step, command, started)


def _case(grid: xr.Dataset, i: int) -> dict[str, int]:
    return {str(c): int(grid[c].values[i]) for c in grid.coords
            if grid[c].dims == ("case",) and grid[c].dtype.kind in "iu"}


def _build_kernels(probe, grid: xr.Dataset, target: str, tools, tc, step: Step
                   ) -> list[BuiltCase]:
    """Each case's kernel compiled twice (byte-identical), decoded off its instruction."""
    n, built = grid.sizes["case"], []
    for i in range(n):
        kernel = probe.variant(_case(grid, i))
        step(f"compiling case {i + 1}/{n} for {target} with {tc.name}")
        try:
            code = tools.build(kernel, target, toolchain=tc)
        except Unavailable as exc:
            diagnostic = next((line for line in str(exc).splitlines()[1:] if "error" in line),
                              str(exc).splitlines()[0])
            built.append(BuiltCase({}, {"diagnostic": diagnostic}, kernel.evidence))
            continue
        again = tools.build(kernel, target, fresh=True, toolchain=tc)
        if again.sha256 != code.sha256:
            raise IntegrityError(f"case {i}: two builds differ ({code.sha256[:12]} vs "
                                 f"{again.sha256[:12]}); the toolchain is not deterministic")
        function = code.functions.get(kernel.symbol, [])  # missing: refused when gated
        hits = [x for x in function if re.fullmatch(kernel.evidence.instruction, x.mnemonic)]
        values = probe.decode(hits[0]) if hits else {}
        built.append(BuiltCase(values, {"instruction": hits[0].text if hits else ""},
                               kernel.evidence, function, code.sha256))
    return built


def _dataset(probe, grid: xr.Dataset, built: list[BuiltCase], texts: tuple[str, ...],
             vendor: Vendor) -> xr.Dataset:
    """The grid with every case's observables and texts; each built case gated."""
    n = grid.sizes["case"]
    if len(built) != n:
        raise IntegrityError(f"{probe.id} measured {len(built)} cases of a grid of {n}")
    observed = {name: np.zeros(n, np.uint32) for name in probe.observables}
    text = {name: [""] * n for name in texts}
    for i, case in enumerate(built):
        for name, value in case.texts.items():
            text[name][i] = value
        if own := {"builds", "count"} & set(case.values):
            raise IntegrityError(f"case {i}: {sorted(own)} are the evidence gate's to say, "
                                 "not the probe's")
        for name, value in case.values.items():
            observed[name][i] = value
        if case.function is None:
            continue
        if not case.function:
            raise IntegrityError(f"case {i}: the object holds no code for it (its function is "
                                 "missing or empty): nothing to gate, so it is not a build")
        evidence: Evidence = case.evidence
        report = gate(f"case {i}", evidence, case.function, vendor.isa)
        if report.forbidden_found:
            raise IntegrityError(f"case {i}: forbidden relative {report.forbidden_found} where "
                                 f"{evidence.instruction} should be: not a measurement of it")
        hits = [x for x in case.function if re.fullmatch(evidence.instruction, x.mnemonic)]
        observed["builds"][i], observed["count"][i] = 1, len(hits)
    ds = grid.assign_coords(kernel=("kernel", np.array([KERNEL])))
    for name, values in observed.items():
        ds[name] = (("kernel", "case"), values[None, :])
    for name, values in text.items():
        ds[name] = ("case", np.array(values, dtype=str))
    return ds
