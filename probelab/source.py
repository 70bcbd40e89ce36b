"""Where imported datasets come from: a folder holding data/ (a device run's copy of the
tree, a fleet node's checkout, another clone), a tar file (a device run's measured.tar), or
a tar split in parts (measured.tar.00, .01, ... read in order: the device tool returns
files of up to 16 MiB).

What is read is bounded and nothing is written outside a private staging folder, removed
on the way out: a tar member that is a link, a device or a fifo, whose name is absolute or
climbs out with `..`, or that appears twice refuses the whole source; so do more members,
a larger file, or more bytes in all than the bounds below, and a header (a long name) past
its own bound, all judged from the headers before any data are read (a tar bomb fills
neither the disk nor memory). In a folder, a dataset or manifest reached through a link is
refused the same way. Every refusal is a UsageError (exit 2): the source is not one that
can be imported, and nothing was.

Only the source's manifest and its data/PROBE/TARGET/NAME.nc files are taken; everything
else (logs, figures, *.verdict.json: verdicts are re-derived by `probelab verify --write`,
never carried over) is counted and left out.
"""

import contextlib
import io
import itertools
import lzma
import os
import re
import stat
import tarfile
import tempfile
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import IO, Any

from probelab import chain, manifest
from probelab.errors import UsageError

MAX_MEMBERS = 10_000  # tar members, or files under a folder's data/
MAX_FILE_BYTES = 2 << 30  # one dataset (the largest in the archive is a few MiB on disk)
MAX_TOTAL_BYTES = 8 << 30  # everything a tar holds, or everything staged from a folder
MAX_MANIFEST_BYTES = 64 << 20
MAX_HEADER_BYTES = 1 << 20  # a pax or GNU long-name header, read whole by tarfile
MANIFESTS = ("data/MANIFEST.jsonl", "MANIFEST.jsonl")  # a tree's; an older measured.tar's
VERDICT = ".verdict.json"
_CHUNK = 1 << 20
_PLAIN = (tarfile.REGTYPE, tarfile.AREGTYPE)
_LONG_HEADERS = (tarfile.XHDTYPE, tarfile.XGLTYPE, tarfile.SOLARIS_XHDTYPE,
                 tarfile.GNUTYPE_LONGNAME, tarfile.GNUTYPE_LONGLINK)


@dataclass
class Source:
    """A source opened for import: its manifest (chain verified), the datasets it holds,
    and a private copy of any of them on demand."""

    name: str
    manifest: list[dict[str, Any]]
    datasets: set[str]  # lab-relative data/PROBE/TARGET/NAME.nc paths it holds
    verdicts: int  # *.verdict.json files left out
    staged: Callable[[str], Path | None] = field(repr=False)  # a private copy of the
    # dataset the source holds at a lab-relative path, or None where it holds none


class _Budget:
    """The members and bytes one source may still use, judged from sizes before reading."""

    def __init__(self, name: str) -> None:
        self.name, self.bytes, self.members = name, 0, 0

    def count(self) -> None:
        self.members += 1
        if self.members > MAX_MEMBERS:
            raise UsageError(f"{self.name} holds more than {MAX_MEMBERS:,} members: refused "
                             "before reading on (nothing imported)")

    def take(self, size: int, what: str, limit: int) -> None:
        self.bytes += size
        if size > limit:
            raise UsageError(f"{self.name}: {what} is {size:,} bytes, more than an import "
                             f"takes ({limit:,}; nothing imported)")
        if self.bytes > MAX_TOTAL_BYTES:
            raise UsageError(f"{self.name} holds more than {MAX_TOTAL_BYTES:,} bytes: refused "
                             "before reading on (nothing imported)")


def is_dataset_path(rel: str) -> bool:
    """Whether a source path can be a dataset's: data/PROBE/TARGET/NAME.nc."""
    parts = rel.split("/")
    return len(parts) == 4 and parts[0] == "data" and rel.endswith(".nc")


@contextlib.contextmanager
def opened(src: Path) -> Iterator[Source]:
    """The source at `src`, its files staged in a folder of its own for as long as it is
    open (a UsageError, one line, for anything that is not a source one can import)."""
    with tempfile.TemporaryDirectory(prefix="probelab-import-") as tmp:
        if src.is_dir():
            yield _folder(src, Path(tmp))
        elif src.is_file():
            yield _tar(src, _parts(src), Path(tmp))
        else:
            raise UsageError(f"{src} is not a folder holding data/, a tar file, or the first "
                             "part (.00) of a split tar")


def _read_manifest(name: str, staged: Path | None) -> list[dict[str, Any]]:
    if staged is None:
        raise UsageError(f"{name} holds no manifest ({' or '.join(MANIFESTS)}): nothing in "
                         "it is pinned, so nothing can be imported")
    entries = chain.read(staged, manifest.FORMS, f"manifest of {name}")
    chain.verify(entries, f"manifest of {name}")
    return entries


def _copy(source: IO[bytes], dest: Path, limit: int, what: str) -> None:
    """Copy at most `limit` bytes of `source` to `dest`; more is refused."""
    copied = 0
    with open(dest, "wb") as out:
        while block := source.read(_CHUNK):
            copied += len(block)
            if copied > limit:
                raise UsageError(f"{what} is larger than an import takes ({limit:,} bytes; "
                                 "nothing imported)")
            out.write(block)


# ---- a folder ----------------------------------------------------------------------------

def _folder(src: Path, staging: Path) -> Source:
    name, budget, numbers = str(src), _Budget(str(src)), itertools.count(1)
    found = [rel for rel in MANIFESTS if os.path.lexists(src / rel)]
    if len(found) > 1:
        raise UsageError(f"{src} holds two manifests ({' and '.join(found)}): which one "
                         "pins its datasets? (nothing imported)")
    pins = _read_manifest(name, _from_folder(src, found[0], staging / "MANIFEST.jsonl",
                                             budget, MAX_MANIFEST_BYTES) if found else None)
    datasets, verdicts = set(), 0
    for folder, _, files in os.walk(src / "data"):
        for file in files:
            budget.count()
            rel = (Path(folder) / file).relative_to(src).as_posix()
            datasets |= {rel} if is_dataset_path(rel) else set()
            verdicts += int(file.endswith(VERDICT))

    def fetch(rel: str) -> Path | None:  # a link on the way is refused, not passed over
        if not os.path.lexists(src / rel):
            return None
        return _from_folder(src, rel, staging / f"{next(numbers)}.nc", budget, MAX_FILE_BYTES)

    return Source(name, pins, datasets, verdicts, fetch)


def _from_folder(src: Path, rel: str, dest: Path, budget: _Budget, limit: int) -> Path:
    """A private copy of the plain file `src`/`rel`, reached through no link."""
    here = src
    for part in rel.split("/")[:-1]:
        here = here / part
        if here.is_symlink():
            raise UsageError(f"{src}: {rel} is reached through a link ({here}); an import "
                             "takes plain files (nothing imported)")
    try:
        fd = os.open(src / rel, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)  # a FIFO: no wait
    except OSError as exc:
        raise UsageError(f"{src}: {rel} cannot be read as a plain file ({exc.strerror}; "
                         "nothing imported)") from exc
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise UsageError(f"{src}: {rel} is not a plain file (nothing imported)")
        budget.take(info.st_size, rel, limit)
        _copy(handle, dest, limit, f"{src}: {rel}")
    return dest


# ---- a tar, whole or in parts --------------------------------------------------------------

def _parts(src: Path) -> list[Path]:
    """`src`, or where it is the first part of a split tar (NAME.00), it and NAME.01, ...
    in order, up to the first that is missing."""
    found = re.fullmatch(r"(.+)\.(\d\d)", src.name)
    if found is None:
        return [src]
    base, number = found.groups()
    if number != "00":
        raise UsageError(f"{src} is part {int(number)} of a split tar: give its first part, "
                         f"{base}.00 (the others are read after it, in order)")
    parts = [src]
    while (part := src.with_name(f"{base}.{len(parts):02d}")).is_file():
        parts.append(part)
    return parts


class _Joined(io.RawIOBase):
    """The parts of a split tar read as one stream."""

    def __init__(self, parts: list[Path]) -> None:
        self._parts, self._handle = list(parts), None

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while True:
            if self._handle is None:
                if not self._parts:
                    return 0
                self._handle = open(self._parts.pop(0), "rb")  # noqa: SIM115 (closed below)
            if n := self._handle.readinto(buffer):
                return n
            self._handle.close()
            self._handle = None

    def close(self) -> None:
        if self._handle is not None:
            self._handle.close()
        super().close()


class _LongHeader(UsageError):
    """A header past MAX_HEADER_BYTES (said with the source's name by `_tar`)."""


class _Bounded(tarfile.TarInfo):
    """A member header that refuses a long-name or pax header past MAX_HEADER_BYTES before
    tarfile reads it whole into memory."""

    def _proc_member(self, tarfile: tarfile.TarFile) -> tarfile.TarInfo:
        if self.type in _LONG_HEADERS and self.size > MAX_HEADER_BYTES:
            raise _LongHeader(f"a tar header of {self.size:,} bytes (at most "
                             f"{MAX_HEADER_BYTES:,}): refused before reading it (nothing "
                             "imported)")
        return super()._proc_member(tarfile)


def _member_name(name: str, member: tarfile.TarInfo) -> str:
    """The member's path, as a relative POSIX path; refuses anything but a plain file or a
    folder inside the archive."""
    kind = ("a symbolic link" if member.issym() else "a hard link" if member.islnk() else
            "a device" if member.ischr() or member.isblk() else "a fifo" if member.isfifo()
            else None if member.isdir() or (member.type in _PLAIN and member.sparse is None)
            else f"a member of tar type {member.type!r}")
    path = PurePosixPath(member.name)
    if kind is None and (member.name.startswith("/") or path.is_absolute()):
        kind = "an absolute path"
    if kind is None and ".." in path.parts:
        kind = "a path that climbs out of the archive (..)"
    if kind is not None:
        raise UsageError(f"{name}: member {member.name!r} is {kind}; an import takes plain "
                         "files inside the archive only (nothing imported)")
    return "/".join(p for p in path.parts if p != ".")


def _tar(src: Path, parts: list[Path], staging: Path) -> Source:
    name = str(src) + (f" (with {', '.join(p.name for p in parts[1:])})" if parts[1:] else "")
    budget, seen, files, verdicts = _Budget(name), set(), {}, 0
    manifests: dict[str, Path] = {}
    try:
        with _Joined(parts) as raw, tarfile.open(fileobj=raw, mode="r|*",
                                                  tarinfo=_Bounded) as tar:
            for member in tar:
                budget.count()
                rel = _member_name(name, member)
                if member.isdir():
                    continue
                if rel in seen:
                    raise UsageError(f"{name}: member {rel!r} appears twice (which is it?); "
                                     "nothing imported")
                seen.add(rel)
                wanted = "manifest" if rel in MANIFESTS else rel if is_dataset_path(rel) \
                    else None
                budget.take(member.size, rel, MAX_MANIFEST_BYTES if wanted == "manifest"
                            else MAX_FILE_BYTES)
                if wanted is None:
                    verdicts += int(rel.endswith(VERDICT))
                    continue
                dest = staging / (f"{len(files) + 1}.nc" if wanted == rel else
                                  f"MANIFEST-{len(manifests)}.jsonl")
                with tar.extractfile(member) as handle:
                    _copy(handle, dest, member.size, f"{name}: {rel}")
                if dest.stat().st_size != member.size:
                    raise UsageError(f"{name}: {rel} is cut short (nothing imported)")
                (files if wanted == rel else manifests)[rel] = dest
    except _LongHeader as exc:
        raise UsageError(f"{name}: {exc}") from None
    except (tarfile.TarError, EOFError, zlib.error, lzma.LZMAError, OSError) as exc:
        raise UsageError(f"{name} is not a tar file that can be read whole ({exc}; nothing "
                         "imported)") from exc
    if len(manifests) > 1:
        raise UsageError(f"{name} holds two manifests ({' and '.join(manifests)}): which "
                         "one pins its datasets? (nothing imported)")
    pins = _read_manifest(name, next(iter(manifests.values()), None))
    return Source(name, pins, set(files), verdicts, files.get)
