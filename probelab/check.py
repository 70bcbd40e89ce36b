"""Check a sealed hypothesis against a dataset: integrity and order first, then scores.

Scores are kept apart: the literal reading and each declared translation, per kernel. A
verdict is only counted when the seal is intact and provably older than the measurement.
"""

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from functools import cached_property
from pathlib import Path
from typing import Any

import xarray as xr

from probelab import (
    bounded,
    codetree,
    dataset,
    depends,
    gitinfo,
    ledger,
    manifest,
    vocabulary,
    written,
)
from probelab.cache import cache_key
from probelab.errors import Exit, HistoryError, IntegrityError, LabError, UsageError
from probelab.hypothesis import (
    LITERAL,
    Evaluations,
    Hypothesis,
    load_hypothesis,
    read_capped,
    retired_observables,
    unobserved,
)
from probelab.paths import data_dir, lab_root, relative, shown
from probelab.prereg import Record, evaluate
from probelab.probe import get_probe, recorded_info
from probelab.records import Provenance, Verdict
from probelab.scoring import score_claims
from probelab.storage import atomic_write_text

CONFIRMED, REFUTED = "CONFIRMED", "REFUTED"
TAMPERED, POST_HOC, NOT_EVIDENCE = "TAMPERED", "POST-HOC", "NOT-EVIDENCE"
EXIT = {CONFIRMED: Exit.OK, REFUTED: Exit.REFUTED, NOT_EVIDENCE: Exit.REFUTED,
        TAMPERED: Exit.INTEGRITY, POST_HOC: Exit.INTEGRITY}
SCORE_KEYS = frozenset({"matches", "cells", "first_mismatches"})  # a kernel's, per scoring


def _measured_at(prov: Provenance) -> datetime | None:
    """The measurement time, only if it is an unambiguous (timezone-aware) instant."""
    try:
        when = datetime.fromisoformat(prov["utc"])
    except (KeyError, TypeError, ValueError):
        return None
    return when if when.tzinfo is not None else None


def _changed_since(seal: str | None, judged: "Judged", record: Record) -> list[str]:
    """The files of the probe's folder and of probelab that changed between the seal and the
    measured commit, where the seal commit is an ancestor of it: a verdict decoded by code
    written after its seal says so (a reviewer judges whether the change could have been
    made to fit). Otherwise the seal is not before the measurement, and `_unordered` words
    the difference by the commits' real order."""
    head = judged.head
    if seal is None or head is None or not record.history.is_ancestor(seal, head):
        return []
    return _code_between(seal, head, judged.prov, record)


def _code_between(seal: str, head: str, prov: Provenance, record: Record) -> list[str]:
    """The files that could shape a dataset's data that differ between the seal commit and
    the measured commit `head`, whichever came first. Which files could shape the data is
    read from the measured commit itself, never from today's probe code."""
    return codetree.changed_between(seal, head, measuring_code(prov, head, record))


def _unordered(seal: str, head: str, prov: Provenance, record: Record) -> list[str]:
    """Why a seal commit that is not an ancestor of the measured commit shows no order, and
    the measuring code that differs between the two, each worded by their real order: sealed
    after the data were taken (the measured commit is the seal's ancestor), or neither
    descending from the other."""
    after = record.history.is_ancestor(head, seal)
    said = [f"seal commit {seal[:12]} is not an ancestor of the measured commit {head[:12]}"
            + (": it was sealed after the data were taken" if after else "")]
    if changed := _code_between(seal, head, prov, record):
        how = ("changed between the measurement and the seal" if after else
               "differs between the measured commit and the seal commit (neither descends "
               "from the other)")
        said.append(f"the probe's code {how}: {len(changed)} "
                    f"file{'s' * (len(changed) != 1)} ({_listed(changed)})")
    return said


def _listed(files: list[str]) -> str:
    """The first few of `files`, for a one-line reason."""
    return ", ".join(files[:5]) + (", ..." if len(files) > 5 else "")


def probe_folders(prov: Provenance, commit: str) -> tuple[str, ...]:
    """The probe folders a dataset's kernels came from, as its provenance names their
    sources (lab-relative paths; a static dataset before 2026-12 named the file alone,
    found among the files `commit` has under probes/). Empty where none is found."""
    sources = _sources(prov)
    folders = {s.rpartition("/")[0] for s in sources if s.startswith("probes/")}
    if bare := {s for s in sources if s and "/" not in s}:
        try:
            listed = gitinfo.git("ls-tree", "-r", "--name-only", commit, "--", "probes")
        except (RuntimeError, OSError):
            listed = ""
        folders |= {p.rpartition("/")[0] for p in listed.splitlines()
                    if p.rpartition("/")[2] in bare}
    return tuple(sorted(folders))


def _sources(prov: Provenance) -> frozenset[str]:
    """The kernel sources a dataset's provenance names."""
    kernels = prov.get("kernels") if isinstance(prov.get("kernels"), dict) else {}
    return frozenset(str(r.get("source", "")) for r in kernels.values() if isinstance(r, dict))


def measuring_code(prov: Provenance, commit: str, record: Record | None = None
                   ) -> tuple[str, ...]:
    """The files that could shape a dataset's data at `commit`: its probe folders', and the
    core modules they and the sweep import there (codetree.measuring_code). Where its
    folders cannot be found, the whole scope (probes/ and probelab/): never nothing."""
    key = (*sorted(_sources(prov)), commit)  # asked before any git listing
    if record is not None and key in record.code:
        return record.code[key]
    files = tuple(sorted({f for folder in probe_folders(prov, commit)
                          for f in codetree.measuring_code(folder, commit)}))
    files = files or codetree.SCOPE
    if record is not None:
        record.code[key] = files
    return files


def dataset_problem(path: Path, prov: Provenance, content: str, history: bool = True,
                    pins: list[dict[str, Any]] | None = None,
                    file_sha: str | None = None) -> str | None:
    """Why a dataset is not what its sweep saved (edited, self-contradicting) or, when it
    says it is a measurement, not the archive's own (unpinned, misplaced, a copy, or, with
    `history`, changed in git or with a manifest that lost pins); None if it is. A measured
    dataset outside the archive is a usage error: it cannot count. `pins`: the manifest,
    where the caller has already read it whole (otherwise it is read here). `content`,
    `file_sha`: the content hash the dataset's values and provenance compute to, and the
    sha256 of the bytes it was read from (worked out here where not given)."""
    if why := dataset.tampered_content(prov, content):
        return why
    if why := dataset.contradictions(prov):
        return "; ".join(why)
    if dataset.simulated(prov):
        return None  # never evidence, wherever it is
    if manifest.archive_relative(path) is None:
        raise UsageError(f"{path} is not a file in the archive ({shown(manifest.data_dir())}/): "
                         f"a measured dataset counts only there, as {manifest.NAME} pins it "
                         "(a link to it, or a copy elsewhere, is not the dataset)")
    if why := manifest.placement_problem(path, prov):
        return why
    try:
        entries = manifest.read() if pins is None else pins
    except IntegrityError as exc:
        return f"{exc}"
    if why := manifest.pin_problem(path, content, entries, file_sha):
        return why
    if history and (why := [*written.rewritten(path), *written.manifest_problems()]):
        return "; ".join(why)
    return None


@dataclass(frozen=True)
class Standing:
    """How a dataset stands by check's reading, for the commands that show one (diff, plot):
    `problem`, why it is not what its sweep saved into the archive (edited, self-contradicting,
    unpinned or misplaced in data/, changed in git: TAMPERED), or None; `outside`, a
    measurement intact but outside the archive (pinned nowhere: it cannot count)."""

    problem: str | None
    outside: bool = False

    def words(self) -> str | None:
        """One line for a display, or None where it stands (the archive's own, or
        simulated)."""
        if self.problem:
            return f"TAMPERED ({self.problem})"
        return "UNPINNED (a measurement outside the archive: it counts nowhere)" \
            if self.outside else None


def standing(read: dataset.Read) -> Standing:
    """`Standing` of a dataset file read once."""
    try:
        return Standing(dataset_problem(read.path, read.prov, read.summary.content,
                                        file_sha=read.file_sha256))
    except UsageError:  # intact (checked first), but a measurement outside the archive
        return Standing(None, outside=True)


def _order_problems(entry: dict, judged: "Judged", record: Record) -> tuple[list[str], str | None]:
    problems = []
    commit, prov, head = record.commit(entry), judged.prov, judged.head
    measured = _measured_at(prov)
    if measured is None:
        problems.append("the dataset records no usable measurement time (UTC, with offset)")
        return problems, commit
    sealed = ledger.sealed_time(entry)
    if sealed is None:
        problems.append(f"the ledger's sealed_at {entry['sealed_at']!r} is not an unambiguous "
                        "time (UTC, with offset)")
    elif sealed > measured:
        problems.append(f"sealed at {entry['sealed_at']}, after the measurement ({prov['utc']})")
    if commit is None:
        problems.append("no commit carries this seal with the file as sealed "
                        "(amended, rebased away or never committed)" if gitinfo.has_history()
                        else gitinfo.NO_HISTORY)
    elif not head:
        problems.append("the dataset records no git commit (as a full commit id), so the "
                        "order cannot be shown")
    elif not record.history.is_ancestor(commit, head):
        problems += _unordered(commit, head, prov, record)
    elif record.history.commit_time(commit) > measured.timestamp():
        problems.append(f"seal commit {commit[:12]} was made after the measurement")
    return problems + (_code_problems(prov, head, record) if head else []), commit


def _code_problems(prov: Provenance, head: str, record: Record) -> list[str]:
    """The data must have been decoded by the code of the commit they name: a decode edited
    in a dirty tree would otherwise turn any verdict."""
    if "code_tree" not in prov:  # datasets from before the code was recorded
        if prov.get("git_dirty") is not False:
            return ["measured from a tree with uncommitted changes (git_dirty), and the "
                    "dataset records no code that would show they could not matter"]
        return []
    if not codetree.valid(prov["code_tree"]):
        return ["the dataset's record of the code that ran (code_tree) is unreadable"]
    if head not in record.trees:
        record.trees[head] = codetree.committed(head)
    differing = codetree.differences(prov["code_tree"], record.trees[head])
    if not differing:
        return []  # None: the commit is unknown, said above
    return [f"the code that ran is not commit {head[:12]}'s: {len(differing)} files differ "
            f"({_listed(differing)})"]


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


@dataclass(frozen=True)
class Judged:
    """A dataset as read (probelab.dataset.Read: its bytes once, their provenance and
    summary), and why it is not what its sweep saved (or None): judged once, however many
    hypotheses are then checked against it. Its values are opened only where a claim is
    scored that no earlier run scored on these contents."""

    read: dataset.Read
    problem: str | None

    @property
    def path(self) -> Path:
        return self.read.path

    @property
    def prov(self) -> Provenance:
        return self.read.prov

    @property
    def summary(self) -> dataset.Summary:
        return self.read.summary

    @property
    def content(self) -> str:
        """The content hash its values and provenance compute to."""
        return self.read.summary.content

    @cached_property
    def variables(self) -> dict[str, tuple[str, ...]]:
        return dict(self.read.summary.variables)

    @cached_property
    def ds(self) -> xr.Dataset:
        """The dataset, opened lazily from the bytes read, its coordinates read once (claims
        are evaluated over them many times, and a lazy coordinate is read from the file each
        time it is asked); a data variable is read only where it is scored."""
        ds = self.read.open()
        for name in ds.coords:
            ds.variables[name].load()
        return ds

    @cached_property
    def grid(self) -> xr.Dataset:
        """The dataset as claims are evaluated over it: as stored, with the fragment
        vocabulary's names bindable beside the archive's (probelab.vocabulary.bindable: a
        sealed file may name `a_value` or `a_reg` on any grid). Cells are named, and values
        read, from `ds` as stored."""
        return vocabulary.bindable(self.ds)

    @cached_property
    def head(self) -> str | None:
        """The measured commit, only as a full commit id: a ref name would resolve at check
        time, not at measurement time."""
        head = self.prov.get("git_head")
        return head if isinstance(head, str) and gitinfo.is_commit_id(head) else None


class Unreadable(IntegrityError):
    """A file of the archive that cannot be read as a dataset: `why` says so, then what its
    pin says of it (none, or another file's bytes)."""

    def __init__(self, path: Path, why: str) -> None:
        super().__init__(f"{shown(path)}: {why}")
        self.why = why


def read_dataset(path: Path, pins: list[dict[str, Any]] | None = None) -> dataset.Read:
    """A dataset file read once (dataset.read_summarised). A file of the archive that is no
    dataset at all (truncated, or never one) is Unreadable, said with what the manifest
    (`pins`, or read here) says of it."""
    try:
        return dataset.read_summarised(path)
    except dataset.NotADataset as exc:
        if manifest.archive_relative(path) is None:
            raise
        try:
            pinned = manifest.pin_problem(path, None, manifest.read() if pins is None else pins)
        except (IntegrityError, OSError) as broken:
            pinned = f"whether a pin names it is unknown ({broken})"
        raise Unreadable(path, "; ".join(filter(None, (
            f"truncated or unreadable ({exc.why})", pinned)))) from None


def judge(path: Path, history: bool = True, pins: list[dict[str, Any]] | None = None) -> Judged:
    read = read_dataset(path, pins)
    return Judged(read, dataset_problem(path, read.prov, read.summary.content, history, pins,
                                        read.file_sha256))


def _edited_seal(hypothesis_path: Path, judged: Judged,
                 entries: list[dict[str, Any]]) -> Verdict | None:
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
    return {"hypothesis": {"id": entry["hypothesis"], "probe": entry["probe"],
                           "path": entry["path"], "claim": "(not read: the file no longer "
                           "hashes to its seal)", "coordinates": None, "kernels": [],
                           "file_sha256": digest,
                           "ledger_hash": entry["hash"], "sealed_at": entry["sealed_at"]},
            "dataset": _dataset_doc(judged),
            "verdict": TAMPERED,
            "reasons": ["file edited after sealing: it no longer hashes to its ledger entry"]}


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
    """The verdict of a sealed hypothesis on a dataset (a file never sealed: UsageError, after
    its own errors). `judged` and `record` are the dataset and the sealed record as already
    read, for a run of checks (otherwise read here)."""
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
    if judged.problem:  # before any provenance field is believed
        return {"hypothesis": _hypothesis_doc(h, hypothesis_path, []),
                "dataset": _dataset_doc(judged), "verdict": TAMPERED,
                "reasons": [f"dataset: {judged.problem} (its provenance fields above are as "
                            "recorded, not vouched for)"]}
    if prov.get("probe") != h.probe:
        raise UsageError(f"{dataset_path} is a {prov.get('probe')!r} dataset; "
                         f"{hypothesis_path} is about {h.probe!r}")
    kernels = list(judged.summary.kernels)
    if why := not_applicable(h, judged):  # the dataset's facts (older ones: today's probe)
        raise UsageError(f"{h.id} does not apply to {dataset_path}: {why}")
    doc: Verdict = {"hypothesis": _hypothesis_doc(h, hypothesis_path, kernels),
                    "dataset": _dataset_doc(judged), "reasons": []}
    if record is None:
        return doc | {"verdict": TAMPERED, "reasons": [f"ledger: {ledger_error}"]}
    assert entry is not None  # an unsealed file was refused above
    doc["hypothesis"] |= {"ledger_hash": entry["hash"], "sealed_at": entry["sealed_at"]}
    grid_sealed = doc["dataset"]["grid_sha256"] == entry["grid_sha256"]
    doc["dataset"]["grid_matches_seal"] = grid_sealed
    scored = _scored_claim(record.claims, h, judged, kernels)
    if misfit := scored.get("misfit"):
        return doc | {"verdict": TAMPERED, "reasons": [misfit]}
    if grid_sealed and scored["table_sha256"] != entry["table_sha256"]:
        return doc | {"verdict": TAMPERED,
                      "reasons": ["prediction no longer evaluates to the sealed table"]}
    problems, commit = _order_problems(entry, judged, record)
    doc["hypothesis"]["seal_commit"] = commit
    doc["hypothesis"]["code_changed_since_seal"] = _changed_since(commit, judged, record)
    doc["kernels"] = {}
    for kernel in kernels:
        scores = scored["kernels"][kernel]
        via = next((s for s in h.scorings()
                    if scores[s]["matches"] == scores[s]["cells"] > 0), None)
        doc["kernels"][kernel] = {"in_claim": kernel in doc["hypothesis"]["kernels"],
                                  "status": CONFIRMED if via else REFUTED, "via": via,
                                  "scores": scores}
    if doc["dataset"]["simulated"]:  # whatever else holds: its order problems are noted
        would = POST_HOC if problems else _scored(doc)["verdict"]
        return doc | {"verdict": NOT_EVIDENCE,
                      "reasons": [f"simulated data (would be {would}); never evidence",
                                  *problems]}
    if problems:
        return doc | {"verdict": POST_HOC, "reasons": problems}
    if blind := blind_partners(prov, h.id):
        doc["blind_to"] = blind
    return _scored(doc)


def blind_partners(prov: Provenance, hypothesis: str) -> list[str]:
    """The sealed hypotheses the sweep recorded this one blind against (`--allow-blind`):
    the stimulus cannot tell them apart, so neither verdict speaks for one against the
    other."""
    pairs = prov.get("blind_pairs") or []
    return sorted({b if a == hypothesis else a for a, b in pairs if hypothesis in (a, b)})


def _scored(doc: Verdict) -> Verdict:
    """The verdict the scores give, for a dataset whose seal and order hold."""
    claimed = [doc["kernels"][k] for k in doc["hypothesis"]["kernels"]]
    # nothing claimed, or nothing to score, confirms nothing
    verdict = CONFIRMED if claimed and all(k["status"] == CONFIRMED for k in claimed) \
        else REFUTED
    scored = doc | {"verdict": verdict}
    if verdict == REFUTED:
        scored["separation"] = separation(claimed)
    scored["reasons"] = doc["reasons"] + [
        f"kernel {k}: no cells to score" for k, v in doc["kernels"].items()
        if v["scores"][LITERAL]["cells"] == 0]
    if blind := doc.get("blind_to"):
        scored["reasons"].append(f"blind to {', '.join(blind)}: the sweep recorded that this "
                                 "stimulus cannot tell them apart, so it confirms neither "
                                 "against the other")
    return scored


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
            if r["status"] == CONFIRMED and r["via"] == "literal"]


def verdict_words(doc: Verdict) -> str:
    """The verdict, with the separation count when it is a refutation."""
    if doc["verdict"] == REFUTED and "separation" in doc:
        sep = doc["separation"]
        return f"REFUTED on {sep['refuting_cells']:,} of {sep['cells']:,} cells"
    if doc["verdict"] == CONFIRMED and doc.get("blind_to"):
        return f"CONFIRMED, blind to {', '.join(doc['blind_to'])}"
    return str(doc["verdict"])


def kernel_statuses(doc: Verdict) -> dict[str, str]:
    """{kernel: status} for a verdict, kernels outside the claim marked as such."""
    return {k: v["status"] if v["in_claim"] else f"not claimed, would be {v['status']}"
            for k, v in doc.get("kernels", {}).items()}


def check_all(dataset_path: Path) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """Check a dataset against every sealed hypothesis of its probe that applies to it, and
    save each verdict that may be recorded beside it. Returns the verdicts and, for each
    hypothesis left out, why it does not apply."""
    judged = judge(dataset_path)
    if judged.problem:
        raise IntegrityError(f"{dataset_path}: {judged.problem}")
    docs, skipped = [], {}
    record = Record.read()
    for entry in (e for e in record.entries if e["probe"] == judged.prov.get("probe")):
        path = lab_root() / entry["path"]
        doc = _edited_seal(path, judged, record.entries)  # judged before the file is read
        if doc is None:
            if why := not_applicable(load_hypothesis(path), judged):
                skipped[entry["hypothesis"]] = why
                continue
            doc = check(path, dataset_path, judged, record)
        save_verdict(doc, dataset_path)
        docs.append(doc)
    return docs, skipped


def verdict_path(dataset_path: Path, hypothesis_id: str) -> Path:
    return dataset_path.with_name(f"{dataset_path.stem}.{hypothesis_id}.verdict.json")


def render_json(doc: Verdict) -> str:
    return json.dumps(doc, indent=2, sort_keys=True) + "\n"


def recordable(doc: Verdict) -> bool:
    """Whether a verdict may be recorded: a result (CONFIRMED or REFUTED) anywhere, and
    NOT-EVIDENCE beside simulated data only, never in the archive. TAMPERED and POST-HOC
    never are: a verdict file must not claim what does not count."""
    if doc["verdict"] in (CONFIRMED, REFUTED):
        return True
    return doc["verdict"] == NOT_EVIDENCE and not \
        (lab_root() / doc["dataset"]["path"]).resolve().is_relative_to(data_dir().resolve())


def save_verdict(doc: Verdict, dataset_path: Path) -> Path | None:
    """Save a verdict beside its dataset if it is `recordable`; None where it is not, so that
    nothing that does not count is ever recorded as if it did."""
    if not recordable(doc):
        return None
    path = verdict_path(dataset_path, doc["hypothesis"]["id"])
    atomic_write_text(path, render_json(doc))
    return path


