"""Atomic file writes: a reader sees the old file or the whole new one, never a part.

A failed write (read-only folder, full disk, an exception in the writer) leaves nothing
behind and raises UsageError naming the path and the reason. `exclusive` writes never
replace an existing file, even when two processes race for the same name.
"""

import contextlib
import errno
import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

from probelab.errors import UsageError


def _cannot_write(path: Path, exc: OSError) -> UsageError:
    return UsageError(f"cannot write {path}: {exc.strerror or exc}; nothing was written there")


@contextlib.contextmanager
def atomic_path(path: Path, exclusive: bool = False) -> Iterator[Path]:
    """Yield a temp path beside `path`; on success it is fsynced and moved to `path`
    (renamed over it, or with `exclusive` linked, which fails if `path` exists)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        os.close(fd)
    except OSError as exc:
        raise _cannot_write(path, exc) from exc
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        with open(tmp_path, "rb+") as handle:
            os.fsync(handle.fileno())
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp_path, 0o666 & ~umask)  # mkstemp's 0600 would hide results from others
        if exclusive:
            _link_new(tmp_path, path)
        else:
            os.replace(tmp_path, path)
    except FileExistsError:
        raise
    except OSError as exc:
        raise _cannot_write(path, exc) from exc
    finally:
        with contextlib.suppress(OSError):  # the result is in place; a stray temp is harmless
            tmp_path.unlink(missing_ok=True)


def _link_new(tmp: Path, path: Path) -> None:
    """Give `tmp` the name `path` only if that name is free, atomically. Where the file
    system has no hard links, claim the name with O_EXCL first, then move over the claim."""
    try:
        os.link(tmp, path)
    except FileExistsError:
        raise
    except OSError as exc:
        if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV):
            raise
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
        os.replace(tmp, path)


def atomic_write_bytes(path: Path, data: bytes) -> None:
    with atomic_path(path) as tmp:
        tmp.write_bytes(data)


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write_bytes(path, text.encode())


def atomic_write_with(path: Path, writer: Callable[[Path], None], exclusive: bool = False) -> None:
    with atomic_path(path, exclusive) as tmp:
        writer(tmp)
