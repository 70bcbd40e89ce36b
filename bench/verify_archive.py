"""Benchmark: `probelab verify` as a whole process over the archive as it is (x1) and grown
(xN), cold and warm, with the peak memory of all its processes, against a bare floor.

    python bench/verify_archive.py --json results.json [--factor 3] [--runs 3] [--jobs 0]

Each lab is a fresh clone of this repository (full history) with the probelab package that
runs here copied in and committed, so it is the code under test, with no bytecode and no
on-disk cache of any kind: its cold run is a fresh clone's. The xN lab then grows the
archive as sweeps would: every pinned dataset that is not retired is saved again N - 1
times under later measurement times (distinct contents, so distinct pinned datasets), one
commit per dataset with its manifest line, and `verify --write` records their verdicts
(committed too). Every timed run must be clean (exit 0, no problem). A warm figure is the
median of --runs runs after the cold one. Timed runs are left alone: peak memory comes from
a run of its own, cold (an empty cache) and then warm, the largest sum, sampled every 20 ms,
of the resident sets of the verify process and its workers (/proc), besides the verify
process's own peak (wait4). Sampling beside a timed run slowed it: a cold verify of 70 s
took 80 s with the sampler (13 s more CPU in verify's processes), so no figure mixes
them. The floor is the least any verifier does, in the same run: a
process that reads and hashes every file of data/ and preregistrations/. The archive's
largest dataset (declared bytes and bytes on disk, retired ones apart) is reported too.
"""

import argparse
import json
import os
import platform
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from timing import ROOT, report

sys.path.insert(0, str(ROOT))  # probelab itself, when not installed

import probelab
from probelab import dataset, manifest, retirement

IDENTITY = ("-c", "user.name=bench", "-c", "user.email=bench@localhost",
            "-c", "commit.gpgsign=false")
FLOOR = ("import hashlib, pathlib, sys\n"
         "for folder in sys.argv[1:]:\n"
         "    for p in sorted(pathlib.Path(folder).rglob('*')):\n"
         "        if p.is_file(): hashlib.sha256(p.read_bytes()).hexdigest()\n")


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


def grow(lab: Path, factor: int, cache: Path) -> None:
    """Save every pinned dataset that is not retired again factor - 1 times, k hours later,
    each pinned and committed on its own; then record and commit their verdicts."""
    os.environ["PROBELAB_ROOT"] = str(lab)  # the probelab API below works on this lab
    retired = {e["path"] for e in retirement.read()}
    for pin in (p for p in manifest.read() if p["path"] not in retired):
        ds = dataset.load(lab / pin["path"])
        prov = dataset.provenance(ds)
        for k in range(1, factor):
            when = datetime.fromisoformat(prov["utc"]) + timedelta(hours=k)
            rest = Path(pin["path"]).name.split(".", 1)[1]  # nc, or TOOLCHAIN.nc (static)
            path = (lab / pin["path"]).with_name(f"{when:%Y%m%dT%H%M%SZ}.{rest}")
            again = {"utc": when.isoformat()}
            if "run" in prov:  # another run of the sweep, not a copy of this one (verify_unit)
                again["run"] = prov["run"] | {"nonce": secrets.token_hex(16)}
            dataset.save(ds, path, prov | again, exclusive=True)
            manifest.pin(path, dataset.stored_provenance(path)[dataset.CONTENT_KEY],
                         pin["probe"], pin["target"])
            git(lab, "add", "--", str(path.relative_to(lab)), "data/" + manifest.NAME)
            git(lab, "commit", "-q", "-m", f"bench: {path.relative_to(lab)}")
    verify(lab, cache, 0, "--write")
    git(lab, "add", "-A", "data")
    git(lab, "commit", "-q", "-m", "bench: the verdicts of the copies")
    for folder in list(lab.rglob("__pycache__")):  # its cold run compiles, as a clone's
        shutil.rmtree(folder)


def _tree_rss_kb(root: int) -> int:
    """The resident set of `root` and every process under it, now (KiB). The tree is walked
    through each task's `children` file and only its own processes' statm are read: a scan
    of all of /proc every 20 ms took about a sixth of a core from the verify it measures."""
    page_kb = os.sysconf("SC_PAGE_SIZE") // 1024
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        try:
            total += int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * page_kb
            for task in Path(f"/proc/{pid}/task").iterdir():
                todo += map(int, (task / "children").read_text().split())
        except (OSError, ValueError):  # gone between two reads
            continue
    return total


def verify(lab: Path, cache: Path, jobs: int, *flags: str, sample: bool = False
           ) -> dict[str, Any]:
    """One `probelab verify --json` process: seconds, the peak RSS of the verify process
    (MB), with `sample` that of its process tree too (else None), and its result."""
    env = dict(os.environ, PYTHONPATH=str(lab), PROBELAB_ROOT=str(lab),
               PROBELAB_CACHE=str(cache))
    start = time.perf_counter()
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen([sys.executable, "-m", "probelab", "verify", "--json",
                                 "--jobs", str(jobs), *flags],
                                cwd=lab, env=env, stdout=out, stderr=subprocess.DEVNULL)
        peak = [0]

        def sample() -> None:
            while proc.returncode is None:
                peak[0] = max(peak[0], _tree_rss_kb(proc.pid))
                time.sleep(0.02)

        sampler = threading.Thread(target=sample, daemon=True)
        if sample:
            sampler.start()
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here, for its rusage
        if sample:
            sampler.join()
        out.seek(0)
        result = json.loads(out.read())
    if proc.returncode != 0 or result["problems"]:
        raise SystemExit(f"verify of {lab} is not clean: {result['problems'][:3]}")
    return {"s": seconds, "tree_rss_mb": peak[0] / 1024 if sample else None,
            "process_rss_mb": usage.ru_maxrss / 1024, "result": result}


def floor(lab: Path) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", FLOOR, str(lab / "data"),
                    str(lab / "preregistrations")], check=True)
    return time.perf_counter() - start


def measure(lab: Path, runs: int, jobs: int) -> dict[str, Any]:
    """The cold run (no bytecode, an empty cache), then `runs` warm ones, then the floor;
    then, apart, a cold and a warm run whose memory is sampled."""
    with tempfile.TemporaryDirectory() as cache:
        cold = verify(lab, Path(cache), jobs)
        warm = [verify(lab, Path(cache), jobs) for _ in range(runs)]
    with tempfile.TemporaryDirectory() as cache:
        cold_memory = verify(lab, Path(cache), jobs, sample=True)
        warm_memory = verify(lab, Path(cache), jobs, sample=True)
    floors = [floor(lab) for _ in range(runs)]
    result = cold["result"]
    datasets = sum(1 for _ in (lab / "data").rglob("*.nc"))
    warm_s = statistics.median(w["s"] for w in warm)
    return {"datasets": datasets, "retired": len(result["retired"]),
            "checks": len(result["checks"]), "seals": len(result["seals"]),
            "commits": int(git(lab, "rev-list", "--count", "HEAD")),
            "cold_s": cold["s"], "cold_tree_rss_mb": cold_memory["tree_rss_mb"],
            "cold_process_rss_mb": cold["process_rss_mb"],
            "cold_sampled_s": cold_memory["s"],
            "warm_s": [w["s"] for w in warm], "warm_median_s": warm_s,
            "warm_tree_rss_mb": warm_memory["tree_rss_mb"],
            "floor_median_s": statistics.median(floors),
            "warm_over_floor": warm_s / statistics.median(floors),
            "cold_s_per_dataset": cold["s"] / datasets, "warm_s_per_dataset": warm_s / datasets}


def largest(lab: Path) -> dict[str, Any]:
    """The archive's largest dataset by declared (decoded) bytes and by bytes on disk,
    retired ones apart."""
    os.environ["PROBELAB_ROOT"] = str(lab)
    retired = {lab / e["path"] for e in retirement.read()}
    rows = [(dataset.declared_bytes(p), p.stat().st_size, p.relative_to(lab).as_posix())
            for p in (lab / "data").rglob("*.nc") if p not in retired]
    declared, on_disk = max(rows), max(rows, key=lambda r: r[1])
    return {"declared_bytes": declared[0], "declared_path": declared[2],
            "disk_bytes": on_disk[1], "disk_path": on_disk[2]}


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
    parser.add_argument("--factor", type=int, default=3, help="how many times to grow it")
    parser.add_argument("--runs", type=int, default=3, help="warm runs per size")
    parser.add_argument("--jobs", type=int, default=0, help="verify --jobs (0: a core each)")
    args = parser.parse_args()
    dirty = bool(git(ROOT, "status", "--porcelain", "--untracked-files=no"))
    results: dict[str, Any] = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": " ".join(["python", *sys.argv]),
        "commit": git(ROOT, "rev-parse", "HEAD") + (" + uncommitted changes" if dirty else ""),
        "machine": machine()}
    with tempfile.TemporaryDirectory(prefix="verify-bench-") as tmp:
        small = fresh_lab(Path(tmp) / "x1")
        results["largest"] = largest(small)
        sizes = {"x1": measure(small, args.runs, args.jobs)}
        if args.factor > 1:
            big = shutil.copytree(small, Path(tmp) / f"x{args.factor}", symlinks=True)
            with tempfile.TemporaryDirectory() as cache:
                grow(big, args.factor, Path(cache))
            sizes[f"x{args.factor}"] = measure(big, args.runs, args.jobs)
    results["sizes"] = sizes
    for name, size in sizes.items():
        print(f"{name}: {size['datasets']} datasets ({size['retired']} retired), "
              f"{size['checks']} checks: cold {size['cold_s']:.1f} s "
              f"({size['cold_tree_rss_mb']:.0f} MB all processes), warm median "
              f"{size['warm_median_s']:.2f} s ({size['warm_tree_rss_mb']:.0f} MB), floor "
              f"{size['floor_median_s']:.2f} s (warm/floor {size['warm_over_floor']:.1f}x)",
              file=sys.stderr)
    report(results, args.json)


if __name__ == "__main__":
    main()
