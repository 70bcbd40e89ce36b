"""Findings folded into a verdict, in one place: which outcome they force, the verdict
document with its reasons in words, and the exit code a run of checks calls for."""

from collections.abc import Iterable
from dataclasses import dataclass

from probelab.errors import Exit
from probelab.notary import words
from probelab.notary.rules import Finding, Outcome, Rule
from probelab.records import Verdict

# a finding's outcome overrides the scores' verdict, the first of these found first
_PRECEDENCE = (Outcome.TAMPERED, Outcome.NOT_EVIDENCE, Outcome.POST_HOC)


def fold(findings: Iterable[Finding], scored: Outcome | None = None) -> Outcome:
    """The verdict `findings` give on top of the scores' verdict `scored` (None where nothing
    was scored: then a finding must force one)."""
    forced = {f.rule.outcome for f in findings}
    outcome = next((o for o in _PRECEDENCE if o in forced), scored)
    assert outcome is not None, "nothing scored and nothing found"
    return outcome


@dataclass(frozen=True)
class Judgement:
    """A check's verdict: its outcome, what was found, and the verdict document (what a
    verdict file records: the findings in words under `reasons`)."""

    outcome: Outcome
    findings: tuple[Finding, ...]
    doc: Verdict

    @property
    def rules(self) -> set[Rule]:
        return {f.rule for f in self.findings}


def judgement(doc: Verdict, findings: Iterable[Finding], scored: Outcome | None = None
              ) -> Judgement:
    """`doc` (hypothesis, dataset, and any scores) given its verdict and reasons."""
    findings = tuple(findings)
    outcome = fold(findings, scored)
    return Judgement(outcome, findings, doc | {"verdict": outcome.value,
                                               "reasons": words.reasons(findings)})


def sweep_exit(outcomes: Iterable[Outcome], simulated: bool) -> Exit:
    """The exit code of every applicable sealed hypothesis checked on a dataset a sweep saved:
    3 where one is TAMPERED or POST-HOC; 1 for simulated data (not evidence, as `check`
    says); else 0, refuted rivals included (results, not failures)."""
    if any(o.exit == Exit.INTEGRITY for o in outcomes):
        return Exit.INTEGRITY
    return Exit.REFUTED if simulated else Exit.OK
