"""Measurement branches merged onto the archive: `probelab import SRC`, and the fleet driver.

A device run or a fleet node sweeps into its own copy of data/ and appends its pins to its
own copy of the manifest, so two runs from one commit are two branches of the chain. An
import takes a branch's datasets and pins (a folder holding data/, or the tar a device run
sends back, whole or in its .00, .01, ... parts) and appends them onto this archive's
manifest: the source's pins that are not pinned here are its branch, whatever prefix it
shares with ours (none, for a run that started from an empty data/).

Each dataset of the branch must be where its pin says (data/PROBE/TARGET/NAME.nc of its
own probe and target), its bytes and contents those its pin names, a measurement (not
simulated, nothing in its provenance that only a simulated run says) made from a commit
this repository has, clean or with its code recorded. Anything else, and any conflict with
this archive (a path, content or file already pinned here; a file here no pin names) is
refused, one line each, and then nothing is written: all of a branch or none. A source that
is itself unsafe (a link, a path outside, too many or too large members) is refused before
anything of it is used. Verdict files are not taken: `probelab verify --write` records
them here. A pin keeps its `pinned_at` (when the sweep pinned it); its place in the chain
is new.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import stat
import tarfile
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from probelab import chain, dataset, gitinfo, manifest, storage
from probelab.errors import IntegrityError, UsageError
from probelab.paths import lab_root

MAX_MEMBERS = 100_000  # files a source may hold
MAX_TOTAL_BYTES = 8 << 30  # all of them together, as read
MAX_MEMBER_BYTES = dataset.MAX_NEW_FILE_BYTES + (1 << 20)  # a dataset, or a log
_DATASET = re.compile(r"data/[^/]+/[^/]+/[^/]+\.nc")
_MANIFESTS = ("MANIFEST.jsonl", "data/MANIFEST.jsonl")


@dataclass(frozen=True)
class Arrival:
    """A dataset to place in the archive: its lab-relative path, its bytes and its pin's
    fields (probe, target, content and file hashes, pinned_at)."""

    path: str
    data: bytes
    pin: dict[str, Any]


def import_branch(source: Path, dry_run: bool = False) -> tuple[list[Arrival], int]:
    """Import the branch `source` holds (module docstring): (what was placed, in its
    chain's order, and how many of its pins were already pinned here)."""
    with tempfile.TemporaryDirectory(prefix="probelab-import-") as tmp:
        root = _unpacked(source, Path(tmp))
        text = next((root / m for m in _MANIFESTS[::-1] if (root / m).is_file()), None)
        if text is None:
            raise UsageError(f"{source}: no MANIFEST.jsonl (at its top or under data/): not "
                             "a measurement branch")
        try:
            theirs = chain.read(text, manifest.FORMS, "source manifest")
            chain.verify(theirs, "source manifest")
        except IntegrityError as exc:
            raise IntegrityError(f"{source}: {exc}") from exc
        ours = manifest.read()
        known = {_identity(p) for p in ours}
        branch = [p for p in theirs if _identity(p) not in known]
        arrivals = []
        for pin in branch:
            file = root / pin["path"]
            usable = _DATASET.fullmatch(pin["path"]) and ".." not in Path(pin["path"]).parts
            data = file.read_bytes() if usable and file.is_file() else b""
            arrivals.append(Arrival(pin["path"], data, {k: pin[k] for k in (
                "path", "probe", "target", "content_sha256", "file_sha256", "pinned_at")}))
        missing = [f"{a.path}: pinned by the branch, but {source} does not hold it as a "
                   "dataset of the archive (data/PROBE/TARGET/NAME.nc)"
                   for a in arrivals if not a.data]
        if missing:
            raise IntegrityError("; ".join(missing) + "; nothing imported")
        if not dry_run:
            place(arrivals, ours)
        else:
            refuse(arrivals, ours)
    return arrivals, len(theirs) - len(branch)


def _identity(pin: dict[str, Any]) -> tuple[str, str, str]:
    return pin["path"], pin["content_sha256"], pin["file_sha256"]


def refuse(arrivals: list[Arrival], ours: list[dict[str, Any]]) -> None:
    """Raise IntegrityError naming every reason (one line each) an arrival cannot join the
    archive, or return where all can."""
    problems = []
    paths: dict[str, str] = {}
    for pin in ours:
        paths[pin["path"]] = "a path"
        paths[pin["content_sha256"]] = f"a content ({pin['path']})"
        paths[pin["file_sha256"]] = f"a file ({pin['path']})"
    seen: set[str] = set()
    for a in arrivals:
        for key in (a.path, a.pin["content_sha256"], a.pin["file_sha256"]):
            if key in paths:
                problems.append(f"{a.path}: {paths[key]} already pinned here")
                break
            if key in seen:
                problems.append(f"{a.path}: pinned twice by the branch (a path or content)")
                break
        seen |= {a.path, a.pin["content_sha256"], a.pin["file_sha256"]}
        if (lab_root() / a.path).exists() or (lab_root() / a.path).is_symlink():
            problems.append(f"{a.path}: a file is already there")
        problems += [f"{a.path}: {why}" for why in _not_a_measurement(a)]
    if problems:
        raise IntegrityError("\n".join(problems) + "\nnothing imported")


def _not_a_measurement(a: Arrival) -> list[str]:
    """Why an arrival is not the pinned measurement it says it is."""
    if not _DATASET.fullmatch(a.path) or ".." in Path(a.path).parts:
        return ["not a dataset path of the archive (data/PROBE/TARGET/NAME.nc)"]
    if hashlib.sha256(a.data).hexdigest() != a.pin["file_sha256"]:
        return ["its bytes are not the file its pin names"]
    with tempfile.TemporaryDirectory(prefix="probelab-import-") as tmp:
        file = Path(tmp) / "arrival.nc"
        file.write_bytes(a.data)
        try:
            read = dataset.read_summarised(file)
        except UsageError as exc:
            return [f"not a dataset: {exc}"]
    prov, why = read.prov, []
    if read.summary.content != a.pin["content_sha256"] or \
            (why_content := dataset.tampered_content(prov, read.summary.content)):
        why.append(why_content if read.summary.content == a.pin["content_sha256"] else
                   "its contents are not those its pin names")
    parts = Path(a.path).parts
    if (prov.get("probe"), prov.get("target")) != (a.pin["probe"], a.pin["target"]) or \
            parts[1:3] != (a.pin["probe"], a.pin["target"]):
        why.append(f"its provenance says {prov.get('probe')}@{prov.get('target')}, its pin "
                   f"{a.pin['probe']}@{a.pin['target']}, its path {'/'.join(parts[1:3])}")
    if dataset.simulated(prov):
        why.append("simulated: never evidence, never in the archive")
    why += dataset.contradictions(prov)
    head = prov.get("git_head")
    if not (isinstance(head, str) and gitinfo.is_commit_id(head) and _known(head)):
        why.append(f"made from commit {head!r}, which this repository does not have")
    elif prov.get("git_dirty") is not False and "code_tree" not in prov:
        why.append("made from a dirty tree that records no code")
    return why


def _known(commit: str) -> bool:
    try:
        gitinfo.git("cat-file", "-e", f"{commit}^{{commit}}")
    except (RuntimeError, OSError):
        return False
    return True


def place(arrivals: list[Arrival], ours: list[dict[str, Any]] | None = None) -> None:
    """Put every arrival in the archive and pin it, all or none (`refuse` first): a failure
    part way removes what was written and leaves the manifest as it was."""
    with manifest.locked():
        ours = manifest.read() if ours is None else ours
        refuse(arrivals, ours)
        before = manifest.manifest_path().read_bytes() \
            if manifest.manifest_path().exists() else None
        placed: list[Path] = []
        try:
            entries = list(ours)
            for a in arrivals:
                path = lab_root() / a.path
                path.parent.mkdir(parents=True, exist_ok=True)
                storage.atomic_write_bytes(path, a.data, exclusive=True)
                placed.append(path)
                entries.append(chain.append(manifest.manifest_path(), entries, a.pin,
                                            manifest.FORMS))
        except BaseException:
            for path in placed:
                path.unlink(missing_ok=True)
                with contextlib.suppress(ValueError):
                    storage.written.remove(path)
            if before is None:
                manifest.manifest_path().unlink(missing_ok=True)
            else:
                storage.atomic_write_bytes(manifest.manifest_path(), before, record=False)
            raise


def _unpacked(source: Path, into: Path) -> Path:
    """`source` (a folder, a tar, or the first part of a split tar) as a folder under
    `into`, holding only its regular files (a link, a device, an absolute path or one that
    leaves the folder refuses the whole source), within MAX_MEMBERS and MAX_TOTAL_BYTES."""
    if source.is_dir() and not source.is_symlink():
        return _checked_folder(source)
    if not source.is_file():
        raise UsageError(f"{source}: no such folder or tar file")
    try:
        with _joined(source) as stream, tarfile.open(fileobj=stream, mode="r|") as tar:
            count = total = 0
            for member in tar:
                count += 1
                total += member.size
                if count > MAX_MEMBERS or total > MAX_TOTAL_BYTES:
                    raise UsageError(f"{source}: more than {MAX_MEMBERS:,} members or "
                                     f"{MAX_TOTAL_BYTES:,} bytes: refused")
                name = _safe_name(member.name, source)
                if not member.isfile():
                    if member.isdir():
                        continue
                    raise UsageError(f"{source}: {member.name!r} is not a regular file (a "
                                     "link or a device): refused whole")
                if member.size > MAX_MEMBER_BYTES:
                    raise UsageError(f"{source}: {member.name!r} is {member.size:,} bytes, "
                                     f"over {MAX_MEMBER_BYTES:,}: refused")
                target = into / name
                target.parent.mkdir(parents=True, exist_ok=True)
                handle = tar.extractfile(member)
                assert handle is not None  # a regular file
                target.write_bytes(handle.read(MAX_MEMBER_BYTES + 1))  # later copies win
    except (tarfile.TarError, EOFError) as exc:
        raise UsageError(f"{source}: not a readable tar ({exc})") from exc
    return into


def _safe_name(name: str, source: Path) -> str:
    parts = Path(name).parts
    if not parts or Path(name).is_absolute() or ".." in parts:
        raise UsageError(f"{source}: member {name!r} would land outside the import: refused")
    return Path(*[p for p in parts if p != "."]).as_posix()


def _checked_folder(folder: Path) -> Path:
    count = total = 0
    for base, dirs, files in os.walk(folder):
        for name in [*dirs, *files]:
            path = Path(base) / name
            mode = path.lstat().st_mode
            if stat.S_ISLNK(mode) or not (stat.S_ISDIR(mode) or stat.S_ISREG(mode)):
                raise UsageError(f"{path}: not a regular file or folder (a link or a "
                                 "device): refused whole")
            if stat.S_ISREG(mode):
                size = path.lstat().st_size
                if size > MAX_MEMBER_BYTES:
                    raise UsageError(f"{path} is {size:,} bytes, over {MAX_MEMBER_BYTES:,}: "
                                     "refused")
                count, total = count + 1, total + size
        if count > MAX_MEMBERS or total > MAX_TOTAL_BYTES:
            raise UsageError(f"{folder}: more than {MAX_MEMBERS:,} files or "
                             f"{MAX_TOTAL_BYTES:,} bytes: refused")
    return folder


@contextlib.contextmanager
def _joined(first: Path) -> Iterator[IO[bytes]]:
    """The file, or every part of a split file read as one (NAME.00, NAME.01, ... in
    order, as `split -d` writes them)."""
    match = re.fullmatch(r"(.*)\.(\d\d)", first.name)
    if match is None or match.group(2) != "00":
        with open(first, "rb") as handle:
            yield handle
        return
    parts = []
    for n in range(100):
        part = first.with_name(f"{match.group(1)}.{n:02d}")
        if not part.is_file():
            break
        parts.append(part)
    yield _Chained(parts)


class _Chained:
    """Files read one after another as one stream (what tarfile's stream mode needs)."""

    def __init__(self, paths: list[Path]) -> None:
        self._paths, self._handle = list(paths), None

    def read(self, size: int = -1) -> bytes:
        out = b""
        while self._paths or self._handle:
            if self._handle is None:
                self._handle = open(self._paths.pop(0), "rb")  # noqa: SIM115
            chunk = self._handle.read(-1 if size < 0 else size - len(out))
            out += chunk
            if size >= 0 and len(out) >= size:
                break
            self._handle.close()
            self._handle = None
        return out

    def close(self) -> None:
        if self._handle is not None:
            self._handle.close()

