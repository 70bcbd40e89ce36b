"""The git facts a measurement and a seal rest on.

On the device machine the repo arrives without history, so the commit measured from is
passed in as PROBELAB_GIT_HEAD (and PROBELAB_GIT_DIRTY=0/1).

Every query sees the object graph as committed: replace objects (`git replace`, carried by
a mirror clone or a fetch of refs/replace/*) are switched off, and a graft file, which
rewrites ancestry in place, makes `history_problem` refuse to judge order at all.
"""

import functools
import os
import re
import subprocess
from pathlib import Path

from probelab.errors import UsageError
from probelab.paths import lab_root

# variables that let the environment rewrite history behind git's back
_HISTORY_ENV = ("GIT_GRAFT_FILE", "GIT_REPLACE_REF_BASE")


def _run(args: tuple[str, ...], cwd: Path | None, text: bool) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in _HISTORY_ENV}
    env["GIT_NO_REPLACE_OBJECTS"] = "1"
    return subprocess.run(["git", "--no-replace-objects", *args], cwd=cwd or lab_root(),
                          capture_output=True, text=text, env=env)


def git(*args: str, cwd: Path | None = None, check: bool = True) -> str:
    out = _run(args, cwd, text=True)
    if check and out.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)} failed: {out.stderr.strip()}")
    return out.stdout.strip()


def git_bytes(*args: str) -> bytes:
    out = _run(args, None, text=False)
    if out.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)} failed: {out.stderr.decode(errors='replace')}")
    return out.stdout


def is_commit_id(text: str) -> bool:
    return re.fullmatch(r"[0-9a-f]{40}", text) is not None


def head() -> tuple[str | None, bool | None]:
    """(commit, dirty) of the lab's checkout; (None, None) when neither git nor env knows."""
    if env := os.environ.get("PROBELAB_GIT_HEAD"):
        if not is_commit_id(env):
            raise UsageError(f"PROBELAB_GIT_HEAD={env!r} is not a full commit id: pass "
                             "`git rev-parse HEAD`, not a ref name that resolves later")
        return env, os.environ.get("PROBELAB_GIT_DIRTY", "1") != "0"
    try:
        commit = git("rev-parse", "HEAD")
        dirty = bool(git("status", "--porcelain", "--untracked-files=no"))
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
    out = git("log", "--exclude=refs/replace/*", "--all", "--format=%H", "-F",
              f"--grep={text}", check=False)
    return out.split()
