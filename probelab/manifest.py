"""The archive's manifest: one hash-chained line per measured dataset (data/MANIFEST.jsonl).

A line pins a dataset where the sweep saved it: its lab-relative path, probe and target,
its content hash (dataset.content_sha256) and the sha256 of the file's bytes. A sweep
appends the line as it saves; nothing else ever changes the file, and in git no commit
loses a pin its parent had (probelab.written). So a measured dataset counts only where its
pin says, as the file it was:
- deleted ("file drawer"): its pin has no file;
- copied, as a fake replication or into another probe's or target's folder: the copy has
  no pin of its own, and pinning it too pins one content twice;
- edited, even with its content hash recomputed: the file no longer matches its pin.
"""

import contextlib
import fcntl
import hashlib
import os
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from probelab import bounded, chain
from probelab.errors import CannotWrite
from probelab.notary.rules import Finding, Rule
from probelab.paths import data_dir, relative
from probelab.records import Provenance, toolchain_label, toolchain_name

NAME = "MANIFEST.jsonl"
FORMS: chain.Forms = chain.CHAIN_FORMS | {
    "path": chain.text, "probe": chain.text, "target": chain.text, "pinned_at": chain.text,
    "content_sha256": chain.hex64, "file_sha256": chain.hex64}


def manifest_path() -> Path:
    return data_dir() / NAME


def file_sha256(path: Path) -> str:
    """The sha256 of a dataset file's bytes, read as a dataset is (bounded, a regular file:
    OSError otherwise, as a file that cannot be read)."""
    try:
        return hashlib.sha256(bounded.read_regular(path, bounded.MAX_DATASET_FILE_BYTES)
                              ).hexdigest()
    except bounded.Unreadable as exc:
        raise OSError(str(exc)) from None


def read() -> list[dict[str, Any]]:
    """The manifest's lines, chain verified (IntegrityError where it is broken)."""
    entries = chain.read(manifest_path(), FORMS, "manifest")
    chain.verify(entries, "manifest")
    return entries


@contextlib.contextmanager
def locked() -> Iterator[None]:
    """One appender at a time: racing sweeps (and imports) each add their own lines, none is
    lost. Read the manifest inside, and append to what was read there."""
    fd = os.open(data_dir(), os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def now() -> str:
    """A pin's `pinned_at`: UTC, to the second."""
    return datetime.now(UTC).isoformat(timespec="seconds")


def pin(path: Path, content_sha256: str, probe: str, target: str) -> dict[str, Any]:
    """Append the line that pins the dataset just saved at `path`."""
    try:
        with locked():
            return chain.append(manifest_path(), read(), {
                "path": relative(path), "probe": probe, "target": target,
                "content_sha256": content_sha256, "file_sha256": file_sha256(path),
                "pinned_at": now()}, FORMS)
    except OSError as exc:
        raise CannotWrite(f"cannot pin {path} in {manifest_path()}: {exc.strerror or exc}") \
            from exc


def duplicates(entries: list[dict[str, Any]]) -> list[str]:
    """Pins that name one path, or one content, more than once."""
    problems = []
    for key, what in (("path", "path"), ("content_sha256", "content"),
                      ("file_sha256", "file")):
        for value, n in Counter(e[key] for e in entries).items():
            if n > 1:
                paths = ", ".join(e["path"] for e in entries if e[key] == value)
                problems.append(f"manifest: one {what} pinned {n} times ({paths}); a copy is "
                                "not a replication, and a dataset is pinned once")
    return problems


@dataclass(frozen=True)
class Measured:
    """The pinned datasets of one probe on one target: how many, and when the newest was
    measured (UTC, ISO 8601)."""

    target: str
    count: int
    latest: str


def measured(entries: list[dict[str, Any]]) -> dict[str, list[Measured]]:
    """{probe: its pinned datasets per target, in target order}, from the pins alone (no
    dataset is opened): each measured at the time its name says (TIME[.TOOLCHAIN].nc, as a
    sweep names it), else when it was pinned."""
    times: dict[tuple[str, str], list[str]] = {}
    for entry in entries:
        times.setdefault((entry["probe"], entry["target"]), []).append(measured_at(entry))
    out: dict[str, list[Measured]] = {}
    for (probe, target), seen in sorted(times.items()):
        out.setdefault(probe, []).append(Measured(target, len(seen), max(seen)))
    return out


def measured_at(entry: dict[str, Any]) -> str:
    stem = Path(entry["path"]).name.split(".")[0].split("-")[0]
    try:
        when = datetime.strptime(stem, "%Y%m%dT%H%M%SZ")
    except ValueError:
        try:
            when = datetime.fromisoformat(entry["pinned_at"]).astimezone(UTC)
        except ValueError:
            return entry["pinned_at"]
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def archive_relative(path: Path) -> str | None:
    """`path` relative to the lab if it is a plain file inside data/ (no link anywhere on
    the way, data/ itself included, and no `..`), else None: only such a file can be the
    dataset a pin names."""
    root = data_dir()
    absolute = Path(os.path.abspath(path))
    if root.is_symlink() or not absolute.is_relative_to(root) or absolute != path.resolve():
        return None
    return relative(path)


def pin_form_problem(entry: dict[str, Any]) -> str | None:
    """A pin names data/PROBE/TARGET/NAME.nc of its own probe and target."""
    parts = Path(entry["path"]).parts
    if len(parts) != 4 or parts[0] != "data" or parts[1:3] != (entry["probe"], entry["target"]) \
            or not parts[3].endswith(".nc") or ".." in parts:
        return (f"manifest: the pin of {entry['path']} does not name a dataset of the archive "
                f"(data/{entry['probe']}/{entry['target']}/NAME.nc)")
    return None


def misplacement(path: Path, prov: Provenance) -> Finding | None:
    """A dataset lives at data/PROBE/TARGET/NAME.nc of its own probe and target, and a static
    one is named after its toolchain; None where it does."""
    parts = Path(relative(path)).parts
    if len(parts) != 4 or parts[1:3] != (prov.get("probe"), prov.get("target")) \
            or path.suffix != ".nc":
        return Finding(Rule.MISPLACED, "/".join(parts[1:-1]),
                       f"{prov.get('probe')!r} dataset of {prov.get('target')!r}")
    label, built_by = toolchain_label(path), toolchain_name(prov)
    described = prov.get("toolchain")
    named = isinstance(described, dict) and "name" in described  # since toolchains have names
    if label != built_by and (label is not None or named):
        return Finding(Rule.MISNAMED, path.name, str(built_by))
    return None


def pin_mismatch(path: Path, content: str | None, entries: list[dict[str, Any]],
                 file_sha: str | None = None) -> Finding | None:
    """Why the archive file at `path`, whose contents hash to `content` (None: they cannot
    be read) and, where given, whose bytes as read hash to `file_sha`, is not the dataset
    its pin names, or None."""
    rel = relative(path)
    pins = [e for e in entries if e["path"] == rel]
    if not pins:
        return Finding(Rule.UNPINNED, relative(manifest_path()))
    others = [e["path"] for e in entries if e["content_sha256"] == content and e["path"] != rel]
    if others or len(pins) > 1:
        return Finding(Rule.PINNED_AS_ANOTHER, rel, files=tuple(others))
    if pins[0]["file_sha256"] != (file_sha or file_sha256(path)):
        return Finding(Rule.BYTES_NOT_PINNED)
    if content is not None and pins[0]["content_sha256"] != content:
        return Finding(Rule.CONTENT_NOT_PINNED)
    return None
