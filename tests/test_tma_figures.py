"""The TMA box maps (probelab.boxmaps) and the byte-map figure (probes/tma_swizzle/plots.py),
read off datasets alone: a synthetic dataset placed by a known law (rows padded to the
swizzle span, or packed) gives that law's CuTe layout on every cell and that law's chunk
picture; the archive's measured boxes are CuTe's Swizzle<B,M,3> over span-wide rows."""

from pathlib import Path

import numpy as np
import pytest
import xarray as xr
from archive import needs_archive
from matplotlib.colors import to_rgba

from probelab import boxmaps, kitmaps, lanemaps
from probelab.drawing import Cells
from probelab.errors import UsageError
from probelab.layouts import parse_cute
from probelab.probe import get_probe, load_sibling

ROOT = Path(__file__).resolve().parents[1]
PLOTS = load_sibling(ROOT / "probes" / "tma_swizzle" / "plots.py")
NONE = 0xFFFFFFFF


def synthetic(probe_id: str, padded: bool) -> xr.Dataset:
    """The probe's grid with each box placed by a law: box byte (r, b) at shared byte
    r * width + b, width the span (padded, where wider than the row) or the row, then the
    16-byte chunk XOR address bits [7, 7 + B); every other byte unwritten."""
    ds = get_probe(probe_id).stimulus().assign_coords(kernel=("kernel", ["tma_swizzle"]))
    shape = (1, ds.sizes["config"], ds.sizes["offset"])
    found = {n: np.full(shape, NONE, np.uint32) for n in ("g_row", "g_col", "g_byte")}
    for at in range(ds.sizes["config"]):
        c = ds.isel(config=at)
        span, inner, e = (int(c[n]) for n in ("swizzle", "inner", "element_bytes"))
        r, b = np.divmod(np.arange(int(c["box_bytes"])), inner)
        s = r * (max(span, inner) if padded else inner) + b
        if span:
            s ^= ((s >> 7) & (span // 16 - 1)) << 4
        g = (int(c["y0"]) + r) * int(c["pitch"]) + int(c["x0"]) + b
        pitch = int(c["pitch"])
        for name, value in (("g_row", g // pitch), ("g_col", g % pitch // e),
                            ("g_byte", g % pitch % e)):
            found[name][0, at, s] = value
    return ds.assign({n: (("kernel", "config", "offset"), v) for n, v in found.items()})


def natural(c: xr.Dataset, padded: bool) -> str:
    """CuTe's form of a box: rows of the span (padded) or of the box, in elements."""
    span, inner, e = (int(c[n]) for n in ("swizzle", "inner", "element_bytes"))
    rows, cols = boxmaps.extent(c)
    layout = f"({rows},{cols}):({(max(span, inner) if padded else inner) // e},1)"
    bits = (span // 16).bit_length() - 1
    return f"Swizzle<{bits},{4 - (e.bit_length() - 1)},3> o {layout}" if span else layout


@pytest.mark.parametrize("probe_id", ["tma-swizzle-b8", "tma-swizzle-b16", "tma-swizzle-b32"])
@pytest.mark.parametrize("padded", [True, False], ids=["padded", "packed"])
def test_a_box_map_is_its_laws_cute_layout_on_every_cell(probe_id: str, padded: bool) -> None:
    ds = synthetic(probe_id, padded)
    maps = kitmaps.maps_of(ds, None, None)
    assert [m.kernel for m in maps] == [str(m) for m in ds["mode"].values]
    for at, m in enumerate(maps):
        c = ds.isel(config=at)
        assert m.tile and m.operand == "smem" and m.shape == boxmaps.extent(c)
        assert m.held == int(c["box_bytes"]) // int(c["element_bytes"])
        score = lanemaps.reproduces(parse_cute(natural(c, padded)), m)
        assert score.matches == score.cells == m.held, m.kernel
        found = lanemaps.cute_of(m)  # the smallest form: another text, the same cells
        assert not isinstance(found, str) and lanemaps.reproduces(found, m).matches == m.held
        if padded and int(c["swizzle"]) > int(c["inner"]):  # the packed reading misses
            packed = lanemaps.reproduces(parse_cute(natural(c, False)), m)
            assert packed.matches < packed.cells


def test_a_slot_holding_bytes_of_two_elements_is_no_element_map() -> None:
    ds = synthetic("tma-swizzle-b16", True)
    ds["g_byte"].values[0, 3, 1] = 0  # bytes 0 and 1 of the region: byte 0 twice
    with pytest.raises(UsageError, match="no element map"):
        kitmaps.maps_of(ds, "sw128", None)
    with pytest.raises(UsageError, match="no configuration 'sw256'"):
        kitmaps.maps_of(ds, "sw256", None)
    with pytest.raises(UsageError, match="no map of operand A"):
        kitmaps.maps_of(ds, None, "a")


def test_the_chunk_map_is_the_padded_laws_picture() -> None:
    """sw64_rows32 (32-byte rows under SWIZZLE_64B): each row at the start of its own 64-byte
    row, the chunk index XOR address bits 7-8; half of every line unwritten."""
    ds = synthetic("tma-swizzle-b16", True)
    at = list(ds["mode"].values).index("sw64_rows32")
    box_row, box_chunk = PLOTS.chunk_map(ds, "tma_swizzle", at)
    assert box_row.shape == (16, 8)
    for line, chunk in np.ndindex(box_row.shape):
        s = 128 * line + 16 * chunk
        u = s ^ (((s >> 7) & 3) << 4)
        want = (u // 64, u % 64 // 16) if u % 64 < 32 else (PLOTS.UNWRITTEN,) * 2
        assert (box_row[line, chunk], box_chunk[line, chunk]) == want, (line, chunk)


def test_the_figure_draws_each_configurations_chunks_and_cute_form() -> None:
    ds = synthetic("tma-swizzle-b32", True)
    (fig,) = PLOTS.byte_map(ds).values()
    forms = [lanemaps.cute_of(m).text() for m in kitmaps.maps_of(ds, None, None)]
    drawn = [ax for ax in fig.axes if any(isinstance(a, Cells) for a in ax.get_children())]
    assert len(drawn) == ds.sizes["config"]
    for at, ax in enumerate(drawn):
        _, chunk = PLOTS.chunk_map(ds, "tma_swizzle", at)
        (cells,) = [a for a in ax.get_children() if isinstance(a, Cells)]
        want = [to_rgba("white") if k == PLOTS.UNWRITTEN else to_rgba(PLOTS.CHUNK_COLOURS[k])
                for k in chunk.reshape(-1)]
        assert np.allclose(cells.rgba.reshape(-1, 4), want), at
        assert str(ds["mode"].values[at]) in ax.get_title()
        assert forms[at] in ax.get_xlabel()


@needs_archive
@pytest.mark.parametrize("probe_id", ["tma-swizzle-b8", "tma-swizzle-b16", "tma-swizzle-b32"])
def test_the_measured_boxes_are_cutes_swizzle_over_span_wide_rows(probe_id: str) -> None:
    """The archive's boxes, each element size: Swizzle<B,M,3> over rows as wide as the span
    (docs/catalogue.md), on every cell; the packed rows miss the half-width boxes."""
    from probelab.layout_export import newest_dataset

    with xr.open_dataset(newest_dataset(probe_id)) as ds:
        maps = kitmaps.maps_of(ds.load(), None, None)
        for at, m in enumerate(maps):
            c = ds.isel(config=at)
            score = lanemaps.reproduces(parse_cute(natural(c, True)), m)
            assert score.matches == score.cells == m.held, m.kernel
            packed = lanemaps.reproduces(parse_cute(natural(c, False)), m)
            assert (packed.matches == packed.cells) == (int(c["swizzle"]) <= int(c["inner"]))
