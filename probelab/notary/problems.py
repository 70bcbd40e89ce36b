"""`verify`'s problems as findings: where each is (`Problem.at`) and what was found there,
said as one line only at the interface (probelab.notary.words.said). Unit results cross
processes and fleet nodes as JSON, so a problem has a wire form (lists of plain values) and
is parsed back from it: a form that is not one, or a rule this lab does not know, is
refused, never trusted."""

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from probelab.notary.rules import Finding, Rule

Wire = list[Any]  # [at, seal, [[rule name, subject, detail, [file, ...]], ...]]


@dataclass(frozen=True)
class Problem:
    """One problem `verify` reports: where it is (a dataset, a check "DATASET × HYPOTHESIS",
    a sealed file or a record of the archive; empty where the findings say which), and what
    was found there, said together as one line; `seal`: found by a sealed file's own row
    (`prereg.seal_findings`), said in that row's words."""

    at: str
    findings: tuple[Finding, ...]
    seal: bool = False

    @property
    def rules(self) -> frozenset[Rule]:
        return frozenset(f.rule for f in self.findings)

    def wire(self) -> Wire:
        return [self.at, self.seal, [[f.rule.name, f.subject, f.detail, list(f.files)]
                                     for f in self.findings]]


def at(where: str, *findings: Finding, seal: bool = False) -> Problem:
    """A problem at `where`."""
    assert findings, "a problem finds something"
    return Problem(where, findings, seal)


def rules(problems: Iterable[Problem]) -> set[Rule]:
    """Every rule among `problems`."""
    return {rule for p in problems for rule in p.rules}


class Malformed(ValueError):
    """A problem's wire form that is not one (or names a rule this lab does not know)."""


def _finding(raw: object) -> Finding:
    if not (isinstance(raw, list) and len(raw) == 4 and all(isinstance(v, str)
                                                             for v in raw[:3])
            and isinstance(raw[3], list) and all(isinstance(f, str) for f in raw[3])):
        raise Malformed("a finding that is not [rule, subject, detail, [files]]")
    if raw[0] not in Rule.__members__:
        raise Malformed(f"an unknown rule {raw[0][:40]!r}")
    return Finding(Rule[raw[0]], raw[1], raw[2], tuple(raw[3]))


def from_wire(raw: object) -> Problem:
    """A problem parsed back from its wire form (Malformed where it is not one)."""
    if not (isinstance(raw, list) and len(raw) == 3 and isinstance(raw[0], str)
            and isinstance(raw[1], bool) and isinstance(raw[2], list) and raw[2]):
        raise Malformed("a problem that is not [at, seal, [finding, ...]]")
    return Problem(raw[0], tuple(map(_finding, raw[2])), raw[1])
