"""The bit-op kit's figures (probelab.kits.bitops.figures, .value_figures), read off datasets
alone: on each probe's simulated dataset (its PTX reading, never evidence) the arrays behind
the figures are that reading, written here from the ISA's words, not from the probes'
models; one changed cell shows where it was changed; the cells drawn are those arrays'
colours; the archive's fns figure shows the INT_MIN finding."""

import numpy as np
import pytest
from archive import needs_archive
from matplotlib import colormaps
from matplotlib.colors import to_rgba
from test_bitops import simulated

from probelab.drawing import Cells, Labels
from probelab.kits.bitops import figures as F
from probelab.kits.bitops import value_figures as V
from probelab.probe import get_probe

KINDS = {"prmt-modes": "selector-map", "lop3": "truth-tables", "shf": "shift-map",
         "bfe-bfi": "field-map", "bit-scan": "scan-map", "bmsk": "mask-map",
         "fns": "search-map"}


@pytest.fixture(scope="module", params=sorted(KINDS))
def sim(request):
    return request.param, simulated(get_probe(request.param))


def cells(ax) -> np.ndarray:
    (found,) = [a for a in ax.get_children() if isinstance(a, Cells)]
    return found.rgba


def drawn(fig) -> list:
    return [ax for ax in fig.axes if any(isinstance(a, Cells) for a in ax.get_children())]


def test_each_probe_offers_its_kind_and_it_draws(sim) -> None:
    probe_id, ds = sim
    plots = get_probe(probe_id).plots
    assert list(plots) == [KINDS[probe_id]]
    figures = plots[KINDS[probe_id]](ds)
    assert figures and all(drawn(fig) for fig in figures.values())


def test_kernels_identical_on_every_cell_are_drawn_once() -> None:
    ds = simulated(get_probe("shf"))
    assert F.groups(ds) == [["shf_l_clamp", "funnelshift_lc"], ["shf_l_wrap", "funnelshift_l"],
                            ["shf_r_clamp", "funnelshift_rc"], ["shf_r_wrap", "funnelshift_r"]]
    ds["value"].values[1, 0, 0] ^= 1
    assert len(F.groups(ds)) == 5


# PTX ISA, prmt: the source byte of result byte k under each mode, control c = s & 3
PRMT = {"f4e": lambda c, k: c + k, "b4e": lambda c, k: (8 + c - k) & 7,
        "rc8": lambda c, k: c, "ecl": lambda c, k: max(c, k), "ecr": lambda c, k: min(c, k),
        "rc16": lambda c, k: (k & 1) + 2 * (c & 1)}


def test_the_selector_map_is_the_byte_each_mode_picks_and_a_changed_byte_shows() -> None:
    ds = simulated(get_probe("prmt-modes"))
    selectors = ds["selector"].values
    for mode, rule in PRMT.items():
        want = [[rule(int(s) & 3, k) for k in range(4)] for s in selectors]
        assert F.prmt_sources(ds, mode).tolist() == want, mode
        assert F.selector_bits(ds, mode) == ([0] if mode == "rc16" else [0, 1], 288, 288)
    at = list(ds["kernel"].values).index("f4e")
    ds["value"].values[at, 3, 5] ^= 0x80 << 16  # word 3, selector 5: byte 2's sign bit
    assert F.prmt_sources(ds, "f4e")[5].tolist() == [1, 2, F.OTHER, 4]
    assert F.selector_bits(ds, "f4e")[0] != [0, 1]  # a flip of some bit now changes it


def test_the_selector_map_draws_the_byte_picked() -> None:
    ds = simulated(get_probe("prmt-modes"))
    (fig,) = F.selector_map(ds).values()
    for ax, mode in zip(drawn(fig), PRMT, strict=True):
        picked = F.prmt_sources(ds, mode)[:16]
        assert np.allclose(cells(ax), [[to_rgba(F.BYTE_COLOURS[j]) for j in row]
                                       for row in picked]), mode


def test_the_truth_tables_are_each_immluts_bits_and_a_changed_bit_shows() -> None:
    ds = simulated(get_probe("lop3"))
    table = F.truth_table(ds, "lop3")
    luts = ds["lut"].values
    assert (table == (luts[None, :] >> np.arange(8)[:, None]) & 1).all()
    (fig,) = F.truth_tables(ds).values()
    assert np.allclose(cells(drawn(fig)[0])[..., :3], np.where(table[..., None] == 1, 0, 1))
    ds["value"].values[0, 0, 0x96] ^= 1  # triple aF0_bCC_cAA, bit 0: a b c = 0 0 0
    assert F.truth_table(ds, "lop3")[:, 0x96].tolist() == [F.OTHER, 1, 1, 0, 1, 0, 0, 1]


def test_the_shift_map_is_the_funnel_shifts_source_bit() -> None:
    ds = simulated(get_probe("shf"))
    shifts = ds["shift"].values.astype(np.int64)
    for kernel in ("shf_l_clamp", "shf_l_wrap", "shf_r_clamp", "shf_r_wrap"):
        k = ds.sel(kernel=kernel)
        n = np.minimum(shifts, 32) if int(k["clamp"]) else shifts & 31
        bit = np.arange(32)[None, :]
        src = bit + 32 - n[:, None] if int(k["left"]) else bit + n[:, None]
        want = np.where(src < 64, src, F.ZERO)
        assert (F.shift_sources(ds, kernel) == want).all(), kernel
    (fig,) = F.shift_map(ds).values()
    first = F.shift_sources(ds, "shf_l_clamp")[:, ::-1]
    assert np.allclose(cells(drawn(fig)[0]), F.paint(first, 64))


def test_the_field_map_counts_the_bits_of_a_and_finds_bit_31s_source() -> None:
    ds = simulated(get_probe("bfe-bfi"))
    pos = (ds["pos"].values.astype(np.int64) & 0xFF)[:, None]
    length = (ds["len"].values.astype(np.int64) & 0xFF)[None, :]
    width = np.where(pos < 32, np.minimum(length, 32 - pos), 0)
    for kernel in ("bfe_u32", "bfi_b32"):
        assert (F.bits_of_a(F.field_sources(ds, kernel)) == width).all(), kernel
    top = F.field_sources(ds, "bfe_s32")[..., 31]
    sign = np.where(pos < 32, np.minimum(pos + length - 1, 31), 31)
    assert (top == np.where(length > 0, sign, F.ZERO)).all()
    (fig,) = F.field_map(ds).values()
    assert np.allclose(cells(drawn(fig)[5]), F.paint(F.field_sources(ds, "bfi_b32")[..., 31], 64))


def test_the_scan_map_shows_each_family_by_bit_position() -> None:
    ds = simulated(get_probe("bit-scan"))
    panels = V.scan_panels(ds)
    assert [p[0] for p in panels] == ["bit", "hole", "low", "high", "named"]
    bit = panels[0][2]
    assert [int(ds["word"].values[i]) for i in bit] == [1 << k for k in range(32)]
    (fig,) = V.scan_map(ds).values()
    texts = [a for a in drawn(fig)[0].get_children() if isinstance(a, Labels)
             and len(a.texts) == len(V.groups(ds)) * 32]
    rows = np.array(texts[0].texts).reshape(-1, 32)
    names = [", ".join(g) for g in V.groups(ds)]
    assert rows[names.index("bfind_u32")].tolist() == [str(k) for k in range(32)]
    assert rows[names.index("clz, cuda_clz")].tolist() == [str(31 - k) for k in range(32)]
    brev = [f"{1 << (31 - k):08x}" for k in range(32)]  # a kernel of words: all in hex
    assert rows[names.index("brev, cuda_brev")].tolist() == brev


def test_the_mask_map_reads_each_masks_run() -> None:
    lowest, count, run = V.mask_runs(np.array([0, 0b111000, 0b101, 0xFFFFFFFF]))
    assert lowest.tolist() == [-1, 3, 0, 0] and count.tolist() == [0, 3, 2, 32]
    assert run.tolist() == [True, True, False, True]
    ds = simulated(get_probe("bmsk"))
    (fig,) = V.mask_map(ds).values()
    masks = ds["value"].sel(kernel="bmsk_wrap").transpose("pos", "width").values
    lowest, count, _ = V.mask_runs(masks)
    want = colormaps["viridis"](np.clip(lowest, 0, 32) / 32)
    shown = cells(drawn(fig)[2])
    assert np.allclose(shown[count > 0], want[count > 0])


def test_the_search_map_names_the_offsets_of_one_result() -> None:
    ds = simulated(get_probe("fns"))
    edges = {-33, 33, 64, -64, 2**31 - 1, -(2**31 - 1), -(2**31)}
    assert V.constant_rows(ds, "fns") == [(o, 0xFFFFFFFF) for o in V.offsets_of(ds)
                                          if o in edges]
    at = V.offsets_of(ds).index(-(2**31))
    ds["value"].values[:, :, :, at] = 0  # the H200's INT_MIN, drawn from a changed dataset
    (fig,) = V.search_map(ds).values()
    assert "-2147483648: 0" in " ".join(t.get_text() for ax in fig.axes for t in ax.texts)
    assert np.allclose(cells(drawn(fig)[0])[at], colormaps["viridis"](0.0))


@needs_archive
def test_the_archives_fns_gives_0_at_int_min_for_every_mask_and_base() -> None:
    import xarray as xr

    from probelab.layout_export import newest_dataset

    with xr.open_dataset(newest_dataset("fns")) as ds:
        rows = dict(V.constant_rows(ds.load(), "fns"))
    assert rows[-(2**31)] == 0 and rows[2**31 - 1] == 0xFFFFFFFF
