"""Findings in words: the one place a finding becomes the sentence a verdict file, the CLI
and `verify` show (`said`: a verify problem, as `probelab verify` prints it)."""

from collections.abc import Iterable

from probelab.gitinfo import NO_HISTORY
from probelab.notary.problems import Problem
from probelab.notary.rules import OF_THE_DATASET, Finding, Rule

_SAID = "{detail}"  # a lower layer's account, said as it said it
SENTENCES: dict[Rule, str] = {
    Rule.SEAL_EDITED: "file edited after sealing: it no longer hashes to its ledger entry",
    Rule.SEAL_MISSING: "sealed file is missing",
    Rule.SEAL_REPLACED: "sealed file is replaced: {detail}",
    Rule.SEAL_NO_LONGER_EVALUATES: "no longer evaluates on the probe: {detail}",
    Rule.SEALED_FOR_EARLIER_VERSION: "predicts {detail}, which {subject} no longer observes: "
                                     "sealed for an earlier version of the probe, not "
                                     "re-evaluated on its grid (datasets that observed them "
                                     "are still scored)",
    Rule.LEDGER_BROKEN: "ledger: {detail}",
    Rule.TABLE_CHANGED: "prediction no longer evaluates to the sealed table",
    Rule.MISFIT: _SAID,
    Rule.NO_MEASUREMENT_TIME: "the dataset records no usable measurement time (UTC, with "
                              "offset)",
    Rule.SEALED_AT_AMBIGUOUS: "the ledger's sealed_at {subject} is not an unambiguous time "
                              "(UTC, with offset)",
    Rule.SEALED_AFTER_MEASUREMENT: "sealed at {subject}, after the measurement ({detail})",
    Rule.NO_SEAL_COMMIT: "no commit carries this seal with the file as sealed (amended, "
                         "rebased away or never committed)",
    Rule.NO_HISTORY: NO_HISTORY,
    Rule.NO_GIT_HEAD: "the dataset records no git commit (as a full commit id), so the order "
                      "cannot be shown",
    Rule.SEALED_AFTER_DATA: "seal commit {subject:.12} is not an ancestor of the measured "
                            "commit {detail:.12}: it was sealed after the data were taken",
    Rule.SEAL_UNRELATED: "seal commit {subject:.12} is not an ancestor of the measured commit "
                         "{detail:.12}",
    Rule.SEAL_COMMIT_AFTER_MEASUREMENT: "seal commit {subject:.12} was made after the "
                                        "measurement",
    Rule.CODE_CHANGED_BEFORE_SEAL: "the probe's code changed between the measurement and the "
                                   "seal: {n} file{s} ({listed})",
    Rule.CODE_DIFFERS_FROM_SEAL: "the probe's code differs between the measured commit and "
                                 "the seal commit (neither descends from the other): {n} "
                                 "file{s} ({listed})",
    Rule.SEEN_STIMULUS: "read from {n} dataset{s} ({listed}), and {detail}: a law read from "
                        "data is confirmed only on a stimulus it has not seen",
    Rule.CONTENT_EDITED: _SAID,
    Rule.CONTENT_HASH_REMOVED: _SAID,
    Rule.MISPLACED: "it sits at {subject}/, but its provenance says it is a {detail}: a "
                    "dataset lives at data/PROBE/TARGET/NAME.nc of its own probe and target",
    Rule.MISNAMED: "its name is {subject}, but its provenance says it was built by {detail}: "
                   "a static dataset is named TIME.TOOLCHAIN.nc after its toolchain",
    Rule.MANIFEST_BROKEN: _SAID,
    Rule.UNPINNED: "no pin in {subject} names it: a measured dataset counts only as the sweep "
                   "saved it (added by hand, copied or renamed?)",
    Rule.PINNED_AS_ANOTHER: "its pin is not its own (also pinned: {every}): a copy is not a "
                            "replication",
    Rule.BYTES_NOT_PINNED: "its bytes differ from the file its pin names (edited after the "
                           "sweep)",
    Rule.CONTENT_NOT_PINNED: "its contents differ from those its pin names (edited after the "
                             "sweep)",
    Rule.REWRITTEN: _SAID,
    Rule.MANIFEST_REWRITTEN: _SAID,
    Rule.SELF_CONTRADICTING: _SAID,
    Rule.SIMULATED: "simulated data (would be {detail}); never evidence",
    Rule.DIRTY_UNRECORDED: "measured from a tree with uncommitted changes (git_dirty), and "
                           "the dataset records no code that would show they could not matter",
    Rule.CODE_TREE_UNREADABLE: "the dataset's record of the code that ran (code_tree) is "
                               "unreadable",
    Rule.CODE_NOT_COMMITS: "the code that ran is not commit {subject:.12}'s: {n} files differ "
                           "({listed})",
    Rule.NO_CELLS: "kernel {subject}: no cells to score",
    Rule.BLIND: "blind to {detail}: the sweep recorded that this stimulus cannot tell them "
                "apart, so it confirms neither against the other",
    Rule.THIN: "thin against {detail}: the sweep recorded that this stimulus tells them apart "
               "on fewer cells than their floor, so one flipped cell could swap the verdicts",
    Rule.RETIRED_TWICE: "retired twice ({detail})",
    Rule.RETIRED_UNPINNED: "retired in {detail}, but no pin names it: only a pinned "
                           "measurement retires",
    Rule.RETIRED_FILE_GONE: "retired, but the file is gone",
    Rule.RETIRED_UNREADABLE: "retired, but its provenance cannot be read ({detail})",
    Rule.SUCCESSOR_NOT_PINNED: "retired for {every}, which is not another pinned dataset",
    Rule.SUCCESSOR_ELSEWHERE: "retired for {every}, a dataset of another probe or target",
    Rule.SUCCESSOR_UNREADABLE: "retired for {every}, whose provenance cannot be read "
                               "({detail})",
    Rule.SUCCESSOR_SAME_VERSION: "retired for {every}, of the same probe version ({detail}): "
                                 "a re-measurement that retires is of a newer version",
    Rule.SUCCESSOR_EARLIER: "retired for {every}, which was measured before it",
    Rule.SUCCESSOR_OLDER_VERSION: "retired for {every}, of an older probe version "
                                  "({detail}): a re-measurement that retires is of a newer "
                                  "version",
    Rule.HISTORY_UNUSABLE: "history: {detail}",
    Rule.ARCHIVE_LINK: "a symbolic link in the archive (to {subject}); a dataset is the file "
                       "itself, kept in data/",
    Rule.ARCHIVE_IS_LINK: "{subject} is a symbolic link (to {detail}): the archive is the "
                          "folder itself, in git",
    Rule.PINNED_TWICE: _SAID,
    Rule.PIN_MALFORMED: _SAID,
    Rule.PIN_UNCOMMITTED: "pinned in the committed manifest, but the dataset itself is not "
                          "committed (an archive outside git is not one)",
    Rule.PINNED_FILE_GONE: "pinned in the manifest, but the file is gone; a measurement stays "
                           "in the archive, refuted or not",
    Rule.RETIREMENTS_BROKEN: _SAID,
    Rule.DATASET_UNREADABLE: "truncated or unreadable ({detail})",
    Rule.PINS_UNKNOWN: "whether a pin names it is unknown ({detail})",
    Rule.DATASET_REFUSED: _SAID,
    Rule.SIMULATED_IN_ARCHIVE: "simulated dataset among measurements",
    Rule.RETIRED_LIVE: "{subject} version {detail} declares {names} retired, yet this dataset "
                       "of that version observes them: retirement needs a newer version",
    Rule.PROBE_FACTS_UNREADABLE: _SAID,
    Rule.TOOL_NOT_PACKAGED: _SAID,
    Rule.TOOLS_DIFFER: _SAID,
    Rule.CHECK_REFUSED: _SAID,
    Rule.VERDICT_FILE_NOT_COUNTING: "a {subject} verdict is recorded, but it does not count; "
                                    "a verdict file claims a result",
    Rule.VERDICT_FILE_DIFFERS: "recorded verdict differs (it says {subject}, the data give "
                               "{detail} now)",
    Rule.VERDICT_FILE_UNREADABLE: "recorded verdict unreadable (it says None, the data give "
                                  "{detail} now)",
    Rule.VERDICT_FILE_DETAILS: "recorded verdict file differs in its details (the verdict, "
                               "{subject}, is the same; `probelab verify --write` re-records it)",
    Rule.STRAY_VERDICT: "a recorded verdict that no sealed hypothesis of its dataset "
                        "reproduces (never sealed, not applicable, or its dataset is gone): it "
                        "does not count",
    Rule.VERDICT_FLIPPED: "{subject}, decoded by code that differs in {n} files ({first}): a "
                          "decode change that flips a sealed verdict needs a new probe version",
    Rule.COPY_OF_RUN: "the same values, code objects and run nonce as {subject}: a copy, not a "
                      "replication",
    Rule.OTHER_BYTES: "node {subject} judged other bytes than the driver's file (its copy of "
                      "the archive differs)",
}


# where a sealed file's own row (`prereg verify`, verify's seal rows) says it otherwise
SEAL_ROWS: dict[Rule, str] = {
    Rule.SEAL_EDITED: "file no longer hashes to its seal (edited after sealing)",
    Rule.SEALED_AT_AMBIGUOUS: "sealed_at {subject} is not an unambiguous time",
    Rule.NO_SEAL_COMMIT: "no commit carries this seal with the file as sealed",
}


def listed(files: Iterable[str], few: int = 5) -> str:
    """The first `few` of `files`, for a one-line reason."""
    files = list(files)
    return ", ".join(files[:few]) + (", ..." if len(files) > few else "")


def seal_sentence(finding: Finding) -> str:
    """A finding in the words of a sealed file's row."""
    return sentence(finding, SEAL_ROWS.get(finding.rule))


def sentence(finding: Finding, template: str | None = None) -> str:
    """A finding in words (`template`: other words for it, where an interface has them)."""
    n = len(finding.files)
    return (template or SENTENCES[finding.rule]).format(
        subject=finding.subject, detail=finding.detail, n=n, s="s" * (n != 1),
        listed=listed(finding.files), every=", ".join(finding.files) or finding.subject,
        first=listed(finding.files, 3), names=list(finding.files))


def problem(findings: Iterable[Finding]) -> str | None:
    """Findings in one line, as `verify` and the commands that show a dataset's standing say
    them; None where there are none."""
    return "; ".join(map(sentence, findings)) or None


def reasons(findings: Iterable[Finding]) -> list[str]:
    """A verdict's reasons: each finding in words, those of the dataset's own integrity as one
    (said first: nothing else of the dataset is believed)."""
    findings = list(findings)
    own = problem(f for f in findings if f.rule in OF_THE_DATASET)
    said = [f"dataset: {own} (its provenance fields above are as recorded, not vouched for)"]
    return (said if own else []) + [sentence(f) for f in findings
                                    if f.rule not in OF_THE_DATASET]


def said(problem: Problem) -> str:
    """A verify problem in one line: where, then its findings (a sealed file's row in that
    row's words)."""
    say = seal_sentence if problem.seal else sentence
    text = "; ".join(map(say, problem.findings))
    return f"seal {problem.at}: {text}" if problem.seal else \
        f"{problem.at}: {text}" if problem.at else text


def lines(problems: Iterable[Problem]) -> list[str]:
    """Verify problems, each in its line."""
    return list(map(said, problems))
