"""SASS as the evidence gate reads it: registers, loads, and what writes nothing."""

import re

from probelab.isa import Isa

SASS = Isa(
    name="sass",
    # R: general registers; P: predicates (ISETP writes one, LOP3's q and SEL read one), so
    # a predicate operand traces to the compare and the load it was set from (PT is none)
    register=re.compile(r"^[-|!~]*(?P<bank>[RP])(?P<first>\d+)(?P<last>)(?:\.\w+)*$"),
    loads=re.compile(r"^(LDG|LD)(\.|$)"),
    narrow=re.compile(r"\.(U8|S8|U16|S16)(\.|$)"),
    width_in_opcode=True,
    no_destination=re.compile(r"^(ST|STG|STS|STL|RED|BRA|EXIT|RET|BAR|MEMBAR|NOP|CALL|JMP)"
                              r"(\.|$)"),
)
PADDING = ("NOP",)  # alignment filler, not the kernel's work
