"""A dataset's integrity: whether it is what its sweep saved, where it saved it (docs/trust.md,
statements 3 and 4), judged once from its bytes before any of its provenance is believed.
Each check gives findings (probelab.notary.rules); `Judged.problem` says them in words."""

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import xarray as xr

from probelab import dataset, gitinfo, manifest, vocabulary, written
from probelab.errors import IntegrityError, UsageError
from probelab.notary import words
from probelab.notary.rules import Finding, Rule
from probelab.paths import shown
from probelab.records import Provenance


def dataset_findings(path: Path, prov: Provenance, content: str, history: bool = True,
                     pins: list[dict[str, Any]] | None = None,
                     file_sha: str | None = None) -> list[Finding]:
    """Why a dataset is not what its sweep saved (edited, self-contradicting) or, when it
    says it is a measurement, not the archive's own (unpinned, misplaced, a copy, or, with
    `history`, changed in git or with a manifest that lost pins); empty if it is. A measured
    dataset outside the archive is a usage error: it cannot count. `pins`: the manifest,
    where the caller has already read it whole (otherwise it is read here). `content`,
    `file_sha`: the content hash the dataset's values and provenance compute to, and the
    sha256 of the bytes it was read from (worked out here where not given)."""
    if why := dataset.tampered_content(prov, content):
        return [Finding(Rule.CONTENT_EDITED if dataset.CONTENT_KEY in prov else
                        Rule.CONTENT_HASH_REMOVED, detail=why)]
    if said := dataset.contradictions(prov):
        return [Finding(Rule.SELF_CONTRADICTING, detail=why) for why in said]
    if dataset.simulated(prov):
        return []  # never evidence, wherever it is
    if manifest.archive_relative(path) is None:
        raise UsageError(f"{path} is not a file in the archive ({shown(manifest.data_dir())}/): "
                         f"a measured dataset counts only there, as {manifest.NAME} pins it "
                         "(a link to it, or a copy elsewhere, is not the dataset)")
    if found := manifest.misplacement(path, prov):
        return [found]
    try:
        entries = manifest.read() if pins is None else pins
    except IntegrityError as exc:
        return [Finding(Rule.MANIFEST_BROKEN, detail=f"{exc}")]
    if found := manifest.pin_mismatch(path, content, entries, file_sha):
        return [found]
    if not history:
        return []
    return [*(Finding(Rule.REWRITTEN, detail=why) for why in written.rewritten(path)),
            *(Finding(Rule.MANIFEST_REWRITTEN, detail=why)
              for why in written.manifest_problems())]


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
        return Standing(words.problem(dataset_findings(read.path, read.prov,
                                                       read.summary.content,
                                                       file_sha=read.file_sha256)))
    except UsageError:  # intact (checked first), but a measurement outside the archive
        return Standing(None, outside=True)


@dataclass(frozen=True)
class Judged:
    """A dataset as read (probelab.dataset.Read: its bytes once, their provenance and
    summary), and why it is not what its sweep saved (`findings`, empty where it is): judged
    once, however many hypotheses are then checked against it. Its values are opened only
    where a claim is scored that no earlier run scored on these contents."""

    read: dataset.Read
    findings: tuple[Finding, ...]
    history: bool = True  # False: git history is judged elsewhere (verify: once, archive-wide)

    @property
    def problem(self) -> str | None:
        """The findings in one line, or None where there are none."""
        return words.problem(self.findings)

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
    """A file of the archive that cannot be read as a dataset: `findings` say so, then what
    its pin says of it (none, or another file's bytes)."""

    def __init__(self, path: Path, findings: tuple[Finding, ...]) -> None:
        super().__init__(f"{shown(path)}: {words.problem(findings)}")
        self.findings = findings


def read_dataset(path: Path, pins: list[dict[str, Any]] | None = None) -> dataset.Read:
    """A dataset file read once (dataset.read_summarised). A file of the archive that is no
    dataset at all (truncated, or never one) is Unreadable, with what the manifest (`pins`,
    or read here) says of it."""
    try:
        return dataset.read_summarised(path)
    except dataset.NotADataset as exc:
        if manifest.archive_relative(path) is None:
            raise
        found = [Finding(Rule.DATASET_UNREADABLE, detail=exc.why)]
        try:
            pinned = manifest.pin_mismatch(path, None, manifest.read() if pins is None else pins)
            found += [pinned] if pinned else []
        except (IntegrityError, OSError) as broken:
            found.append(Finding(Rule.PINS_UNKNOWN, detail=f"{broken}"))
        raise Unreadable(path, tuple(found)) from None


def judge(path: Path, history: bool = True, pins: list[dict[str, Any]] | None = None) -> Judged:
    """A dataset file read once and judged (`dataset_findings`)."""
    read = read_dataset(path, pins)
    return Judged(read, tuple(dataset_findings(path, read.prov, read.summary.content, history,
                                               pins, read.file_sha256)), history)
