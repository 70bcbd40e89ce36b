"""The preregistration ledger: one JSON line per seal, each naming the hash of the one before.

Rewriting, reordering, duplicating or deleting a line breaks the chain, and `verify_chain`
says where. The ledger is only ever appended to, and each append is committed to git.
"""

import hashlib
import json
import re
from datetime import datetime
from pathlib import Path
from typing import Any

from probelab.errors import IntegrityError
from probelab.storage import atomic_write_text

GENESIS = "0" * 64


def _hex64(value: object) -> bool:
    return isinstance(value, str) and re.fullmatch(r"[0-9a-f]{64}", value) is not None


def _text(value: object) -> bool:
    return isinstance(value, str) and 0 < len(value) <= 1000


_FORMS = {"seq": lambda v: type(v) is int, "prev": _hex64, "hash": _hex64,
          "file_sha256": _hex64, "table_sha256": _hex64, "grid_sha256": _hex64,
          "probe": _text, "hypothesis": _text, "path": _text, "sealed_at": _text,
          "parent": lambda v: v is None or _text(v)}
FIELDS = {"seq", "prev", "probe", "hypothesis", "path", "parent", "file_sha256",
          "table_sha256", "grid_sha256", "sealed_at", "hash"}


def canonical(entry: dict[str, Any]) -> bytes:
    return json.dumps(entry, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()


def entry_hash(entry: dict[str, Any]) -> str:
    return hashlib.sha256(canonical({k: v for k, v in entry.items() if k != "hash"})).hexdigest()


def read(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise IntegrityError(f"ledger {path} unreadable: {exc}") from exc
    entries = []
    for n, line in enumerate(lines, start=1):
        try:
            entry = json.loads(line)
        except json.JSONDecodeError as exc:
            raise IntegrityError(f"ledger line {n} is not JSON: {exc}") from exc
        if not isinstance(entry, dict) or set(entry) != FIELDS:
            raise IntegrityError(f"ledger line {n} does not have the ledger's fields")
        if bad := next((k for k, ok in _FORMS.items() if not ok(entry[k])), None):
            raise IntegrityError(f"ledger line {n}: field {bad!r} is not of the ledger's form")
        entries.append(entry)
    return entries


def sealed_time(entry: dict[str, Any]) -> datetime | None:
    """When the entry says it was sealed, only if that is an unambiguous instant (a forged
    line with a naive time must not abort a whole verify: it is that entry's problem)."""
    try:
        when = datetime.fromisoformat(entry["sealed_at"])
    except (TypeError, ValueError):
        return None
    return when if when.tzinfo is not None else None


def verify_chain(entries: list[dict[str, Any]]) -> None:
    prev = GENESIS
    seen_paths: set[str] = set()
    for n, entry in enumerate(entries, start=1):
        if entry["seq"] != n:
            raise IntegrityError(f"ledger line {n}: seq {entry['seq']} (lines reordered, "
                                 "deleted or duplicated)")
        if entry["prev"] != prev:
            raise IntegrityError(f"ledger line {n}: chain broken (prev does not name line {n-1})")
        if entry_hash(entry) != entry["hash"]:
            raise IntegrityError(f"ledger line {n}: content does not match its hash (rewritten)")
        key = f"{entry['probe']}/{entry['hypothesis']}"
        if entry["path"] in seen_paths or key in seen_paths:
            raise IntegrityError(f"ledger line {n}: {entry['path']} sealed twice")
        seen_paths |= {entry["path"], key}
        prev = entry["hash"]


def append(path: Path, fields: dict[str, Any]) -> dict[str, Any]:
    entries = read(path)
    verify_chain(entries)
    entry = dict(fields, seq=len(entries) + 1, prev=entries[-1]["hash"] if entries else GENESIS)
    entry["hash"] = entry_hash(entry)
    if set(entry) != FIELDS:
        raise ValueError(f"ledger entry fields {sorted(entry)} != {sorted(FIELDS)}")
    old = path.read_text(encoding="utf-8") if path.exists() else ""
    atomic_write_text(path, old + canonical(entry).decode() + "\n")
    return entry


def find(entries: list[dict[str, Any]], rel_path: str) -> dict[str, Any] | None:
    return next((e for e in entries if e["path"] == rel_path), None)
