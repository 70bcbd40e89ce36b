"""Benchmark: the README's test commands as whole processes, against a bare floor.

    python bench/test_suite.py --json bench/results/<date>-tests-cpu.json [--slow]

Times `python -m pytest -q -n auto` (every test but those marked slow, one pytest-xdist
worker per core) from the repo root, and with --slow also `... -m slow`, each once (a run
takes minutes), with pytest's own summary (passed, skipped, deselected). The floor is what
every run pays before a test runs: `python -m pytest -q -n auto --collect-only` (start-up,
imports, collecting every test file), timed in the same run; each run is also given as a
multiple of it. The load average is recorded before and after: other work on the machine
slows every run.
"""

import argparse
import os
import platform
import re
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from timing import ROOT, report

SUMMARY = re.compile(r"(\d+) (passed|failed|skipped|deselected|errors?|xfailed|xpassed)")


def run(*flags: str) -> dict[str, Any]:
    """One pytest process: its seconds and the counts of its last summary line."""
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "auto",
               *flags]
    start = time.perf_counter()
    proc = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    lines = [line for line in proc.stdout.splitlines() if line.strip()]
    last = lines[-1] if lines else ""
    if proc.returncode not in (0, 5) or " failed" in last or " error" in last:
        raise SystemExit(f"{' '.join(command[2:])} did not pass: {last or proc.stderr[-500:]}")
    return {"command": " ".join(["python", *command[1:]]), "s": seconds,
            "counts": {kind: int(n) for n, kind in SUMMARY.findall(last)}, "summary": last}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, help="write results here")
    parser.add_argument("--slow", action="store_true", help="also time `-m slow`")
    args = parser.parse_args()
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True,
                            text=True).stdout.strip()
    results: dict[str, Any] = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": " ".join(["python", *sys.argv]), "commit": commit,
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count(),
                    "python": platform.python_version(),
                    "load_average_before": os.getloadavg()}}
    floor = run("--collect-only")
    runs = {"default": run()}
    if args.slow:
        runs["slow"] = run("-m", "slow")
    results["machine"]["load_average_after"] = os.getloadavg()
    results["floor"] = floor
    results["runs"] = runs
    for name, one in runs.items():
        one["over_floor"] = one["s"] / floor["s"]
        print(f"{name}: {one['s']:.0f} s ({one['summary']}), {one['over_floor']:.0f}x the "
              f"floor ({floor['s']:.1f} s)", file=sys.stderr)
    report(results, args.json)


if __name__ == "__main__":
    main()
