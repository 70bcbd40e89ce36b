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


def histogram(instructions: list[Instruction]) -> dict[str, int]:
    counts = Counter(i.mnemonic for i in instructions if i.base != "NOP")
    return dict(sorted(counts.items()))
