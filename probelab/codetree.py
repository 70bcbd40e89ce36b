"""Which code produced a dataset.

A sweep records the git blob id of every file that can shape its data (the probes and the
probelab package, as they are on disk when it runs: docs aside), so a check can compare
them with the commit the dataset names. A decode edited in a dirty tree then shows as a
file that differs from its commit, even on a device machine that has no git history and
takes the commit on trust (PROBELAB_GIT_HEAD).
"""

import ast
import functools
import hashlib
import os
from pathlib import Path

import probelab
from probelab import gitinfo
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
        listing = gitinfo.git("ls-tree", "-r", "--full-tree", commit, "--", *SCOPE)
    except (RuntimeError, OSError):
        return None
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


# where a sweep enters the core; backends are imported by name, so they are named here
_ENTRIES = ("probelab/sweep.py", "probelab/static.py", "probelab/backends/ops_cuda.py",
            "probelab/backends/ops_hip.py", "probelab/backends/ops_sim.py")


def measuring_code(probe_folder: str) -> list[str]:
    """The lab-relative files that can shape a probe's data: every file of its folder, and
    the probelab modules they and the sweep import (followed statically, in the code as it
    is now). A change elsewhere in probelab (a report's wording) cannot."""
    package = Path(probelab.__file__).resolve().parent
    folder = lab_root() / probe_folder
    found = {f"{probe_folder}/{p.relative_to(folder).as_posix()}" for p in folder.rglob("*")
             if p.is_file() and _counts(f"{probe_folder}/{p.relative_to(folder).as_posix()}")}
    todo = [lab_root() / rel for rel in found if rel.endswith(".py")]
    todo += [package.parent / rel for rel in _ENTRIES]
    seen: set[Path] = set()
    while todo:
        path = todo.pop()
        if path in seen or not path.is_file():
            continue
        seen.add(path)
        if path.is_relative_to(package):
            found.add(f"probelab/{path.relative_to(package).as_posix()}")
        todo += _imported(path, package)
    return sorted(found)


def _imported(path: Path, package: Path) -> list[Path]:
    """The probelab module files `path` imports (absolute imports: the lab uses no others)."""
    try:
        stat = path.stat()
    except OSError:
        return []
    return _imports_of(path, stat.st_mtime_ns, stat.st_size, package)


@functools.cache
def _imports_of(path: Path, mtime_ns: int, size: int, package: Path) -> list[Path]:
    """`_imported`, parsed once per version of the file (a check per hypothesis asks again)."""
    try:
        tree = ast.parse(path.read_bytes())
    except (SyntaxError, ValueError, OSError):
        return []
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names += [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
    files = []
    for name in names:
        parts = name.split(".")
        if parts[0] == "probelab":
            base = package.joinpath(*parts[1:])
            files += [base.with_suffix(".py"), base / "__init__.py"]
    return files


@functools.cache
def changed_between(older: str, newer: str, paths: tuple[str, ...]) -> list[str]:
    """Files among `paths` (folders or files) that differ between two commits."""
    try:
        out = gitinfo.git("diff", "--name-only", older, newer, "--", *paths)
    except (RuntimeError, OSError):
        return []
    return [rel for rel in out.splitlines() if _counts(rel)]
