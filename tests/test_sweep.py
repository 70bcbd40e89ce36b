"""Sweep-level checks that need no device."""

import numpy as np
import pytest

from probelab.backends.guards import GUARD, GUARD_WORDS, POISONS, framed, unframe
from probelab.errors import IntegrityError
from probelab.sweep import _compare_repeats


def test_differing_repeats_fail_the_sweep():
    a = np.arange(10, dtype=np.uint32)
    b = a.copy()
    b[7] ^= 1
    with pytest.raises(IntegrityError, match="differs between repeat 0 and 1 in 1 cells"):
        _compare_repeats("k", [{"out": a}, {"out": b}, {"out": a}], [*POISONS, POISONS[0]],
                         frozenset())


def test_a_cell_left_unwritten_cannot_repeat_because_poisons_alternate():
    written = np.arange(10, dtype=np.uint32)
    runs = []
    for poison in POISONS:
        out = written.copy()
        out[3] = poison  # the kernel never wrote cell 3
        runs.append({"out": out})
    with pytest.raises(IntegrityError, match="in 1 cells"):
        _compare_repeats("k", runs, list(POISONS), frozenset())
    # declared nondeterministic, the cell is still caught: it holds every repeat's poison
    with pytest.raises(IntegrityError, match="1 cells some repeat did not write"):
        _compare_repeats("k", runs, list(POISONS), frozenset({"out"}))


def test_a_declared_output_cannot_keep_a_poison_from_one_repeat():
    """Repeat 0 (whose values are saved) missed cell 1; the others wrote it."""
    poisons = [POISONS[0], POISONS[1], POISONS[0]]
    runs = [{"out": np.array([5, v, 7], np.uint32)} for v in (poisons[0], 6, 6)]
    with pytest.raises(IntegrityError, match="1 cells some repeat did not write"):
        _compare_repeats("k", runs, poisons, frozenset({"out"}))


def test_a_declared_nondeterministic_output_may_vary_and_is_counted():
    a = np.arange(10, dtype=np.uint32)
    b = a.copy()
    b[[2, 5]] += 1
    varied = _compare_repeats("k", [{"out": a, "fixed": a}, {"out": b, "fixed": a}],
                              list(POISONS), frozenset({"out"}))
    assert varied == {"out": 2}  # and "fixed", undeclared, had to be identical (it was)


def test_one_repeat_is_refused_because_it_cannot_see_unwritten_cells():
    from probelab.errors import UsageError
    from probelab.sweep import run_sweep

    with pytest.raises(UsageError, match="at least 2"):
        run_sweep("byte-perm", "sim", repeats=1)


def test_guards_catch_writes_on_either_side():
    for index in (0, GUARD_WORDS - 1, -1, -GUARD_WORDS):
        buf = framed(np.arange(5, dtype=np.uint32))
        buf[index] = 0
        with pytest.raises(IntegrityError, match="guard words overwritten"):
            unframe("out", buf)
    buf = framed(np.arange(5, dtype=np.uint32))
    assert np.array_equal(unframe("out", buf), np.arange(5)) and buf[0] == GUARD
