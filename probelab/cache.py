"""On-disk cache of compiled code objects, keyed by everything that shapes the bytes."""

import hashlib
import json
from collections.abc import Callable

from probelab.errors import CannotWrite
from probelab.paths import cache_dir
from probelab.storage import atomic_write_bytes


def cache_key(**parts: object) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()


def cached_bytes(kind: str, key: str, build: Callable[[], bytes],
                 fresh: bool = False) -> tuple[bytes, bool]:
    """Return (bytes, hit). A corrupt or unreadable cache entry is rebuilt, never trusted;
    `fresh` rebuilds regardless (to show a build is reproducible)."""
    path = cache_dir() / kind / f"{key}.bin"
    try:
        blob = b"" if fresh else path.read_bytes()
        digest, payload = blob[:64], blob[64:]
        if blob and hashlib.sha256(payload).hexdigest().encode() == digest:
            return payload, True
    except OSError:
        pass
    payload = build()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(path, hashlib.sha256(payload).hexdigest().encode() + payload,
                           record=False)
    except (OSError, CannotWrite):
        pass  # a read-only or full cache only costs a recompile
    return payload, False
