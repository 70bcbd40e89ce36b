"""Benchmark: a whole byte-perm sweep on the GPU, warm and cold, against a bare floor
script, and its launch against a baseline of one launch per selector.

    python bench/byte_perm_sweep.py --json results.json

Whole sweep = `python -m probelab sweep byte-perm` as a fresh process, from process start
to dataset saved (both kernels, full grid, 3 repeats, every check). Cold uses an empty
compile cache; warm reuses it. The floor (`bench/byte_perm_floor.py`) is the least honest
work with the same outputs: compile both kernels from its cache, launch each once over the
grid, copy back. Floor and sweep runs alternate, both as fresh processes, in this one run;
the ratio of their warm medians is the figure the sweep is held to (at most 1.5).

The launch-phase comparison times, in one process, one repeat of one kernel
from allocation to outputs on the host: a single launch over the grid (the backend's own
run, guards and poison included) vs 65,536 launches of 16 threads into buffers allocated
once, and checks that both give identical outputs. `phases_s` splits a warm in-process
sweep by step; `import_s` is a bare interpreter importing probelab's sweep path.
"""

import argparse
import itertools
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
from timing import ROOT, timed

sys.path.insert(0, str(ROOT))  # probelab itself, when not installed

from probelab.backends.guards import POISONS
from probelab.probe import get_probe
from probelab.vendors.nvidia.ops_cuda import CudaBackend, _check


def whole_sweep(cache: Path, out: Path) -> float:
    return timed([sys.executable, "-m", "probelab", "sweep", "byte-perm", "--out", str(out)],
                 dict(os.environ, PROBELAB_CACHE=str(cache)))


def floor(cache: Path) -> float:
    return timed([sys.executable, str(ROOT / "bench" / "byte_perm_floor.py"), "--cache",
                  str(cache)])


def phases() -> dict[str, float]:
    """Where a warm sweep's time goes, in process (imports excluded): step -> seconds."""
    from probelab.sweep import run_sweep

    marks: list[tuple[str, float]] = []
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        run_sweep("byte-perm", "cuda", out_root=Path(tmp),
                  step=lambda text: marks.append((text.split(" (")[0], time.perf_counter())))
        marks.append(("end", time.perf_counter()))
    spans: dict[str, float] = {"before first step": marks[0][1] - start}
    for (name, t), (_, t_next) in itertools.pairwise(marks):
        spans[name] = spans.get(name, 0.0) + (t_next - t)
    spans["total"] = marks[-1][1] - start
    return spans


def import_time() -> float:
    return timed([sys.executable, "-c", "import probelab.cli, probelab.sweep, "
                  "probelab.vendors.nvidia.ops_cuda"])


def launch_phase(kernel_name: str) -> dict[str, float | bool]:
    """One repeat of one kernel, device work and transfers included on both sides."""
    probe = get_probe("byte-perm")
    kernel = next(k for k in probe.kernels("nvidia") if k.name == kernel_name)
    backend = CudaBackend()
    dev = backend.device()
    code = backend.compile(kernel, dev.target)
    launch = probe.launch(probe.stimulus())
    backend.run(code, kernel, launch, POISONS[0])  # warm: module load, allocator

    start = time.perf_counter()
    single = backend.run(code, kernel, launch, POISONS[0])["out"]
    single_s = time.perf_counter() - start

    drv = backend._open()
    x, y, sel = (launch.inputs[n] for n in ("x", "y", "sel"))
    n_op, n_sel = x.size, sel.size
    host = {"params": np.array([1, n_op], np.uint32), "x": x, "y": y, "sel": sel,
            "out": np.full(n_op * n_sel, POISONS[0], np.uint32)}
    fn = backend._function(drv, code, kernel.symbol)
    stream = backend._stream
    start = time.perf_counter()
    base = {n: int(_check(drv.cuMemAlloc(a.nbytes), "cuMemAlloc")[0]) for n, a in host.items()}
    for n, a in host.items():  # on the launches' stream, so they wait for the copies
        _check(drv.cuMemcpyHtoDAsync(base[n], a.ctypes.data, a.nbytes, stream), "HtoD")
    for s in range(n_sel):  # one launch per selector: n_sel = 1, pointers offset
        values = np.array([base["params"], base["x"], base["y"], base["sel"] + 4 * s,
                           base["out"] + 4 * n_op * s], np.uint64)
        params = np.array([values.ctypes.data + 8 * i for i in range(values.size)], np.uint64)
        _check(drv.cuLaunchKernel(fn, 1, 1, 1, n_op, 1, 1, 0, stream, params.ctypes.data, 0),
               "cuLaunchKernel")
    _check(drv.cuStreamSynchronize(stream), "cuStreamSynchronize")
    back = np.empty_like(host["out"])
    _check(drv.cuMemcpyDtoH(back.ctypes.data, base["out"], back.nbytes), "DtoH")
    per_selector_s = time.perf_counter() - start
    for address in base.values():
        _check(drv.cuMemFree(address), "cuMemFree")
    same = bool(np.array_equal(back.reshape(n_sel, n_op).T.reshape(-1), single))
    return {"single_launch_s": single_s, "per_selector_s": per_selector_s,
            "launches": n_sel, "speedup": per_selector_s / single_s, "outputs_identical": same}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, help="write results here")
    parser.add_argument("--warm-runs", type=int, default=5)
    args = parser.parse_args()
    results: dict = {"date": datetime.now(UTC).isoformat(timespec="seconds"),
                     "command": " ".join(sys.argv),
                     "commit": os.environ.get("PROBELAB_GIT_HEAD", "unknown"),
                     "machine": {"platform": platform.platform(), "cpus": os.cpu_count(),
                                 "python": platform.python_version(),
                                 "bytecode_written": not sys.flags.dont_write_bytecode}}
    with tempfile.TemporaryDirectory() as tmp:
        cache, out = Path(tmp) / "cache", Path(tmp) / "data"
        results["cold_s"] = whole_sweep(cache, out)
        results["floor_cold_s"] = floor(Path(tmp) / "floor")
        warm, bare = [], []
        for _ in range(args.warm_runs):  # alternating, so drift in the machine hits both
            bare.append(floor(Path(tmp) / "floor"))
            warm.append(whole_sweep(cache, out))
    results |= {"warm_s": warm, "warm_median_s": statistics.median(warm),
                "floor_s": bare, "floor_median_s": statistics.median(bare)}
    results["ratio"] = results["warm_median_s"] / results["floor_median_s"]
    results["import_s"] = import_time()
    results["phases_s"] = phases()
    results["launch_phase"] = {k: launch_phase(k) for k in ("byte_perm", "prmt")}
    results["device"] = CudaBackend().device().name
    text = json.dumps(results, indent=2)
    print(text)
    print(f"warm sweep {results['warm_median_s']:.2f} s / bare floor "
          f"{results['floor_median_s']:.2f} s = {results['ratio']:.2f}x (target: at most 1.5x)")
    if args.json:
        args.json.write_text(text + "\n")


if __name__ == "__main__":
    main()
