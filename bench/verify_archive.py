"""Benchmark: `probelab verify` as a whole process over the archive as it is (x1) and grown
tenfold (x10), first run and warm, with peak memory.

    python bench/verify_archive.py --json results.json

Each lab is a fresh clone of this repository (full history) with the probelab package that
runs here copied in and committed, so it is the code under test, with no bytecode and no
on-disk cache of any kind: its first run is a fresh clone's. The x10 lab then grows the
archive as sweeps would: every pinned dataset is saved again nine times under later
measurement times (distinct contents, so distinct pinned datasets), one commit per dataset
with its manifest line, and `verify --write` records their verdicts (committed too). Every
timed run must be clean (exit 0, no problem). A warm figure is the median of --runs runs
after the first; peak RSS is the process's own (wait4). Timings on a shared machine are
noisy: compare sizes within one run of this script.
"""

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from timing import ROOT

sys.path.insert(0, str(ROOT))  # probelab itself, when not installed

import probelab
from probelab import dataset, manifest

IDENTITY = ("-c", "user.name=bench", "-c", "user.email=bench@localhost",
            "-c", "commit.gpgsign=false")


def git(lab: Path, *args: str) -> str:
    return subprocess.run(["git", *IDENTITY, *args], cwd=lab, check=True, capture_output=True,
                          text=True).stdout.strip()


def fresh_lab(dest: Path) -> Path:
    """A clone of the repository holding the code under test, committed."""
    subprocess.run(["git", "clone", "-q", str(ROOT), str(dest)], check=True)
    shutil.rmtree(dest / "probelab")
    shutil.copytree(Path(probelab.__file__).resolve().parent, dest / "probelab",
                    ignore=shutil.ignore_patterns("__pycache__"))
    if git(dest, "status", "--porcelain"):
        git(dest, "add", "-A", "probelab")
        git(dest, "commit", "-q", "-m", "bench: the code under test")
    return dest


def grow(lab: Path, factor: int) -> None:
    """Save every pinned dataset again factor - 1 times, k hours later, each pinned and
    committed on its own; then record and commit their verdicts."""
    os.environ["PROBELAB_ROOT"] = str(lab)  # the probelab API below works on this lab
    for pin in manifest.read():
        ds = dataset.load(lab / pin["path"])
        prov = dataset.provenance(ds)
        for k in range(1, factor):
            when = datetime.fromisoformat(prov["utc"]) + timedelta(hours=k)
            path = (lab / pin["path"]).with_name(f"{when:%Y%m%dT%H%M%SZ}.nc")
            dataset.save(ds, path, prov | {"utc": when.isoformat()}, exclusive=True)
            manifest.pin(path, dataset.stored_provenance(path)[dataset.CONTENT_KEY],
                         pin["probe"], pin["target"])
            git(lab, "add", "--", str(path.relative_to(lab)), "data/" + manifest.NAME)
            git(lab, "commit", "-q", "-m", f"bench: {path.relative_to(lab)}")
    with tempfile.TemporaryDirectory() as cache:
        verify(lab, Path(cache), "--write")
    git(lab, "add", "-A", "data")
    git(lab, "commit", "-q", "-m", "bench: the verdicts of the copies")
    for folder in list(lab.rglob("__pycache__")):  # its first timed run compiles, as a clone's
        shutil.rmtree(folder)


def verify(lab: Path, cache: Path, *flags: str) -> tuple[float, int, dict[str, Any]]:
    """One `probelab verify --json` process: (seconds, peak RSS in KiB, its result)."""
    env = dict(os.environ, PYTHONPATH=str(lab), PROBELAB_ROOT=str(lab),
               PROBELAB_CACHE=str(cache))
    start = time.perf_counter()
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen([sys.executable, "-m", "probelab", "verify", "--json", *flags],
                                cwd=lab, env=env, stdout=out, stderr=subprocess.DEVNULL)
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here, for its rusage
        out.seek(0)
        result = json.loads(out.read())
    if proc.returncode != 0 or result["problems"]:
        raise SystemExit(f"verify of {lab} is not clean: {result['problems'][:3]}")
    return seconds, usage.ru_maxrss, result


def measure(lab: Path, runs: int) -> dict[str, Any]:
    """The first run (no bytecode, an empty cache), then `runs` warm ones."""
    with tempfile.TemporaryDirectory() as cache:
        first_s, first_kb, result = verify(lab, Path(cache))
        warm = [verify(lab, Path(cache)) for _ in range(runs)]
    return {"datasets": sum(1 for _ in (lab / "data").rglob("*.nc")),
            "verdict_files": sum(1 for _ in (lab / "data").rglob("*.verdict.json")),
            "checks": len(result["checks"]),
            "commits": int(git(lab, "rev-list", "--count", "HEAD")),
            "first_s": first_s, "first_rss_mb": first_kb / 1024,
            "warm_s": [s for s, _, _ in warm],
            "warm_median_s": statistics.median(s for s, _, _ in warm),
            "warm_rss_mb": max(kb for _, kb, _ in warm) / 1024}


def machine() -> dict[str, Any]:
    cpuinfo = Path("/proc/cpuinfo")
    model = next((line.split(":", 1)[1].strip() for line in
                  (cpuinfo.read_text().splitlines() if cpuinfo.exists() else [])
                  if line.startswith("model name")), platform.processor())
    return {"platform": platform.platform(), "cpu": model, "cpus": os.cpu_count(),
            "memory_gb": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30),
            "python": platform.python_version(),
            "load_average_before": os.getloadavg()}  # other work beside it makes noise


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, help="write results here")
    parser.add_argument("--factor", type=int, default=10, help="how many times to grow it")
    parser.add_argument("--runs", type=int, default=3, help="warm runs per size")
    args = parser.parse_args()
    dirty = bool(git(ROOT, "status", "--porcelain", "--untracked-files=no"))
    results: dict[str, Any] = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": " ".join(["python", *sys.argv]),
        "commit": git(ROOT, "rev-parse", "HEAD") + (" + uncommitted changes" if dirty else ""),
        "machine": machine()}
    with tempfile.TemporaryDirectory(prefix="verify-bench-") as tmp:
        small = fresh_lab(Path(tmp) / "x1")
        big = shutil.copytree(small, Path(tmp) / f"x{args.factor}", symlinks=True)
        grow(big, args.factor)
        sizes = {"x1": measure(small, args.runs), f"x{args.factor}": measure(big, args.runs)}
    results["sizes"] = sizes
    one, many = sizes["x1"], sizes[f"x{args.factor}"]
    results["ratio"] = {"datasets": many["datasets"] / one["datasets"],
                        "first_s": many["first_s"] / one["first_s"],
                        "warm_median_s": many["warm_median_s"] / one["warm_median_s"]}
    for name, size in sizes.items():
        print(f"{name}: {size['datasets']} datasets, {size['checks']} checks, "
              f"{size['commits']} commits: first {size['first_s']:.2f} s "
              f"({size['first_rss_mb']:.0f} MB), warm median {size['warm_median_s']:.2f} s "
              f"({size['warm_rss_mb']:.0f} MB)")
    ratio = results["ratio"]
    print(f"x{args.factor}/x1: {ratio['warm_median_s']:.2f} warm, {ratio['first_s']:.2f} first, "
          f"for {ratio['datasets']:.1f}x the datasets (linear: at most {ratio['datasets']:.1f})")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
