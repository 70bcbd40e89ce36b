"""Benchmark: `probelab plot` of every archive dataset, kind by kind, each as a fresh process,
against issue 15's target (3 s per dataset and kind) and against a bare floor.

    python bench/plots.py --runs 3 --json bench/results/<date>-plots-cpu.json
    python bench/plots.py --only 'data/byte-perm/*' --runs 5   # one probe's datasets

Cases: every dataset under data/ (or those --only names) and every plot kind it offers (its
probe's, and lanemap where it carries lane maps); a mismatch kind once per sealed hypothesis
of the probe that applies to the dataset (given as --prereg), and with each such hypothesis
every kind at once, as the README runs it (`plot DATASET --prereg FILE`, kind "(every)").
A case is `python -m probelab plot [KIND] DATASET --out TMP` (a fresh folder each run),
timed from process start to exit, --runs times: its median and its slowest run are
reported. The floor is a process that only imports
matplotlib (Agg) and saves one empty figure as PNG and SVG, timed as often; each case is
also given as a multiple of it. The load average is recorded before and after: other work on
the machine slows every run, so compare medians of one run of this script, not across runs.
"""

import argparse
import fnmatch
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from timing import ROOT, timed

sys.path.insert(0, str(ROOT))  # probelab itself, when not installed

from probelab import dataset, ledger
from probelab.check import not_applicable
from probelab.errors import LabError
from probelab.hypothesis import load_hypothesis
from probelab.plot import plot_kinds
from probelab.probe import get_probe

TARGET_S = 3.0
EVERY = "(every)"  # no KIND: every plot the dataset offers, as the README draws them
FLOOR = ("import io, matplotlib; matplotlib.use('Agg'); from matplotlib.figure import Figure; "
         "f = Figure(); f.savefig(io.BytesIO(), format='png'); "
         "f.savefig(io.BytesIO(), format='svg')")


@dataclass(frozen=True)
class Case:
    dataset: Path
    kind: str
    prereg: Path | None = None

    def command(self, out: Path) -> list[str]:
        extra = ["--prereg", str(self.prereg.relative_to(ROOT))] if self.prereg else []
        kind = [] if self.kind == EVERY else [self.kind]
        return [sys.executable, "-m", "probelab", "plot", *kind,
                str(self.dataset.relative_to(ROOT)), *extra, "--out", str(out)]


def cases(only: list[str]) -> tuple[list[Case], list[dict[str, str]]]:
    """Every (dataset, kind[, hypothesis]) to time (of the datasets matching a pattern of
    `only`, where it names any), and what was left out, with why."""
    sealed = ledger.read(ROOT / "preregistrations" / "LEDGER.jsonl")
    found: list[Case] = []
    skipped: list[dict[str, str]] = []
    for path in sorted((ROOT / "data").rglob("*.nc")):
        name = str(path.relative_to(ROOT))
        if only and not any(fnmatch.fnmatch(name, pattern) for pattern in only):
            continue
        try:
            ds = dataset.load(path)
            probe = get_probe(dataset.provenance(ds)["probe"])
        except LabError as exc:
            skipped.append({"dataset": name, "why": str(exc)})
            continue
        kinds = plot_kinds(ds, probe)
        if not kinds:
            skipped.append({"dataset": name, "why": f"{probe.id} offers no plot"})
        for kind in kinds:
            if not kind.startswith("mismatch"):
                found.append(Case(path, kind))
                continue
            for entry in (e for e in sealed if e["probe"] == probe.id):
                prereg = ROOT / entry["path"]
                if why := not_applicable(load_hypothesis(prereg), ds):
                    skipped.append({"dataset": name, "kind": kind, "prereg": entry["path"],
                                    "why": why})
                else:
                    found.append(Case(path, kind, prereg))
                    every = Case(path, EVERY, prereg)
                    found += [] if every in found else [every]
    return found, skipped


def plot_times(case: Case, runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        with tempfile.TemporaryDirectory() as tmp:
            times.append(timed(case.command(Path(tmp))))
    return times


def git_state() -> dict[str, object]:
    def git(*args: str) -> str:
        return subprocess.run(["git", "--no-optional-locks", *args], cwd=ROOT, check=True,
                              capture_output=True, text=True).stdout.strip()

    return {"commit": git("rev-parse", "HEAD"), "dirty": bool(git("status", "--porcelain"))}


def row(case: Case, times: list[float], floor: float) -> dict[str, object]:
    median = statistics.median(times)
    return {"dataset": str(case.dataset.relative_to(ROOT)), "kind": case.kind,
            "prereg": str(case.prereg.relative_to(ROOT)) if case.prereg else None,
            "command": " ".join(["python", *case.command(Path("TMP"))[1:]]), "times_s": times,
            "median_s": median, "max_s": max(times), "x_floor": median / floor,
            "within_target": median <= TARGET_S}


def table(rows: list[dict[str, object]], floor: float) -> str:
    lines = [f"{'dataset':<46} {'kind':<34} {'median':>7} {'max':>7} {'x floor':>7}",
             f"{'(floor: import matplotlib, save PNG + SVG)':<81} {floor:>7.2f}"]
    for r in rows:
        kind = r["kind"] + (f" ({Path(r['prereg']).stem})" if r["prereg"] else "")
        flag = "" if r["within_target"] else f"  over {TARGET_S:g} s"
        lines.append(f"{r['dataset']:<46} {kind:<34} {r['median_s']:>7.2f} {r['max_s']:>7.2f} "
                     f"{r['x_floor']:>7.1f}{flag}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="timed runs per case (default 3)")
    parser.add_argument("--json", type=Path, help="write every timing here")
    parser.add_argument("--only", action="append", default=[], metavar="GLOB",
                        help="only the datasets matching this (e.g. 'data/byte-perm/*'; "
                        "repeatable)")
    args = parser.parse_args()
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    os.chdir(ROOT)  # the lab these datasets' probes are found in
    found, skipped = cases(args.only)
    if not found:
        parser.error("no dataset to plot")
    load_before = os.getloadavg()
    floor_times = [timed([sys.executable, "-c", FLOOR]) for _ in range(args.runs)]
    floor = statistics.median(floor_times)
    rows = [row(case, plot_times(case, args.runs), floor) for case in found]
    results = {
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {"platform": platform.platform(), "python": platform.python_version(),
                    "cpus": os.cpu_count(), "load_average_before": load_before,
                    "load_average_after": os.getloadavg()},
        "git": git_state(), "runs": args.runs, "target_s": TARGET_S,
        "floor": {"command": f"python -c \"{FLOOR}\"", "times_s": floor_times,
                  "median_s": floor},
        "cases": rows, "skipped": skipped,
        "slowest_median_s": max(r["median_s"] for r in rows),
        "slowest_run_s": max(r["max_s"] for r in rows),
        "all_within_target": all(r["within_target"] for r in rows),
    }
    print(table(rows, floor))
    print(f"slowest median {results['slowest_median_s']:.2f} s, slowest run "
          f"{results['slowest_run_s']:.2f} s (target {TARGET_S:g} s); load average "
          f"{load_before[0]:.2f} before, {results['machine']['load_average_after'][0]:.2f} after")
    for s in skipped:
        print(f"skipped {s['dataset']} {s.get('kind', '')} {s.get('prereg', '')}: {s['why']}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
