"""Benchmark: how long `probelab --help` and `probelab list` take as fresh processes, against
a bare interpreter timed in the same run.

    python bench/cli_startup.py --json results.json

`list` is timed warm (its probe index already built) and cold (an empty cache: every probe
folder imported once to build the index). Medians of --runs each.
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, help="write results here")
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    probelab = [sys.executable, "-m", "probelab"]
    load_before = os.getloadavg()  # other work on the machine slows every run
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, PROBELAB_CACHE=str(Path(tmp) / "cache"))
        commands = {"bare python": [sys.executable, "-c", "pass"],
                    "probelab --help": [*probelab, "--help"],
                    "probelab list (warm)": [*probelab, "list"]}
        timed(commands["probelab list (warm)"], env)  # builds the index
        runs: dict[str, list[float]] = {name: [] for name in [*commands, "probelab list (cold)"]}
        for i in range(args.runs):  # interleaved, so drift in the machine hits every one
            for name, command in commands.items():
                runs[name].append(timed(command, env))
            cold = dict(env, PROBELAB_CACHE=str(Path(tmp) / f"cold{i}"))
            runs["probelab list (cold)"].append(timed([*probelab, "list"], cold))
    medians = {name: statistics.median(times) for name, times in runs.items()}
    floor = medians["bare python"]
    results = {"date": datetime.now(UTC).isoformat(timespec="seconds"),
               "command": " ".join(sys.argv),
               "commit": subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, text=True,
                                        capture_output=True).stdout.strip() or "unknown",
               "machine": {"platform": platform.platform(), "cpus": os.cpu_count(),
                           "python": platform.python_version(),
                           "load_average_before": load_before,
                           "load_average_after": os.getloadavg()},
               "runs_s": runs, "median_s": medians,
               "ratio_to_bare_python": {n: m / floor for n, m in medians.items()}}
    print(json.dumps(results, indent=2))
    for name, median in medians.items():
        print(f"{name}: {median:.3f} s ({median / floor:.1f}x bare python)")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
