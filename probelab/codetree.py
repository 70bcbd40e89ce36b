"""Which code produced a dataset.

A sweep records the git blob id of every file that can shape its data (the probes and the
probelab package, as they are on disk when it runs: docs aside), so a check can compare
them with the commit the dataset names. A decode edited in a dirty tree then shows as a
file that differs from its commit, even on a device machine that has no git history and
takes the commit on trust (PROBELAB_GIT_HEAD).
"""

import functools
import hashlib
import os
import re
from pathlib import Path

import probelab
from probelab import depends, gitinfo
from probelab.paths import lab_root

SCOPE = ("probes", "probelab")  # lab-relative folders whose files can change what is measured
_IGNORED_SUFFIXES = (".md", ".pyc")  # prose, and bytecode (probes run from their source)


def blob_id(data: bytes) -> str:
    """The id git gives a file with these bytes (`git hash-object`), computed without git."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def _counts(rel: str) -> bool:
    parts = rel.split("/")
    return parts[0] in SCOPE and not rel.endswith(_IGNORED_SUFFIXES) and \
        "__pycache__" not in parts


def snapshot() -> dict[str, str]:
    """{lab-relative path: blob id} of the probes and of the probelab package that runs."""
    package = Path(probelab.__file__).resolve().parent
    found = {}
    for base, prefix in ((lab_root() / "probes", "probes"), (package, "probelab")):
        for path in sorted(base.rglob("*")):
            rel = f"{prefix}/{path.relative_to(base).as_posix()}"
            if path.is_symlink() and _counts(rel):  # git keeps a link as its target's name
                found[rel] = blob_id(os.readlink(path).encode())
            elif path.is_file() and _counts(rel):
                found[rel] = blob_id(path.read_bytes())
    return found


def valid(tree: object) -> bool:
    """Whether a recorded tree has the form `snapshot` gives: {path: blob id}."""
    return isinstance(tree, dict) and all(
        isinstance(p, str) and isinstance(b, str) for p, b in tree.items())


def digest(tree: dict[str, str]) -> str:
    """One id for a recorded tree, for verdicts and reports."""
    return hashlib.sha256("".join(f"{p}\0{b}\n" for p, b in sorted(tree.items())).encode()
                          ).hexdigest()


def committed(commit: str) -> dict[str, str] | None:
    """The same map for `commit`, read from git; None where the commit cannot be read."""
    try:
        return gitinfo.kept("committed", _committed, commit, module=__name__,
                           form=gitinfo.text_map)
    except gitinfo.Unread:
        return None


def _committed(commit: str) -> dict[str, str]:
    try:
        listing = gitinfo.git("ls-tree", "-r", "--full-tree", commit, "--", *SCOPE)
    except (RuntimeError, OSError) as exc:
        raise gitinfo.Unread from exc
    tree = {}
    for line in listing.splitlines():
        meta, rel = line.split("\t", 1)
        if meta.split()[1] == "blob" and _counts(rel):
            tree[rel] = meta.split()[2]
    return tree


def differences(recorded: dict[str, str], tree: dict[str, str] | None) -> list[str] | None:
    """The paths whose recorded content is not that of `tree`, a commit's (`committed`; None
    when it cannot be read, and then None). A lab whose history does not hold the probelab
    package (it is installed) is compared on its probes only."""
    if tree is None:
        return None
    scopes = {rel.split("/")[0] for rel in tree}
    return sorted(rel for rel in recorded.keys() | tree.keys()
                  if rel.split("/")[0] in scopes and recorded.get(rel) != tree.get(rel))


# where a sweep enters the core, besides the backends (every ops_*.py of backends/ or of a
# vendor's folder: they are imported by name, so no import statement leads to them)
_ENTRIES = ("probelab/sweep.py", "probelab/static.py", "probelab/measurement.py")


def measuring_code(probe_folder: str, commit: str | None = None) -> list[str]:
    """The lab-relative files that can shape a probe's data: every file of its folder, and
    the probelab modules they and the sweep import, followed statically in the code as it
    is now or, given `commit`, as that commit has it (read from git's objects, never
    imported: a check needs no probe code). A change elsewhere in probelab (a report's
    wording) cannot shape data."""
    if commit is None:
        return _measuring_code(probe_folder, None)
    try:
        return gitinfo.kept("measuring_code", _measuring_code, probe_folder, commit,
                            module=__name__, form=gitinfo.texts)
    except gitinfo.Unread:
        return []


def _measuring_code(probe_folder: str, commit: str | None) -> list[str]:
    listed = _listing(commit, (probe_folder, "probelab/backends", "probelab/vendors"))
    found = {rel for rel in listed if rel.startswith(f"{probe_folder}/") and _counts(rel)}
    todo = [rel for rel in found if rel.endswith(".py")] + list(_ENTRIES)
    todo += [rel for rel in listed
             if re.fullmatch(r"probelab/(backends|vendors/\w+)/ops_\w+\.py", rel)]
    seen: set[str] = set()
    while todo:
        batch = [rel for rel in dict.fromkeys(todo) if rel not in seen]
        seen |= set(batch)
        todo = []
        for rel, data in _read(commit, batch).items():
            if data is None:
                continue
            if rel.startswith("probelab/"):
                found.add(rel)
            todo += _imports_of(data)
    return sorted(found)


def _listing(commit: str | None, folders: tuple[str, ...]) -> list[str]:
    """The files under lab-relative `folders`, on disk or at `commit` (a folder the commit
    lacks lists nothing; a commit git cannot read is _Unread)."""
    out = []
    for folder in folders:
        if commit is not None:
            try:
                out += gitinfo.git("ls-tree", "-r", "--name-only", commit, "--",
                                   folder).splitlines()
            except (RuntimeError, OSError) as exc:
                raise gitinfo.Unread from exc
            continue
        base = _on_disk(folder)
        out += [f"{folder}/{p.relative_to(base).as_posix()}" for p in base.rglob("*")
                if p.is_file()]
    return out


def _on_disk(rel: str) -> Path:
    """Where a lab-relative path is on disk: probelab's own in the package that runs."""
    if rel == "probelab" or rel.startswith("probelab/"):
        return Path(probelab.__file__).resolve().parent.parent / rel
    return lab_root() / rel


def _read(commit: str | None, rels: list[str]) -> dict[str, bytes | None]:
    """Each lab-relative file's bytes (None where there is none), on disk or at `commit`;
    probelab's own from the package that runs when on disk."""
    if commit is not None:
        try:
            found = gitinfo.objects(f"{commit}:{rel}" for rel in rels)
        except (RuntimeError, OSError) as exc:
            raise gitinfo.Unread from exc
        return {rel: found.get(f"{commit}:{rel}") for rel in rels}
    out = {}
    for rel in rels:
        path = _on_disk(rel)
        try:
            out[rel] = path.read_bytes() if path.is_file() else None
        except OSError:
            out[rel] = None
    return out


@functools.cache
def _imports_of(data: bytes) -> list[str]:
    """The probelab module files a Python file's bytes import, as lab-relative candidates
    (module.py and package/__init__.py, for the module and every package Python runs on
    the way), imports only a type checker runs included."""
    return [f"{module.replace('.', '/')}{tail}" for module in
            sorted(depends.imported(data, type_checking=True))
            for tail in (".py", "/__init__.py")]


@functools.cache
def changed_between(older: str, newer: str, paths: tuple[str, ...]) -> list[str]:
    """Files among `paths` (folders or files; none given: the whole SCOPE) that differ
    between two commits."""
    try:
        return gitinfo.kept("changed_between", _changed_between, older, newer,
                            list(paths or SCOPE), module=__name__, form=gitinfo.texts)
    except gitinfo.Unread:
        return []


def _changed_between(older: str, newer: str, paths: list[str]) -> list[str]:
    folders = tuple(p.rstrip("/") + "/" for p in paths)
    return [rel for rel in _differing(older, newer)
            if rel in paths or rel.startswith(folders)]


@functools.lru_cache(maxsize=256)
def _differing(older: str, newer: str) -> tuple[str, ...]:
    """The files of the scope that differ between two commits, asked of git once per pair
    (a verify asks of one pair for many probes' files)."""
    try:
        out = gitinfo.git("diff", "--name-only", older, newer, "--", *SCOPE)
    except (RuntimeError, OSError) as exc:
        raise gitinfo.Unread from exc
    return tuple(rel for rel in out.splitlines() if _counts(rel))
