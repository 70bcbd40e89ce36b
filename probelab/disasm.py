"""Disassembly as data: functions of instructions, and an opcode histogram.

Parsers per vendor turn a disassembler's text into `Instruction`s; everything downstream
(histograms, the evidence gate) reads only these.
"""

import re
from collections import Counter
from dataclasses import dataclass


@dataclass(frozen=True)
class Instruction:
    offset: int
    mnemonic: str  # full, e.g. "LDG.E" or "v_perm_b32"
    operands: tuple[str, ...]
    predicate: str = ""  # e.g. "@!P2": the instruction may not execute
    text: str = ""
    modifiers: tuple[str, ...] = ()  # e.g. ("neg_lo:[1,1,0]", "clamp")

    @property
    def base(self) -> str:
        return self.mnemonic.split(".")[0]


_SASS_FUNC = re.compile(r"^\s*\.global\s+(\S+)")
_SASS_LABEL = re.compile(r"^([A-Za-z_$][\w$]*):\s*$")
_SASS_INSN = re.compile(r"/\*([0-9a-f]+)\*/\s+(.*?)\s*;")


def parse_sass(text: str) -> dict[str, list[Instruction]]:
    """Parse `nvdisasm -c` output into {function: instructions}."""
    globals_: set[str] = set()
    functions: dict[str, list[Instruction]] = {}
    current: list[Instruction] | None = None
    for line in text.splitlines():
        if m := _SASS_FUNC.match(line):
            globals_.add(m.group(1))
        elif (m := _SASS_LABEL.match(line)) and m.group(1) in globals_:
            current = functions.setdefault(m.group(1), [])
        elif current is not None and (m := _SASS_INSN.search(line)):
            body = m.group(2).strip()
            predicate = ""
            if body.startswith("@"):
                predicate, body = body.split(None, 1)
            mnemonic, _, rest = body.partition(" ")
            operands = tuple(o.strip() for o in rest.split(",")) if rest.strip() else ()
            current.append(Instruction(int(m.group(1), 16), mnemonic, operands, predicate, body))
    return functions


_GCN_FUNC = re.compile(r"^[0-9a-f]+ <([^>]+)>:\s*$")
_GCN_SPLIT = re.compile(r",\s*(?![^\[]*\])")  # commas outside [...]: neg_lo:[1,1,0] stays whole


def parse_gcn(text: str) -> dict[str, list[Instruction]]:
    """Parse `llvm-objdump -d` output of an AMDGPU code object into {function: instructions}.

    Operands are comma-separated; modifiers (neg_lo:[..], clamp, cbsz:1, ...) follow the
    last operand after white space. A gfx11+ dual-issue pair `v_dual_x ... :: v_dual_y ...`
    writes two registers: it becomes two instructions at the same offset, so the evidence
    gate sees both writes.
    """
    functions: dict[str, list[Instruction]] = {}
    current: list[Instruction] | None = None
    for line in text.splitlines():
        if m := _GCN_FUNC.match(line):
            current = functions.setdefault(m.group(1), [])
            continue
        if current is None or not line.startswith("\t"):
            continue
        body, _, comment = line.strip().partition("//")
        body = body.strip()
        if not body:
            continue
        offset = comment.strip().split(":")[0]
        at = int(offset, 16) if offset else len(current)
        current += [gcn_instruction(at, half.strip()) for half in body.split(" :: ")]
    return functions


def gcn_instruction(offset: int, body: str) -> Instruction:
    """One AMDGPU instruction as llvm-objdump or llc prints it ("v_x v[0:7], v8 clamp")."""
    mnemonic, _, rest = body.partition(" ")
    parts = [p.strip() for p in _GCN_SPLIT.split(rest.strip())] if rest.strip() else []
    modifiers: list[str] = []
    if parts:
        last, *modifiers = parts[-1].split()
        parts[-1] = last
    return Instruction(offset, mnemonic, tuple(parts), "", body, tuple(modifiers))


PADDING = ("NOP", "s_nop", "s_code_end")  # alignment filler, not the kernel's work


def without_padding(instructions: list[Instruction]) -> list[Instruction]:
    end = len(instructions)
    while end and instructions[end - 1].base in PADDING:
        end -= 1
    return instructions[:end]


def histogram(instructions: list[Instruction]) -> dict[str, int]:
    counts = Counter(i.mnemonic for i in instructions if i.base not in PADDING)
    return dict(sorted(counts.items()))
