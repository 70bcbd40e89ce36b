"""Check a sealed hypothesis against a dataset: integrity and order first, then scores.

Scores are kept apart: the literal reading and each declared translation, per kernel. A
verdict is only counted when the seal is intact and provably older than the measurement
(probelab.notary: the dataset's integrity, the order proof, and the fold of what they find
into the verdict).
"""

import hashlib
import json
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

from probelab import bounded, codetree, dataset, depends, ledger, vocabulary
from probelab.cache import cache_key
from probelab.errors import HistoryError, IntegrityError, LabError, UsageError
from probelab.hypothesis import (
    LITERAL,
    Evaluations,
    Hypothesis,
    evaluate_claim,
    load_hypothesis,
    read_capped,
    retired_observables,
    unobserved,
)
from probelab.notary import freshness
from probelab.notary.integrity import Judged, judge
from probelab.notary.order import changed_since, order_findings
from probelab.notary.rules import Finding, Outcome, Rule
from probelab.notary.verdict_files import save_verdict
from probelab.notary.verdicts import Judgement, fold, judgement
from probelab.paths import lab_root, relative, shown
from probelab.prereg import Record, evaluate
from probelab.probe import get_probe, recorded_info
from probelab.records import Provenance, Verdict
from probelab.scoring import score_claims

SCORE_KEYS = frozenset({"matches", "cells", "first_mismatches"})  # a kernel's, per scoring


def observed_dims(variables: Mapping[str, tuple[str, ...]], prov: Provenance, probe_id: str
                  ) -> dict[str, tuple[str, ...]]:
    """The grid dims of each observable, as the dataset records them: a verdict on data
    that observed it never depends on today's probe. A dataset that records its probe's
    facts (probelab.probe.ProbeInfo) is read from them alone. Only a dataset older than
    that record (or one whose record of its observables its variables contradict) takes
    them from the probe's declaration (in the dataset's own names: a probe in the fragment
    vocabulary declares `a_value` where an archive dataset says `a_reg`;
    probelab.vocabulary), and for an observable the probe has retired, the variable's own
    dims after `kernel`."""
    own = {name: tuple(d for d in dims if d != "kernel") for name, dims in variables.items()}
    facts = recorded_info(prov)
    recorded = ({n: list(d) for n, d in facts.observables.items()} if facts is not None
                else prov.get("observables"))
    fitted = {name: tuple(map(str, value)) for name, value in
              (recorded.items() if isinstance(recorded, dict) else ())
              if isinstance(value, list) and name in own and
              tuple(d for d in value if d != "kernel") == own[name]}
    if facts is not None or (isinstance(recorded, dict) and len(fitted) == len(recorded)):
        return own | fitted
    have = {d for dims in variables.values() for d in dims}
    declared = {name: vocabulary.named_as(tuple(dims), have)
                for name, dims in get_probe(probe_id).observables.items()}
    return own | declared | fitted


def _scored_claim(claims: Evaluations, h: Hypothesis, judged: "Judged", kernels: list[str]
                  ) -> dict[str, Any]:
    """What a claim's tables say against a dataset: the misfit of their shapes, if any, else
    the tables' hash and each kernel's scores (probelab.scoring). Kept on disk under the
    claim's key (the file's expressions, the grid, probelab's code) and the dataset's content
    hash, as computed from its bytes (a corrupt entry is recomputed): a run that already
    scored this claim on these contents (`prescore`, or an earlier run) reads the answer
    instead of evaluating and decoding again."""
    key = score_key(claims, h, judged, kernels)

    def build() -> bytes:
        return prescore(claims, h, [(judged, kernels)])[0]

    if (doc := _scores_doc(claims.cached("scores", key, build), h, kernels)) is None:
        doc = _scores_doc(claims.cached("scores", key, build, fresh=True), h, kernels)
        assert doc is not None, "scoring wrote scores of another form"
    return doc


def _scores_doc(raw: bytes, h: Hypothesis, kernels: list[str]) -> dict[str, Any] | None:
    """Scores as `scoring` writes them (a misfit, or the table hash and every kernel's score
    by every scoring), or None: an answer kept in any other form is made again."""
    try:
        doc = bounded.loads(raw)
    except ValueError:
        return None
    if isinstance(doc, dict) and set(doc) == {"misfit"}:
        return doc if isinstance(doc["misfit"], str) else None
    if not (isinstance(doc, dict) and set(doc) == {"table_sha256", "kernels"}
            and isinstance(doc["table_sha256"], str) and isinstance(doc["kernels"], dict)
            and set(doc["kernels"]) == set(kernels)):
        return None
    for per in doc["kernels"].values():
        if not (isinstance(per, dict) and set(per) == set(h.scorings())):
            return None
        for score in per.values():
            if not (isinstance(score, dict) and set(score) == SCORE_KEYS
                    and all(type(score[k]) is int for k in ("matches", "cells"))
                    and isinstance(score["first_mismatches"], list)):
                return None
    return doc


def score_key(claims: Evaluations, h: Hypothesis, judged: "Judged", kernels: list[str]) -> str:
    """Where a claim's scores on a dataset are kept: the claim's key on the dataset's grid,
    the dataset's content hash (known without opening it: its summary) and the scoring code
    (probelab.scoring and what it imports)."""
    return cache_key(claim=claim_key(claims, h, judged), content=judged.content,
                     kernels=kernels, code=depends.digest("probelab.scoring"))


def claim_key(claims: Evaluations, h: Hypothesis, judged: "Judged") -> str:
    """The claim's key on the dataset's grid, as the dataset records its observables."""
    return claims.key(h, judged.summary.grid, observed_dims(judged.variables, judged.prov,
                                                            h.probe))


def prescore(claims: Evaluations, h: Hypothesis, group: list[tuple["Judged", list[str]]]
             ) -> list[bytes]:
    """Score a claim on datasets of one grid in one streamed pass over its tables (one
    evaluation, however many datasets), keeping each answer where `_scored_claim` looks and
    the table hash where a seal check looks; returns the answers in `group`'s order."""
    (answers,) = prescore_all(claims, [(h, group)])
    if isinstance(answers, LabError):
        raise answers
    return answers


def prescore_all(claims: Evaluations,
                 items: list[tuple[Hypothesis, list[tuple["Judged", list[str]]]]]
                 ) -> list[list[bytes] | LabError]:
    """`prescore` of each (claim, group), the claims walked side by side (scoring.score_claims:
    a large dataset's values are read once for all the claims on it, not once each); a claim
    that is refused gives its error in its place, and keeps nothing."""
    out: list[list[bytes] | LabError] = []
    walked, asked = [], []
    for h, group in items:
        first = group[0][0]
        try:
            dims = observed_dims(first.variables, first.prov, h.probe)
        except LabError as exc:
            out.append(exc)
            continue
        out.append([])
        asked.append((len(out) - 1, h, group))
        walked.append((h, first.grid, dims, [(j.ds, k) for j, k in group]))
    for (at, h, group), scored in zip(asked, score_claims(walked), strict=True):
        if isinstance(scored, LabError):
            out[at] = scored
            continue
        digest, docs = scored
        answers = [json.dumps(doc).encode() for doc in docs]
        try:
            claims.remember(claim_key(claims, h, group[0][0]), digest)
            for (judged, kernels), answer in zip(group, answers, strict=True):
                claims.cached("scores", score_key(claims, h, judged, kernels),
                              lambda a=answer: a)
        except LabError as exc:
            out[at] = exc
            continue
        out[at] = answers
    return out


def not_applicable(h: Hypothesis, ds: "xr.Dataset | Judged") -> str | None:
    """Why a hypothesis says nothing about a dataset (another target, absent kernels, or
    observables the probe no longer has: sealed for an earlier version of it). `ds`: the
    dataset, or a judged one (read off its summary: nothing is opened). A dataset that
    records its probe's facts is judged from them alone; one that records none (the
    archive's older datasets) from today's probe too, which is then imported."""
    if isinstance(ds, Judged):
        prov, variables, kernels = ds.prov, set(ds.variables), set(ds.summary.kernels)
    else:
        prov, variables = dataset.provenance(ds), set(map(str, ds.data_vars))
        kernels = {str(k) for k in ds.kernel.values}
    facts = recorded_info(prov)  # refuses a record that retires a live observable
    # today's probe, for a dataset without facts (also refuses a probe that retires a live
    # observable)
    retired = retired_observables(h) if facts is None else \
        sorted(set(h.predict) & set(facts.retired))
    if isinstance(prov.get("retired"), dict):  # and as the dataset's own probe version said
        retired = sorted(set(retired) | (set(h.predict) & set(prov["retired"])))
    if absent := sorted(set(h.predict) - variables):
        if retired:
            return (f"it predicts {retired}, which {h.probe} no longer observes, and this "
                    "dataset does not have them (sealed for an earlier version of the probe)")
        observables = get_probe(h.probe).observables if facts is None else facts.observables
        if why := unobserved(h, observables):
            return f"it {why}"
        return f"the dataset has no {absent} (measured before the probe observed them)"
    target = str(prov.get("target"))
    if not h.about_target(target):
        return f"it is about targets {list(h.targets or ())}, the dataset is {target}"
    missing = set(h.kernels or ()) - kernels
    if missing:
        return f"the dataset has no kernel {sorted(missing)}"
    return None


def _dataset_doc(judged: "Judged") -> dict[str, Any]:
    prov = judged.prov
    tree = prov.get("code_tree")
    return {"path": shown(judged.path), "device": prov.get("device"),
            "target": prov.get("target"), "git_head": prov.get("git_head"),
            "utc": prov.get("utc"), "simulated": dataset.simulated(prov),
            "grid_sha256": judged.summary.grid_sha256,
            "code_sha256": codetree.digest(tree) if codetree.valid(tree) else None}


def _hypothesis_doc(h: Hypothesis, path: Path, kernels: list[str]) -> dict[str, Any]:
    return {"id": h.id, "probe": h.probe, "path": relative(path), "claim": h.claim.strip(),
            "coordinates": h.coordinates, "kernels": list(h.kernels or kernels),
            "file_sha256": h.sha256}


def _edited_seal(hypothesis_path: Path, judged: Judged,
                 entries: list[dict[str, Any]]) -> Judgement | None:
    """A sealed file whose bytes no longer hash to its ledger entry is TAMPERED before it is
    parsed: re-encoded or corrupted, it must not pass for a mere usage error."""
    try:
        entry = ledger.find(entries, relative(hypothesis_path))
    except LabError:
        return None  # outside the lab: reported on the normal path
    if entry is None or not hypothesis_path.exists():
        return None  # reported on the normal path
    try:  # sealing refuses files over the limit, so a sealed file that grew past it was edited
        raw = read_capped(hypothesis_path)
        digest = "(not read: over the size limit)" if raw is None else \
            hashlib.sha256(raw).hexdigest()
    except UsageError:
        digest = "(not read: no longer a regular file)"
    if digest == entry["file_sha256"]:
        return None
    return judgement({"hypothesis": {"id": entry["hypothesis"], "probe": entry["probe"],
                                     "path": entry["path"], "claim": "(not read: the file no "
                                     "longer hashes to its seal)", "coordinates": None,
                                     "kernels": [], "file_sha256": digest,
                                     "ledger_hash": entry["hash"],
                                     "sealed_at": entry["sealed_at"]},
                      "dataset": _dataset_doc(judged)}, [Finding(Rule.SEAL_EDITED)])


def _sealed_entry(path: Path, h: Hypothesis, entries: list[dict[str, Any]]) -> dict[str, Any]:
    """The ledger entry of a sealed file. A file never sealed has no verdict to give: its
    own errors are said first, as seal would say them (an expression that does not compile,
    an observable or kernel its probe does not have), then that it is not sealed."""
    if entry := ledger.find(entries, relative(path)):
        return entry
    evaluate(h)
    raise UsageError(f"{path} is not sealed: run `probelab prereg seal {path}`")


def check(hypothesis_path: Path, dataset_path: Path, judged: Judged | None = None,
          record: Record | None = None) -> Verdict:
    """The verdict document of a sealed hypothesis on a dataset (`assess`)."""
    return assess(hypothesis_path, dataset_path, judged, record).doc


def assess(hypothesis_path: Path, dataset_path: Path, judged: Judged | None = None,
           record: Record | None = None) -> Judgement:
    """The judgement of a sealed hypothesis on a dataset (a file never sealed: UsageError,
    after its own errors). `judged` and `record` are the dataset and the sealed record as
    already read, for a run of checks (otherwise read here)."""
    try:
        record, ledger_error = record or Record.read(), None
    except HistoryError:
        raise  # nothing can be judged in this checkout: say so once
    except IntegrityError as exc:
        record, ledger_error = None, exc
    entries = record.entries if record else []
    judged = judged or judge(dataset_path)
    if edited := _edited_seal(hypothesis_path, judged, entries):
        return edited
    h = load_hypothesis(hypothesis_path)
    entry = _sealed_entry(hypothesis_path, h, entries) if record else None
    prov = judged.prov
    if judged.findings:  # before any provenance field is believed
        return judgement({"hypothesis": _hypothesis_doc(h, hypothesis_path, []),
                          "dataset": _dataset_doc(judged)}, judged.findings)
    if prov.get("probe") != h.probe:
        raise UsageError(f"{dataset_path} is a {prov.get('probe')!r} dataset; "
                         f"{hypothesis_path} is about {h.probe!r}")
    kernels = list(judged.summary.kernels)
    if why := not_applicable(h, judged):  # the dataset's facts (older ones: today's probe)
        raise UsageError(f"{h.id} does not apply to {dataset_path}: {why}")
    doc: Verdict = {"hypothesis": _hypothesis_doc(h, hypothesis_path, kernels),
                    "dataset": _dataset_doc(judged)}
    if record is None:
        return judgement(doc, [Finding(Rule.LEDGER_BROKEN, detail=f"{ledger_error}")])
    assert entry is not None  # an unsealed file was refused above
    doc["hypothesis"] |= {"ledger_hash": entry["hash"], "sealed_at": entry["sealed_at"]}
    grid_sealed = doc["dataset"]["grid_sha256"] == entry["grid_sha256"]
    doc["dataset"]["grid_matches_seal"] = grid_sealed
    scored = _scored_claim(record.claims, h, judged, kernels)
    if misfit := scored.get("misfit"):
        return judgement(doc, [Finding(Rule.MISFIT, detail=misfit)])
    if grid_sealed and scored["table_sha256"] != entry["table_sha256"]:
        return judgement(doc, [Finding(Rule.TABLE_CHANGED)])
    found, commit = order_findings(entry, judged, record)
    doc["hypothesis"]["seal_commit"] = commit
    doc["hypothesis"]["code_changed_since_seal"] = changed_since(commit, judged, record)
    doc["kernels"] = {}
    for kernel in kernels:
        scores = scored["kernels"][kernel]
        via = next((s for s in h.scorings()
                    if scores[s]["matches"] == scores[s]["cells"] > 0), None)
        doc["kernels"][kernel] = {"in_claim": kernel in doc["hypothesis"]["kernels"],
                                  "status": Outcome.CONFIRMED if via else Outcome.REFUTED,
                                  "via": via, "scores": scores}
    claimed = [doc["kernels"][k] for k in doc["hypothesis"]["kernels"]]
    # nothing claimed, or nothing to score, confirms nothing
    by_scores = Outcome.CONFIRMED if claimed and all(
        k["status"] == Outcome.CONFIRMED for k in claimed) else Outcome.REFUTED
    if doc["dataset"]["simulated"]:  # whatever else holds: its order findings are noted
        return judgement(doc, [Finding(Rule.SIMULATED, detail=fold(found, by_scores)), *found])
    if found:
        return judgement(doc, found)
    if by_scores == Outcome.REFUTED:
        doc["separation"] = separation(claimed)
    elif h.fitted_from:  # a law read from data confirms only on a stimulus it has not seen
        per_scoring = claimed_per_case(h, judged)
        confirmed_on = None if per_scoring is None else {
            k: per_scoring[doc["kernels"][k]["via"]] for k in doc["hypothesis"]["kernels"]}
        seen, doc["fresh"] = freshness.judged_fresh(
            h, judged, confirmed_on, lambda other: not order_findings(entry, other, record)[0])
        if seen:
            return judgement(doc, seen)
    notes = [Finding(Rule.NO_CELLS, k) for k, v in doc["kernels"].items()
             if v["scores"][LITERAL]["cells"] == 0]
    if blind := blind_partners(prov, h.id):
        doc["blind_to"] = blind
        notes.append(Finding(Rule.BLIND, detail=", ".join(blind)))
    if thin := thin_partners(prov, h.id):
        doc["thin_to"] = thin
        notes.append(Finding(Rule.THIN, detail=", ".join(thin)))
    return judgement(doc, notes, by_scores)


def claimed_per_case(h: Hypothesis, judged: "Judged") -> dict[str, np.ndarray] | None:
    """Per scoring (the literal one and each translation, whose moves rebind the scope), per
    numeric case of the dataset's grid, how many cells the claim scores there (its `where`,
    over each predicted observable that lies along the cases); None where the grid has no
    numeric cases."""
    grid = judged.grid
    if (axis := freshness.case_dim(grid)) is None:
        return None
    dims = observed_dims(judged.variables, judged.prov, h.probe)
    along = [o for o in h.predict if axis in dims[o]]
    moves = {name: {k: v for k, v in mapping.items() if k not in dims}  # renames: no scope
             for name, mapping in h.translations.items()}
    asked = replace(h, predict={o: "0" for o in along}, translations=moves, near_misses={})
    scopes = evaluate_claim(asked, grid, dims)[1] if along else None
    per_case = {s: np.zeros(grid.sizes[axis], np.int64) for s in h.scorings()}
    for scoring, counts in per_case.items():
        for o in along:
            scope = np.ones(tuple(grid.sizes[d] for d in dims[o]), bool) if scopes is None \
                else scopes[scoring][o]
            at = dims[o].index(axis)
            counts += np.moveaxis(scope, at, 0).reshape(grid.sizes[axis], -1).sum(1)
    return per_case


def blind_partners(prov: Provenance, hypothesis: str) -> list[str]:
    """The sealed hypotheses the sweep recorded this one blind against (`--allow-blind`):
    the stimulus cannot tell them apart, so neither verdict speaks for one against the
    other."""
    pairs = prov.get("blind_pairs") or []
    return sorted({b if a == hypothesis else a for a, b in pairs if hypothesis in (a, b)})


def thin_partners(prov: Provenance, hypothesis: str) -> list[str]:
    """The sealed hypotheses the sweep recorded this one told apart from on fewer cells than
    their floor (`--allow-thin`), each with those counts: "sum (3 of floor 32)"."""
    pairs = prov.get("thin_pairs") or []
    return sorted({f"{b if a == hypothesis else a} ({n} < {floor})"
                   for a, b, n, floor in pairs if hypothesis in (a, b)})


def separation(claimed: list[dict[str, Any]]) -> dict[str, int]:
    """On how many claimed cells the data contradict a refuted hypothesis, under its best
    reading per kernel (the scoring with the most matches): "refuted on 127 of 128 cells"."""
    cells = refuting = 0
    for kernel in claimed:
        best = max(kernel["scores"].values(), key=lambda sc: (sc["matches"], -sc["cells"]))
        cells += best["cells"]
        refuting += best["cells"] - best["matches"]
    return {"refuting_cells": refuting, "cells": cells}


def literally_confirmed(doc: Verdict) -> list[str]:
    """The kernels a verdict CONFIRMS by its literal scoring: those a figure or an export may
    number as the file's own table."""
    return [k for k, r in doc["kernels"].items()
            if r["status"] == Outcome.CONFIRMED and r["via"] == "literal"]


def verdict_words(doc: Verdict) -> str:
    """The verdict, with the separation count when it is a refutation."""
    if doc["verdict"] == Outcome.REFUTED and "separation" in doc:
        sep = doc["separation"]
        return f"REFUTED on {sep['refuting_cells']:,} of {sep['cells']:,} cells"
    if doc["verdict"] == Outcome.CONFIRMED and doc.get("blind_to"):
        return f"CONFIRMED, blind to {', '.join(doc['blind_to'])}"
    return str(doc["verdict"])


def kernel_statuses(doc: Verdict) -> dict[str, str]:
    """{kernel: status} for a verdict, kernels outside the claim marked as such."""
    return {k: v["status"] if v["in_claim"] else f"not claimed, would be {v['status']}"
            for k, v in doc.get("kernels", {}).items()}


def check_all(dataset_path: Path) -> tuple[list[Judgement], dict[str, str]]:
    """Check a dataset against every sealed hypothesis of its probe that applies to it, and
    save each verdict that may be recorded beside it. Returns the judgements and, for each
    hypothesis left out, why it does not apply."""
    judged = judge(dataset_path)
    if judged.problem:
        raise IntegrityError(f"{dataset_path}: {judged.problem}")
    judgements, skipped = [], {}
    record = Record.read()
    for entry in (e for e in record.entries if e["probe"] == judged.prov.get("probe")):
        path = lab_root() / entry["path"]
        verdict = _edited_seal(path, judged, record.entries)  # before the file is read
        if verdict is None:
            if why := not_applicable(load_hypothesis(path), judged):
                skipped[entry["hypothesis"]] = why
                continue
            verdict = assess(path, dataset_path, judged, record)
        save_verdict(verdict.doc, dataset_path)
        judgements.append(verdict)
    return judgements, skipped
