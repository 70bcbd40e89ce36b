"""Static sweeps: probes whose measurement is the compiler's output, not a device's.

Each cell of the grid is compiled to its own code object (constant builtin arguments must
be literals), twice, and must be byte-identical; what the probe's `decode` reads off the
instruction under test becomes the cell's observables. A case the target cannot build is
data too (builds = 0, with the compiler's first diagnostic line kept).
"""

import hashlib
import re
from pathlib import Path

import numpy as np

from probelab.errors import IntegrityError, Unavailable, UsageError
from probelab.evidence import gate
from probelab.measurement import Step, SweepResult, blindness_gate, check_root, save_sweep
from probelab.paths import data_dir, shown
from probelab.probe import supports
from probelab.records import Provenance
from probelab.vendors import of

KERNEL = "static"  # the single `kernel` label of a static dataset


def run_static_sweep(probe, target: str | None, *, out_root: Path | None = None,
                     step: Step = lambda _: None, command: list[str] | None = None,
                     allow_blind: bool = False) -> SweepResult:
    vendor = of(target) if target is not None else None  # a made-up target: refused
    if vendor is None or not supports(probe, target):
        raise UsageError(f"{probe.id} is a static probe, measured on a toolchain's output: "
                         f"give --target, one of {', '.join(probe.targets)}")
    tools = vendor.tools()

    root = out_root or data_dir()
    check_root(root, simulated=False)
    grid = probe.stimulus()
    blind = blindness_gate(probe, grid, target, allow_blind)
    n = grid.sizes["case"]
    numeric = [str(c) for c in grid.coords if grid[c].dims == ("case",)
               and grid[c].dtype.kind in "iu"]
    observed = {name: np.zeros(n, np.uint32) for name in probe.observables}
    text, diagnostic, objects = [""] * n, [""] * n, [""] * n
    for i in range(n):
        case = {c: int(grid[c].values[i]) for c in numeric}
        kernel = probe.variant(case)
        step(f"compiling case {i + 1}/{n} for {target}")
        try:
            code = tools.build(kernel, target)
        except Unavailable as exc:
            diagnostic[i] = next((line for line in str(exc).splitlines()[1:]
                                  if "error" in line), str(exc).splitlines()[0])
            continue
        again = tools.build(kernel, target, fresh=True)
        if again.sha256 != code.sha256:
            raise IntegrityError(f"case {i}: two builds differ ({code.sha256[:12]} vs "
                                 f"{again.sha256[:12]}); the toolchain is not deterministic")
        function = code.functions.get(kernel.symbol, [])
        report = gate(kernel.name, kernel.evidence, function, vendor.isa)
        if report.forbidden_found:
            raise IntegrityError(f"case {i}: forbidden relative {report.forbidden_found}")
        hits = [x for x in function if re.fullmatch(kernel.evidence.instruction, x.mnemonic)]
        observed["builds"][i], observed["count"][i] = 1, len(hits)
        objects[i] = code.sha256
        if hits:
            text[i] = hits[0].text
            for name, value in probe.decode(hits[0]).items():
                observed[name][i] = value
    ds = grid.assign_coords(kernel=("kernel", np.array([KERNEL])))
    for name, values in observed.items():
        ds[name] = (("kernel", "case"), values[None, :])
    ds["instruction"] = ("case", np.array(text, dtype=str))
    ds["diagnostic"] = ("case", np.array(diagnostic, dtype=str))
    source = probe.variant({c: int(grid[c].values[0]) for c in numeric}).source
    prov: Provenance = {
        "backend": "toolchain",
        "device": "none: static probe, measured on the compiler's output",
        "target": target,
        "static": True,
        "toolchain": tools.describe(),
        "kernels": {KERNEL: {"source": shown(source),
                             "source_sha256": hashlib.sha256(source.read_bytes()).hexdigest(),
                             "code_object_sha256": objects}},
        "repeats": 2,
        "repeats_identical": True,  # each case was built twice; differing builds stop the sweep
        "simulated": False,
        "blind_pairs": blind,
    }
    return save_sweep(probe, ds, prov, root, step, command)

