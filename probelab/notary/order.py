"""The order proof: whether a seal provably came before a measurement, and whether the data
were decoded by the code of the commit they name (docs/trust.md, statements 2 and 5). Each
check gives findings (probelab.notary.rules), never sentences."""

from datetime import datetime
from typing import TYPE_CHECKING, Any

from probelab import codetree, gitinfo, ledger
from probelab.notary.rules import Finding, Rule
from probelab.prereg import Record
from probelab.records import Provenance

if TYPE_CHECKING:  # the integrity module's, judged before any order is asked
    from probelab.notary.integrity import Judged


def measured_at(prov: Provenance) -> datetime | None:
    """The measurement time, only if it is an unambiguous (timezone-aware) instant."""
    try:
        when = datetime.fromisoformat(prov["utc"])
    except (KeyError, TypeError, ValueError):
        return None
    return when if when.tzinfo is not None else None


def changed_since(seal: str | None, judged: "Judged", record: Record) -> list[str]:
    """The files of the probe's folder and of probelab that changed between the seal and the
    measured commit, where the seal commit is an ancestor of it: a verdict decoded by code
    written after its seal says so (a reviewer judges whether the change could have been
    made to fit). Otherwise the seal is not before the measurement, and `_unordered` finds
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


def _unordered(seal: str, head: str, prov: Provenance, record: Record) -> list[Finding]:
    """Why a seal commit that is not an ancestor of the measured commit shows no order, and
    the measuring code that differs between the two, each by their real order: sealed after
    the data were taken (the measured commit is the seal's ancestor), or neither descending
    from the other."""
    after = record.history.is_ancestor(head, seal)
    found = [Finding(Rule.SEALED_AFTER_DATA if after else Rule.SEAL_UNRELATED, seal, head)]
    if changed := _code_between(seal, head, prov, record):
        found.append(Finding(Rule.CODE_CHANGED_BEFORE_SEAL if after else
                             Rule.CODE_DIFFERS_FROM_SEAL, seal, head, tuple(changed)))
    return found


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


def order_findings(entry: dict[str, Any], judged: "Judged", record: Record
                   ) -> tuple[list[Finding], str | None]:
    """What keeps a sealed entry from provably preceding a dataset's measurement, and the
    entry's seal commit (None where no commit carries it)."""
    found: list[Finding] = []
    commit, prov, head = record.commit(entry), judged.prov, judged.head
    measured = measured_at(prov)
    if measured is None:
        return [Finding(Rule.NO_MEASUREMENT_TIME)], commit
    sealed = ledger.sealed_time(entry)
    if sealed is None:
        found.append(Finding(Rule.SEALED_AT_AMBIGUOUS, repr(entry["sealed_at"])))
    elif sealed > measured:
        found.append(Finding(Rule.SEALED_AFTER_MEASUREMENT, entry["sealed_at"], prov["utc"]))
    if commit is None:
        found.append(Finding(Rule.NO_SEAL_COMMIT if gitinfo.has_history() else
                             Rule.NO_HISTORY))
    elif not head:
        found.append(Finding(Rule.NO_GIT_HEAD))
    elif not record.history.is_ancestor(commit, head):
        found += _unordered(commit, head, prov, record)
    elif record.history.commit_time(commit) > measured.timestamp():
        found.append(Finding(Rule.SEAL_COMMIT_AFTER_MEASUREMENT, commit))
    return found + (code_findings(prov, head, record) if head else []), commit


def code_findings(prov: Provenance, head: str, record: Record) -> list[Finding]:
    """The data must have been decoded by the code of the commit they name: a decode edited
    in a dirty tree would otherwise turn any verdict."""
    if "code_tree" not in prov:  # datasets from before the code was recorded
        return [Finding(Rule.DIRTY_UNRECORDED)] if prov.get("git_dirty") is not False else []
    if not codetree.valid(prov["code_tree"]):
        return [Finding(Rule.CODE_TREE_UNREADABLE)]
    if head not in record.trees:
        record.trees[head] = codetree.committed(head)
    differing = codetree.differences(prov["code_tree"], record.trees[head])
    if not differing:
        return []  # None: the commit is unknown, said above
    return [Finding(Rule.CODE_NOT_COMMITS, head, files=tuple(differing))]
