"""Retired datasets: measurements kept in the archive, but superseded by a re-measurement of
a newer probe version, and no longer checked value by value by a plain `probelab verify`.

A retirement is a hash-chained line of data/RETIRED.jsonl (probelab.chain): the retired
dataset's path, the reason, the datasets that supersede it and when. It is allowed only
where every superseding dataset is pinned, of the same probe and target, of another probe
version and measured later, so it can neither hide a dataset that has no successor nor pass
an older measurement off as the new one. A retired dataset stays pinned and its bytes are
still checked against its pin (and, with the rest of the archive, that git never changed
them); its recorded verdicts do not count, and verify shows beside each one what the
superseding datasets give. `probelab verify --retired` checks retired datasets in full too.
"""

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from probelab import chain, dataset, manifest
from probelab.errors import CannotWrite, UsageError
from probelab.notary import words
from probelab.notary.rules import Finding, Rule
from probelab.paths import data_dir, relative

NAME = "RETIRED.jsonl"
FORMS: chain.Forms = chain.CHAIN_FORMS | {
    "path": chain.text, "reason": chain.text, "retired_at": chain.text,
    "superseded_by": lambda v: isinstance(v, list) and 0 < len(v) <= 64 and all(
        chain.text(p) for p in v)}


def retired_path() -> Path:
    return data_dir() / NAME


def read() -> list[dict[str, Any]]:
    """The retirements, chain verified (IntegrityError where it is broken)."""
    entries = chain.read(retired_path(), FORMS, "retirement list")
    chain.verify(entries, "retirement list")
    return entries


def problems(entries: list[dict[str, Any]], pins: list[dict[str, Any]]) -> list[Finding]:
    """Why a retirement does not hold, each a finding about the retired dataset (its
    subject): the rules of the module docstring, read off the pins and the datasets' own
    provenance."""
    by_path = {pin["path"]: pin for pin in pins}
    out, seen = [], set()
    for entry in entries:
        name = entry["path"]
        if name in seen:
            out.append(Finding(Rule.RETIRED_TWICE, name, NAME))
        seen.add(name)
        out += _faults(name, entry["superseded_by"], by_path)
    return out


def _faults(name: str, successors: list[str], pins: dict[str, dict[str, Any]]
            ) -> list[Finding]:
    if found := pinned_bytes_mismatch(data_dir().parent / name, list(pins.values())):
        return [found]  # its values are not read: its bytes must be the pinned ones
    try:
        old = _measured(name)
    except (UsageError, OSError, KeyError, ValueError) as exc:
        return [Finding(Rule.RETIRED_UNREADABLE, name, f"{exc}")]
    faults = []
    for new in successors:
        if new == name or new not in pins:
            faults.append(Finding(Rule.SUCCESSOR_NOT_PINNED, name, files=(new,)))
            continue
        if (pins[new]["probe"], pins[new]["target"]) != (pins[name]["probe"],
                                                        pins[name]["target"]):
            faults.append(Finding(Rule.SUCCESSOR_ELSEWHERE, name, files=(new,)))
            continue
        try:
            successor = _measured(new)
        except (UsageError, OSError, KeyError, ValueError) as exc:
            faults.append(Finding(Rule.SUCCESSOR_UNREADABLE, name, f"{exc}", (new,)))
            continue
        if successor["version"] == old["version"]:
            faults.append(Finding(Rule.SUCCESSOR_SAME_VERSION, name, old["version"], (new,)))
        elif not successor["utc"] > old["utc"]:
            faults.append(Finding(Rule.SUCCESSOR_EARLIER, name, files=(new,)))
        elif not _newer(successor["version"], old["version"]):
            faults.append(Finding(Rule.SUCCESSOR_OLDER_VERSION, name,
                                  f"{successor['version']} for {old['version']}", (new,)))
    return faults


def _newer(version: str, than: str) -> bool:
    """Whether probe version `version` comes after `than`: versions are whole numbers, and one
    this lab cannot order is not newer (a later measurement of an older version would
    otherwise hide the newer data it contradicts)."""
    return version.isdecimal() and than.isdecimal() and int(version) > int(than)


def _measured(name: str) -> dict[str, str]:
    prov = dataset.stored_provenance(data_dir().parent / name)
    return {"version": str(prov["probe_version"]), "utc": str(prov["utc"])}


def retire(path: Path, superseded_by: list[Path], reason: str) -> dict[str, Any]:
    """Append the retirement of `path` for `superseded_by`, refused (UsageError, nothing
    written) unless it holds by the module's rules."""
    reason = " ".join(reason.split())
    if not reason:
        raise UsageError("a retirement records why: give --reason")
    names = []
    for p in (path, *superseded_by):
        name = manifest.archive_relative(p)
        if name is None:
            raise UsageError(f"{p} is not a dataset of the archive (data/PROBE/TARGET/NAME.nc)")
        names.append(name)
    if not superseded_by:
        raise UsageError("a retirement names the datasets that supersede it: give --by")
    try:
        with manifest.locked():
            entries, pins = read(), manifest.read()
            if any(e["path"] == names[0] for e in entries):
                raise UsageError(f"{names[0]} is already retired")
            if faults := _faults(names[0], names[1:], {p["path"]: p for p in pins}):
                raise UsageError(f"{names[0]}: {words.sentence(faults[0])}")
            return chain.append(retired_path(), entries, {
                "path": names[0], "reason": reason, "superseded_by": names[1:],
                "retired_at": datetime.now(UTC).isoformat(timespec="seconds")}, FORMS)
    except OSError as exc:
        raise CannotWrite(f"cannot record the retirement in {relative(retired_path())}: "
                          f"{exc.strerror or exc}") from exc
    except ValueError as exc:  # a field beyond the chain's forms (e.g. a 2,000-char reason)
        raise UsageError(f"the retirement cannot be recorded: {exc}") from exc


def pinned_bytes_mismatch(path: Path, pins: list[dict[str, Any]]) -> Finding | None:
    """Why a retired dataset's file is not the one its pin names (its values are not read:
    its bytes' sha256 against the pin's), or None."""
    name = relative(path)
    pin = next((p for p in pins if p["path"] == name), None)
    if pin is None:
        return Finding(Rule.RETIRED_UNPINNED, name, NAME)
    if not path.is_file():
        return Finding(Rule.RETIRED_FILE_GONE, name)
    if manifest.file_sha256(path) != pin["file_sha256"]:
        return Finding(Rule.BYTES_NOT_PINNED, name)
    return None
