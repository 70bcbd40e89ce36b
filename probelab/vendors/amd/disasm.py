"""`llvm-objdump -d` output of an AMDGPU code object as data: {function: instructions}."""

import re

from probelab.isa import Instruction

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
