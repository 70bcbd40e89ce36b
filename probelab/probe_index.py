"""The probe index: what each probe folder defines, cached so discovery imports no probe.

An entry is keyed by the bytes of the folder's Python files and of the probelab modules they
import (a kit such as LaneIdProbe names the kernels) and that list them, so any edit to
those is a miss and the folder is imported again. The index only lists and locates probes:
whatever runs imports the probe itself.
"""

import hashlib
import json
from dataclasses import asdict, dataclass
from pathlib import Path

from probelab import cache, depends, vendors

VERSION = 1  # of the entry format
KIND = "probe-index"  # its entries' folder in the cache


@dataclass(frozen=True)
class Entry:
    """What `probelab list` shows of a probe, kept in the index so listing imports nothing."""

    id: str
    version: str
    summary: str
    targets: tuple[str, ...]
    kernels: dict[str, list[str]]  # vendor -> kernel names
    folder: str


def key(folder: Path) -> str:
    # the folder's code, the kits it imports and the code that lists it (probelab.probe),
    # and the vendors whose kernels it lists (a third party's folder may come and go)
    return hashlib.sha256(f"{VERSION}:{folder.name}:{','.join(vendors.VENDORS)}:"
                          f"{depends.digest_folder(folder, 'probelab.probe')}".encode()
                          ).hexdigest()


def read(key: str) -> list[Entry] | None:
    """The folder's entries, or None on a miss (absent, not this cache's, or malformed)."""
    if (payload := cache.lookup(KIND, key)) is None:
        return None
    try:
        rows = json.loads(payload)
        return [Entry(**row | {"targets": tuple(row["targets"])}) for row in rows]
    except (ValueError, TypeError, KeyError):
        return None


def write(key: str, entries: list[Entry]) -> None:
    cache.store(KIND, key, json.dumps([asdict(e) for e in entries]).encode())
