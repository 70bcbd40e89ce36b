"""The git facts a measurement and a seal rest on.

On the device machine the repo arrives without history, so the commit measured from is
passed in as PROBELAB_GIT_HEAD (and PROBELAB_GIT_DIRTY=0/1).
"""

import os
import re
import subprocess
from pathlib import Path

from probelab.errors import UsageError
from probelab.paths import lab_root


def git(*args: str, cwd: Path | None = None, check: bool = True) -> str:
    out = subprocess.run(["git", *args], cwd=cwd or lab_root(), capture_output=True, text=True)
    if check and out.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)} failed: {out.stderr.strip()}")
    return out.stdout.strip()


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


def is_ancestor(older: str, newer: str) -> bool:
    out = subprocess.run(["git", "merge-base", "--is-ancestor", older, newer], cwd=lab_root(),
                         capture_output=True)
    return out.returncode == 0


def commit_time(commit: str) -> int:
    return int(git("show", "-s", "--format=%ct", commit))


def commits_mentioning(text: str) -> list[str]:
    """Commits reachable from any ref whose message contains `text`, newest first."""
    out = git("log", "--all", "--format=%H", "-F", f"--grep={text}", check=False)
    return out.split()


def git_bytes(*args: str) -> bytes:
    out = subprocess.run(["git", *args], cwd=lab_root(), capture_output=True)
    if out.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)} failed: {out.stderr.decode(errors='replace')}")
    return out.stdout
