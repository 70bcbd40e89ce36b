"""What the benchmarks here share: a command timed as a whole process, from the repo root,
and the results printed and kept."""

import json
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


def report(results: dict, path: Path | None) -> None:
    """Print the results as JSON, and write them to `path` where one is given."""
    text = json.dumps(results, indent=2)
    print(text)
    if path:
        path.write_text(text + "\n")
