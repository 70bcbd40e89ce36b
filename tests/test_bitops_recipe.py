"""The bit-op kit's launch buffers (probelab.kits.bitops.recipe.buffers): each input is put
in the launched axes' order whatever order its grid stores them in, and an input along an
axis the launch does not cover, or holding a value no uint32 word holds, is refused rather
than sent transposed or wrapped into another word."""

import numpy as np
import pytest
import xarray as xr

from probelab.errors import UsageError
from probelab.kits.bitops.recipe import buffers


def test_an_input_stored_in_another_axis_order_is_sent_in_the_launched_one() -> None:
    x = np.arange(6, dtype=np.uint32).reshape(3, 2)  # x[a, b] = 2 a + b
    stored = xr.Dataset(coords={"a": ("a", np.arange(3)), "b": ("b", np.arange(2)),
                                "x": (("b", "a"), x.T), "y": ("b", np.array([7, 9]))})
    sent = buffers(stored, ["x", "y"], ["a", "b"])
    assert sent["params"].tolist() == [6]
    assert sent["x"].tolist() == x.reshape(-1).tolist()  # cell (a, b) on thread 2 a + b
    assert sent["y"].tolist() == [7, 9] * 3
    assert sent["x"].dtype == sent["y"].dtype == np.uint32


@pytest.mark.parametrize("values", [np.array([0, -1]), np.array([0, 2**33 + 5]),
                                    np.array([0.0, 1.0])], ids=["-1", "2**33+5", "float"])
def test_a_value_no_uint32_word_holds_is_refused(values: np.ndarray) -> None:
    grid = xr.Dataset(coords={"a": ("a", np.arange(2)), "x": ("a", values)})
    with pytest.raises(UsageError, match="no uint32 words"):
        buffers(grid, ["x"], ["a"])


def test_an_input_along_an_axis_the_launch_does_not_cover_is_refused() -> None:
    grid = xr.Dataset(coords={"x": (("a", "c"), np.zeros((2, 3), np.uint32))})
    with pytest.raises(UsageError, match=r"lies along \['c'\]"):
        buffers(grid, ["x"], ["a"])
