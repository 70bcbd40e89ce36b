"""Benchmark the f8f6f4-operand-width static sweep against the bare floor of its tool runs.

    python bench/f8f6f4_sweep.py --json results.json [--runs 3] [--target gfx950]

- whole sweep: `python -m probelab sweep f8f6f4-operand-width --target T --toolchain NAME
  --allow-blind --out TMP` as a fresh process, start to dataset saved: every case of the
  target's family through its three routes and two selectors, the grid measured twice and
  compared, each case's disassembly gated, the dataset written atomically;
- bare floor: `bench/f8f6f4_floor.py` as a fresh process: the same modules (written here
  beforehand, untimed) through the same tool runs once, with no parsing and no checks.
Sweep and floor runs alternate; the figure is the ratio of their medians.
"""

import argparse
import platform
import statistics
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from timing import report, timed  # noqa: E402

from probelab import gitinfo  # noqa: E402
from probelab.probe import load_sibling  # noqa: E402
from probelab.vendors.amd import toolchain as amdgpu  # noqa: E402


def write_modules(folder: Path, target: str) -> int:
    """The probe's modules for `target`, one per (route, selector), as its sweep builds
    them: route 0 as IR, routes 1 and 2 as HIP. Returns the number of cases."""
    probe = load_sibling(ROOT / "probes" / "f8f6f4_operand_width" / "probe.py")
    family = next(f for f, t in probe.FAMILY_TARGET.items() if t == target)
    cases = probe._cases()
    mine = [i for i, c in enumerate(cases) if c["family"] == family]
    for route in range(3):
        for selector in range(2):
            numbers = [i for i in mine if cases[i]["route"] == route
                       and cases[i]["selector"] == selector]
            name = folder / f"r{route}-s{selector}"
            if route == 0:
                name.with_suffix(".ll").write_text(
                    probe.ir_module([cases[n] for n in numbers], numbers))
            else:
                name.with_suffix(".hip").write_text(probe.hip_module(cases, numbers))
    return len(mine)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--target", default="gfx950")
    parser.add_argument("--toolchain", default="clang-22")
    args = parser.parse_args()
    (tc,) = amdgpu.select(args.toolchain)
    sweeps, floors = [], []
    with tempfile.TemporaryDirectory() as tmp:
        cases = write_modules(Path(tmp), args.target)
        floor = [sys.executable, str(ROOT / "bench" / "f8f6f4_floor.py"), tmp, args.target,
                 str(tc.path), str(tc.tool("llc")), str(tc.tool("llvm-mc")), str(tc.objdump)]
        for run in range(args.runs):
            out = Path(tmp) / f"out{run}"
            sweeps.append(timed([sys.executable, "-m", "probelab", "sweep",
                                 "f8f6f4-operand-width", "--target", args.target,
                                 "--toolchain", tc.name, "--allow-blind", "--out", str(out)]))
            floors.append(timed(floor))
    results = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"), "command": " ".join(sys.argv),
        "commit": gitinfo.head()[0], "machine": f"{platform.node()} ({platform.machine()})",
        "python": platform.python_version(), "toolchain": tc.version, "target": args.target,
        "cases_measured": cases, "sweep_s": sweeps, "floor_s": floors,
        "sweep_median_s": statistics.median(sweeps), "floor_median_s": statistics.median(floors),
        "ratio": statistics.median(sweeps) / statistics.median(floors)}
    report(results, args.json)


if __name__ == "__main__":
    main()
