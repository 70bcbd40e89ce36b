"""The git facts a measurement and a seal rest on.

On the device machine the repo arrives without history, so the commit measured from is
passed in as PROBELAB_GIT_HEAD (and PROBELAB_GIT_DIRTY=0/1).

Every query sees the object graph as committed: replace objects (`git replace`, carried by
a mirror clone or a fetch of refs/replace/*) are switched off, and a graft file, which
rewrites ancestry in place, makes `history_problem` refuse to judge order at all.
"""

import contextlib
import functools
import json
import os
import re
import subprocess
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from probelab import bounded
from probelab.errors import UsageError
from probelab.paths import lab_root

# variables that let the environment rewrite history behind git's back
_HISTORY_ENV = ("GIT_GRAFT_FILE", "GIT_REPLACE_REF_BASE")


def _run(args: tuple[str, ...], cwd: Path | None, text: bool,
         stdin: bytes | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in _HISTORY_ENV}
    env["GIT_NO_REPLACE_OBJECTS"] = "1"
    return subprocess.run(["git", "--no-replace-objects", *args], cwd=cwd or lab_root(),
                          capture_output=True, text=text, env=env, input=stdin)


def git(*args: str, cwd: Path | None = None, check: bool = True) -> str:
    out = _run(args, cwd, text=True)
    if check and out.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)} failed: {out.stderr.strip()}")
    return out.stdout.strip()


def git_input(args: tuple[str, ...], stdin: str) -> bytes:
    """`git` with `stdin` as its input (a batch of questions in one process): its output."""
    out = _run(args, None, text=False, stdin=stdin.encode())
    if out.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)} failed: "
                           f"{out.stderr.decode(errors='replace').strip()}")
    return out.stdout


def is_commit_id(text: str) -> bool:
    return re.fullmatch(r"[0-9a-f]{40}", text) is not None


def has_commit(commit: str) -> bool:
    """Whether this repository holds `commit`, a full commit id, as a commit (as committed:
    no replace object stands in for it). False without git."""
    if not is_commit_id(commit):
        return False
    try:
        out = _run(("cat-file", "-t", commit), None, text=True)
    except OSError:
        return False
    return out.returncode == 0 and out.stdout.strip() == "commit"


def head() -> tuple[str | None, bool | None]:
    """(commit, dirty) of the lab's checkout; (None, None) when neither git nor env knows."""
    if env := os.environ.get("PROBELAB_GIT_HEAD"):
        if not is_commit_id(env):
            raise UsageError(f"PROBELAB_GIT_HEAD={env!r} is not a full commit id: pass "
                             "`git rev-parse HEAD`, not a ref name that resolves later")
        return env, os.environ.get("PROBELAB_GIT_DIRTY", "1") != "0"
    try:
        commit = git("rev-parse", "HEAD")
        # the archive is what sweeps write: a sweep of several targets must not call its
        # second dataset dirty because the first was just saved and pinned
        dirty = bool(git("status", "--porcelain", "--untracked-files=no", "--", ".",
                         ":(exclude,top)data"))
    except (RuntimeError, OSError):
        return None, None
    return commit, dirty


def history_problem() -> str | None:
    """Why this checkout's history cannot vouch for the order of seals and measurements
    (a shallow clone, a graft file), or None. No git at all is not a problem here: every
    order check then finds no commit and says so."""
    try:
        if not has_history():
            return None  # every order check says so (NO_HISTORY)
        shallow = git("rev-parse", "--is-shallow-repository") == "true"
        grafts = lab_root() / git("rev-parse", "--git-path", "info/grafts")
    except (RuntimeError, OSError):
        return None
    if shallow:
        return ("this checkout is a shallow clone: the history that orders seals and "
                "measurements is cut off (run `git fetch --unshallow`, then check again)")
    if grafts.is_file() and grafts.stat().st_size:
        return (f"{grafts} rewrites commit ancestry (grafts), so the order of seals and "
                "measurements cannot be shown through it; remove the file")
    return None


NO_HISTORY = ("this copy has no git history of its own (no .git, or an empty one, as a tarball "
              "or the GPU machine's copy has, or it sits inside another repository): the "
              "order of seals and measurements cannot be shown here; check on a full clone")


def has_history() -> bool:
    """Whether the lab is the top of a git checkout with commits to read: not a tarball copy,
    and not a copy inside another repository, whose history is not the lab's."""
    root = lab_root()
    return _has_history(root, (root / ".git").exists())


@functools.cache
def _has_history(root: Path, has_git_dir: bool) -> bool:
    if not has_git_dir:
        return False
    try:
        git("rev-parse", "--verify", "-q", "HEAD", cwd=root)
        top = Path(git("rev-parse", "--show-toplevel", cwd=root)).resolve()
    except (RuntimeError, OSError):
        return False
    return top == root


def is_ancestor(older: str, newer: str) -> bool:
    return _run(("merge-base", "--is-ancestor", older, newer), None, text=False).returncode == 0


def commit_time(commit: str) -> int:
    return int(git("show", "-s", "--format=%ct", commit))


def commits_mentioning(text: str) -> list[str]:
    """Commits reachable from any ref (replace refs aside) whose message contains `text`,
    newest first."""
    out = git("log", "--exclude=refs/replace/*", "--all", "--no-show-signature", "--format=%H",
              "-F", f"--grep={text}", check=False)
    return out.split()


def objects(specs: Iterable[str]) -> dict[str, bytes | None]:
    """The raw bytes of the object each spec names (an id, or `commit:path`), None where
    there is none: one `git cat-file --batch` for them all instead of a `git show` each, and
    the bytes as committed (no textconv or other attribute applies). The batch protocol is
    one spec a line, so a spec that a line would not hold intact is asked on its own."""
    specs = list(dict.fromkeys(specs))
    batch = [s for s in specs if s.strip() == s and "\n" not in s and "\r" not in s]
    found = {spec: _object(spec) for spec in set(specs) - set(batch)}
    if batch:
        found |= _parse_batch(git_input(("cat-file", "--batch"),
                                        "".join(f"{s}\n" for s in batch)), batch)
    return found


def _object(spec: str) -> bytes | None:
    """One spec asked on its own: its object's type, then its raw bytes."""
    kind = _run(("cat-file", "-t", spec), None, text=False)
    if kind.returncode != 0:
        return None
    out = _run(("cat-file", kind.stdout.decode().strip(), spec), None, text=False)
    return out.stdout if out.returncode == 0 else None


def _parse_batch(out: bytes, specs: list[str]) -> dict[str, bytes | None]:
    """`git cat-file --batch` output: per spec, `<id> <type> <size>` and that many bytes, or
    `<spec> missing` (or ambiguous: never ending in a size). Sizes delimit the contents, so
    no content can pass for a header."""
    found: dict[str, bytes | None] = {}
    at = 0
    for spec in specs:
        end = out.find(b"\n", at)
        if end < 0:
            raise RuntimeError("git cat-file --batch: output cut short")
        header, at = out[at:end].split(), end + 1
        if len(header) != 3 or not header[2].isdigit():
            found[spec] = None
            continue
        size = int(header[2])
        found[spec], at = out[at:at + size], at + size + 1
    return found


# "%H %ct %P": a root commit has no parents, and its line ends in the space before them
_LOG_LINE = re.compile(r"([0-9a-f]{40}) ([0-9]+)((?: [0-9a-f]{40})*) ?")


@dataclass
class History:
    """The commits reachable from any ref (replace refs aside), with their parents and commit
    times, read in one `git log`: a run of checks asks the order of many seals and
    measurements. Whatever it does not hold whole (a commit no ref reaches, no history, an
    unexpected listing) is asked of git itself, so every answer is git's."""

    parents: dict[str, tuple[str, ...]] = field(default_factory=dict)
    times: dict[str, int] = field(default_factory=dict)
    ancestors: dict[str, frozenset[str] | None] = field(default_factory=dict, repr=False)

    @classmethod
    def read(cls) -> "History":
        try:
            out = git("log", "--exclude=refs/replace/*", "--all", "--no-show-signature",
                      "--format=%H %ct %P")
        except (RuntimeError, OSError):
            return cls()  # no history (or a broken one)
        history = cls()
        for line in out.splitlines():
            if not (match := _LOG_LINE.fullmatch(line)):
                return cls()
            commit, when, parents = match.groups()
            history.parents[commit], history.times[commit] = tuple(parents.split()), int(when)
        return history

    def is_ancestor(self, older: str, newer: str) -> bool:
        ancestry = self._ancestry(newer)
        return is_ancestor(older, newer) if ancestry is None else older in ancestry

    def commit_time(self, commit: str) -> int:
        return self.times[commit] if commit in self.times else commit_time(commit)

    def _ancestry(self, commit: str) -> frozenset[str] | None:
        """`commit` and every commit it descends from; None unless all of them are listed."""
        if commit not in self.ancestors:
            seen, todo, whole = {commit}, [commit], True
            while todo and whole:
                head = todo.pop()
                whole = head in self.parents
                fresh = [p for p in self.parents.get(head, ()) if p not in seen]
                seen.update(fresh)
                todo += fresh
            self.ancestors[commit] = frozenset(seen) if whole else None
        return self.ancestors[commit]


class Unread(Exception):
    """git could not answer (a commit it lacks, no history): never kept as an answer."""


def texts(value: object) -> bool:
    """A JSON list of strings (a form for `kept`)."""
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def text_map(value: object) -> bool:
    """A JSON object of strings (a form for `kept`)."""
    return isinstance(value, dict) and all(isinstance(v, str) for v in value.values())


def kept(kind: str, compute: Callable[..., Any], *args: Any, module: str,
         form: Callable[[Any], bool]) -> Any:
    """`compute(*args)`, a JSON value that follows from the full commit ids among `args`
    alone (a commit id names its content and history for good), kept on disk under the
    arguments and the code of `module` (the caller's, with what it imports: probelab.cache,
    probelab.depends), so a run that already asked git reads the answer. Asked afresh where
    no argument is a full commit id or one is not, or the value kept is not of the `form`
    `compute` gives, and never kept where `compute` raised Unread."""
    from probelab import cache, depends

    commits = [a for a in args if isinstance(a, str) and len(a) == 40]
    if not commits or not all(is_commit_id(c) for c in commits):
        return compute(*args)
    key = cache.cache_key(kind=kind, args=args, code=depends.digest(module))
    if (raw := cache.lookup("git", key)) is not None:
        with contextlib.suppress(ValueError):  # not JSON, or nested too deep: asked afresh
            if form(value := bounded.loads(raw)):
                return value
    value = compute(*args)
    cache.store("git", key, json.dumps(value).encode())
    return value
