"""The preregistration ledger: one hash-chained JSON line per seal (probelab.chain).

The ledger is only ever appended to, and each append is committed to git with the line's
hash in the message, so the seal commits in history vouch for every line.
"""

from datetime import datetime
from pathlib import Path
from typing import Any

from probelab import chain
from probelab.chain import GENESIS, canonical, entry_hash
from probelab.errors import IntegrityError

__all__ = ["FIELDS", "GENESIS", "append", "canonical", "entry_hash", "find", "read",
           "sealed_time", "verify_chain"]
FORMS: chain.Forms = chain.CHAIN_FORMS | {
    "file_sha256": chain.hex64, "table_sha256": chain.hex64, "grid_sha256": chain.hex64,
    "probe": chain.text, "hypothesis": chain.text, "path": chain.text, "sealed_at": chain.text,
    "parent": lambda v: v is None or chain.text(v)}
FIELDS = frozenset(FORMS)


def read(path: Path) -> list[dict[str, Any]]:
    return chain.read(path, FORMS, "ledger")


def verify_chain(entries: list[dict[str, Any]]) -> None:
    chain.verify(entries, "ledger")
    seen: set[str] = set()
    for n, entry in enumerate(entries, start=1):
        key = f"{entry['probe']}/{entry['hypothesis']}"
        if entry["path"] in seen or key in seen:
            raise IntegrityError(f"ledger line {n}: {entry['path']} sealed twice")
        seen |= {entry["path"], key}


def append(path: Path, fields: dict[str, Any]) -> dict[str, Any]:
    entries = read(path)
    verify_chain(entries)
    return chain.append(path, entries, fields, FORMS)


def find(entries: list[dict[str, Any]], rel_path: str) -> dict[str, Any] | None:
    return next((e for e in entries if e["path"] == rel_path), None)


def sealed_time(entry: dict[str, Any]) -> datetime | None:
    """When the entry says it was sealed, only if that is an unambiguous instant (a forged
    line with a naive time must not abort a whole verify: it is that entry's problem)."""
    try:
        when = datetime.fromisoformat(entry["sealed_at"])
    except (TypeError, ValueError):
        return None
    return when if when.tzinfo is not None else None
