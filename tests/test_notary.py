"""The notary's types: the rules stay in step with docs/trust.md's attack table, findings
fold into a verdict by one precedence, and are said in words in one place."""

import json
import re
from pathlib import Path

import pytest

from probelab.errors import Exit
from probelab.notary import words
from probelab.notary.problems import Malformed, at, from_wire, rules
from probelab.notary.rules import Finding, Outcome, Rule
from probelab.notary.verdicts import fold, judgement, sweep_exit

TRUST = Path(__file__).resolve().parents[1] / "docs" / "trust.md"


def _named_rows() -> dict[Rule, set[int]]:
    """{rule: the `#` of every attack-table row that names it}."""
    named: dict[Rule, set[int]] = {}
    for line in TRUST.read_text().splitlines():
        if row := re.match(r"\| (\d+) \|", line):
            for name in re.findall(r"`Rule\.([A-Z_]+)`", line):
                named.setdefault(Rule[name], set()).add(int(row[1]))
    return named


def test_every_rule_lists_exactly_the_trust_rows_that_name_it() -> None:
    """A rule no row names, a row naming no such rule (Rule[...] raises), or a rule whose
    rows are not the ones naming it: the table and the enum have drifted apart."""
    named = _named_rows()
    assert {rule: set(rule.value.rows) for rule in Rule} == named


def test_every_rule_has_its_words() -> None:
    assert set(words.SENTENCES) == set(Rule)
    for rule in Rule:
        words.sentence(Finding(rule, "0123456789abcdef", "x", ("a.py",)))  # formats


@pytest.mark.parametrize(("rules", "scored", "outcome"), [
    ((), Outcome.CONFIRMED, Outcome.CONFIRMED),
    ((Rule.NO_CELLS, Rule.BLIND), Outcome.REFUTED, Outcome.REFUTED),  # notes keep the scores'
    ((Rule.NO_GIT_HEAD,), Outcome.CONFIRMED, Outcome.POST_HOC),
    ((Rule.SIMULATED, Rule.NO_GIT_HEAD), Outcome.CONFIRMED, Outcome.NOT_EVIDENCE),
    ((Rule.NO_GIT_HEAD, Rule.SELF_CONTRADICTING, Rule.SIMULATED), None, Outcome.TAMPERED),
])
def test_findings_fold_by_one_precedence(rules, scored, outcome) -> None:
    assert fold([Finding(r) for r in rules], scored) == outcome


def test_the_exit_codes_are_the_documented_ones() -> None:
    """docs/trust.md: 0 confirmed, 1 refuted or not evidence, 3 integrity failure; a sweep's
    checks exit 0 on a refuted rival (a result), 1 on simulated data, 3 on any that does not
    count."""
    assert [o.exit for o in Outcome] == [Exit.OK, Exit.REFUTED, Exit.INTEGRITY, Exit.INTEGRITY,
                                         Exit.REFUTED]
    assert sweep_exit([Outcome.CONFIRMED, Outcome.REFUTED], simulated=False) == Exit.OK
    assert sweep_exit([], simulated=True) == Exit.REFUTED
    assert sweep_exit([Outcome.NOT_EVIDENCE, Outcome.POST_HOC], simulated=True) == Exit.INTEGRITY


def test_a_datasets_own_findings_are_said_as_one_reason_first() -> None:
    """The interface's words, pinned: what the verdict file says of a dataset that is not
    what its sweep saved, and of code that changed between unrelated commits."""
    seal, head = "a" * 40, "b" * 40
    said = judgement({}, [Finding(Rule.PINNED_AS_ANOTHER, "data/p/t/b.nc", files=("a.nc",)),
                          Finding(Rule.REWRITTEN, detail="changed")])
    assert (said.outcome, said.doc["verdict"]) == (Outcome.TAMPERED, "TAMPERED")
    assert said.doc["reasons"] == ["dataset: its pin is not its own (also pinned: a.nc): a copy "
                                   "is not a replication; changed (its provenance fields above "
                                   "are as recorded, not vouched for)"]
    assert words.sentence(Finding(Rule.PINNED_AS_ANOTHER, "data/p/t/b.nc")) == \
        "its pin is not its own (also pinned: data/p/t/b.nc): a copy is not a replication"
    assert words.reasons([Finding(Rule.SEAL_UNRELATED, seal, head),
                          Finding(Rule.CODE_DIFFERS_FROM_SEAL, seal, head, ("p.py",))]) == [
        f"seal commit {seal[:12]} is not an ancestor of the measured commit {head[:12]}",
        "the probe's code differs between the measured commit and the seal commit (neither "
        "descends from the other): 1 file (p.py)"]


def test_a_verify_problem_crosses_processes_as_plain_lists_and_back() -> None:
    """A problem's wire form is plain lists (JSON, a fleet node's reply) that parse back to
    the same findings; a form that is not one, or a rule this lab does not know, is refused,
    never trusted."""
    problem = at("data/p/t/a.nc", Finding(Rule.DATASET_UNREADABLE, detail="truncated"),
                 Finding(Rule.PINNED_AS_ANOTHER, "data/p/t/b.nc", files=("x", "y")))
    assert json.loads(json.dumps(problem.wire())) == problem.wire()
    assert from_wire(json.loads(json.dumps(problem.wire()))) == problem
    seal = at("preregistrations/p/h.toml", Finding(Rule.SEAL_EDITED), seal=True)
    assert from_wire(seal.wire()) == seal and rules([problem, seal]) == {
        Rule.DATASET_UNREADABLE, Rule.PINNED_AS_ANOTHER, Rule.SEAL_EDITED}
    for bad in (None, "words", [], ["a", False, []], ["a", "no", [["SEAL_EDITED", "", "",
                                                                      []]]],
                ["a", False, [["TRUST_ME", "", "", []]]], ["a", False, [["Rule", "", "", []]]],
                ["a", False, [["SEAL_EDITED", "", 3, []]]],
                ["a", False, [["SEAL_EDITED", "", "", [7]]]],
                ["a", False, [["SEAL_EDITED", "", ""]]]):
        with pytest.raises(Malformed):
            from_wire(bad)


def test_a_verify_problem_is_said_where_it_is_in_one_line() -> None:
    """The interface's words for verify's problems, pinned: where, then each finding (a
    sealed file's row in its own words), and the archive's records without a place."""
    assert words.said(at("data/p/t/a.nc", Finding(Rule.DATASET_UNREADABLE, detail="cut"),
                         Finding(Rule.UNPINNED, "data/MANIFEST.jsonl"))) == \
        ("data/p/t/a.nc: truncated or unreadable (cut); no pin in data/MANIFEST.jsonl names it: "
         "a measured dataset counts only as the sweep saved it (added by hand, copied or "
         "renamed?)")
    assert words.said(at("p/h.toml", Finding(Rule.SEAL_EDITED), seal=True)) == \
        "seal p/h.toml: file no longer hashes to its seal (edited after sealing)"
    assert words.said(at("", Finding(Rule.LEDGER_BROKEN, detail="line 3"))) == "ledger: line 3"
    assert words.said(at("h", Finding(Rule.VERDICT_FLIPPED, "A on a but B on b (p)",
                                      files=("1", "2", "3", "4")))) == \
        ("h: A on a but B on b (p), decoded by code that differs in 4 files (1, 2, 3, ...): a "
         "decode change that flips a sealed verdict needs a new probe version")
