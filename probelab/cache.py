"""On-disk cache of answers slow to recompute (compiled code objects, content hashes, claims'
tables and scores, the blindness gate, the probe index), each under a key of everything
that shapes it (`cache_key`; the probelab code that computes it, from `depends.digest`).

No one without the secret can make an entry count. An entry is `HMAC-SHA256(secret, kind,
key, payload)` then the payload, the secret a random key file in the cache folder that only
the user can read (mode 0600, theirs, a plain file: anything else and the cache is off,
every lookup a miss). An entry that does not verify is a miss, recomputed and rewritten,
never trusted: a corrupt one, one of an older format, one written by someone without the
secret, one copied from another cache folder (another secret). Whoever can read the secret
(the user, root, their backups) can forge entries: that the cache cannot stop.

Every read is bounded: an entry is opened without following a link and without blocking
(a FIFO), must be a regular file, and one larger than MAX_ENTRY_BYTES is a miss unread.
"""

import contextlib
import hashlib
import hmac
import json
import os
import stat
import tempfile
from collections.abc import Callable
from functools import cache
from pathlib import Path

from probelab.errors import CannotWrite
from probelab.paths import cache_dir
from probelab.storage import atomic_write_bytes

# The largest payload kept: compiled code and its disassembly are under a MiB, an answer a
# few hundred bytes, so 64 MiB only stops a planted file from being read whole.
MAX_ENTRY_BYTES = 64 * 2**20
SECRET = "secret.key"  # in the cache folder
SECRET_BYTES = 32
TAG_BYTES = hashlib.sha256().digest_size


def cache_key(**parts: object) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()


def _read(path: Path, limit: int, private: bool = False) -> bytes | None:
    """The regular file at `path` if it holds at most `limit` bytes, else None. Its size and
    kind are of the file opened (fstat), never of a path looked at first; `private` also
    demands that the current user own it and no one else may read or write it."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > limit or (
                private and (st.st_uid != os.getuid() or st.st_mode & 0o077)):
            return None
        chunks, size = [], 0
        while size <= st.st_size and (chunk := os.read(fd, st.st_size + 1 - size)):
            chunks.append(chunk)
            size += len(chunk)
        return b"".join(chunks) if size == st.st_size else None  # else it changed under us
    except OSError:
        return None
    finally:
        os.close(fd)


def _create_secret(path: Path) -> None:
    """Put a new secret at `path` unless one is there: written whole to a 0600 temp file,
    then linked to the name, which fails if it exists, so of two processes racing, one
    secret wins and the other reads it, never a part of one."""
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{SECRET}.", suffix=".tmp", dir=path.parent)
        try:
            try:
                if os.write(fd, os.urandom(SECRET_BYTES)) != SECRET_BYTES:
                    raise OSError("short write")  # never a secret of the wrong length
                os.fsync(fd)
            finally:
                os.close(fd)
            os.link(tmp, path)  # a file system without hard links has the cache off
        finally:
            os.unlink(tmp)


@cache
def _secret(folder: Path) -> bytes | None:
    """The cache folder's secret, made on first use, or None (the cache is off) where it is
    not a regular file of exactly SECRET_BYTES, private to the user: said nowhere, since
    it only costs the recomputing."""
    path = folder / SECRET
    if not os.path.lexists(path):
        _create_secret(path)
    secret = _read(path, SECRET_BYTES, private=True)
    return secret if secret is not None and len(secret) == SECRET_BYTES else None


def _tag(secret: bytes, kind: str, key: str, payload: bytes) -> bytes:
    mac = hmac.new(secret, digestmod=hashlib.sha256)
    for part in (kind.encode(), key.encode()):  # length-prefixed: no two splits agree
        mac.update(b"%d:%s" % (len(part), part))
    mac.update(payload)
    return mac.digest()


def _entry(kind: str, key: str) -> tuple[Path, bytes | None]:
    folder = cache_dir()
    return folder / kind / f"{key}.bin", _secret(folder)


def lookup(kind: str, key: str) -> bytes | None:
    """The payload filed under (kind, key) by this cache's owner, or None on a miss."""
    path, secret = _entry(kind, key)
    if secret is None:
        return None
    blob = _read(path, TAG_BYTES + MAX_ENTRY_BYTES)
    if blob is None or len(blob) < TAG_BYTES:
        return None
    tag, payload = blob[:TAG_BYTES], blob[TAG_BYTES:]
    return payload if hmac.compare_digest(tag, _tag(secret, kind, key, payload)) else None


def store(kind: str, key: str, payload: bytes) -> None:
    """File `payload` under (kind, key); a cache that is off, read-only or full only costs
    the recomputing next time. Not fsynced (a cold verify files thousands, a millisecond
    each): an entry a crash leaves torn fails its tag and is made again."""
    path, secret = _entry(kind, key)
    if secret is None or len(payload) > MAX_ENTRY_BYTES:
        return
    with contextlib.suppress(OSError, CannotWrite):
        atomic_write_bytes(path, _tag(secret, kind, key, payload) + payload, record=False,
                           durable=False)


def cached_bytes(kind: str, key: str, build: Callable[[], bytes],
                 fresh: bool = False) -> tuple[bytes, bool]:
    """Return (bytes, hit): the entry where it verifies, else what `build` makes, filed.
    `fresh` rebuilds regardless (to show a build is reproducible)."""
    payload = None if fresh else lookup(kind, key)
    if payload is not None:
        return payload, True
    payload = build()
    store(kind, key, payload)
    return payload, False
