"""The probe index: what each probe folder defines, cached so discovery imports no probe.

An entry is keyed by the bytes of the folder's Python files and of probelab's own (a kit such
as LaneIdProbe names the kernels), so any edit to either is a miss and the folder is imported
again. The index only lists and locates probes: whatever runs imports the probe itself.
"""

import hashlib
import json
from dataclasses import asdict, dataclass
from functools import cache
from pathlib import Path

from probelab.errors import CannotWrite
from probelab.paths import cache_dir
from probelab.storage import atomic_write_bytes

VERSION = 1  # of the entry format


@dataclass(frozen=True)
class Entry:
    """What `probelab list` shows of a probe, kept in the index so listing imports nothing."""

    id: str
    version: str
    summary: str
    targets: tuple[str, ...]
    kernels: dict[str, list[str]]  # vendor -> kernel names
    folder: str


def _python_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*.py") if "__pycache__" not in p.parts)


@cache
def core_digest() -> str:
    """probelab's own code, once per process (it does not change under a running lab)."""
    core = Path(__file__).parent
    return _digest(core, _python_files(core))


def _digest(base: Path, files: list[Path]) -> str:
    h = hashlib.sha256()
    for path in files:
        name, data = path.relative_to(base).as_posix().encode(), path.read_bytes()
        h.update(b"%d:%s%d:" % (len(name), name, len(data)) + data)
    return h.hexdigest()


def key(folder: Path) -> str:
    return hashlib.sha256(f"{VERSION}:{folder.name}:{core_digest()}:"
                          f"{_digest(folder, _python_files(folder))}".encode()).hexdigest()


def _path(key: str) -> Path:
    return cache_dir() / "probe-index" / f"{key}.json"


def read(key: str) -> list[Entry] | None:
    """The folder's entries, or None on a miss (absent, unreadable or malformed)."""
    try:
        rows = json.loads(_path(key).read_text())
        return [Entry(**row | {"targets": tuple(row["targets"])}) for row in rows]
    except (OSError, ValueError, TypeError, KeyError):
        return None


def write(key: str, entries: list[Entry]) -> None:
    try:
        path = _path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(path, json.dumps([asdict(e) for e in entries]).encode(),
                           record=False)
    except (OSError, CannotWrite):
        pass  # a read-only cache only costs the imports next time
