"""The evidence gate: the code object must hold the instruction under test, none of its
near relatives, and operands that reach it from memory the way the probe declares.

Dataflow is traced backwards through straight-line code from the instruction to the loads
that feed it. Probe kernels are straight-line by design (one bounds check, then the cell),
so the last write of a register before the instruction is the one that reaches it.
"""

import re
from dataclasses import asdict, dataclass, field

from probelab.disasm import Instruction
from probelab.probe import Evidence

MAX_DEPTH = 8


@dataclass(frozen=True)
class Isa:
    """What the gate must know of an ISA's text: register names, loads, non-writing opcodes."""

    register: re.Pattern[str]
    zero: str
    loads: re.Pattern[str]  # loads from memory the stimulus lives in
    no_destination: re.Pattern[str]

    def width(self, mnemonic: str) -> int:
        if ".128" in mnemonic:
            return 4
        return 2 if (".64" in mnemonic or "WIDE" in mnemonic) else 1


SASS = Isa(
    register=re.compile(r"^[-|!~]*(R\d+|RZ)(?:\.\w+)*$"),
    zero="RZ",
    loads=re.compile(r"^(LDG|LD)$"),
    no_destination=re.compile(r"^(ST|STG|STS|STL|RED|BRA|EXIT|RET|BAR|MEMBAR|NOP|CALL|JMP)$"),
)


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
    instruction: str
    matches: list[str] = field(default_factory=list)
    forbidden_found: list[str] = field(default_factory=list)
    operands: list[OperandTrace] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_dict(self) -> dict:
        return asdict(self) | {"ok": self.ok}


def _register(isa: Isa, operand: str) -> str | None:
    m = isa.register.match(operand)
    return m.group(1) if m else None


def _writes(isa: Isa, insn: Instruction, reg: str) -> bool:
    if not insn.operands or isa.no_destination.match(insn.base):
        return False
    dest = _register(isa, insn.operands[0])
    if dest is None or dest == isa.zero:
        return False
    first = int(dest[1:])
    return reg != isa.zero and first <= int(reg[1:]) < first + isa.width(insn.mnemonic)


def _definition(isa: Isa, code: list[Instruction], index: int, reg: str) -> int | None:
    for j in range(index - 1, -1, -1):
        if _writes(isa, code[j], reg):
            return j
    return None


def _reaches_load(isa: Isa, code: list[Instruction], index: int, reg: str, depth: int,
                  path: list[str]) -> bool:
    j = _definition(isa, code, index, reg)
    if j is None or depth > MAX_DEPTH:
        return False
    path.append(code[j].text)
    if isa.loads.match(code[j].base):
        return True
    for src in code[j].operands[1:]:
        r = _register(isa, src)
        if r and r != isa.zero and _reaches_load(isa, code, j, r, depth + 1, path):
            return True
    return False


def trace_operand(isa: Isa, code: list[Instruction], index: int, operand: str,
                  requirement: str) -> OperandTrace:
    reg = _register(isa, operand)
    if reg is None or reg == isa.zero:
        return OperandTrace(operand, requirement, "not_from_memory", ["not a register"])
    j = _definition(isa, code, index, reg)
    if j is not None and isa.loads.match(code[j].base) and not code[j].predicate:
        return OperandTrace(operand, requirement, "unmodified", [code[j].text])
    path: list[str] = []
    found = _reaches_load(isa, code, index, reg, 0, path)
    return OperandTrace(operand, requirement, "from_memory" if found else "not_from_memory", path)


def gate(kernel: str, evidence: Evidence, code: list[Instruction], isa: Isa) -> EvidenceReport:
    report = EvidenceReport(kernel, evidence.instruction)
    hits = [i for i, insn in enumerate(code) if re.fullmatch(evidence.instruction, insn.mnemonic)
            or re.fullmatch(evidence.instruction, insn.base)]
    report.matches = [code[i].text for i in hits]
    for pattern in evidence.forbidden:
        report.forbidden_found += [c.text for c in code if re.fullmatch(pattern, c.mnemonic)]
    if not hits:
        report.problems.append(f"{kernel}: no instruction matching {evidence.instruction!r}")
    elif evidence.count is not None and len(hits) != evidence.count:
        report.problems.append(
            f"{kernel}: {len(hits)} instructions match {evidence.instruction!r}, "
            f"expected {evidence.count}")
    if report.forbidden_found:
        report.problems.append(f"{kernel}: forbidden relative present: {report.forbidden_found}")
    for i in hits:
        sources = code[i].operands[1:]
        for operand, requirement in zip(sources, evidence.operands, strict=False):
            trace = trace_operand(isa, code, i, operand, requirement)
            report.operands.append(trace)
            if not trace.ok:
                report.problems.append(
                    f"{kernel}: operand {operand} of {code[i].text!r} must be {requirement}, "
                    f"but is {trace.reaches} (via {trace.path})")
    return report
