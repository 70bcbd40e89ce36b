"""Verdict files: where a verdict is recorded beside its dataset, in what bytes, and which
verdicts may be recorded at all (only those that count)."""

import json
from pathlib import Path

from probelab.notary.rules import Outcome
from probelab.paths import data_dir, lab_root
from probelab.records import Verdict
from probelab.storage import atomic_write_text


def verdict_path(dataset_path: Path, hypothesis_id: str) -> Path:
    return dataset_path.with_name(f"{dataset_path.stem}.{hypothesis_id}.verdict.json")


def render_json(doc: Verdict) -> str:
    return json.dumps(doc, indent=2, sort_keys=True) + "\n"


def recordable(doc: Verdict) -> bool:
    """Whether a verdict may be recorded: a result (CONFIRMED or REFUTED) anywhere, and
    NOT-EVIDENCE beside simulated data only, never in the archive. TAMPERED and POST-HOC
    never are: a verdict file must not claim what does not count."""
    if Outcome(doc["verdict"]).counts:
        return True
    return doc["verdict"] == Outcome.NOT_EVIDENCE and not \
        (lab_root() / doc["dataset"]["path"]).resolve().is_relative_to(data_dir().resolve())


def save_verdict(doc: Verdict, dataset_path: Path) -> Path | None:
    """Save a verdict beside its dataset if it is `recordable`; None where it is not, so that
    nothing that does not count is ever recorded as if it did."""
    if not recordable(doc):
        return None
    path = verdict_path(dataset_path, doc["hypothesis"]["id"])
    atomic_write_text(path, render_json(doc))
    return path
