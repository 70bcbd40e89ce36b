"""What a toolchain's tools are, not what they call themselves.

A tool's name (clang-22) and its --version line are its own word: a wrapper script named
clang-22 first on $PATH, or a renamed clang-22 that prints "version 23.0.0", says them as
readily as Debian's clang-22. So each tool a dataset was made with is recorded as its real
file (links resolved), the sha256 of its bytes, and the package that installed it where
Debian's dpkg or a Python wheel's RECORD can say, with whether its bytes are still that
package's (`identify`). `doctor` shows this; `verify` flags a tool outside its package
(`package_problems`) and one toolchain name whose tools' bytes differ between datasets
(`conflicts`).
"""

import base64
import csv
import functools
import hashlib
import importlib.metadata
import os
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from probelab.records import ToolRecord

SHORT = 12  # hex digits of a hash shown to a reader


def identify(tool: Path | str) -> ToolRecord:
    """The record of the file `tool` runs (links resolved)."""
    real = os.path.realpath(tool)
    st = os.stat(real)
    return ToolRecord(**_identify(real, st.st_size, st.st_mtime_ns))  # a copy of the cached


def record(tools: Mapping[str, Path | None]) -> dict[str, ToolRecord]:
    """Each named tool's record ({"clang": ..., "llvm-objdump": ...}); one not found (None)
    is left out."""
    return {name: identify(path) for name, path in tools.items() if path is not None}


@functools.cache
def _identify(real: str, size: int, mtime_ns: int) -> ToolRecord:
    """Hashed once per process (a 140 MB libnvrtc takes a second); keyed by size and mtime
    too, so a file replaced in place is hashed again."""
    sha256, md5 = hashlib.sha256(), hashlib.md5()
    with open(real, "rb") as handle:
        while chunk := handle.read(1 << 20):
            sha256.update(chunk)
            md5.update(chunk)
    package, ok = _wheel(real, sha256.digest()) or _dpkg(real, md5.hexdigest())
    return ToolRecord(path=real, sha256=sha256.hexdigest(), package=package, package_ok=ok)


def _wheel(real: str, sha256: bytes) -> tuple[str, bool] | None:
    """(distribution and version, whether the bytes are those its RECORD lists) for a file
    some installed wheel's RECORD lists, else None."""
    for dist in importlib.metadata.distributions():
        base = os.path.realpath(dist.locate_file(""))
        if not real.startswith(base + os.sep):
            continue
        inside = os.path.relpath(real, base)
        for row in csv.reader((dist.read_text("RECORD") or "").splitlines()):
            if len(row) >= 2 and row[0] == inside:
                recorded = base64.urlsafe_b64encode(sha256).decode().rstrip("=")
                return f"{dist.name} {dist.version}", row[1] == f"sha256={recorded}"
    return None


def _dpkg(real: str, md5: str) -> tuple[str | None, bool | None]:
    """(package and version, whether the file's md5 is the package's md5sums line) for a
    file dpkg knows; (None, False) for one dpkg knows no package of; (None, None) where
    there is no dpkg to ask, or the package keeps no md5 of the file."""
    if shutil.which("dpkg-query") is None:
        return None, None
    owner = _query("-S", real)
    package = next((line[:-len(real) - 2] for line in owner.splitlines()
                    if line.endswith(f": {real}") and not line.startswith("diversion ")), None)
    if package is None or ", " in package:  # a file is one package's (a folder is several)
        return None, False
    named = f"{package} {_query('-W', '-f=${Version}', package)}".strip()
    try:
        sums = Path(_query("--control-path", package, "md5sums").strip()).read_text()
    except OSError:
        return named, None
    inside = real.lstrip("/")
    recorded = next((line.split(maxsplit=1)[0] for line in sums.splitlines()
                     if line.split(maxsplit=1)[1:] == [inside]), None)
    return named, None if recorded is None else recorded == md5


def _query(*args: str) -> str:
    try:
        return subprocess.run(["dpkg-query", *args], capture_output=True, text=True,
                              timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return ""


def loaded(library: str) -> Path | None:
    """The file of the shared library named `library...` (libnvrtc.so) that this process
    has loaded: the one that runs, whichever search found it."""
    try:
        maps = Path("/proc/self/maps").read_text()
    except OSError:
        return None
    for fields in (line.split(maxsplit=5) for line in maps.splitlines()):
        if len(fields) == 6 and Path(fields[5]).name.startswith(library):
            return Path(fields[5])
    return None


def shown(tool: ToolRecord) -> str:
    """One line for a reader: the full path, a short hash, and where the file is from."""
    package, ok = tool["package"], tool["package_ok"]
    if package is None:
        where = "not from a package" if ok is False else "no package manager here can say"
    else:
        where = {True: package, False: f"EDITED: not the file {package} installed",
                 None: f"{package} (keeps no hash of it)"}[ok]
    return f"{tool['path']}, sha256 {tool['sha256'][:SHORT]}, {where}"


def rows(toolchain: str, tools: Mapping[str, ToolRecord]) -> list[tuple[str, bool, str]]:
    """`doctor`'s row per tool: what its file is, in full (a tool outside its package: not
    ok)."""
    return [(f"{toolchain} {name}", tool["package_ok"] is not False, shown(tool))
            for name, tool in tools.items()]


def _tools(described: object) -> dict[str, dict[str, Any]]:
    """A provenance toolchain record's tools, as read (none in a dataset from before them)."""
    tools = described.get("tools") if isinstance(described, dict) else None
    if not isinstance(tools, dict):
        return {}
    return {str(k): v for k, v in tools.items() if isinstance(v, dict)}


def package_problems(described: object) -> list[str]:
    """Why a dataset's recorded tools do not back the toolchain it names: a tool whose bytes
    are not its package's, or that no package owns where dpkg could say (a wrapper, a copy,
    a local build: the toolchain's name is then only the tool's word for itself)."""
    tools = _tools(described)
    name = str(described.get("name") or "the toolchain") if tools else ""  # HIP's: no name
    out = []
    for tool, rec in sorted(tools.items()):
        if rec.get("package_ok") is not False:
            continue
        if rec.get("package"):
            out.append(f"{name}'s {tool} ({rec.get('path')}) is not the file "
                       f"{rec['package']} installed (its bytes differ from the package's)")
        else:
            out.append(f"{name}'s {tool} ({rec.get('path')}) is from no package: the name "
                       f"{name} is only what the tool says of itself")
    return out


def conflicts(recorded: Mapping[str, object]) -> tuple[list[str], list[str]]:
    """(problems, notes) over datasets' toolchain records (dataset -> record): a toolchain
    name and release whose same tool has different bytes in different datasets. Where each
    of those files was its package's own, it is one release built twice (another package
    version or architecture): a note. Otherwise the name does not say what built the data:
    a problem."""
    seen: dict[tuple[str, str, str], dict[str, list[tuple[str, dict[str, Any]]]]] = {}
    for dataset, described in sorted(recorded.items()):
        if not isinstance(described, dict) or not described.get("name"):
            continue
        for tool, rec in _tools(described).items():
            key = (str(described["name"]), str(described.get("release", "")), tool)
            seen.setdefault(key, {}).setdefault(str(rec.get("sha256")), []).append((dataset,
                                                                                   rec))
    problems, notes = [], []
    for (name, release, tool), hashes in sorted(seen.items()):
        if len(hashes) < 2:
            continue
        which = "; ".join(
            f"{sha[:SHORT]} ({runs[0][1].get('package') or 'no package'}) in {runs[0][0]}"
            + (f" and {len(runs) - 1} more" if len(runs) > 1 else "")
            for sha, runs in sorted(hashes.items()))
        line = f"{name}{f' {release}' if release else ''}: its {tool} differs between datasets: "
        if all(rec.get("package_ok") is True for runs in hashes.values() for _, rec in runs):
            notes.append(f"{line}{which} (each its package's own file: one release, built "
                         "more than once)")
        else:
            problems.append(f"{line}{which}: one toolchain name, tools that are not the same")
    return problems, notes
