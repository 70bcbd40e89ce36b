"""Text from files, datasets and git, made safe to show: no control character reaches the
terminal (an escape sequence in a claim could otherwise rewrite the verdict shown above it);
and the few names a misspelt one may have meant."""

import difflib
import re
from collections.abc import Sequence

# C0 and C1 controls but tab and newline, and the bidirectional overrides
UNPRINTABLE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def printable(text: str) -> str:
    """`text` with every control character written out as an escape (ESC -> \\x1b)."""
    return UNPRINTABLE.sub(lambda m: ascii(m.group())[1:-1], text)


def closest(word: str, known: Sequence[str], n: int = 3) -> list[str]:
    """Up to `n` of `known` that `word` looks like (difflib's close matches): those sharing
    the longest start with it first (gfx1299: gfx12xx before gfx909; sm_999: sm_90 before
    sm_89), then the likest, then the shortest (sm_90 before sm_90a)."""
    return sorted(difflib.get_close_matches(word, known, n=len(known)),
                  key=lambda k: (-_shared_start(word, k),
                                 -difflib.SequenceMatcher(None, word, k).ratio(), len(k)))[:n]


def _shared_start(a: str, b: str) -> int:
    """How many characters `a` and `b` start with alike."""
    return next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y),
                min(len(a), len(b)))


def either(words: Sequence[str]) -> str:
    """'a', 'a or b', 'a, b or c'."""
    return " or ".join(filter(None, (", ".join(words[:-1]), words[-1]))) if words else ""
