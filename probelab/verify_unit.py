"""One unit of `probelab verify`: a probe's datasets and sealed files, checked together.

A unit is the probe folder of the archive (data/PROBE/) with the ledger entries of that
probe: its datasets are judged (bytes, pin, content), each sealed claim is evaluated once per
grid and scored against every dataset of that grid in one streamed pass
(probelab.check.prescore), then each seal and each (dataset, hypothesis) check is made as
`probelab check` makes it, reading those answers. Units share nothing but the sealed record,
so they run in any order, in other processes or on other machines, with the same result;
`verify` puts them together and judges what spans the archive (flips, toolchains, strays).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from probelab import bounded, dataset
from probelab.check import (
    assess,
    claim_key,
    kernel_statuses,
    not_applicable,
    prescore_all,
    score_key,
    verdict_words,
)
from probelab.errors import LabError
from probelab.hypothesis import Hypothesis, load_hypothesis
from probelab.notary.integrity import Judged, Unreadable, judge
from probelab.notary.problems import Wire, at
from probelab.notary.rules import Finding, Outcome, Rule
from probelab.notary.verdict_files import recordable, render_json, save_verdict, verdict_path
from probelab.paths import lab_root
from probelab.prereg import Record, seal_findings, seal_row
from probelab.probe import get_probe, info, recorded_info
from probelab.records import toolchain_name
from probelab.toolchains import identity


@dataclass(frozen=True)
class Unit:
    """A probe's datasets (lab-relative paths) and the seqs of its ledger entries; `cost`
    orders the work (grid cells x claims: the largest first keeps workers busy)."""

    probe: str
    datasets: tuple[str, ...]
    entries: tuple[int, ...]
    cost: int = 0


def plan(datasets: list[Path], record: Record) -> list[Unit]:
    """One unit per probe folder of the archive and per probe with sealed files, costliest
    first. A dataset's unit is its folder's name: a dataset whose provenance says otherwise
    is misplaced, which its judgement says."""
    folders: dict[str, list[str]] = {}
    for path in datasets:
        name = rel(path)
        folders.setdefault(Path(name).parts[1] if len(Path(name).parts) > 2 else "",
                           []).append(name)
    sealed: dict[str, list[int]] = {}
    for entry in record.entries:
        sealed.setdefault(entry["probe"], []).append(entry["seq"])
    units = []
    for probe in sorted(set(folders) | set(sealed)):
        paths = tuple(sorted(folders.get(probe, ())))
        units.append(Unit(probe, paths, tuple(sealed.get(probe, ())),
                          _cost(paths, len(sealed.get(probe, ())))))
    return sorted(units, key=lambda u: (-u.cost, u.probe))


def _cost(paths: tuple[str, ...], claims: int) -> int:
    """About how much work a unit is: its datasets' bytes on disk (their grids compress
    alike) times its claims, and its claims alone where it has no dataset."""
    size = sum((lab_root() / p).stat().st_size for p in paths if (lab_root() / p).is_file())
    return (size + 1) * (claims + 1)


def rel(path: Path) -> str:
    return path.relative_to(lab_root()).as_posix()


def run_unit(unit: Unit, record: Record, pins: list[dict[str, Any]] | None, write: bool
             ) -> dict[str, Any]:
    """Check a unit: {"seals": its seal rows (each with its problems' wire forms under
    "findings"), "datasets": {path: what verify says of it}} (each: problems in their wire
    form (probelab.notary.problems), notes, checks, counted verdicts, the verdict files it
    accounts for and the sha256 of the bytes it judged). `pins`: the manifest as read (None
    where broken)."""
    entries = [e for e in record.entries if e["seq"] in set(unit.entries)]
    judged: dict[str, Judged | tuple[Finding, ...]] = {}
    for name in unit.datasets:
        try:
            judged[name] = judge(lab_root() / name, history=False, pins=pins)
        except Unreadable as exc:  # named already, as each problem is
            judged[name] = exc.findings
        except LabError as exc:  # history: said for the whole archive
            judged[name] = (Finding(Rule.DATASET_REFUSED, detail=f"{exc}"),)
    _prescore(judged, record)
    datasets = {name: _verify_dataset(name, j, record, write) for name, j in judged.items()}
    for name, (kind, said) in _twins(judged).items():
        datasets[name][kind].append(said)
    return {"seals": [_seal_row(entry, record) for entry in entries], "datasets": datasets}


def _seal_row(entry: dict[str, Any], record: Record) -> dict[str, Any]:
    """A sealed file's row, and each of its problems' wire form under "findings" (which
    `verify` takes out of the row)."""
    found = seal_findings(entry, record)
    return seal_row(entry, record, found) | {
        "findings": [at(entry["path"], f, seal=True).wire() for f in found[0]]}


def _twins(judged: dict[str, Judged | tuple[Finding, ...]]
           ) -> dict[str, tuple[str, str | Wire]]:
    """{dataset: ("problems", a problem's wire form) | ("notes", what is said)} for
    measurements that repeat another of the unit: the same target, values and code
    objects. A run's nonce sets an honest replication apart (a deterministic unit repeats its
    values bit for bit); one that shares its nonce is a copy (a problem); without nonces
    nothing tells them apart (a note: data measured before datasets recorded their run)."""
    groups: dict[tuple[str, str, str], list[str]] = {}
    for name, j in sorted(judged.items()):
        if isinstance(j, Judged) and not j.problem and not dataset.simulated(j.prov):
            code = json.dumps({k: r.get("code_object_sha256") for k, r in
                               j.prov.get("kernels", {}).items() if isinstance(r, dict)},
                              sort_keys=True)
            groups.setdefault((str(j.prov.get("target")), j.summary.values, code),
                              []).append(name)
    said: dict[str, tuple[str, str | Wire]] = {}
    for first, *rest in groups.values():
        seen = {_nonce(judged[first]): first}
        for name in rest:
            nonce = _nonce(judged[name])
            if nonce is not None and nonce in seen:
                said[name] = ("problems", at(name, Finding(Rule.COPY_OF_RUN,
                                                           seen[nonce])).wire())
            elif nonce is None or None in seen:
                which = name if nonce is None else seen[None]
                said[name] = ("notes", f"{name}: the same values and code objects as {first}, "
                              f"and {which} records no run nonce to tell the runs apart "
                              "(measured before datasets recorded their run): a replication "
                              "only as the archive's history says")
            seen.setdefault(nonce, name)
    return said


def _nonce(judged: Judged | tuple[Finding, ...]) -> str | None:
    run = judged.prov.get("run") if isinstance(judged, Judged) else None
    nonce = run.get("nonce") if isinstance(run, dict) else None
    return nonce if isinstance(nonce, str) and nonce else None


def _scorable(judged: dict[str, Judged | tuple[Finding, ...]]) -> list[Judged]:
    return [j for j in judged.values() if isinstance(j, Judged) and not j.problem
            and not dataset.simulated(j.prov)]


def _applicable(judged: Judged, record: Record) -> list[tuple[dict[str, Any], Hypothesis]]:
    """The ledger entries of the dataset's probe whose files load and apply to it."""
    found = []
    for entry in (e for e in record.entries if e["probe"] == judged.prov.get("probe")):
        try:
            h = load_hypothesis(lab_root() / entry["path"])
            if not_applicable(h, judged) is None:
                found.append((entry, h))
        except LabError:
            continue  # said by its check
    return found


def _prescore(judged: dict[str, Judged | tuple[Finding, ...]], record: Record) -> None:
    """Every claim that some dataset of the unit has no answer for yet, evaluated once per
    grid and scored against all of that grid's datasets at once."""
    claims = record.claims
    groups: dict[tuple[str, str], tuple[Hypothesis, list[tuple[Judged, list[str]]]]] = {}
    for j in _scorable(judged):
        kernels = list(j.summary.kernels)
        for _entry, h in _applicable(j, record):
            try:
                if claims.has("scores", score_key(claims, h, j, kernels)):
                    continue
                claim = claim_key(claims, h, j)
            except LabError:
                continue  # said by its check
            groups.setdefault((h.path.as_posix(), claim), (h, []))[1].append((j, kernels))
    prescore_all(claims, list(groups.values()))  # a claim refused: its check says why


def _retired_too_soon(judged: Judged) -> Finding | None:
    """Retirement needs a newer probe version: data of a probe version must not observe what
    that version declares retired. A dataset that records its probe's facts is judged from
    them (the version that made it); one that records none, against today's probe."""
    try:
        facts = recorded_info(judged.prov)
    except LabError as exc:
        return Finding(Rule.PROBE_FACTS_UNREADABLE, detail=f"{exc}")
    if facts is not None:
        version, retired = facts.version, set(facts.retired)
    else:
        try:
            probe = get_probe(str(judged.prov.get("probe")))
        except LabError:
            return None  # said by the checks against its hypotheses
        if judged.prov.get("probe_version") != probe.version:
            return None
        version, retired = probe.version, set(info(probe).retired)
    if retired := retired & set(judged.variables):
        return Finding(Rule.RETIRED_LIVE, f"{judged.prov.get('probe')}", f"{version}",
                       tuple(sorted(retired)))
    return None


def _verify_dataset(name: str, judged: Judged | tuple[Finding, ...], record: Record,
                    write: bool) -> dict[str, Any]:
    """What verify says of one dataset against every sealed hypothesis of its probe (its
    problems in their wire form: probelab.notary.problems)."""
    out: dict[str, Any] = {"problems": [], "notes": [], "checks": [], "counted": [],
                           "accounted": [], "file_sha256": None, "toolchain": None}
    notes = out["notes"]

    def problem(where: str, *findings: Finding) -> None:
        out["problems"].append(at(where, *findings).wire())

    if not isinstance(judged, Judged):
        problem(name, *judged)
        return out
    out["file_sha256"] = judged.read.file_sha256
    if judged.findings:  # before its probe or target are believed
        problem(name, *judged.findings)
        return out
    if dataset.simulated(judged.prov):
        problem(name, Finding(Rule.SIMULATED_IN_ARCHIVE))
        return out
    if found := _retired_too_soon(judged):
        problem(name, found)
    out["toolchain"] = judged.prov.get("toolchain")  # its tools, compared across the archive
    for why in identity.package_problems(out["toolchain"]):
        problem(name, Finding(Rule.TOOL_NOT_PACKAGED, detail=why))
    path = lab_root() / name
    for entry in (e for e in record.entries if e["probe"] == judged.prov.get("probe")):
        label = f"{name} × {entry['hypothesis']}"
        try:
            why = not_applicable(load_hypothesis(lab_root() / entry["path"]), judged)
            if why:
                notes.append(f"{label}: not applicable, {why}")
                continue
            verdict = assess(lab_root() / entry["path"], path, judged, record)
        except LabError as exc:
            problem(label, Finding(Rule.CHECK_REFUSED, detail=f"{exc}"))
            continue
        doc = verdict.doc
        recorded_path = verdict_path(path, entry["hypothesis"])
        out["accounted"].append(rel(recorded_path))
        recorded, was = _recorded(recorded_path, doc)
        if write and recorded != "same" and recordable(doc):
            save_verdict(doc, path)
            recorded = "written"
        out["checks"].append({"dataset": name, "hypothesis": entry["hypothesis"],
                              "outcome": verdict.outcome.value,
                              "verdict": verdict_words(doc), "recorded": recorded,
                              "kernels": kernel_statuses(doc)})
        if verdict.outcome == Outcome.TAMPERED:  # never of the dataset's own: judged above
            problem(label, *verdict.findings)
        if verdict.outcome.counts:  # a static dataset: per toolchain too
            key = (judged.prov.get("probe"), judged.prov.get("target"), entry["hypothesis"],
                   toolchain_name(judged.prov))
            out["counted"].append((key, (name, doc["verdict"], judged.prov["git_head"],
                                         judged.prov.get("probe_version"), judged.prov)))
        if not recordable(doc):
            if recorded != "missing":
                problem(label, Finding(Rule.VERDICT_FILE_NOT_COUNTING, f"{doc['verdict']}"))
        elif recorded == "unreadable":
            problem(label, Finding(Rule.VERDICT_FILE_UNREADABLE, detail=f"{doc['verdict']}"))
        elif recorded == "differs":
            problem(label, Finding(Rule.VERDICT_FILE_DIFFERS, f"{was}", f"{doc['verdict']}")
                    if was != doc["verdict"] else Finding(Rule.VERDICT_FILE_DETAILS, f"{was}"))
        elif recorded == "missing":
            notes.append(f"{label}: no recorded verdict (probelab verify --write records it)")
    return out


def _recorded(path: Path, doc: dict[str, Any]) -> tuple[str, Any]:
    """How the verdict file at `path` compares with `doc`: (missing | same | differs |
    unreadable, the verdict it records)."""
    if not path.exists():
        return "missing", None
    try:
        old = bounded.loads(bounded.read_regular(path, bounded.MAX_VERDICT_BYTES))
    except ValueError:  # unreadable, not JSON, nested too deep
        return "unreadable", None
    same = old == json.loads(render_json(doc))
    return "same" if same else "differs", old.get("verdict") if isinstance(old, dict) else None
