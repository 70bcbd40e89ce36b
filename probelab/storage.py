"""Atomic file writes: a reader sees the old file or the whole new one, never a part.

A failed write (read-only folder, full disk, an exception in the writer, SIGTERM) leaves
nothing behind and raises CannotWrite naming the path and the reason. `exclusive` writes
never replace an existing file, even when two processes race for the same name.

Temp files for paths inside the lab are made in the lab's staging folder, not beside the
target, so even a process killed outright (SIGKILL) mid-write leaves nothing in `data/`;
the next write removes what dead processes left there. Every completed write is listed in
`written`, so an interrupted command can say truthfully what it did write.
"""

import contextlib
import errno
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

from probelab.errors import CannotWrite, UsageError
from probelab.paths import lab_root

STAGING = ".probelab-staging"
written: list[Path] = []  # files this process has put in place, in order


def _cannot_write(path: Path, exc: OSError) -> CannotWrite:
    return CannotWrite(f"cannot write {path}: {exc.strerror or exc}; nothing was written there")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _sweep_stale(staging: Path) -> None:
    """Remove temp files whose writer (the pid in the name) no longer runs."""
    for leftover in staging.glob(".*.tmp"):
        parts = leftover.name[: -len(".tmp")].rsplit(".", 2)
        if len(parts) == 3 and parts[1].isdigit() and not _alive(int(parts[1])):
            with contextlib.suppress(OSError):
                leftover.unlink()


def _staging_for(path: Path) -> Path:
    """The lab's staging folder when `path` is in the lab on the same file system (an
    atomic link or rename needs that), else the folder of `path` itself."""
    try:
        root = lab_root()
        if not path.parent.resolve().is_relative_to(root):
            return path.parent
        staging = root / STAGING
        staging.mkdir(exist_ok=True)
        if staging.stat().st_dev != path.parent.stat().st_dev:
            return path.parent
    except (UsageError, OSError):
        return path.parent
    _sweep_stale(staging)
    return staging


@contextlib.contextmanager
def atomic_path(path: Path, exclusive: bool = False, record: bool = True,
                durable: bool = True) -> Iterator[Path]:
    """Yield a temp path; on success it is fsynced (unless not `durable`) and moved to `path`
    (renamed over it, or with `exclusive` linked, which fails if `path` exists) and, with
    `record`, listed in `written` (what an interrupted command says it left; caches are not
    results)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.{os.getpid()}.", suffix=".tmp",
                                   dir=_staging_for(path))
        os.close(fd)
    except OSError as exc:
        raise _cannot_write(path, exc) from exc
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        if durable:
            with open(tmp_path, "rb+") as handle:
                os.fsync(handle.fileno())
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp_path, 0o666 & ~umask)  # mkstemp's 0600 would hide results from others
        if exclusive:
            _link_new(tmp_path, path)
        else:
            os.replace(tmp_path, path)
        if record:
            written.append(path)
    except FileExistsError:
        raise
    except OSError as exc:
        raise _cannot_write(path, exc) from exc
    finally:  # also on SIGTERM (raised as Terminated) and KeyboardInterrupt
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


def _write_all(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_TRUNC)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    finally:
        os.close(fd)


def atomic_write_bytes(path: Path, data: bytes, exclusive: bool = False,
                       record: bool = True, durable: bool = True) -> None:
    """Write `data` whole. Writers that serialise to memory first (netCDF via HDF5) use
    this, so a full disk is a plain OSError here, never a failure inside a C library."""
    with atomic_path(path, exclusive, record, durable) as tmp:
        _write_all(tmp, data)


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write_bytes(path, text.encode())
