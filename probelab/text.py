"""Text from files, datasets and git, made safe to show: no control character reaches the
terminal (an escape sequence in a claim could otherwise rewrite the verdict shown above it)."""

import re

# C0 and C1 controls but tab and newline, and the bidirectional overrides
UNPRINTABLE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def printable(text: str) -> str:
    """`text` with every control character written out as an escape (ESC -> \\x1b)."""
    return UNPRINTABLE.sub(lambda m: ascii(m.group())[1:-1], text)
