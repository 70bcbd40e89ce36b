"""Which code produced a dataset.

A sweep records the git blob id of every file that can shape its data (the probes and the
probelab package, as they are on disk when it runs: docs aside), so a check can compare
them with the commit the dataset names. A decode edited in a dirty tree then shows as a
file that differs from its commit, even on a device machine that has no git history and
takes the commit on trust (PROBELAB_GIT_HEAD).
"""

import hashlib
from pathlib import Path

import probelab
from probelab import gitinfo
from probelab.paths import lab_root

SCOPE = ("probes", "probelab")  # lab-relative folders whose files can change what is measured
_IGNORED_SUFFIXES = (".md", ".pyc")


def blob_id(data: bytes) -> str:
    """The id git gives a file with these bytes (`git hash-object`), computed without git."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def _counts(rel: str) -> bool:
    parts = rel.split("/")
    return parts[0] in SCOPE and not rel.endswith(_IGNORED_SUFFIXES) and not any(
        p.startswith(".") or p == "__pycache__" for p in parts)


def snapshot() -> dict[str, str]:
    """{lab-relative path: blob id} of the probes and of the probelab package that runs."""
    package = Path(probelab.__file__).resolve().parent
    found = {}
    for base, prefix in ((lab_root() / "probes", "probes"), (package, "probelab")):
        for path in sorted(base.rglob("*")):
            rel = f"{prefix}/{path.relative_to(base).as_posix()}"
            if path.is_file() and _counts(rel):
                found[rel] = blob_id(path.read_bytes())
    return found


def digest(tree: dict[str, str]) -> str:
    """One id for a recorded tree, for verdicts and reports."""
    return hashlib.sha256("".join(f"{p}\0{b}\n" for p, b in sorted(tree.items())).encode()
                          ).hexdigest()


def committed(commit: str) -> dict[str, str] | None:
    """The same map for `commit`, read from git; None where the commit cannot be read."""
    try:
        listing = gitinfo.git("ls-tree", "-r", "--full-tree", commit, "--", *SCOPE)
    except (RuntimeError, OSError):
        return None
    tree = {}
    for line in listing.splitlines():
        meta, rel = line.split("\t", 1)
        if meta.split()[1] == "blob" and _counts(rel):
            tree[rel] = meta.split()[2]
    return tree


def differences(recorded: dict[str, str], commit: str) -> list[str] | None:
    """The paths whose recorded content is not `commit`'s (None when it cannot be read). A
    lab whose history does not hold the probelab package (it is installed) is compared on
    its probes only."""
    tree = committed(commit)
    if tree is None:
        return None
    scopes = {rel.split("/")[0] for rel in tree}
    return sorted(rel for rel in recorded.keys() | tree.keys()
                  if rel.split("/")[0] in scopes and recorded.get(rel) != tree.get(rel))


def changed_between(older: str, newer: str, folders: list[str]) -> list[str]:
    """Files of `folders` that differ between two commits (what changed in the code)."""
    try:
        out = gitinfo.git("diff", "--name-only", older, newer, "--", *folders)
    except (RuntimeError, OSError):
        return []
    return [rel for rel in out.splitlines() if _counts(rel)]
