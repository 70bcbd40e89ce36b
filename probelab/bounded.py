"""Bounded reads of the files a check believes: datasets, the ledger, the manifest, the
retirement list, recorded verdicts, hypothesis files.

Each is opened without blocking (a FIFO would wait for a writer for ever), must then be a
regular file by `fstat` of what was opened (never a path looked at first: it can be swapped
in between), and is read up to a limit, never further, whatever its size says (a link to
/dev/zero has none). JSON read from such files is held to a nesting depth, so a deeply nested
line is one plain error, not a RecursionError from whatever walks it later.
"""

import json
import os
import stat
from pathlib import Path
from typing import Any

MAX_JSON_DEPTH = 64  # the lab's records nest a few levels; provenance the most (32)
# A chained record (the ledger, the manifest, the retirement list) grows a line per seal or
# dataset, a few hundred bytes each: today's largest is 0.25 MB.
MAX_CHAIN_BYTES = 64 << 20
MAX_VERDICT_BYTES = 4 << 20  # a verdict file lists at most a few mismatches per kernel
MAX_DATASET_FILE_BYTES = 256 << 20  # a dataset's file on disk (a new one: 64 MB at most)


class Unreadable(ValueError):
    """Why a file could not be read within its bounds, in words fit for one line."""


class TooLarge(Unreadable):
    """A regular file holding more than it may."""


def read_regular(path: Path, limit: int, follow: bool = True) -> bytes:
    """The bytes of the regular file at `path`, at most `limit` of them (Unreadable beyond:
    nothing more is read). `follow=False` also refuses a link as the last component."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | (0 if follow else os.O_NOFOLLOW)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise Unreadable(_os_reason(path, exc)) from exc
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise Unreadable(f"{path} is not a regular file ({_kind(st.st_mode)})")
        if st.st_size > limit:
            raise TooLarge(f"{path} holds {st.st_size:,} bytes, more than the {limit:,} "
                             "it may")
        chunks, size = [], 0
        # reads sized by what fstat says (os.read allocates what it is asked for), then a
        # block at a time for a file that holds more than it says, up to one past the limit
        while size <= limit and (chunk := os.read(fd, min(
                1 << 24, limit + 1 - size, max(st.st_size + 1 - size, 1 << 16)))):
            chunks.append(chunk)
            size += len(chunk)
    except OSError as exc:
        raise Unreadable(_os_reason(path, exc)) from exc
    finally:
        os.close(fd)
    if size > limit:  # it grew while read
        raise TooLarge(f"{path} grew past the {limit:,} bytes it may while it was read")
    return b"".join(chunks)


def starts_with(path: Path, prefix: bytes) -> bool:
    """Whether `path` is a regular file whose bytes start with `prefix` (never blocking)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        return stat.S_ISREG(os.fstat(fd).st_mode) and os.read(fd, len(prefix)) == prefix
    except OSError:
        return False
    finally:
        os.close(fd)


def _os_reason(path: Path, exc: OSError) -> str:
    return f"cannot read {path}: {exc.strerror or exc}"


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket"), (stat.S_ISLNK, "a link")):
        if test(mode):
            return name
    return "not a plain file"


def nesting(value: object) -> int:
    """How deep lists and dicts nest in `value` (a scalar: 1), found without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        deepest = max(deepest, depth)
        children = item.values() if isinstance(item, dict) else item \
            if isinstance(item, list) else ()
        stack += [(child, depth + 1) for child in children]
    return deepest


def loads(raw: str | bytes, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """JSON `raw`, nesting at most `max_depth` deep; ValueError (a JSONDecodeError where it
    is no JSON) saying what is wrong otherwise."""
    try:
        value = json.loads(raw)
    except RecursionError:  # the decoder's own limit, far past ours
        raise ValueError(f"JSON nested deeper than {max_depth} levels") from None
    except UnicodeDecodeError as exc:
        raise ValueError(f"not UTF-8 text ({exc.reason})") from None
    if nesting(value) > max_depth:
        raise ValueError(f"JSON nested deeper than {max_depth} levels")
    return value
