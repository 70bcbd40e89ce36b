"""Written once: what git history must show of a measured dataset and of the manifest.

A dataset has one version in history from the commit that adds it: renamed (followed), or
merged in from another branch (every side of a merge), it is still that one file; another
version, or a deletion, means it was changed. The manifest only ever gains pins: at every
commit, each parent's pins are among the commit's own. Both are read from the objects
themselves, so no attribute (`-diff`, a merge driver) can hide a change.
"""

import functools
from pathlib import Path
from typing import NamedTuple

from probelab import bounded, gitinfo
from probelab.manifest import manifest_path
from probelab.paths import relative

_ZERO = "0" * 40
_HEADER = "commit %h %H %P"  # abbreviated (as messages name it), full id, parents


class Change(NamedTuple):
    """One line of a `git log --raw --format=_HEADER` listing."""

    commit: str
    full: str
    parents: tuple[str, ...]
    status: str
    blob: str
    paths: list[str]


def _changes(log: str) -> list[Change]:
    """The changes of a listing, in order."""
    changes, header = [], ["", ""]
    for line in log.splitlines():
        if line.startswith("commit "):
            header = line.split()[1:]
        elif line.startswith(":"):
            meta, *paths = line[1:].split("\t")
            _, _, _, blob, status = meta.split()
            changes.append(Change(header[0], header[1], tuple(header[2:]), status, blob,
                                  [_unquoted(p) for p in paths]))
    return changes


_ESCAPES = {"a": 7, "b": 8, "t": 9, "n": 10, "v": 11, "f": 12, "r": 13, '"': 34, "\\": 92}


def _unquoted(name: str) -> str:
    """A path as it is, from git's listing: git C-quotes a path that holds a quote, a
    backslash, a control character or (core.quotePath) any byte outside ASCII, as in
    `"data/\\303\\251.nc"`; a quoted name must still be found as its dataset's."""
    if not (len(name) >= 2 and name[0] == name[-1] == '"'):
        return name
    body, out, i = name[1:-1], bytearray(), 0
    while i < len(body):
        if body[i] != "\\":
            out += body[i].encode()
            i += 1
        elif body[i + 1] in "01234567":
            out.append(int(body[i + 1:i + 4], 8))
            i += 4
        else:
            out.append(_ESCAPES[body[i + 1]])
            i += 2
    return out.decode("utf-8", "surrogateescape")


def _by_path(log: str) -> dict[str, list[Change]]:
    """A listing's changes by the path they leave (renames are off: one path a line)."""
    found: dict[str, list[Change]] = {}
    for change in _changes(log):
        found.setdefault(change.paths[-1], []).append(change)
    return found


def rewritten(path: Path) -> list[str]:
    """Why a committed dataset is not as first committed, or []. Silent where the checkout
    has no history, and for a file never committed (a fresh measurement)."""
    return rewritten_all([path])[path]


def rewritten_all(paths: list[Path]) -> dict[Path, list[str]]:
    """`rewritten` of each dataset, from one log and one diff of their folders (not one of
    each per file, every one reading the whole history), and each file's own log through
    renames only where it may have been renamed (`_may_be_renamed`)."""
    rels = {path: relative(path) for path in paths}
    if not rels:
        return {}
    folders = sorted({rel.rpartition("/")[0] or "." for rel in rels.values()})
    try:
        full = _by_path(gitinfo.git("--literal-pathspecs", "log", "--full-history", "-m",
                                    "--raw", "--no-abbrev", "--no-renames", f"--format={_HEADER}",
                                    "--", *folders))
        edited = set(gitinfo.git("--literal-pathspecs", "diff", "--name-only", "-z",
                                 "--relative", "--no-renames", "HEAD", "--",
                                 *folders).split("\0"))
        deleting = _deleting({c.full for rel in rels.values() for c in full.get(rel, [])
                              if c.status == "A" and len(c.parents) == 1})
    except (RuntimeError, OSError):
        return {path: [] for path in paths}
    head = gitinfo.git("rev-parse", "--verify", "-q", "HEAD", check=False)
    found = {}
    for path, rel in rels.items():
        own = full.get(rel, [])
        try:
            followed = [Change(*c) for c in gitinfo.kept(
                "followed", _followed, head, rel, module=__name__, form=_changes_form)] \
                if _may_be_renamed(own, deleting) else []
        except gitinfo.Unread:
            found[path] = []  # as for a checkout without history
            continue
        found[path] = _problems(_versions(own, follow=False),
                                _versions(followed, follow=True), rel in edited)
    return found


def _changes_form(value: object) -> bool:
    """Whether a JSON value is a list of Changes as JSON keeps them (tuples as lists)."""
    return isinstance(value, list) and all(
        isinstance(c, list) and len(c) == len(Change._fields)
        and all(isinstance(c[i], str) for i in (0, 1, 3, 4))
        and gitinfo.texts(c[2]) and gitinfo.texts(c[5]) for c in value)


def _followed(head: str, rel: str) -> list[Change]:
    """The file's log from `head` through renames (what `git log --follow` lists)."""
    try:
        return _changes(gitinfo.git("log", "--follow", "--raw", "--no-abbrev",
                                    f"--format={_HEADER}", head, "--", rel))
    except (RuntimeError, OSError) as exc:
        raise gitinfo.Unread from exc


def _may_be_renamed(own: list[Change], deleting: set[str]) -> bool:
    """Whether following the file through renames can show more than its own history. Git
    follows a path to another only where the file appears (is added against a parent) and
    its rename detection pairs it with a source; `_versions` stops at a copy, and at a
    "rename" whose source stays, so only a source deleted in that very commit takes the
    history further, and a merge, whose pairing `git log` does not print, might. A file
    added only in commits of one parent that delete nothing has nothing more to show."""
    return any(c.status == "A" and (len(c.parents) != 1 or c.full in deleting) for c in own)


def _deleting(commits: set[str]) -> set[str]:
    """Those of `commits` (each with one parent) that delete any file, read in one call."""
    if not commits:
        return set()
    out = gitinfo.git_input(("diff-tree", "--stdin", "-r", "--no-renames", "--diff-filter=D",
                             "--name-status"), "".join(f"{c}\n" for c in sorted(commits))
                            ).decode()
    found, commit = set(), ""
    for line in out.splitlines():
        if gitinfo.is_commit_id(line):
            commit = line
        elif line.startswith("D\t"):
            found.add(commit)
    return found


def _problems(full: tuple[set[str], set[str], set[str]],
              followed: tuple[set[str], set[str], set[str]], edited: bool) -> list[str]:
    blobs, deleted, commits = (a | b for a, b in zip(full, followed, strict=True))
    if not commits:
        return []  # never committed (new, or only staged): a fresh measurement
    problems = []
    if len(blobs) > 1 or deleted:
        problems.append(f"changed after the commit that added it: history holds {len(blobs)} "
                        f"versions of it{' and a deletion' if deleted else ''} (commits "
                        f"{', '.join(sorted(commits))}); a measured dataset is written once")
    if edited:
        problems.append("differs from the committed file (edited in the working tree)")
    return problems


def _versions(changes: list[Change], follow: bool) -> tuple[set[str], set[str], set[str]]:
    """(blob ids the path took, commits that deleted it, commits that touched it) from a
    `git log --raw` listing. Followed through renames, git guesses a rename from similar
    content, and two measurements of one probe are similar: a "rename" whose source is
    still in that commit is this file's creation, where its history starts."""
    blobs: set[str] = set()
    deleted: set[str] = set()
    commits: set[str] = set()
    for commit, _, _, status, blob, paths in changes:  # unfollowed: the path's own changes
        commits.add(commit)
        if status == "D":
            deleted.add(commit)
        elif blob != _ZERO:
            blobs.add(blob)
        if follow and status[0] in "RC" and (status[0] == "C" or _exists(commit, paths[0])):
            break
    return blobs, deleted, commits


def _exists(commit: str, rel: str) -> bool:
    try:
        gitinfo.git("cat-file", "-e", f"{commit}:{rel}")
    except RuntimeError:
        return False
    return True


def pins_in(text: str) -> set[tuple[str, str, str]]:
    """(path, content hash, file hash) of every pin in a manifest's text."""
    return {_pin(line) for line in text.splitlines()}


@functools.lru_cache(maxsize=1 << 14)
def _pin(line: str) -> tuple[str, str, str]:
    """One line's pin, parsed once: the append-only manifest's ~1,200 versions repeat the
    same lines (what parsing them again cost was a seventh of a warm verify)."""
    entry = bounded.loads(line, 3)
    return entry["path"], entry["content_sha256"], entry["file_sha256"]


def _pins_at(blob: bytes | None) -> set[tuple[str, str, str]]:
    return set() if blob is None else pins_in(blob.decode().strip())  # None: no manifest yet


def manifest_problems() -> list[str]:
    """Commits (and the working tree) at which the manifest lost or changed a pin that a
    parent had: it is append-only. A merge that keeps both sides' pins (re-chained) is
    fine. Every version is read in one batch."""
    rel = relative(manifest_path())
    problems = []
    try:
        log = gitinfo.git("log", "--full-history", "--format=%H %P", "--", rel)
        steps = [(line.split()[0], line.split()[1:]) for line in log.splitlines()]
        if gitinfo.git("diff", "--name-only", "HEAD", "--", rel):
            steps.insert(0, ("", ["HEAD"]))  # "": the working tree
        blobs = gitinfo.objects(f"{r}:{rel}" for c, parents in steps for r in [c, *parents] if r)
    except (RuntimeError, OSError):
        return []  # no history to read: the chain alone vouches
    for commit, parents in steps:
        try:
            now = _pins_at(bounded.read_regular(manifest_path(), bounded.MAX_CHAIN_BYTES)
                           if not commit else blobs[f"{commit}:{rel}"])
            lost = sum(len(_pins_at(blobs[f"{parent}:{rel}"]) - now) for parent in parents)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            problems.append(f"manifest: unreadable at {commit[:12] or 'the working tree'} "
                            f"({type(exc).__name__})")
            continue
        if lost:
            problems.append(f"manifest: {commit[:12] or 'the working tree'} removed or changed "
                            f"{lost} of its pins; the manifest is only ever appended to")
    return problems
