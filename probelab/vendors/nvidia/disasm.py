"""`nvdisasm -c` output as data: {function: instructions}."""

import re

from probelab.isa import Instruction

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
