"""An ISA's disassembly as data: the `Instruction` every parser gives (probelab.vendors.<name>
holds each vendor's parser), and the `Isa` tables the evidence gate reads an instruction's
registers and loads with (each vendor's own, in its folder)."""

import re
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


@dataclass(frozen=True)
class Isa:
    """What the gate must know of an ISA's text: which registers an operand names, which an
    instruction writes, and which instructions load the stimulus from memory."""

    name: str
    register: re.Pattern[str]  # one register or a range, e.g. R2, v[8:9], s4
    loads: re.Pattern[str]  # mnemonics that load from the memory the stimulus lives in
    no_destination: re.Pattern[str]  # mnemonics whose first operand is not written
    narrow: re.Pattern[str]  # loads of less than 32 bits: the value arrives truncated
    width_in_opcode: bool = False  # SASS writes R2 but means R2..R3 when the opcode says .64

    def registers(self, operand: str) -> list[str]:
        m = self.register.match(operand)
        if not m:
            return []
        groups = m.groupdict()
        bank = groups["bank"]
        first = int(groups.get("single") or groups["first"])
        last = groups.get("last")
        return [f"{bank}{n}" for n in range(first, int(last or first) + 1)]

    def defines(self, insn: Instruction) -> set[str]:
        if not insn.operands or self.no_destination.match(insn.mnemonic):
            return set()
        regs = self.registers(insn.operands[0])
        if len(regs) == 1 and self.width_in_opcode:
            width = 4 if ".128" in insn.mnemonic else 2 if (
                ".64" in insn.mnemonic or "WIDE" in insn.mnemonic) else 1
            bank, n = regs[0][0], int(regs[0][1:])
            regs = [f"{bank}{n + k}" for k in range(width)]
        return set(regs)

    def is_load(self, insn: Instruction) -> bool:
        return self.loads.match(insn.mnemonic) is not None and not insn.predicate
