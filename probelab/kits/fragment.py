"""An operand's fragment, the kits' one vocabulary for it: CuTe's (thread, value).

A *value* is one element a thread holds (CuTe's value, Triton's `register` dim), not a
32-bit register. A fragment's slots are numbered in one order, `slot = value * threads +
thread` (`VALUE_MAJOR`: the thread fastest, as CuTe's (thread, value) layouts and the
lane-id kit's waves number them). Its dims are named for what they count: `<op>_lane` and
`<op>_value`, the per-kernel count `<op>_values` (probelab.vocabulary translates the
archive's `<op>_reg` and `<op>_elem`, and records it).

One order is not yet every probe's: the sparse kit's designs before this vocabulary number
their slots `thread * values + value` (`THREAD_MAJOR`): their stimulus (the one-hot wave
order and the B ids' placement) is drawn in that order, so it stays theirs and their grids
say so (`describe`); a new design takes `VALUE_MAJOR`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from probelab.vocabulary import FRAGMENT_V1

VALUE_MAJOR = "value-major"  # slot = value * threads + thread (CuTe: thread fastest)
THREAD_MAJOR = "thread-major"  # slot = thread * values + value (the sparse kit's designs)
ORDERS = (VALUE_MAJOR, THREAD_MAJOR)

ALIASES = FRAGMENT_V1  # archive name -> vocabulary name, as recorded in the core


@dataclass(frozen=True)
class Fragment:
    """The (thread, value) slots of one operand: `threads` threads holding `values` values
    each, numbered in `order`."""

    operand: str  # "a", "b", "d" (C lives on D's slots)
    threads: int
    values: int
    order: str = VALUE_MAJOR

    def __post_init__(self) -> None:
        if self.order not in ORDERS:
            raise ValueError(f"slot order {self.order!r}: one of {ORDERS}")
        if self.threads < 1 or self.values < 0:
            raise ValueError(f"a fragment of {self.threads} threads x {self.values} values")

    @property
    def slots(self) -> int:
        return self.threads * self.values

    @property
    def lane_dim(self) -> str:
        return f"{self.operand}_lane"

    @property
    def value_dim(self) -> str:
        return f"{self.operand}_value"

    @property
    def count(self) -> str:
        """The per-kernel coordinate of how many values a thread holds."""
        return f"{self.operand}_values"

    def slot(self, thread: np.ndarray | int, value: np.ndarray | int) -> np.ndarray | int:
        """The slot of (thread, value)."""
        if self.order == VALUE_MAJOR:
            return value * self.threads + thread
        return thread * self.values + value

    def thread_value(self, slot: np.ndarray | int) -> tuple:
        """(thread, value) of a slot: `slot` undone."""
        if self.order == VALUE_MAJOR:
            return slot % self.threads, slot // self.threads
        return slot // self.values, slot % self.values

    def per_thread(self, flat: np.ndarray) -> np.ndarray:
        """(W, slots, ...) in slot order -> (W, threads, values, ...): as a kernel holds it."""
        w, rest = flat.shape[0], flat.shape[2:]
        if self.order == VALUE_MAJOR:
            return np.ascontiguousarray(np.swapaxes(
                flat.reshape(w, self.values, self.threads, *rest), 1, 2))
        return flat.reshape(w, self.threads, self.values, *rest)

    def flat(self, held: np.ndarray) -> np.ndarray:
        """(W, threads, values, ...) -> (W, slots, ...) in slot order: `per_thread` undone."""
        w, rest = held.shape[0], held.shape[3:]
        if self.order == VALUE_MAJOR:
            held = np.swapaxes(held, 1, 2)
        return held.reshape(w, self.slots, *rest)

    def describe(self) -> str:
        """The numbering, in words a grid's coordinate records."""
        if self.order == VALUE_MAJOR:
            return f"slot = value * {self.threads} + lane (value-major: the lane fastest)"
        return f"slot = lane * {self.values} + value (thread-major: this design's own order)"
