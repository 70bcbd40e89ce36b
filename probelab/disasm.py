"""Disassembly as data: functions of instructions, and an opcode histogram.

Each vendor's parser (probelab.vendors.<name>) turns its disassembler's text into
`Instruction`s; everything downstream (histograms, the evidence gate) reads only these.
"""

from collections import Counter

from probelab import vendors
from probelab.isa import Instruction

__all__ = ["histogram", "padding", "without_padding"]


def padding() -> frozenset[str]:
    """Alignment filler, not the kernel's work: every vendor's padding mnemonics."""
    return frozenset(m for vendor in vendors.VENDORS.values() for m in vendor.padding)


def without_padding(instructions: list[Instruction]) -> list[Instruction]:
    filler = padding()
    end = len(instructions)
    while end and instructions[end - 1].base in filler:
        end -= 1
    return instructions[:end]


def histogram(instructions: list[Instruction]) -> dict[str, int]:
    filler = padding()
    counts = Counter(i.mnemonic for i in instructions if i.base not in filler)
    return dict(sorted(counts.items()))
