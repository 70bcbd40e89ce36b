"""Guard words around every buffer and poison in every output, shared by all backends.

Each device buffer is [guard | payload | guard]. Guards are checked after the launch; inputs
must come back unchanged; outputs start poisoned, so a cell the kernel never wrote shows.
"""

import numpy as np

from probelab.errors import IntegrityError

GUARD_WORDS = 64
GUARD = np.uint32(0xC0FFEE11)
POISONS = (0xA5A5A5A5, 0x5A5A5A5B)  # repeats alternate, so an unwritten cell cannot repeat


def framed(payload: np.ndarray) -> np.ndarray:
    guard = np.full(GUARD_WORDS, GUARD, np.uint32)
    return np.concatenate([guard, np.ascontiguousarray(payload, np.uint32).reshape(-1), guard])


def poisoned(words: int, poison: int) -> np.ndarray:
    return framed(np.full(words, poison, np.uint32))


def unframe(name: str, host: np.ndarray) -> np.ndarray:
    """Check both guards of a buffer copied back from the device and return its payload."""
    for side, guard in (("leading", host[:GUARD_WORDS]), ("trailing", host[-GUARD_WORDS:])):
        bad = np.flatnonzero(guard != GUARD)
        if bad.size:
            raise IntegrityError(
                f"guard words overwritten in buffer {name!r} ({side}, {bad.size} words, "
                f"first value {int(guard[bad[0]]):#010x}): the kernel wrote out of bounds")
    return host[GUARD_WORDS:-GUARD_WORDS].copy()


def check_inputs_intact(name: str, sent: np.ndarray, back: np.ndarray) -> None:
    if not np.array_equal(sent, back):
        changed = int(np.count_nonzero(sent != back))
        raise IntegrityError(f"input buffer {name!r} changed on the device ({changed} words)")
