"""Preregistration: write a hypothesis, seal it (ledger + git commit), verify the seals.

A seal evaluates the prediction over the probe's stimulus grid, hashes file and table,
appends a chained ledger entry and commits both files with the entry's hash in the message.
Sealed files are never edited: an amendment is a new file whose `parent` names the old id.
"""

import hashlib
import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from probelab import gitinfo, ledger, manifest, vendors
from probelab.errors import HistoryError, IntegrityError, LabError, UsageError
from probelab.hypothesis import (
    Evaluations,
    Hypothesis,
    is_plain_id,
    load_hypothesis,
    read_capped,
    retired_observables,
)
from probelab.notary import words
from probelab.notary.rules import Finding, Rule
from probelab.paths import lab_root, ledger_path, prereg_dir, relative
from probelab.probe import Probe, get_probe, supports
from probelab.rivals import blind_at_seal

SEAL_TAG = "probelab-seal:"


def _kernel_names(probe: Probe) -> set[str]:
    return {k.name for vendor in vendors.TARGETS for k in probe.kernels(vendor)}


def evaluate(h: Hypothesis, claims: Evaluations | None = None) -> tuple[Probe, str, str]:
    """Check a hypothesis against its probe; return (probe, grid hash, table hash)."""
    claims = claims or Evaluations()
    probe = get_probe(h.probe)
    unknown = set(h.kernels or ()) - _kernel_names(probe)
    if unknown:
        raise UsageError(f"{h.path}: kernels {sorted(unknown)} are not kernels of {probe.id}")
    for name in h.near_misses:  # a near miss that cannot be evaluated is refused at seal
        claims.probe_digest(h.near_miss(name), probe)
    grid_hash, table_hash = claims.probe_digest(h, probe)
    return probe, grid_hash, table_hash


def template(probe: Probe, hypothesis_id: str) -> str:
    coords = probe.stimulus().coords
    first = next(iter(probe.observables))
    lines = [f"#   {name}: dims {tuple(c.dims)}, {c.dtype}" for name, c in coords.items()]
    observables = "\n".join(f'{o} = "0"  # dims {d}' for o, d in probe.observables.items())
    return f'''schema = 1
id = "{hypothesis_id}"
probe = "{probe.id}"
claim = """
State the claim in words: what the instruction does, and where the claim comes from.
"""
coordinates = "raw"
# kernels = [{", ".join(repr(k) for k in sorted(_kernel_names(probe)))}]  # default: all
# agrees_with = ["other-id"]  # a sealed hypothesis this one restates (power: RESTATEMENT)

# Stimulus coordinates you may use (integers only; strings are labels):
{chr(10).join(lines)}
# Expressions: integers, + - * // % << >> & | ^ ~, comparisons, and/or/not, a if c else b.

# [layout.idx]                 # a layout in CuTe's notation, made the helper idx (or Triton's
# cute = "(4,8):(8,1)"         # linear = {{...}}, or a table = "f.csv": probelab/layouts.py)
# of = ["lane", "reg"]         # one expression per top-level mode

[let]
# helper = "x & 0xFF"

[predict]
{observables}

# [translations.name]         # scored apart from the literal reading
# x = "y"                      # rebinds a coordinate before predicting
# {first} = "{first} ^ 1"   # renames a predicted value

# [near_misses.name]           # a plausible wrong variant the stimulus must tell apart
# {first} = "..."
'''


def new(probe_id: str, hypothesis_id: str) -> Path:
    probe = get_probe(probe_id)
    if not is_plain_id(hypothesis_id):
        raise UsageError("a hypothesis id uses letters, digits, '-' and '_' only")
    path = prereg_dir() / probe.id / f"{hypothesis_id}.toml"
    if path.exists():
        raise UsageError(f"{path} exists; choose another id")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(template(probe, hypothesis_id))
    return path


def _identity() -> list[str]:
    if gitinfo.git("config", "user.email", check=False):
        return []
    return ["-c", "user.name=probelab", "-c", "user.email=probelab@localhost"]


def _refuse_foreign_targets(h: Hypothesis) -> None:
    """A file that names a target its probe does not cover could never be scored there: a
    slip (a claim meant for a sibling probe), refused before it is sealed for good."""
    probe = get_probe(h.probe)
    named = [t for t in h.targets or () if not set(t) & set("*?[")]
    if foreign := [t for t in named if not supports(probe, t)]:
        raise UsageError(f"{relative(h.path)} claims {foreign}, which {h.probe} does not "
                         f"target (its targets: {', '.join(probe.targets)}): such a claim "
                         "could never be scored")


def _refuse_blind(h: Hypothesis, probe: Probe, allow_blind: bool) -> list[str]:
    """What `h` would be blind to once sealed (`rivals.blind_at_seal`), refused unless
    `allow_blind`: such a pair would stop every measured sweep of the probe for good, since a
    sealed file is never edited and `agrees_with` is sealed with its file."""
    blind = blind_at_seal(probe, h, sealed_hypotheses(probe.id))
    if blind and not allow_blind:
        rivals = [p.b for p in blind if p.kind == "rivals"]
        said = [f"it predicts the same as sealed {', '.join(rivals)} on every cell both "
                f"claim (if it restates {'it' if len(rivals) == 1 else 'them'}, declare "
                f"agrees_with = {json.dumps(rivals)})"] if rivals else []
        said += [f"its near miss {p.b.partition('~')[2]} predicts the same as it on every "
                 "cell (change the near miss)" for p in blind if p.kind == "near miss"]
        raise UsageError(f"{relative(h.path)} would make every sweep of {probe.id} blind: "
                         f"{'; '.join(said)}; or seal it anyway with --allow-blind (the seal "
                         "commit records it)")
    return [p.b for p in blind]


def _refuse_inherited_rivals(h: Hypothesis, probe: Probe) -> None:
    """What a file declares as one claim (its `agrees_with`, and its `parent`) must not
    hold two sealed rivals the probe's stimulus is blind to: declared as restating both, the
    file would hide that pair from every verdict of its own (the mistake three wgmma-f16-rs
    restatements made with their parents' blind rival; their `-2` versions take it back).
    Such a file declares one side and is sealed with --allow-blind."""
    named = sorted({*h.agrees_with, *([h.parent] if h.parent else [])})
    if len(named) < 2:
        return
    sealed = {s.id: s for s in sealed_hypotheses(h.probe)}
    for i, first in enumerate(named):
        rivals = [p.b for p in blind_at_seal(probe, sealed[first],
                                             [sealed[x] for x in named[i + 1:]])
                  if p.kind == "rivals"]
        if rivals:
            raise UsageError(f"{relative(h.path)}: it declares {first} and {rivals} as one "
                             "claim (agrees_with, parent), rivals that the probe's stimulus "
                             "cannot tell apart, not restatements; declare one side and seal "
                             "with --allow-blind (the seal commit records the pairs)")


def _refuse_unarchived_fits(h: Hypothesis) -> None:
    """What a law was read from (`fitted_from`) must be archived datasets of its probe: a pin
    of the manifest, its file present. Its cases are what a later confirmation is held to
    differ from (probelab.notary.freshness), so a name that is none would hold it to
    nothing."""
    pins = {e["path"]: e for e in manifest.read()} if h.fitted_from else {}
    for name in h.fitted_from:
        if pins.get(name, {}).get("probe") != h.probe or not (lab_root() / name).is_file():
            raise UsageError(f"{relative(h.path)}: fitted_from {name!r} is not an archived "
                             f"dataset of {h.probe} (one pinned in {manifest.NAME}, its file "
                             "in data/)")


def _refuse_unfitted_restatements(h: Hypothesis) -> None:
    """A file that restates a law read from data (its `parent` or `agrees_with` names a
    sealed file with `fitted_from`) names at least the datasets that one does: otherwise the
    same law, restated without them, would be CONFIRMED on the stimulus it was read from.
    Refused rather than inherited: a sealed file is judged from its own bytes alone."""
    restated = {*h.agrees_with, *([h.parent] if h.parent else [])}
    if not restated:
        return
    for sealed in (s for s in sealed_hypotheses(h.probe) if s.id in restated):
        if dropped := sorted(set(sealed.fitted_from) - set(h.fitted_from)):
            raise UsageError(f"{relative(h.path)} restates {sealed.id}, which was read from "
                             f"{dropped}: name them in its fitted_from too")


def seal(path: Path, allow_blind: bool = False) -> dict[str, Any]:
    """Seal the hypothesis at `path`: refused (nothing written) where it is malformed, in
    the wrong place, already sealed, or blind to a sealed rival or to one of its own near
    misses on the probe's stimulus (unless `allow_blind`: the seal commit then records
    them); otherwise its ledger entry, committed."""
    if path.is_symlink():  # git would commit the link, not the file it names
        raise UsageError(f"{path} is a symbolic link; seal the file itself")
    h = load_hypothesis(path)
    rel = relative(path)
    if Path(rel).parent != Path("preregistrations") / h.probe:
        raise UsageError(f"{rel}: hypotheses of {h.probe} live in preregistrations/{h.probe}/")
    if Path(rel).stem != h.id:  # verdicts, `prereg list` and notebooks name files by id
        raise UsageError(f"{rel}: its id is {h.id!r}, so the file is {h.id}.toml")
    _refuse_foreign_targets(h)
    probe, grid_hash, table_hash = evaluate(h)
    lp = ledger_path()
    entries = ledger_entries()
    if any(e["path"] == rel for e in entries):
        raise UsageError(f"{rel} is already sealed; sealed files are never edited: write a new "
                         f"file, with a new id and parent = \"{h.id}\"")
    if h.parent and not any((e["probe"], e["hypothesis"]) == (h.probe, h.parent)
                            for e in entries):
        raise UsageError(f"parent {h.parent!r} is not a sealed hypothesis of {h.probe}")
    sealed_ids = {e["hypothesis"] for e in entries if e["probe"] == h.probe}
    if unknown := sorted(set(h.agrees_with) - sealed_ids):
        raise UsageError(f"agrees_with {unknown}: not sealed hypotheses of {h.probe} (seal "
                         "what a file restates first)")
    _refuse_unarchived_fits(h)
    _refuse_unfitted_restatements(h)
    _refuse_inherited_rivals(h, probe)
    blind = _refuse_blind(h, probe, allow_blind)
    if gitinfo.git("status", "--porcelain", "--", relative(lp), check=False):
        raise IntegrityError("the ledger has uncommitted changes; commit or restore it first")
    before = lp.read_bytes() if lp.exists() else None
    entry = ledger.append(lp, {
        "probe": h.probe, "hypothesis": h.id, "path": rel, "parent": h.parent,
        "file_sha256": h.sha256, "table_sha256": table_hash, "grid_sha256": grid_hash,
        "sealed_at": datetime.now(UTC).isoformat(timespec="seconds"),
    })
    message = (f"prereg: seal {h.probe}/{h.id}\n\n{SEAL_TAG} {entry['hash']}\n"
               f"file-sha256: {h.sha256}\ntable-sha256: {table_hash}\n")
    if blind:
        message += f"blind-to: {', '.join(blind)} (sealed with --allow-blind)\n"
    try:
        gitinfo.git("add", "--", rel, relative(lp))
        gitinfo.git(*_identity(), "commit", "-q", "-m", message, "--", rel, relative(lp))
    except (RuntimeError, OSError) as exc:
        if before is None:
            lp.unlink(missing_ok=True)
        else:
            lp.write_bytes(before)
        gitinfo.git("reset", "-q", "--", relative(lp), check=False)
        raise IntegrityError(f"could not commit the seal, ledger restored: {exc}") from exc
    return entry


def ledger_entries() -> list[dict[str, Any]]:
    """The ledger, checked: chain intact, and no seal in this history missing from it.
    Raises HistoryError first when the history itself cannot be trusted to show order."""
    return _ledger_and_seals()[0]


def sealed_hypotheses(probe_id: str) -> list[Hypothesis]:
    """The probe's sealed hypotheses, as sealed. A file that no longer hashes to its seal is
    an IntegrityError: the rivals cannot be judged from an edited record."""
    found = []
    for entry in (e for e in ledger_entries() if e["probe"] == probe_id):
        path = lab_root() / entry["path"]
        try:
            h = load_hypothesis(path)
        except LabError as exc:
            raise IntegrityError(f"sealed hypothesis {entry['path']} cannot be read ({exc}); "
                                 "`probelab prereg verify` says more") from exc
        if h.sha256 != entry["file_sha256"]:
            raise IntegrityError(f"sealed hypothesis {entry['path']} was edited after sealing; "
                                 "`probelab prereg verify` says more")
        found.append(h)
    return found


def _ledger_and_seals() -> tuple[list[dict[str, Any]], dict[str, list[str]]]:
    """The checked ledger, and the seal tags the history carries (`seal_tags`): every tag
    on any ref must be in the ledger, so a seal can be neither dropped nor kept aside."""
    if why := gitinfo.history_problem():
        raise HistoryError(why)
    entries = ledger.read(ledger_path())
    ledger.verify_chain(entries)
    known = {e["hash"] for e in entries}
    tags = seal_tags()
    for sealed in (h for hashes in tags.values() for h in hashes):
        if sealed not in known:
            raise IntegrityError(f"the ledger lost a sealed entry: {sealed[:16]} is sealed in "
                                 "this history but not in the ledger")
    return entries, tags


def seal_tags() -> dict[str, list[str]]:
    """Commit -> the entry hashes it seals, oldest commit first: the lines that start with
    the seal tag in the raw message of every commit, on any ref, that mentions it. Both the
    ledger's cross-check and the search for each entry's seal commit read this one answer,
    so no seal can count for one and hide from the other. A commit whose message git shows
    otherwise than it stores (an `encoding` header re-encodes it, a NUL byte cuts it) is
    refused: a seal is plain text. Empty where the lab has no history of its own."""
    if not gitinfo.has_history():
        return {}
    carrying = list(reversed(gitinfo.commits_mentioning(SEAL_TAG)))
    try:
        raws = gitinfo.objects(carrying)
    except (RuntimeError, OSError) as exc:
        raise IntegrityError(f"the commits that carry seals cannot be read: {exc}") from exc
    tags = {}
    for commit in carrying:
        raw = raws[commit]
        headers, _, message = (raw or b"").partition(b"\n\n")
        if raw is None or b"\0" in message or any(
                line.startswith(b"encoding ") for line in headers.split(b"\n")):
            raise IntegrityError(f"commit {commit[:12]} mentions {SEAL_TAG} in a message git "
                                 "shows otherwise than it stores (re-encoded, cut at a NUL "
                                 "byte, or unreadable): a seal must be plain text")
        tags[commit] = [line[len(SEAL_TAG):].decode(errors="replace").strip()
                        for line in message.split(b"\n") if line.startswith(SEAL_TAG.encode())]
    return tags


def seal_commit(entry: dict[str, Any]) -> str | None:
    """The oldest commit carrying the seal whose tree holds the file exactly as sealed (none
    where the lab has no history of its own: another repository's is not its)."""
    return seal_commits([entry], seal_tags())[entry["hash"]]


def seal_commits(entries: list[dict[str, Any]], tags: dict[str, list[str]]
                 ) -> dict[str, str | None]:
    """`seal_commit` of each entry, by its hash, among the commits of `tags` (`seal_tags`):
    one batch read of the files they hold."""
    candidates = {e["hash"]: [c for c, hashes in tags.items() if e["hash"] in hashes]
                  for e in entries}
    try:
        blobs = gitinfo.objects(f"{c}:{e['path']}" for e in entries
                                for c in candidates[e["hash"]])
    except (RuntimeError, OSError):
        return {e["hash"]: None for e in entries}
    return {e["hash"]: next((c for c in candidates[e["hash"]]
                             if _holds(blobs[f"{c}:{e['path']}"], e["file_sha256"])), None)
            for e in entries}


def _holds(blob: bytes | None, sha256: str) -> bool:
    return blob is not None and hashlib.sha256(blob).hexdigest() == sha256


@dataclass
class Record:
    """The sealed record as one run of checks reads it, each part once however many checks
    ask: the ledger's entries (chain and seal history verified), each entry's seal commit,
    the history that orders seals and measurements, the claims evaluated so far
    (probelab.hypothesis.Evaluations), and, as first asked, the measuring code of each probe
    folder at each measured commit (read from git) and each measured commit's code tree."""

    entries: list[dict[str, Any]]
    commits: dict[str, str | None]  # entry hash -> seal commit
    history: gitinfo.History
    claims: Evaluations = field(default_factory=Evaluations)
    # (kernel sources..., commit) -> the files that could shape their data at that commit
    code: dict[tuple[str, ...], tuple[str, ...]] = field(default_factory=dict)
    trees: dict[str, dict[str, str] | None] = field(default_factory=dict)  # codetree.committed

    @classmethod
    def read(cls) -> "Record":
        entries, tags = _ledger_and_seals()
        return cls(entries, seal_commits(entries, tags), gitinfo.History.read())

    def commit(self, entry: dict[str, Any]) -> str | None:
        return self.commits[entry["hash"]]


def verify_seals(record: Record | None = None) -> list[dict[str, Any]]:
    """Check the chain and every sealed file; returns one row per entry. Raises on a break.
    `record`: the sealed record as already read, for a run of checks (otherwise read here)."""
    record = record or Record.read()
    return [seal_row(entry, record) for entry in record.entries]


def seal_row(entry: dict[str, Any], record: Record,
             found: tuple[list[Finding], list[Finding]] | None = None) -> dict[str, Any]:
    """One sealed file checked (`seal_findings`, or `found` where they are made already), as
    `verify_seals` lists it: its findings in words."""
    problems, notes = found or seal_findings(entry, record)
    return {"seq": entry["seq"], "probe": entry["probe"], "id": entry["hypothesis"],
            "path": entry["path"], "sealed_at": entry["sealed_at"],
            "commit": record.commit(entry), "ok": not problems,
            "problems": [words.seal_sentence(f) for f in problems],
            "notes": [words.seal_sentence(f) for f in notes]}


def seal_findings(entry: dict[str, Any], record: Record) -> tuple[list[Finding], list[Finding]]:
    """What keeps a sealed file from holding (intact, still evaluating to its sealed table on
    its probe's grid, carried by a commit), and what is noted of it."""
    problems, notes = [], []
    path = lab_root() / entry["path"]
    try:
        raw, replaced = (read_capped(path) if path.exists() else None), None
    except UsageError as exc:
        raw, replaced = None, str(exc)
    if not path.exists():
        problems.append(Finding(Rule.SEAL_MISSING))
    elif replaced:
        problems.append(Finding(Rule.SEAL_REPLACED, detail=replaced))
    elif raw is None or hashlib.sha256(raw).hexdigest() != entry["file_sha256"]:
        problems.append(Finding(Rule.SEAL_EDITED))
    else:
        try:
            h = load_hypothesis(path)
            if retired := retired_observables(h):
                notes.append(Finding(Rule.SEALED_FOR_EARLIER_VERSION, h.probe, f"{retired}"))
            else:
                _, grid_hash, table_hash = evaluate(h, record.claims)
                if grid_hash == entry["grid_sha256"] and table_hash != entry["table_sha256"]:
                    problems.append(Finding(Rule.TABLE_CHANGED))
        except LabError as exc:  # e.g. an observable gone without being retired
            problems.append(Finding(Rule.SEAL_NO_LONGER_EVALUATES, detail=f"{exc}"))
    if ledger.sealed_time(entry) is None:
        problems.append(Finding(Rule.SEALED_AT_AMBIGUOUS, repr(entry["sealed_at"])))
    if record.commit(entry) is None:
        problems.append(Finding(Rule.NO_SEAL_COMMIT if gitinfo.has_history() else
                                Rule.NO_HISTORY))
    return problems, notes
