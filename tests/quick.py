"""Which parameters a plain `pytest` run takes: the first `keep`, the rest marked `slow`
(CI runs them all), so that a matrix keeps one quick witness in the default run."""
from collections.abc import Iterable
from typing import Any

import pytest


def quick_first(values: Iterable[Any], keep: int = 1) -> list[Any]:
    """A tuple is one case of several argument names, as in `parametrize`'s own lists."""
    return [value if i < keep else
            pytest.param(*(value if isinstance(value, tuple) else (value,)),
                         marks=pytest.mark.slow)
            for i, value in enumerate(values)]
