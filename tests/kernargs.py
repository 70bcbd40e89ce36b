"""Which pointer arguments an AMDGPU operand's value is computed from: the operand-order
tests of the AMD probes trace each source's load back to its kernel argument."""

from probelab.isa import Instruction
from probelab.vendors.amd.isa import GCN


def _kernarg(code: list[Instruction], j: int, reg: str, args: tuple[str, ...]) -> str | None:
    """The argument whose pointer s_load `j` put in `reg`, where it loads from the kernarg
    segment (s[0:1], until something overwrites s0 or s1): a register k dwords past offset
    o holds a dword of argument (o / 4 + k) / 2; "hidden" past `args`."""
    insn = code[j]
    if not insn.mnemonic.startswith("s_load") or insn.operands[1] != "s[0:1]" or any(
            {"s0", "s1"} & set(GCN.defines(code[i])) for i in range(j)):
        return None
    index = (int(insn.operands[2], 16) // 4 + GCN.registers(insn.operands[0]).index(reg)) // 2
    return args[index] if index < len(args) else "hidden"


def pointer_arguments(code: list[Instruction], index: int, operand: str,
                      args: tuple[str, ...]) -> set[str]:
    """The pointer arguments (named by `args`, in order; "hidden" past them) that the value
    of `operand` at instruction `index` is computed from, following definitions back to the
    kernarg loads; a global load's result stops the walk."""
    seen, todo, found = set(), [(index, r) for r in GCN.registers(operand)], set()
    while todo:
        at, reg = todo.pop()
        if (at, reg) in seen:
            continue
        seen.add((at, reg))
        j = next((j for j in range(at - 1, -1, -1) if reg in GCN.defines(code[j])), None)
        if j is None:
            continue
        if (arg := _kernarg(code, j, reg, args)) is not None:
            found.add(arg)
        elif not code[j].mnemonic.startswith(("s_load", "global_load")):
            todo += [(j, r) for src in code[j].operands[1:] for r in GCN.registers(src)]
    return found
