"""`probelab verify`: re-check every dataset under data/ against every sealed hypothesis
of its probe, and compare with the verdicts recorded beside it.

A refuted hypothesis is a result, not a failure; a hypothesis sealed after a dataset was
taken is POST-HOC for that dataset, also not a failure (but never recorded as a verdict).
Failures are: a broken ledger or manifest, a tampered, misplaced, unpinned or missing
dataset, a symbolic link, a simulated dataset in the archive, a recorded verdict that the
data no longer reproduce, and one that does not count or that no check accounts for.
"""

import itertools
import json
import os
from pathlib import Path
from typing import Any

from probelab import codetree, dataset, gitinfo, manifest, written
from probelab.check import (
    CONFIRMED,
    REFUTED,
    TAMPERED,
    Judged,
    check,
    judge,
    kernel_statuses,
    measuring_code,
    not_applicable,
    recordable,
    render_json,
    save_verdict,
    verdict_path,
    verdict_words,
)
from probelab.errors import HistoryError, IntegrityError, LabError
from probelab.hypothesis import load_hypothesis
from probelab.paths import data_dir, lab_root
from probelab.prereg import Record, verify_seals
from probelab.probe import get_probe
from probelab.records import toolchain_name

EXPECTED_SUFFIXES = (".nc", ".verdict.json", ".png", ".svg", ".md")
VERDICT = ".verdict.json"


def archive_files(root: Path) -> tuple[list[Path], list[Path]]:
    """(plain files, symbolic links) under `root`; links are never followed."""
    files, links = [], []
    for folder, dirs, names in os.walk(root):
        base = Path(folder)
        links += [base / d for d in dirs if (base / d).is_symlink()]
        for name in names:
            (links if (base / name).is_symlink() else files).append(base / name)
    return sorted(files), sorted(links)


def verify_archive(write: bool = False, root: Path | None = None) -> dict[str, Any]:
    root = root or data_dir()
    result: dict[str, Any] = {"seals": [], "checks": [], "problems": [], "notes": [],
                              "toolchains": []}
    try:
        record = Record.read()  # read once: every check below shares it
        result["seals"] = verify_seals(record)
    except IntegrityError as exc:
        what = "history" if isinstance(exc, HistoryError) else "ledger"
        result["problems"].append(f"{what}: {exc}")
        return result
    problems, notes = result["problems"], result["notes"]
    problems += [f"seal {s['path']}: {p}" for s in result["seals"] for p in s["problems"]]
    files, links = archive_files(root) if root.exists() else ([], [])
    problems += [f"{rel(link)}: a symbolic link in the archive (to {os.readlink(link)}); a "
                 "dataset is the file itself, kept in data/" for link in links]
    for stray in (p for p in files if not p.name.endswith(EXPECTED_SUFFIXES)
                  and p != manifest.manifest_path()):
        notes.append(f"stray file in the archive: {rel(stray)}")
    if root.is_symlink():
        problems.append(f"{rel(root)} is a symbolic link (to {os.readlink(root)}): the archive "
                        "is the folder itself, in git")
    try:
        pins: list[dict[str, Any]] | None = manifest.read()
    except IntegrityError as exc:
        problems.append(str(exc))
        pins = None  # and each dataset says so
    problems += manifest.duplicates(pins or []) + written.manifest_problems()
    problems += [why for why in map(manifest.pin_form_problem, pins or []) if why]
    problems += _uncommitted_pins()
    problems += [f"{pin['path']}: pinned in the manifest, but the file is gone; a measurement "
                 "stays in the archive, refuted or not" for pin in pins or []
                 if not (lab_root() / pin["path"]).is_file()]
    accounted: set[Path] = set()
    counted: dict[tuple, list[tuple]] = {}  # (probe, target, hypothesis) -> its verdicts
    datasets = [p for p in files if p.suffix == ".nc"]
    changed = written.rewritten_all(datasets)  # one history read for the whole archive
    for path in datasets:
        problems += [f"{rel(path)}: {why}" for why in changed[path]]  # whatever it says
        accounted |= _verify_dataset(path, record, pins, write, result, counted)
    _flips(counted, result)
    result["toolchains"] = across_toolchains(counted)
    notes += [f"{row['probe']} {row['target']} × {row['hypothesis']} (version "
              f"{row['probe_version']}): changes with the "
              "compiler (" + ", ".join(f"{v} under {t}" for t, v in row["verdicts"].items())
              + ")" for row in result["toolchains"] if not row["same"]]
    for stray in (p for p in files if p.name.endswith(VERDICT) and p not in accounted):
        problems.append(f"{rel(stray)}: a recorded verdict that no sealed hypothesis of its "
                        "dataset reproduces (never sealed, not applicable, or its dataset is "
                        "gone): it does not count")
    return result


def _uncommitted_pins() -> list[str]:
    """Pins in the committed manifest whose datasets are not committed with them."""
    try:
        committed = set(gitinfo.git("ls-tree", "-r", "--name-only", "HEAD", "--",
                                    "data").splitlines())
        pinned = written.pins_in(gitinfo.git("show", f"HEAD:{rel(manifest.manifest_path())}"))
    except (RuntimeError, OSError, ValueError, KeyError, TypeError):
        return []  # no history, or no committed manifest yet (a broken one is said elsewhere)
    return [f"{path}: pinned in the committed manifest, but the dataset itself is not "
            "committed (an archive outside git is not one)" for path, _, _ in sorted(pinned)
            if path not in committed]


def rel(path: Path) -> str:
    return path.relative_to(lab_root()).as_posix()


def _flips(counted: dict[tuple, list[tuple]], result: dict[str, Any]) -> None:
    """A sealed verdict that flips between two measurements of one probe version and target
    whose measuring code differs is a problem: the decode was changed after data were seen
    (the manifest keeps the first dataset in view), and a new decode that changes a verdict
    needs a new probe version, or a new hypothesis. With the same code, the device disagreed
    with itself: a note."""
    for (probe, target, hypothesis, toolchain), runs in sorted(counted.items(),
                                                               key=lambda kv: str(kv[0])):
        for (a, verdict_a, head_a, version_a, prov_a), (b, verdict_b, head_b, version_b,
                                                         prov_b) in itertools.combinations(runs, 2):
            if verdict_a == verdict_b or version_a != version_b:
                continue
            flip = (f"{hypothesis}: {verdict_a} on {a} but {verdict_b} on {b} ({probe} "
                    f"version {version_a}, {target}{f', {toolchain}' if toolchain else ''})")
            changed = codetree.changed_between(head_a, head_b, tuple(sorted(
                set(measuring_code(prov_a, head_a)) | set(measuring_code(prov_b, head_b))))
            ) if head_a and head_b else []
            if changed:
                result["problems"].append(
                    f"{flip}, decoded by code that differs in {len(changed)} files "
                    f"({', '.join(changed[:3])}{', ...' if len(changed) > 3 else ''}): a "
                    "decode change that flips a sealed verdict needs a new probe version")
            else:
                result["notes"].append(f"{flip}, with the same measuring code: the device "
                                       "(or its driver) disagrees with itself")


def across_toolchains(counted: dict[tuple, list[tuple]]) -> list[dict[str, Any]]:
    """Each sealed hypothesis of a static probe checked under more than one toolchain for
    one target and one probe version: its verdict on each toolchain's newest dataset of that
    version, and whether they agree (a lowering that changed with the compiler). Versions
    are never mixed: a decode that changed is not a compiler that did."""
    grouped: dict[tuple, dict[str, tuple[str, str]]] = {}
    for (probe, target, hypothesis, toolchain), runs in counted.items():
        if toolchain is None:
            continue
        for _, verdict, _, version, prov in runs:
            slot = grouped.setdefault((probe, target, hypothesis, str(version)), {})
            utc = str(prov.get("utc"))
            if toolchain not in slot or utc > slot[toolchain][0]:
                slot[toolchain] = (utc, verdict)
    return [{"probe": probe, "target": target, "hypothesis": hypothesis,
             "probe_version": version,
             "verdicts": {t: v for t, (_, v) in sorted(slot.items())},
             "same": len({v for _, v in slot.values()}) == 1}
            for (probe, target, hypothesis, version), slot in sorted(grouped.items())
            if len(slot) > 1]


def _retired_too_soon(judged: Judged) -> str | None:
    """Retirement needs a newer probe version: data of the probe's current version must not
    observe what it declares retired."""
    try:
        probe = get_probe(str(judged.prov.get("probe")))
    except LabError:
        return None  # said by the checks against its hypotheses
    retired = set(getattr(probe, "retired", {})) & set(judged.variables)
    if retired and judged.prov.get("probe_version") == probe.version:
        return (f"{probe.id} version {probe.version} declares {sorted(retired)} retired, yet "
                "this dataset of that version observes them: retirement needs a newer version")
    return None


def _verify_dataset(path: Path, record: Record, pins: list[dict[str, Any]] | None, write: bool,
                    result: dict[str, Any], counted: dict[tuple, list[tuple]]) -> set[Path]:
    """Check one dataset against every sealed hypothesis of its probe into `result` (and its
    counted verdicts into `counted`); returns the recorded verdict files it accounts for.
    `pins`: the manifest as read (None where it is broken: each dataset then says so)."""
    problems, notes, name = result["problems"], result["notes"], rel(path)
    try:
        judged = judge(path, history=False, pins=pins)  # history: said for the archive
    except LabError as exc:
        problems.append(f"{name}: {exc}")
        return set()
    if judged.problem:  # before its probe or target are believed
        problems.append(f"{name}: {judged.problem}")
        return set()
    if dataset.simulated(judged.prov):
        problems.append(f"{name}: simulated dataset among measurements")
        return set()
    if why := _retired_too_soon(judged):
        problems.append(f"{name}: {why}")
    accounted = set()
    for entry in (e for e in record.entries if e["probe"] == judged.prov.get("probe")):
        label = f"{name} × {entry['hypothesis']}"
        try:
            why = not_applicable(load_hypothesis(lab_root() / entry["path"]), judged)
            if why:
                notes.append(f"{label}: not applicable, {why}")
                continue
            doc = check(lab_root() / entry["path"], path, judged, record)
        except LabError as exc:
            problems.append(f"{label}: {exc}")
            continue
        recorded_path = verdict_path(path, entry["hypothesis"])
        accounted.add(recorded_path)
        recorded, was = _recorded(recorded_path, doc)
        if write and recorded != "same" and recordable(doc):
            save_verdict(doc, path)
            recorded = "written"
        result["checks"].append({"dataset": name, "hypothesis": entry["hypothesis"],
                                 "verdict": verdict_words(doc), "recorded": recorded,
                                 "kernels": kernel_statuses(doc)})
        if doc["verdict"] == TAMPERED:
            problems.append(f"{label}: " + "; ".join(doc["reasons"]))
        if doc["verdict"] in (CONFIRMED, REFUTED):  # a static dataset: per toolchain too
            key = (judged.prov.get("probe"), judged.prov.get("target"), entry["hypothesis"],
                   toolchain_name(judged.prov))
            counted.setdefault(key, []).append((name, doc["verdict"], judged.prov["git_head"],
                                                judged.prov.get("probe_version"), judged.prov))
        if not recordable(doc):
            if recorded != "missing":
                problems.append(f"{label}: a {doc['verdict']} verdict is recorded, but it "
                                "does not count; a verdict file claims a result")
        elif recorded in ("differs", "unreadable"):
            what = (f"recorded verdict {recorded} (it says {was}, the data give "
                    f"{doc['verdict']} now)" if was != doc["verdict"] else
                    f"recorded verdict file differs in its details (the verdict, "
                    f"{was}, is the same; `probelab verify --write` re-records it)")
            problems.append(f"{label}: {what}")
        elif recorded == "missing":
            notes.append(f"{label}: no recorded verdict (probelab verify --write records it)")
    return accounted


def _recorded(path: Path, doc: dict[str, Any]) -> tuple[str, Any]:
    """How the verdict file at `path` compares with `doc`: (missing | same | differs |
    unreadable, the verdict it records)."""
    if not path.exists():
        return "missing", None
    try:
        old = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return "unreadable", None
    same = old == json.loads(render_json(doc))
    return "same" if same else "differs", old.get("verdict") if isinstance(old, dict) else None
