"""`probelab verify`: re-check every dataset under data/ against every sealed hypothesis
of its probe, and compare with the verdicts recorded beside it.

A refuted hypothesis is a result, not a failure; a hypothesis sealed after a dataset was
taken is POST-HOC for that dataset, also not a failure. Failures are: a broken ledger, a
tampered file, an unreadable or simulated dataset in the archive, and a recorded verdict
that the data no longer reproduce.
"""

import json
from pathlib import Path
from typing import Any

from probelab import dataset, gitinfo
from probelab.check import (
    TAMPERED,
    check,
    kernel_statuses,
    not_applicable,
    render_json,
    save_verdict,
    verdict_path,
    verdict_words,
)
from probelab.errors import HistoryError, IntegrityError, LabError
from probelab.hypothesis import load_hypothesis
from probelab.paths import data_dir, lab_root
from probelab.prereg import ledger_entries, verify_seals

EXPECTED_SUFFIXES = (".nc", ".verdict.json", ".png", ".svg", ".md")


def rewritten(path: Path) -> list[str]:
    """A measured dataset is written once: after the commit that adds it, git must show no
    change to it (committed or not). Silent where the checkout has no history."""
    rel = path.relative_to(lab_root()).as_posix()
    try:
        touching = gitinfo.git("log", "--format=%h", "--", rel).split()  # newest first
        if not touching:
            return []  # never committed (new, or only staged): a fresh measurement
        edited = gitinfo.git("diff", "--name-only", "HEAD", "--", rel)
    except (RuntimeError, OSError):
        return []
    problems = []
    if len(touching) > 1:  # modified, or deleted and added again
        problems.append(f"changed after the commit that added it ({touching[-1]}): commits "
                        f"{', '.join(touching[:-1])}; a measured dataset is written once")
    if edited:
        problems.append("differs from the committed file (edited in the working tree)")
    return problems


def verify_archive(write: bool = False, root: Path | None = None) -> dict[str, Any]:
    root = root or data_dir()
    result: dict[str, Any] = {"seals": [], "checks": [], "problems": [], "notes": []}
    try:
        result["seals"] = verify_seals()
        entries = ledger_entries()
    except IntegrityError as exc:
        what = "history" if isinstance(exc, HistoryError) else "ledger"
        result["problems"].append(f"{what}: {exc}")
        return result
    result["problems"] += [f"seal {s['path']}: {p}" for s in result["seals"] for p in s["problems"]]
    files = sorted(p for p in root.rglob("*") if p.is_file()) if root.exists() else []
    for stray in (p for p in files if not p.name.endswith(EXPECTED_SUFFIXES)):
        result["notes"].append(f"stray file in the archive: {stray.relative_to(lab_root())}")
    for path in (p for p in files if p.suffix == ".nc"):
        rel = path.relative_to(lab_root()).as_posix()
        try:
            ds = dataset.load(path)
            prov = dataset.provenance(ds)
        except LabError as exc:
            result["problems"].append(f"{rel}: {exc}")
            continue
        if why := dataset.tampered(ds):  # before its probe or target are believed
            result["problems"].append(f"{rel}: {why}")
            continue
        if prov.get("simulated", True):
            result["problems"].append(f"{rel}: simulated dataset among measurements")
            continue
        result["problems"] += [f"{rel}: {why}" for why in rewritten(path)]
        for entry in (e for e in entries if e["probe"] == prov.get("probe")):
            try:
                why = not_applicable(load_hypothesis(lab_root() / entry["path"]), ds)
                if why:
                    result["notes"].append(f"{rel} × {entry['hypothesis']}: not applicable, "
                                           f"{why}")
                    continue
                doc = check(lab_root() / entry["path"], path)
            except LabError as exc:
                result["problems"].append(f"{rel} × {entry['hypothesis']}: {exc}")
                continue
            recorded_path = verdict_path(path, entry["hypothesis"])
            recorded = "missing"
            if recorded_path.exists():
                try:
                    old = json.loads(recorded_path.read_text())
                    same = old == json.loads(render_json(doc))
                    recorded = "same" if same else "differs"
                    was = old.get("verdict") if isinstance(old, dict) else None
                except (OSError, UnicodeDecodeError, json.JSONDecodeError):
                    recorded, was = "unreadable", None
            if write and recorded != "same":
                save_verdict(doc, path)
                recorded = "written"
            row = {"dataset": rel, "hypothesis": entry["hypothesis"],
                   "verdict": verdict_words(doc),
                   "recorded": recorded,
                   "kernels": kernel_statuses(doc)}
            result["checks"].append(row)
            if doc["verdict"] == TAMPERED:
                result["problems"].append(f"{rel} × {entry['hypothesis']}: "
                                          + "; ".join(doc["reasons"]))
            if recorded in ("differs", "unreadable"):
                what = (f"recorded verdict {recorded} (it says {was}, the data give "
                        f"{doc['verdict']} now)" if was != doc["verdict"] else
                        f"recorded verdict file differs in its details (the verdict, "
                        f"{was}, is the same; `probelab verify --write` re-records it)")
                result["problems"].append(f"{rel} × {entry['hypothesis']}: {what}")
            elif recorded == "missing":
                result["notes"].append(f"{rel} × {entry['hypothesis']}: no recorded verdict "
                                       "(probelab verify --write records it)")
    return result
