"""GCN (AMDGPU) text as the evidence gate reads it: registers, loads, what writes nothing."""

import re

from probelab.isa import Isa

GCN = Isa(
    name="gcn",
    register=re.compile(r"^-?(?:\|)?(?P<bank>[vsa])(?:\[(?P<first>\d+)(?::(?P<last>\d+))?\]"
                        r"|(?P<single>\d+))"),
    loads=re.compile(r"^(global_load|buffer_load|flat_load)_"),
    narrow=re.compile(r"_(u8|i8|u16|i16|d16\w*|ubyte|sbyte|ushort|sshort)$"),
    no_destination=re.compile(r"^(global_store|buffer_store|flat_store|scratch_store|ds_write|"
                              r"ds_store|s_wait|s_nop|s_endpgm|s_sendmsg|s_delay_alu|s_cbranch|"
                              r"s_branch|s_barrier|s_clause|s_setprio|s_code_end|s_dcache)"),
)
PADDING = ("s_nop", "s_code_end")  # alignment filler, not the kernel's work
