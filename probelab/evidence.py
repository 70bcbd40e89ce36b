"""The evidence gate: the code object must hold the instruction under test, none of its
near relatives, and operands that reach it from memory the way the probe declares.

Dataflow is traced backwards through straight-line code from the instruction to the loads
that feed it. Probe kernels are straight-line by design (one bounds check, then the cell),
so the last write of a register before the instruction is the one that reaches it.
"""

import re
from dataclasses import asdict, dataclass, field

from probelab.isa import Instruction, Isa
from probelab.probe import Evidence

__all__ = ["EvidenceReport", "Isa", "OperandTrace", "gate", "trace_operand"]

MAX_DEPTH = 8


@dataclass
class OperandTrace:
    operand: str
    requirement: str
    reaches: str  # "unmodified", "from_memory", "not_from_memory"
    path: list[str] = field(default_factory=list)  # defining instructions, nearest first

    @property
    def ok(self) -> bool:
        return {
            "any": True,
            "from_memory": self.reaches in ("unmodified", "from_memory"),
            "unmodified": self.reaches == "unmodified",
        }[self.requirement]


@dataclass
class EvidenceReport:
    kernel: str
    instruction: str | None  # None: no instruction claimed; only forbidden ones are checked
    lowered: str | None = None  # the declared lowering the matches below show, if any
    matches: list[str] = field(default_factory=list)
    forbidden_found: list[str] = field(default_factory=list)
    # per declared companion: {pattern, place, count, found (instruction texts)}
    companions: list[dict] = field(default_factory=list)
    operands: list[OperandTrace] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_dict(self) -> dict:
        return asdict(self) | {"ok": self.ok}


def _definition(isa: Isa, code: list[Instruction], index: int, reg: str) -> int | None:
    for j in range(index - 1, -1, -1):
        if reg in isa.defines(code[j]):
            return j
    return None


def _reaches_load(isa: Isa, code: list[Instruction], index: int, reg: str, depth: int,
                  path: list[str]) -> bool:
    j = _definition(isa, code, index, reg)
    if j is None or depth > MAX_DEPTH:
        return False
    path.append(code[j].text)
    if isa.is_load(code[j]):
        return True
    return any(_reaches_load(isa, code, j, r, depth + 1, path)
               for src in code[j].operands[1:] for r in isa.registers(src))


def trace_operand(isa: Isa, code: list[Instruction], index: int, operand: str,
                  requirement: str, span: int = 1) -> OperandTrace:
    """How an operand (every register it names, or `span` registers from the one it names)
    reaches instruction `index`."""
    regs = isa.registers(operand)
    if len(regs) == 1 and span > 1:
        bank, first = regs[0][0], int(regs[0][1:])
        regs = [f"{bank}{first + k}" for k in range(span)]
    if not regs:
        return OperandTrace(operand, requirement, "not_from_memory", ["not a register"])
    defs = [_definition(isa, code, index, r) for r in regs]
    if all(j is not None and isa.is_load(code[j]) for j in defs):
        loads = sorted({code[j].text for j in defs if j is not None})
        if any(j is not None and isa.narrow.search(code[j].mnemonic) for j in defs):
            return OperandTrace(operand, requirement, "from_memory", ["truncated by", *loads])
        return OperandTrace(operand, requirement, "unmodified", loads)
    path: list[str] = []
    found = all(_reaches_load(isa, code, index, r, 0, path) for r in regs)
    return OperandTrace(operand, requirement, "from_memory" if found else "not_from_memory", path)


def gate(kernel: str, evidence: Evidence, code: list[Instruction], isa: Isa) -> EvidenceReport:
    report = EvidenceReport(kernel, evidence.instruction, evidence.lowered)
    claimed = evidence.instruction
    hits = [] if claimed is None else [  # None: nothing claimed, the histogram is the record
        i for i, insn in enumerate(code)
        if re.fullmatch(claimed, insn.mnemonic) or re.fullmatch(claimed, insn.base)]
    report.matches = [code[i].text for i in hits]
    for pattern in evidence.forbidden:
        report.forbidden_found += [c.text for c in code if re.fullmatch(pattern, c.mnemonic)]
    if claimed is not None and not hits:
        report.problems.append(f"{kernel}: no instruction matching {evidence.instruction!r}")
    elif hits and evidence.count is not None and len(hits) != evidence.count:
        report.problems.append(
            f"{kernel}: {len(hits)} instructions match {evidence.instruction!r}, "
            f"expected {evidence.count}")
    if report.forbidden_found:
        report.problems.append(f"{kernel}: forbidden relative present: {report.forbidden_found}")
    if evidence.modifiers is not None:
        want = sorted(evidence.modifiers)
        report.problems += [f"{kernel}: {code[i].text!r} carries modifiers "
                            f"{sorted(code[i].modifiers)}, not {want}"
                            for i in hits if sorted(code[i].modifiers) != want]
    if hits:
        _companions(report, evidence, code, hits[-1])
    for i in hits:
        sources = code[i].operands[1:]
        if len(sources) < len(evidence.operands):  # a requirement with no operand holds nothing
            report.problems.append(
                f"{kernel}: {code[i].text!r} has {len(sources)} source operands, fewer than "
                f"the {len(evidence.operands)} its evidence declares")
        spans = (*evidence.spans, *(1,) * max(0, len(evidence.operands) - len(evidence.spans)))
        for operand, requirement, span in zip(sources, evidence.operands, spans, strict=False):
            trace = trace_operand(isa, code, i, operand, requirement, span)
            report.operands.append(trace)
            if not trace.ok:
                report.problems.append(
                    f"{kernel}: operand {operand} of {code[i].text!r} must be {requirement}, "
                    f"but is {trace.reaches} (via {trace.path})")
    return report


def _companions(report: EvidenceReport, evidence: Evidence, code: list[Instruction],
                last: int) -> None:
    """Each declared companion of a lowering, counted before or after the last match."""
    for pattern, place, count in evidence.companions:
        span = code[:last] if place == "before" else code[last + 1:]
        found = [c.text for c in span if re.fullmatch(pattern, c.mnemonic)]
        report.companions.append({"pattern": pattern, "place": place, "count": count,
                                  "found": found})
        if (not found) if count is None else len(found) != count:
            report.problems.append(
                f"{report.kernel}: {len(found)} instructions matching {pattern!r} "
                f"{place} the last {report.instruction!r}, expected "
                f"{'at least 1' if count is None else count}")
