"""Hash-chained JSON lines, the form of the seal ledger and of the archive's manifest.

Each line is one JSON object with a `seq` (1, 2, ...), the `hash` of the line before as
`prev` (GENESIS for the first) and its own `hash` over everything else. Rewriting,
reordering, duplicating or deleting a line breaks the chain, and `verify` says where.
"""

import hashlib
import json
import os
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from probelab import bounded
from probelab.errors import IntegrityError
from probelab.storage import atomic_write_text

GENESIS = "0" * 64
Forms = Mapping[str, Callable[[object], bool]]  # field -> is the value of the right form


def hex64(value: object) -> bool:
    return isinstance(value, str) and re.fullmatch(r"[0-9a-f]{64}", value) is not None


def text(value: object) -> bool:
    return isinstance(value, str) and 0 < len(value) <= 1000


CHAIN_FORMS: Forms = {"seq": lambda v: type(v) is int, "prev": hex64, "hash": hex64}


def canonical(entry: dict[str, Any]) -> bytes:
    return json.dumps(entry, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()


def entry_hash(entry: dict[str, Any]) -> str:
    return hashlib.sha256(canonical({k: v for k, v in entry.items() if k != "hash"})).hexdigest()


def read(path: Path, forms: Forms, what: str) -> list[dict[str, Any]]:
    """The lines of `path` (none if it does not exist), each with exactly the fields of
    `forms` (the chain's own included), each of its form."""
    if not os.path.lexists(path):
        return []
    try:
        lines = bounded.read_regular(path, bounded.MAX_CHAIN_BYTES).decode().splitlines()
    except (bounded.Unreadable, UnicodeDecodeError) as exc:
        raise IntegrityError(f"{what} {path} unreadable: {exc}") from exc
    entries = []
    for n, line in enumerate(lines, start=1):
        try:
            entry = bounded.loads(line, 3)  # an object of values and lists of them
        except ValueError as exc:
            raise IntegrityError(f"{what} line {n} is not JSON of its form: {exc}") from exc
        if not isinstance(entry, dict) or set(entry) != set(forms):
            raise IntegrityError(f"{what} line {n} does not have the {what}'s fields")
        if bad := next((k for k, ok in forms.items() if not ok(entry[k])), None):
            raise IntegrityError(f"{what} line {n}: field {bad!r} is not of the {what}'s form")
        entries.append(entry)
    return entries


def verify(entries: list[dict[str, Any]], what: str) -> None:
    prev = GENESIS
    for n, entry in enumerate(entries, start=1):
        if entry["seq"] != n:
            raise IntegrityError(f"{what} line {n}: seq {entry['seq']} (lines reordered, "
                                 "deleted or duplicated)")
        if entry["prev"] != prev:
            raise IntegrityError(f"{what} line {n}: chain broken (prev does not name line "
                                 f"{n-1})")
        if entry_hash(entry) != entry["hash"]:
            raise IntegrityError(f"{what} line {n}: content does not match its hash "
                                 "(rewritten)")
        prev = entry["hash"]


def append(path: Path, entries: list[dict[str, Any]], fields: dict[str, Any],
           forms: Forms) -> dict[str, Any]:
    """Append one line after `entries` (the file's verified lines) and return it."""
    return extend(path, entries, [fields], forms)[0]


def extend(path: Path, entries: list[dict[str, Any]], new: list[dict[str, Any]],
           forms: Forms) -> list[dict[str, Any]]:
    """Append one line per item of `new` after `entries` (the file's verified lines), all in
    one atomic write (a reader sees none of them or every one), and return them."""
    made: list[dict[str, Any]] = []
    prev = entries[-1]["hash"] if entries else GENESIS
    for seq, fields in enumerate(new, start=len(entries) + 1):
        entry = dict(fields, seq=seq, prev=prev)
        entry["hash"] = prev = entry_hash(entry)
        if set(entry) != set(forms) or not all(ok(entry[k]) for k, ok in forms.items()):
            raise ValueError(f"entry fields {sorted(entry)} are not of the form {sorted(forms)}")
        made.append(entry)
    old = bounded.read_regular(path, bounded.MAX_CHAIN_BYTES).decode() \
        if os.path.lexists(path) else ""
    atomic_write_text(path, old + "".join(canonical(e).decode() + "\n" for e in made))
    return made
