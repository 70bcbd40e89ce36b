"""Benchmark: `probelab layout show` and `layout compare` as fresh processes on every
mma.sync lane map of the archive (goals: show <= 2 s, compare <= 3 s on 2 cores), against
`probelab --help` (the CLI's own start) and a bare interpreter, timed in the same run.

    python bench/layout_commands.py --json results.json [--runs 3]

Per mma.sync probe with a pinned dataset: `layout show PROBE` (every kernel and operand:
both forms found and proved on every cell) and, per kernel, `layout compare PROBE --kernel K
--operand A --cute FORM` with the form `show` found. Warm (the dataset's summary cached, as
after a first `verify`); medians of --runs, the slowest probe reported against the goal.
"""

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path

from timing import ROOT, timed


def mma_sync_probes(env: dict[str, str]) -> dict[str, dict[str, str]]:
    """{probe: {kernel: A's CuTe form}} of every mma.sync lane-id probe measured here."""
    listed = json.loads(subprocess.run([sys.executable, "-m", "probelab", "list", "--json",
                                        "--measured"], cwd=ROOT, env=env, check=True,
                                       capture_output=True, text=True).stdout)
    found: dict[str, dict[str, str]] = {}
    for probe in (p["id"] for p in listed["probes"] if p["id"].startswith("mma-")):
        shown = subprocess.run([sys.executable, "-m", "probelab", "layout", "show", probe,
                                "--operand", "A", "--as", "json"], cwd=ROOT, env=env,
                               capture_output=True, text=True)
        if shown.returncode == 0:
            found[probe] = {m["kernel"]: m["cute"] for m in json.loads(shown.stdout)["maps"]
                            if m["cute"]}
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, help="write results here")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    load_before = os.getloadavg()
    probelab = [sys.executable, "-m", "probelab"]
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, PROBELAB_CACHE=str(Path(tmp) / "cache"))
        probes = mma_sync_probes(env)  # also warms each dataset's summary
        commands = {"bare python": [sys.executable, "-c", "pass"],
                    "probelab --help": [*probelab, "--help"]}
        for probe, forms in probes.items():
            commands[f"show {probe}"] = [*probelab, "layout", "show", probe]
            for kernel, form in forms.items():
                commands[f"compare {probe} {kernel} A"] = [
                    *probelab, "layout", "compare", probe, "--kernel", kernel, "--operand",
                    "A", "--cute", form]
        runs: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(args.runs):  # interleaved: drift in the machine hits every one
            for name, command in commands.items():
                runs[name].append(timed(command, env))
    medians = {name: statistics.median(times) for name, times in runs.items()}
    floor = medians["bare python"]
    show = {n: m for n, m in medians.items() if n.startswith("show ")}
    compare = {n: m for n, m in medians.items() if n.startswith("compare ")}
    results = {"date": datetime.now(UTC).isoformat(timespec="seconds"),
               "command": " ".join(sys.argv),
               "commit": subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, text=True,
                                        capture_output=True).stdout.strip() or "unknown",
               "machine": {"platform": platform.platform(), "cpus": os.cpu_count(),
                           "cpu": _cpu(), "python": platform.python_version(),
                           "load_average_before": load_before,
                           "load_average_after": os.getloadavg()},
               "runs_s": runs, "median_s": medians,
               "ratio_to_bare_python": {n: m / floor for n, m in medians.items()},
               "slowest_show_s": max(show.values()), "slowest_compare_s": max(compare.values()),
               "goals": {"show_s": 2.0, "compare_s": 3.0}}
    print(json.dumps(results, indent=2))
    print(f"slowest show {max(show, key=show.get)}: {max(show.values()):.2f} s (goal 2 s); "
          f"slowest compare {max(compare, key=compare.get)}: {max(compare.values()):.2f} s "
          f"(goal 3 s); --help {medians['probelab --help']:.2f} s; bare python {floor:.3f} s")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")


def _cpu() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor()


if __name__ == "__main__":
    main()
