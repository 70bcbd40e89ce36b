"""Written once: what git history must show of a measured dataset and of the manifest.

A dataset has one version in history from the commit that adds it: renamed (followed), or
merged in from another branch (every side of a merge), it is still that one file; another
version, or a deletion, means it was changed. The manifest only ever gains pins: at every
commit, each parent's pins are among the commit's own. Both are read from the objects
themselves, so no attribute (`-diff`, a merge driver) can hide a change.
"""

import json
from pathlib import Path

from probelab import gitinfo
from probelab.manifest import manifest_path
from probelab.paths import relative

_ZERO = "0" * 40


def rewritten(path: Path) -> list[str]:
    """Why a committed dataset is not as first committed, or []. Silent where the checkout
    has no history, and for a file never committed (a fresh measurement)."""
    rel = relative(path)
    try:
        full = _versions(gitinfo.git("log", "--full-history", "-m", "--raw", "--no-abbrev",
                                     "--format=commit %h", "--", rel), rel, follow=False)
        followed = _versions(gitinfo.git("log", "--follow", "--raw", "--no-abbrev",
                                         "--format=commit %h", "--", rel), rel, follow=True)
        edited = gitinfo.git("diff", "--name-only", "HEAD", "--", rel)
    except (RuntimeError, OSError):
        return []
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


def _versions(log: str, rel: str, follow: bool) -> tuple[set[str], set[str], set[str]]:
    """(blob ids the path took, commits that deleted it, commits that touched it) from a
    `git log --raw` listing. Followed through renames, git guesses a rename from similar
    content, and two measurements of one probe are similar: a "rename" whose source is
    still in that commit is this file's creation, where its history starts."""
    blobs: set[str] = set()
    deleted: set[str] = set()
    commits: set[str] = set()
    commit = ""
    for line in log.splitlines():
        if line.startswith("commit "):
            commit = line.split()[1]
        elif line.startswith(":"):
            meta, *paths = line[1:].split("\t")
            _, _, _, blob, status = meta.split()
            if paths[-1] != rel and not follow:
                continue
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
    found = set()
    for line in text.splitlines():
        entry = json.loads(line)
        found.add((entry["path"], entry["content_sha256"], entry["file_sha256"]))
    return found


def _pins_at(revision: str, rel: str) -> set[tuple[str, str, str]]:
    try:
        return pins_in(gitinfo.git("show", f"{revision}:{rel}"))
    except RuntimeError:
        return set()  # no manifest at that commit yet


def manifest_problems() -> list[str]:
    """Commits (and the working tree) at which the manifest lost or changed a pin that a
    parent had: it is append-only. A merge that keeps both sides' pins (re-chained) is
    fine."""
    rel = relative(manifest_path())
    problems = []
    try:
        log = gitinfo.git("log", "--full-history", "--format=%H %P", "--", rel)
        steps = [(line.split()[0], line.split()[1:]) for line in log.splitlines()]
        if gitinfo.git("diff", "--name-only", "HEAD", "--", rel):
            steps.insert(0, ("", ["HEAD"]))  # "": the working tree
    except (RuntimeError, OSError):
        return []  # no history to read: the chain alone vouches
    for commit, parents in steps:
        try:
            now = pins_in(manifest_path().read_text()) if not commit else _pins_at(commit, rel)
            lost = sum(len(_pins_at(parent, rel) - now) for parent in parents)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            problems.append(f"manifest: unreadable at {commit[:12] or 'the working tree'} "
                            f"({type(exc).__name__})")
            continue
        if lost:
            problems.append(f"manifest: {commit[:12] or 'the working tree'} removed or changed "
                            f"{lost} of its pins; the manifest is only ever appended to")
    return problems
