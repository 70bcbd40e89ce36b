"""What the benchmarks here share: a command timed as a whole process, from the repo root."""

import subprocess
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def timed(command: list[str], env: dict[str, str] | None = None) -> float:
    """Seconds `command` takes as a fresh process (it must succeed; its output is kept
    out of the way)."""
    start = time.perf_counter()
    subprocess.run(command, cwd=ROOT, env=env, check=True, capture_output=True)
    return time.perf_counter() - start
