"""What the trust core can find, as types: the `Outcome` a verdict is, the `Rule` each
finding falls under (keyed to the rows of docs/trust.md's attack table that try it;
tests/test_notary.py keeps the two in step) and a `Finding`. Most rules judge a verdict
(check); some judge a sealed file's row, a retirement or the archive (prereg, verify) alone."""

from dataclasses import dataclass
from enum import Enum, StrEnum

from probelab.errors import Exit


class Outcome(StrEnum):
    """A verdict, and the exit code `probelab check` gives it."""

    CONFIRMED = "CONFIRMED"
    REFUTED = "REFUTED"
    TAMPERED = "TAMPERED"
    POST_HOC = "POST-HOC"
    NOT_EVIDENCE = "NOT-EVIDENCE"

    @property
    def exit(self) -> Exit:
        return {Outcome.CONFIRMED: Exit.OK, Outcome.REFUTED: Exit.REFUTED,
                Outcome.NOT_EVIDENCE: Exit.REFUTED}.get(self, Exit.INTEGRITY)

    @property
    def counts(self) -> bool:
        """Whether it is a result (CONFIRMED or REFUTED), not a refusal to count one."""
        return self in (Outcome.CONFIRMED, Outcome.REFUTED)


@dataclass(frozen=True)
class Row:
    """A rule's place in docs/trust.md: the attack table's rows (their `#`) that try it, and
    the outcome it forces on a verdict (None: none, for a note that leaves the scores'
    verdict, or for a fault that only a seal row or `verify` judges)."""

    rows: tuple[int, ...]
    outcome: Outcome | None
    what: str  # one line: what the rule catches (it also keeps each member apart)


_T, _P, _N = Outcome.TAMPERED, Outcome.POST_HOC, Outcome.NOT_EVIDENCE


class Rule(Enum):
    """Each way a verdict, a seal or a retirement can fail to hold, or a verdict be
    qualified, under the rows of docs/trust.md's attack table that try it (grouped by the
    statement of "What a counted verdict establishes" each enforces)."""

    # 1. the hypothesis is the one that was sealed
    SEAL_EDITED = Row((1,), _T, "the file no longer hashes to its ledger entry")
    SEAL_MISSING = Row((1,), _T, "the sealed file is gone")
    SEAL_REPLACED = Row((22,), _T, "the sealed file is no regular file now (a link, a FIFO)")
    SEAL_NO_LONGER_EVALUATES = Row((1,), _T, "an observable gone without being retired")
    SEALED_FOR_EARLIER_VERSION = Row((1,), None, "its observables retired by a newer probe")
    LEDGER_BROKEN = Row((2, 10, 34), _T, "the ledger's chain or its seal commits do not hold")
    TABLE_CHANGED = Row((1, 29), _T, "the prediction no longer evaluates to the sealed table")
    MISFIT = Row((1,), _T, "the prediction's tables do not fit the dataset's grid")
    # 2. the seal came before the data
    NO_MEASUREMENT_TIME = Row((3,), _P, "the dataset records no time with an offset")
    SEALED_AT_AMBIGUOUS = Row((19,), _P, "the ledger's sealed_at has no offset")
    SEALED_AFTER_MEASUREMENT = Row((3,), _P, "sealed after the measurement, by the ledger")
    NO_SEAL_COMMIT = Row((3,), _P, "no commit carries the seal (amended, rebased away)")
    NO_HISTORY = Row((23,), _P, "a copy without git history of its own")
    NO_GIT_HEAD = Row((3,), _P, "the dataset names no full commit id")
    SEALED_AFTER_DATA = Row((3,), _P, "the measured commit is the seal commit's ancestor")
    SEAL_UNRELATED = Row((3, 10), _P, "neither commit descends from the other")
    SEAL_COMMIT_AFTER_MEASUREMENT = Row((3,), _P, "the seal commit's time is later")
    CODE_CHANGED_BEFORE_SEAL = Row((35,), _P, "measuring code changed between data and seal")
    CODE_DIFFERS_FROM_SEAL = Row((35,), _P, "measuring code differs from unrelated seal's")
    # ... and, for a law read from data (`fitted_from`), on a stimulus it has not seen
    SEEN_STIMULUS = Row((40,), _P, "a fitted law confirmed on the stimulus it was read from")
    # 3. the data are what the sweep wrote, where it wrote them
    CONTENT_EDITED = Row((4,), _T, "values or provenance no longer hash as saved")
    CONTENT_HASH_REMOVED = Row((4,), _T, "a dataset that records it without its content hash")
    MISPLACED = Row((11, 22), _T, "not in data/PROBE/TARGET/ of its own provenance")
    MISNAMED = Row((30,), _T, "a static dataset not named after its toolchain")
    MANIFEST_BROKEN = Row((34,), _T, "the manifest's chain does not hold")
    UNPINNED = Row((11,), _T, "no pin names it")
    PINNED_AS_ANOTHER = Row((11, 22), _T, "its content pinned elsewhere too, or its path twice")
    BYTES_NOT_PINNED = Row((12, 33), _T, "its bytes are not the ones its pin names")
    CONTENT_NOT_PINNED = Row((12,), _T, "its contents are not the ones its pin names")
    REWRITTEN = Row((4, 11), _T, "changed in git after the commit that added it")
    MANIFEST_REWRITTEN = Row((11,), _T, "the manifest's history lost or changed lines")
    # 4. the data are a measurement
    SELF_CONTRADICTING = Row((13, 22, 37), _T, "simulated: false, yet what ran says otherwise")
    SIMULATED = Row((4,), _N, "simulated data")
    # 5. the data were decoded by the code of the commit they name
    DIRTY_UNRECORDED = Row((14,), _P, "a dirty tree and no record of the code that ran")
    CODE_TREE_UNREADABLE = Row((22,), _P, "the record of the code that ran is unreadable")
    CODE_NOT_COMMITS = Row((14,), _P, "the code that ran is not the named commit's")
    # notes on a counted verdict
    NO_CELLS = Row((37,), None, "a kernel with no cells to score")
    BLIND = Row((27,), None, "the sweep recorded the stimulus blind to a sealed rival")
    THIN = Row((38,), None, "the sweep recorded the stimulus thin against a sealed rival")
    # a retirement that does not hold (probelab.retirement): a verify problem, and the
    # dataset is checked in full; subject: the retired dataset, files: a successor
    RETIRED_TWICE = Row((33,), None, "one dataset retired twice")
    RETIRED_UNPINNED = Row((33,), None, "no pin names the retired dataset")
    RETIRED_FILE_GONE = Row((33,), None, "the retired dataset's file is gone")
    RETIRED_UNREADABLE = Row((33,), None, "the retired dataset's provenance cannot be read")
    SUCCESSOR_NOT_PINNED = Row((33,), None, "a successor that is no other pinned dataset")
    SUCCESSOR_ELSEWHERE = Row((33,), None, "a successor of another probe or target")
    SUCCESSOR_UNREADABLE = Row((33,), None, "a successor whose provenance cannot be read")
    SUCCESSOR_SAME_VERSION = Row((33,), None, "a successor of the same probe version")
    SUCCESSOR_EARLIER = Row((33,), None, "a successor measured before the retired dataset")
    SUCCESSOR_OLDER_VERSION = Row((33,), None, "a successor of an older probe version")
    # verify's own judgements of the archive (probelab.verify, verify_unit, fleet_verify), each
    # a problem there (probelab.notary.problems: at the dataset, check or record it is about)
    # - the archive's records and its folder
    HISTORY_UNUSABLE = Row((10,), None, "the history cannot be read as committed")
    ARCHIVE_LINK = Row((11,), None, "a symbolic link in the archive")
    ARCHIVE_IS_LINK = Row((22,), None, "the archive folder itself a symbolic link")
    RETIREMENTS_BROKEN = Row((33,), None, "the retirement list cannot be read")
    # - its pins
    PINNED_TWICE = Row((11, 22, 34), None, "one content, or one path, pinned more than once")
    PIN_MALFORMED = Row((22,), None, "a pin that names no dataset of the archive")
    PIN_UNCOMMITTED = Row((22,), None, "a pin committed without its dataset")
    PINNED_FILE_GONE = Row((11,), None, "a pinned dataset deleted")
    # - a dataset in it
    DATASET_UNREADABLE = Row((6,), None, "a file of the archive that is no dataset")
    PINS_UNKNOWN = Row((6,), None, "an unreadable file whose pin cannot be looked up")
    DATASET_REFUSED = Row((16, 19), None, "a dataset refused before its values are read")
    SIMULATED_IN_ARCHIVE = Row((4,), None, "a simulated dataset among measurements")
    COPY_OF_RUN = Row((34,), None, "the same values, code objects and run nonce: a copy")
    # - what its probe's facts and its tools say
    RETIRED_LIVE = Row((15,), None, "data of a probe version that observe what it retires")
    PROBE_FACTS_UNREADABLE = Row((37,), None, "the probe facts a dataset records do not read")
    TOOL_NOT_PACKAGED = Row((34,), None, "a tool that is not its package's file")
    TOOLS_DIFFER = Row((34,), None, "one toolchain name and release, tools of other bytes")
    CHECK_REFUSED = Row((37,), None, "a check that cannot be made (its probe or file refuses)")
    # - its recorded verdicts
    VERDICT_FILE_NOT_COUNTING = Row((20,), None, "a recorded verdict that does not count")
    VERDICT_FILE_DIFFERS = Row((6,), None, "a recorded verdict the data no longer give")
    VERDICT_FILE_UNREADABLE = Row((6,), None, "a recorded verdict file that does not read")
    VERDICT_FILE_DETAILS = Row((6,), None, "a recorded verdict file differing in its details")
    STRAY_VERDICT = Row((20,), None, "a recorded verdict no sealed hypothesis reproduces")
    # - across measurements, and a fleet node's word
    VERDICT_FLIPPED = Row((14,), None, "a sealed verdict flipped by a change of decode")
    OTHER_BYTES = Row((33,), None, "a fleet node that judged other bytes than the driver's")

    @property
    def outcome(self) -> Outcome | None:
        return self.value.outcome

    def __repr__(self) -> str:
        return f"Rule.{self.name}"


@dataclass(frozen=True)
class Finding:
    """One thing a check found: the rule, what it is about (a commit, a kernel, a time, a
    retired dataset; empty where the verdict or row says which), and what it saw (a time, a
    would-be verdict, a lower layer's account). `files` lists files where the rule names
    some (changed code, other pins, a successor)."""

    rule: Rule
    subject: str = ""
    detail: str = ""
    files: tuple[str, ...] = ()


# the rules a dataset's own integrity is judged by (notary.integrity), said together as one
# reason of a verdict: nothing else of it is believed
OF_THE_DATASET = frozenset({
    Rule.CONTENT_EDITED, Rule.CONTENT_HASH_REMOVED, Rule.MISPLACED, Rule.MISNAMED,
    Rule.MANIFEST_BROKEN, Rule.UNPINNED, Rule.PINNED_AS_ANOTHER, Rule.BYTES_NOT_PINNED,
    Rule.CONTENT_NOT_PINNED, Rule.REWRITTEN, Rule.MANIFEST_REWRITTEN, Rule.SELF_CONTRADICTING})
