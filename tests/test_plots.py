"""Plot helpers and the byte-perm figures, on a simulated dataset (never evidence)."""

import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
from matplotlib.backends.backend_agg import RendererAgg
from matplotlib.figure import Figure
from toylab import copy_probe

from probelab.dataset import load
from probelab.drawing import Labels, cell_table, new_figure, save_figure, saving_behind
from probelab.hypothesis import load_hypothesis, predict
from probelab.probe import catalog, load_sibling

ROOT = Path(__file__).resolve().parents[1]
PLOTS_MODULE = load_sibling(ROOT / "probes" / "byte_perm" / "plots.py")
PROBE = load_sibling(ROOT / "probes" / "byte_perm" / "probe.py").PROBE
PREREG = ROOT / "preregistrations" / "byte-perm"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
STRUCTURED = ["msb_none", "msb_all", *(f"msb_byte{k}" for k in range(8))]


@pytest.fixture(scope="session")
def sim(tmp_path_factory):
    """A simulated byte-perm dataset, swept in a lab of its own (nothing sealed there: the
    live ledger is never consulted)."""

    from probelab.sweep import run_sweep

    lab = tmp_path_factory.mktemp("plots-lab")
    copy_probe(lab, "byte_perm")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PROBELAB_ROOT", str(lab))
        catalog.cache_clear()
        # repeats=2: with one repeat, 16 random cells that really equal the poison word
        # (0xA5A5A5A5) cannot be told from unwritten ones, and the sweep refuses.
        result = run_sweep("byte-perm", "sim", out_root=lab / "sim-data", repeats=2)
    catalog.cache_clear()  # found under this lab root; let later tests find their own
    return load(result.path)  # as saved: with its provenance


def tables_for(ds, hypothesis_id: str) -> dict:
    h = load_hypothesis(PREREG / f"{hypothesis_id}.toml")
    return predict(h, ds, PROBE.observables)


def ptx_byte(pattern: str, v: int) -> int:
    """PTX prmt default mode for one nibble on a structured pattern, from the pattern's rules:
    byte k is k + 1 with bit 7 set on none / all / only byte k."""
    k = v & 7
    if pattern == "msb_none":
        signed = False
    elif pattern == "msb_all":
        signed = True
    else:
        signed = k == int(pattern.removeprefix("msb_byte"))
    if v & 8:
        return 0xFF if signed else 0x00
    return (k + 1) | (0x80 if signed else 0)


def test_each_plot_returns_a_figure_per_kernel(sim):
    tables = tables_for(sim, "ptx-prmt-default")
    for name, plot in PLOTS_MODULE.PLOTS.items():
        figures = plot(sim, tables)
        assert set(figures) == {"byte_perm", "prmt"}, name
        for fig in figures.values():
            assert isinstance(fig, Figure)
            texts = [t.get_text() for ax in fig.axes for t in ax.texts]
            assert "SIMULATED — not evidence" in texts, name


def test_probe_exposes_the_plots():
    assert set(PROBE.plots) == {"selector-map", "mismatch-map"}


def test_save_figure_writes_png_and_svg(sim, tmp_path):
    fig = PLOTS_MODULE.PLOTS["selector-map"](sim)["prmt"]
    stem = tmp_path / "new" / "dir" / "selector-map.prmt"  # the dot must survive
    paths = save_figure(fig, stem)
    assert [p.name for p in paths] == ["selector-map.prmt.png", "selector-map.prmt.svg"]
    png, svg = paths
    assert png.read_bytes().startswith(PNG_SIGNATURE) and png.stat().st_size > 10_000
    root = ET.parse(svg).getroot()
    assert root.tag.endswith("svg") and svg.stat().st_size > 10_000
    assert sorted(p.name for p in stem.parent.iterdir()) == [png.name, svg.name]  # no temps


def test_cell_table_text_contrasts_with_cells():
    fig = new_figure(3, 2)
    ax = fig.subplots()
    mapping = cell_table(ax, np.array([[0.0, 1.0]]), np.array([["a", "b"]]), ["r"],
                         ["light", "dark"], cmap="Greys", vmin=0, vmax=1)
    colours = dict(item for a in ax.artists if isinstance(a, Labels) for item in a.items())
    assert colours == {"a": "black", "b": "white", "r": "black", "light": "black",
                       "dark": "black"}  # the cells', then the edges' labels
    assert mapping is not None
    with pytest.raises(ValueError):
        cell_table(ax, np.zeros((2, 2)), np.array([["a", "b"]]), ["r"], ["c", "d"])


def test_cell_table_keeps_every_label_as_text_in_the_svg(tmp_path):
    fig = new_figure(3, 2)
    cell_table(fig.subplots(), np.array([[0.0, 1.0]]), np.array([["a\nb", "c"]]),
               ["row label"], ["x", "y"], cmap="Greys", vmin=0, vmax=1)
    _, svg = save_figure(fig, tmp_path / "table")
    texts = [t.text for t in ET.parse(svg).getroot().iter("{http://www.w3.org/2000/svg}text")]
    assert sorted(texts) == ["a", "b", "c", "row label", "x", "y"]  # one line each


def test_axis_labels_clear_the_row_and_column_labels():
    fig = new_figure(4, 2)
    ax = fig.subplots()
    cell_table(ax, np.zeros((2, 2)), np.array([["a", "b"], ["c", "d"]]),
               ["a long row label", "r"], ["x", "y"])
    ax.set_xlabel("columns")
    ax.set_ylabel("rows")
    renderer = RendererAgg(1, 1, fig.dpi)
    fig.get_tightbbox(renderer)  # places the axis labels, as saving does
    rows, cols = (a.get_window_extent(renderer) for a in ax.artists
                  if isinstance(a, Labels) and a.get_in_layout())
    assert ax.yaxis.label.get_window_extent(renderer).x1 < rows.x0 < rows.x1 < \
        ax.get_window_extent(renderer).x0
    assert ax.xaxis.label.get_window_extent(renderer).y1 < cols.y0 < cols.y1 < \
        ax.get_window_extent(renderer).y0


def test_selector_table_prmt_follows_the_ptx_rule(sim):
    table = PLOTS_MODULE.selector_table(sim, "prmt", 0)
    assert table.shape == (10, 16) and table.dtype == np.uint8
    expected = np.array([[ptx_byte(p, v) for v in range(16)] for p in STRUCTURED])
    np.testing.assert_array_equal(table, expected)
    row = {p: i for i, p in enumerate(STRUCTURED)}
    spots = {("msb_none", 0x0): 0x01, ("msb_none", 0xF): 0x00, ("msb_all", 0x3): 0x84,
             ("msb_all", 0x8): 0xFF, ("msb_byte2", 0x2): 0x83, ("msb_byte2", 0xA): 0xFF,
             ("msb_byte2", 0xB): 0x00, ("msb_byte7", 0x7): 0x88, ("msb_byte5", 0xD): 0xFF}
    for (pattern, v), byte in spots.items():
        assert table[row[pattern], v] == byte, (pattern, v)
    for lane in range(1, 4):
        np.testing.assert_array_equal(PLOTS_MODULE.selector_table(sim, "prmt", lane), table)
    assert PLOTS_MODULE.lane_differences(sim, "prmt") == {1: 0, 2: 0, 3: 0}


def test_selector_kinds_name_the_source_bytes(sim):
    table = PLOTS_MODULE.selector_table(sim, "byte_perm", 0)
    operands = np.arange(10)  # the structured patterns come first
    kinds = PLOTS_MODULE.byte_kinds(table, PLOTS_MODULE.source_bytes(sim, operands))
    np.testing.assert_array_equal(kinds, np.tile(np.arange(16) % 8, (10, 1)))  # no sign fill
    odd = table.copy()
    odd[0, 0], odd[1, 1] = 0x42, 0x02  # not a byte; byte 1 with its sign bit lost
    kinds = PLOTS_MODULE.byte_kinds(odd, PLOTS_MODULE.source_bytes(sim, operands))
    assert kinds[0, 0] == kinds[1, 1] == PLOTS_MODULE.OTHER


def test_lane_differences_see_a_changed_lane(sim):
    ds = sim.copy(deep=True)
    k = list(ds["kernel"].values).index("prmt")
    ds["value"].values[k, 0, 0x0300] ^= 0x00400000  # lane 2, nibble 3, msb_none
    assert PLOTS_MODULE.lane_differences(ds, "prmt") == {1: 0, 2: 1, 3: 0}


def test_mismatch_is_zero_where_the_hypothesis_matches_the_sim(sim):
    fractions = PLOTS_MODULE.mismatch_fractions(
        sim, "prmt", tables_for(sim, "ptx-prmt-default")["literal"]["value"])
    assert fractions.shape == (16, 16) and not fractions.any()
    fractions = PLOTS_MODULE.mismatch_fractions(
        sim, "byte_perm", tables_for(sim, "cuda-contract")["literal"]["value"])
    assert not fractions.any()


def test_mismatch_of_cuda_contract_on_prmt_is_the_sign_fill(sim):
    fractions = PLOTS_MODULE.mismatch_fractions(
        sim, "prmt", tables_for(sim, "cuda-contract")["literal"]["value"])
    # First principles: the contract picks byte v & 7; prmt replaces it by its sign filled
    # when v >= 8. Output byte L depends on nibble L alone, so each cell is 0 or 1: it is 1
    # when the picked byte is not already 0x00 / 0xFF matching its own sign.
    expected = np.zeros((16, 16))
    for op, (x, y) in enumerate(zip(sim["x"].values, sim["y"].values, strict=True)):
        source = (int(y) << 32) | int(x)
        for v in range(8, 16):
            byte = (source >> (8 * (v & 7))) & 0xFF
            expected[op, v] = byte != (0xFF if byte & 0x80 else 0x00)
    np.testing.assert_array_equal(fractions, expected)
    assert list(np.flatnonzero(fractions.any(axis=0))) == list(range(8, 16))
    assert (fractions[:10, 8:] == 1).all()  # structured bytes are never 0x00 or 0xFF


def test_mismatch_map_uses_the_scoring_and_needs_tables(sim):
    tables = tables_for(sim, "cuda-contract")
    figures = PLOTS_MODULE.PLOTS["mismatch-map"](sim, tables, scoring="operands_swapped")
    assert set(figures) == {"byte_perm", "prmt"}
    with pytest.raises(ValueError, match="mismatch-map needs a hypothesis"):
        PLOTS_MODULE.PLOTS["mismatch-map"](sim)


def test_figures_are_reproducible_and_an_unchanged_one_is_left_alone(sim, tmp_path):
    """Drawn twice, a figure has the same bytes (no date, fixed SVG ids), and the second
    save leaves the file untouched: redrawing never dirties a checkout."""
    import os

    draw = PLOTS_MODULE.PLOTS["selector-map"]
    first = save_figure(draw(sim)["prmt"], tmp_path / "a" / "selector")
    stamps = {p: os.stat(p).st_mtime_ns for p in first}
    again = save_figure(draw(sim)["prmt"], tmp_path / "b" / "selector")
    assert [p.read_bytes() for p in first] == [p.read_bytes() for p in again]
    assert b"<dc:date>" not in first[1].read_bytes()
    save_figure(draw(sim)["prmt"], tmp_path / "a" / "selector")
    assert {p: os.stat(p).st_mtime_ns for p in first} == stamps


def test_a_png_of_the_same_picture_in_other_bytes_is_left_alone(sim, tmp_path):
    """Another encoder (another Pillow or zlib release, RGBA instead of a palette, a dpi
    chunk) writes the same picture in other bytes: the file is left as it is. A PNG whose
    pixels differ, or a file that is no PNG, is rewritten."""
    import io
    import os

    from PIL import Image

    draw = PLOTS_MODULE.PLOTS["selector-map"]
    png, _ = save_figure(draw(sim)["prmt"], tmp_path / "selector")
    pixels = np.asarray(Image.open(png).convert("RGBA"))
    ours = png.read_bytes()
    for other in (pixels, 255 - pixels, None):
        out = io.BytesIO(b"not a png")
        if other is not None:
            Image.fromarray(np.ascontiguousarray(other)).save(out, "PNG", dpi=(150, 150))
        png.write_bytes(out.getvalue())
        os.utime(png, ns=(0, 0))
        save_figure(draw(sim)["prmt"], tmp_path / "selector")
        assert (os.stat(png).st_mtime_ns == 0) is (other is pixels)
        assert (png.read_bytes() == ours) is (other is not pixels)


@pytest.mark.slow
def test_figures_saved_behind_are_the_same_and_all_written_when_the_block_ends(sim, tmp_path):
    from probelab.errors import CannotWrite

    draw = PLOTS_MODULE.PLOTS["selector-map"]
    alone = save_figure(draw(sim)["prmt"], tmp_path / "alone" / "selector")
    with saving_behind():
        behind = {name: save_figure(fig, tmp_path / "behind" / name) for name, fig in
                  draw(sim).items()}
    assert all(p.is_file() for paths in behind.values() for p in paths)
    assert [p.read_bytes() for p in alone] == [p.read_bytes() for p in behind["prmt"]]
    (tmp_path / "a-file").write_text("")
    with pytest.raises(CannotWrite), saving_behind():  # the writer's error, on leaving
        save_figure(draw(sim)["prmt"], tmp_path / "a-file" / "selector")


def test_a_mismatch_map_names_its_hypothesis_verdict_and_unclaimed_kernels(sim):
    tables = tables_for(sim, "cuda-contract")
    about = {"id": "cuda-contract", "scoring": "literal", "verdict": "NOT-EVIDENCE",
             "claimed": ["byte_perm"]}
    figures = PLOTS_MODULE.PLOTS["mismatch-map"](sim, tables, "literal", about=about)

    def texts(fig: Figure) -> str:
        return " ".join(t.get_text() for ax in fig.axes for t in ax.texts)

    assert "cuda-contract (literal; verdict NOT-EVIDENCE)" in texts(figures["byte_perm"])
    assert "NOT CLAIMED" not in texts(figures["byte_perm"])
    assert "NOT CLAIMED by cuda-contract" in texts(figures["prmt"])


@pytest.mark.parametrize("recorded, version, offered", [
    (None, "1", ["added", "old"]),  # older than the record: all its probe offers
    (["old"], "1", ["added", "old"]),  # the probe's version: a kind added since is offered
    (["old"], "2", ["old"]),  # an older version: only what it recorded
    ([], "2", []),
])
def test_a_dataset_offers_the_plots_its_probe_version_offers(recorded, version, offered):
    """A plot kind added to a probe after a dataset was measured draws that dataset while the
    probe is still of its version (the version names what a dataset holds); a dataset of an
    older version is drawn only by the kinds it recorded."""
    import json
    from types import SimpleNamespace

    import xarray as xr

    from probelab.plot import plot_kinds

    prov = {"probe_version": "1"} | ({"plots": recorded} if recorded is not None else {})
    ds = xr.Dataset(attrs={"provenance": json.dumps(prov)})
    probe = SimpleNamespace(version=version, plots={"old": print, "added": print})
    assert sorted(plot_kinds(ds, probe)) == offered
