"""Where the lab lives: probes, preregistrations, data, cache."""

import contextlib
import functools
import os
from collections.abc import Iterable, Iterator
from pathlib import Path

from probelab.errors import UsageError

_MARKERS = ("probes", "preregistrations")


def _is_lab(folder: Path) -> bool:
    return any((folder / m).is_dir() for m in _MARKERS)


_given: tuple[str, ...] = ()  # the paths a command was given (lab_of), absolute


def lab_root() -> Path:
    """$PROBELAB_ROOT, else the nearest folder up from the cwd with probes/ or
    preregistrations/, else (a command given paths, outside any lab: `lab_of`) the one
    holding them. Outside a lab this is a usage error: a command that judges an archive
    must never report on an empty one ("0 checks, all intact"). Found once per (variable,
    cwd, paths) and process: checks ask it thousands of times."""
    return _root(os.environ.get("PROBELAB_ROOT"), os.getcwd(), _given)


@contextlib.contextmanager
def lab_of(paths: Iterable[Path | None]) -> Iterator[None]:
    """Within: where neither $PROBELAB_ROOT nor the cwd is in a lab, the lab is the one that
    holds `paths` (those in no lab aside); paths in two labs are refused."""
    global _given
    before, _given = _given, tuple(os.path.abspath(p) for p in paths if p is not None)
    try:
        yield
    finally:
        _given = before


def _lab_above(path: Path) -> Path | None:
    return next((f for f in (path, *path.parents) if _is_lab(f)), None)


@functools.lru_cache(maxsize=64)
def _root(env: str | None, cwd: str, given: tuple[str, ...]) -> Path:
    if env:
        root = Path(env).resolve()
        if not _is_lab(root):
            raise UsageError(f"PROBELAB_ROOT={env} is not a probelab lab (it has no probes/ "
                             "or preregistrations/)")
        return root
    here = Path(cwd).resolve()
    if found := _lab_above(here):
        return found
    labs = dict.fromkeys(lab for p in given if (lab := _lab_above(Path(p).resolve())))
    if len(labs) > 1:
        raise UsageError(f"the paths given are in {len(labs)} labs ({', '.join(map(str, labs))}):"
                         " a command works in one (cd into it, or set PROBELAB_ROOT)")
    if labs:
        return next(iter(labs))
    raise UsageError(f"not inside a probelab lab: no probes/ or preregistrations/ in {here} "
                     f"or above{', nor above the paths given' if given else ''} (cd into a "
                     "lab, or set PROBELAB_ROOT)")


def probes_dir() -> Path:
    return lab_root() / "probes"


def prereg_dir() -> Path:
    return lab_root() / "preregistrations"


def ledger_path() -> Path:
    return prereg_dir() / "LEDGER.jsonl"


def data_dir() -> Path:
    return lab_root() / "data"


def sim_data_dir() -> Path:
    """Simulated datasets live apart from measurements, so they can never be mistaken for them."""
    return lab_root() / "sim-data"


def cache_dir() -> Path:
    """$PROBELAB_CACHE, else the user's cache folder. Never inside the lab: a cache there
    could be committed or arrive with a pull, its secret with it (probelab.cache)."""
    if env := os.environ.get("PROBELAB_CACHE"):
        folder = Path(env)
        try:
            root = lab_root()
        except UsageError:
            return folder  # no lab here (or its own error comes from whatever needs it)
        if folder.resolve().is_relative_to(root):
            raise UsageError(f"PROBELAB_CACHE={env} is inside the lab at {root}: put the "
                             "cache outside it (or unset PROBELAB_CACHE for ~/.cache/probelab)")
        return folder
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "probelab"


def relative(path: Path) -> str:
    """`path` relative to the lab, as git and the ledger spell it (the folders resolved, the
    file itself not: a link is named where it is); refuses one outside."""
    try:
        return (path.absolute().parent.resolve() / path.name).relative_to(lab_root()).as_posix()
    except ValueError as exc:
        raise UsageError(f"{path} is outside the lab at {lab_root()}") from exc


def shown(path: Path) -> str:
    """Lab-relative where possible (stable across clones), else absolute."""
    try:
        return relative(path)
    except UsageError:
        return str(path.resolve())
