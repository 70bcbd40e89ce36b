"""Benchmark what can be measured of the swmmac-iu4 sweep without a gfx12 GPU.

    python bench/swmmac_iu4.py --json results.json

- compile: both kernels built offline for gfx1201 and disassembled, with an empty compile
  cache (cold) and a filled one (warm);
- simulated sweep: `python -m probelab sweep swmmac-iu4 --backend sim` as a fresh process,
  process start to dataset saved (the simulated device stands in for the GPU: its time is
  numpy, not hardware);
- the launch: waves, threads and bytes moved, which is what a gfx12 GPU will have to do.
"""

import argparse
import os
import shutil
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from timing import report, timed  # noqa: E402

from probelab.probe import get_probe  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    probe = get_probe("swmmac-iu4")
    launch = probe.launch(probe.stimulus())
    results: dict = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"), "command": " ".join(sys.argv),
        "waves": launch.threads // 32, "threads": launch.threads,
        "bytes_in": sum(a.nbytes for a in launch.inputs.values()),
        "bytes_out": 4 * sum(launch.outputs.values())}
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, PROBELAB_CACHE=str(Path(tmp) / "cache"))
        asm = [sys.executable, "-m", "probelab", "asm", "swmmac-iu4", "--arch", "gfx1201",
               "--json"]
        results["compile_cold_s"] = timed(asm, env)
        results["compile_warm_s"] = timed(asm, env)
        sim_out = ROOT / "sim-data" / f"bench-{os.getpid()}"
        sweep = [sys.executable, "-m", "probelab", "sweep", "swmmac-iu4", "--backend", "sim",
                 "--target", "gfx1201", "--out", str(sim_out)]
        try:
            results["sim_sweep_s"] = timed(sweep, env)
            saved = next(sim_out.rglob("*.nc"))
            results["dataset_bytes"] = saved.stat().st_size
        finally:
            shutil.rmtree(sim_out, ignore_errors=True)
    report(results, args.json)


if __name__ == "__main__":
    main()
