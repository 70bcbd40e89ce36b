"""Foreign datasets onto this archive: a device run's or a fleet node's measurements copied
into data/ and pinned in this manifest, all or nothing. `probelab import` and the fleet
driver both land datasets through `land`; nothing else appends a dataset made elsewhere.

A source's manifest is a branch of ours: a copy of it with new lines (a device copy that
carried data/MANIFEST.jsonl), or a fresh chain from seq 1 (one that carried none). Either
way the lines whose pin (path, probe, target, content and file hashes) is already here are
skipped, the common prefix among them, and the rest is the branch. Each branch dataset
must be in the source at its path, be the file its pin names (bytes and content hashes, the
content hash holding), sit at data/PROBE/TARGET/NAME.nc of its own probe and target, and be
a measurement (not simulated, nothing in it only a simulation says) made at a commit this
repository has, from a clean tree or one whose code tree it records. Then it must not
collide with the archive: no file or pin at its path, its contents or bytes pinned nowhere
here, no two branch datasets at one path or of one content.

Only then is anything written: each dataset copied into data/ (atomically, never over a
file), then one new line per dataset appended to the manifest in one write, under the
manifest's lock, with the branch line's own fields (its `pinned_at` too: when the machine
that measured it pinned it) and a new seq, prev and hash. A failure on the way removes the
copies already made. A process killed outright (SIGKILL) between the copies and the
manifest's write can leave whole copies without pins: `verify` names them, and a second
import refuses them as present until they are removed.
"""

import contextlib
import hashlib
import os
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from probelab import chain, codetree, dataset, gitinfo, manifest, source, storage
from probelab.errors import CannotWrite, IntegrityError, UsageError
from probelab.notary import words
from probelab.paths import data_dir, lab_root

Step = Callable[[str], None]
PIN_KEYS = ("path", "probe", "target", "content_sha256", "file_sha256", "pinned_at")
_IDENTITY = ("path", "probe", "target", "content_sha256", "file_sha256")


class Refused(IntegrityError):
    """Nothing was imported: one problem per line."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


class Taken(Refused):
    """Refused only because a destination name is taken (a file or a pin is there)."""


@dataclass
class Arrival:
    """A dataset to land: the pin it is to have here, and a private copy of its file."""

    pin: dict[str, Any]  # PIN_KEYS
    staged: Path | None  # None: its source does not hold the file its pin names


@dataclass
class Landed:
    imported: list[dict[str, Any]] = field(default_factory=list)  # the new manifest lines
    already: list[dict[str, Any]] = field(default_factory=list)  # pins already here, as are


@dataclass
class Imported:
    """What `import_source` did (or, dry, would do)."""

    source: str
    landed: Landed
    already: int  # lines of the source's manifest pinned here as they are
    left_out: list[str]  # datasets in the source that its manifest does not pin
    verdicts: int  # verdict files in the source, never imported


def identity(pin: dict[str, Any]) -> tuple[str, ...]:
    """What makes two pins one: everything but when it was pinned and its chain fields."""
    return tuple(pin[k] for k in _IDENTITY)


def arrival(staged: Path, path: str, prov: dict[str, Any]) -> Arrival:
    """A dataset that arrived without a pin of its own (a fleet node's), to land at `path`
    (lab-relative) and be pinned now."""
    return Arrival({"path": path, "probe": prov.get("probe"), "target": prov.get("target"),
                    "content_sha256": prov.get(dataset.CONTENT_KEY),
                    "file_sha256": manifest.file_sha256(staged), "pinned_at": manifest.now()},
                   staged)


def import_source(src: Path, dry_run: bool = False,
                  step: Step = lambda _: None) -> Imported:
    """Land the branch of the source at `src` (a folder, a tar, a split tar's .00 part)."""
    step(f"reading {src}")
    with source.opened(src) as found:
        here = {identity(e) for e in _local()}
        branch = [e for e in found.manifest if identity(e) not in here]
        arrivals = [Arrival({k: e[k] for k in PIN_KEYS}, found.staged(e["path"]))
                    for e in branch]
        landed = land(arrivals, dry_run, step)
        pinned = {e["path"] for e in found.manifest}
    return Imported(found.name, landed, len(found.manifest) - len(branch) + len(landed.already),
                    sorted(found.datasets - pinned), found.verdicts)


def land(arrivals: list[Arrival], dry_run: bool = False,
         step: Step = lambda _: None) -> Landed:
    """Copy the arrivals into data/ and pin them, all or nothing (Refused, one problem a
    line; Taken where a name is taken and nothing else is wrong). Those pinned here as
    they are already are skipped. `dry_run`: every check, nothing written."""
    here = {identity(e) for e in _local()}
    new = [a for a in arrivals if identity(a.pin) not in here]
    problems = [f"{a.pin['path']}: {why}" for n, a in enumerate(new, start=1)
                if (why := _checked(a, n, len(new), step))]
    with _held(dry_run):
        local = _local()
        here = {identity(e) for e in local}
        landed = Landed(already=[a.pin for a in arrivals if identity(a.pin) in here])
        new = [a for a in new if identity(a.pin) not in here]
        taken, clashes = _conflicts(new, local)
        if problems or clashes:
            raise Refused(problems + taken + clashes)
        if taken:
            raise Taken(taken)
        if not dry_run and new:
            landed.imported = _write(new, local, step)
        elif dry_run:
            landed.imported = [a.pin for a in new]
    return landed


def _local() -> list[dict[str, Any]]:
    return manifest.read()  # chain verified: a broken manifest here is an IntegrityError


@contextlib.contextmanager
def _held(dry_run: bool) -> Iterator[None]:
    """The manifest's lock (data/ made first where there is none yet); none for a dry run,
    which writes nothing."""
    if dry_run:
        yield
        return
    made = not data_dir().exists()
    try:
        data_dir().mkdir(parents=True, exist_ok=True)
        with manifest.locked():
            yield
    except OSError as exc:
        raise CannotWrite(f"cannot import into {data_dir()}: {exc.strerror or exc}") from exc
    finally:
        if made:
            with contextlib.suppress(OSError):
                data_dir().rmdir()  # only if nothing came of it


def _checked(a: Arrival, n: int, total: int, step: Step) -> str | None:
    """Why an arrival cannot join the archive as its pin says, or None."""
    pin = a.pin
    step(f"checking {pin['path']} ({n}/{total})")
    if why := manifest.pin_form_problem(pin):
        return why.removeprefix("manifest: ")
    if a.staged is None:
        return "its source's manifest pins it, but the source does not hold the file"
    try:
        ds, content, file_sha = dataset.load_hashed(a.staged)
        prov = dataset.provenance(ds)
    except UsageError as exc:
        return str(exc).replace(str(a.staged), pin["path"])
    if file_sha != pin["file_sha256"]:
        return "its bytes are not the file its pin names (edited after it was pinned?)"
    if content != pin["content_sha256"]:
        return "its contents are not those its pin names"
    if dataset.CONTENT_KEY not in prov:
        return "it records no content hash (an import takes what a sweep of today saves)"
    if why := dataset.tampered(ds, content):
        return why
    if found := dataset.contradictions(prov):
        return "; ".join(found)
    if dataset.simulated(prov):
        return "it is simulated: a model's output never joins the measured archive"
    if misplaced := manifest.misplacement(lab_root() / pin["path"], prov):
        return words.sentence(misplaced)
    return _made_at(prov)


def _made_at(prov: dict[str, Any]) -> str | None:
    """Why the commit and tree a dataset names cannot vouch for it here, or None."""
    head, dirty, tree = prov.get("git_head"), prov.get("git_dirty"), prov.get("code_tree")
    if not isinstance(head, str) or not gitinfo.has_commit(head):
        return (f"it was made at {head!r}, which is no commit this repository has (fetch "
                "that commit, then import again)")
    if not isinstance(dirty, bool):
        return f"it does not say whether its tree was clean (git_dirty {dirty!r})"
    if dirty and not (codetree.valid(tree) and tree):
        return ("it was made in a dirty tree and records no code_tree: the code that ran "
                "cannot be compared with its commit")
    return None


def _conflicts(new: list[Arrival], local: list[dict[str, Any]]) -> tuple[list[str], list[str]]:
    """(destinations taken, other collisions with the archive or within the branch), one
    line each."""
    pinned = {e["path"] for e in local}
    owners = {key: {e[key]: e["path"] for e in local} for key in ("content_sha256",
                                                                 "file_sha256")}
    taken, clashes = [], []
    for a in new:
        path = a.pin["path"]
        dest = lab_root() / path
        if path in pinned:
            taken.append(f"{path}: already pinned here, as another dataset")
        elif os.path.lexists(dest):
            taken.append(f"{path}: a file that no pin names is already there (left by an "
                         "interrupted import? remove it, then import again)")
        elif manifest.archive_relative(dest) is None:
            clashes.append(f"{path}: its place in data/ is reached through a link")
        for key, what in (("content_sha256", "contents"), ("file_sha256", "bytes")):
            if (there := owners[key].get(a.pin[key])) not in (None, path):
                clashes.append(f"{path}: its {what} are already pinned here as {there}: a "
                               "copy is not a replication")
                break
    for key, what in (("path", "path"), ("content_sha256", "content")):
        for value, n in Counter(a.pin[key] for a in new).items():
            paths = list(dict.fromkeys(a.pin["path"] for a in new if a.pin[key] == value))
            if n > 1 and (key == "path" or len(paths) > 1):  # a path pinned twice: said once
                clashes.append(f"{', '.join(paths)}: one {what} pinned {n} times in the "
                               "branch; a dataset is pinned once")
    return taken, clashes


def _write(new: list[Arrival], local: list[dict[str, Any]], step: Step) -> list[dict[str, Any]]:
    """Copy each dataset into data/, then append their pins in one write; on any failure
    remove what was copied (and the folders made for it)."""
    placed: list[Path] = []
    folders: list[Path] = []
    dest = lab_root()
    try:
        for n, a in enumerate(new, start=1):
            dest = lab_root() / a.pin["path"]
            step(f"copying {a.pin['path']} ({n}/{len(new)})")
            folders += [p for p in (dest.parent.parent, dest.parent) if not p.exists()]
            with storage.atomic_path(dest, exclusive=True) as tmp:
                if _copy_hashed(a.staged, tmp) != a.pin["file_sha256"]:
                    raise IntegrityError(f"{a.pin['path']}: changed while it was imported")
            placed.append(dest)
        step(f"pinning {len(new)} datasets in {manifest.relative(manifest.manifest_path())}")
        return chain.extend(manifest.manifest_path(), local, [a.pin for a in new],
                            manifest.FORMS)
    except FileExistsError as exc:
        _remove(placed, folders)
        raise Taken([f"{manifest.relative(dest)}: a file appeared there while importing"]
                    ) from exc
    except BaseException:
        _remove(placed, folders)
        raise


def _copy_hashed(src: Path | None, dest: Path) -> str:
    assert src is not None  # checked before anything is written
    h = hashlib.sha256()
    with open(src, "rb") as inp, open(dest, "wb") as out:
        while block := inp.read(1 << 20):
            h.update(block)
            out.write(block)
    return h.hexdigest()


def _remove(placed: list[Path], folders: list[Path]) -> None:
    for path in placed:
        path.unlink(missing_ok=True)
        with contextlib.suppress(ValueError):
            storage.written.remove(path)
    for folder in reversed(folders):
        with contextlib.suppress(OSError):
            folder.rmdir()

