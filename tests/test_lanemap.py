"""Lane-map figures: the tables behind them (checked without reading pixels), the CLI's
`probelab plot lanemap DATASET` (the notebook that draws the recorded datasets is tested in
test_notebook.py)."""

from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from probelab import dataset
from probelab.cli import app
from probelab.kits.lane_id.figures import lane_map_figures, matrix_table, operands, register_table
from probelab.sweep import run_sweep

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def sim_path(tmp_path_factory):
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv("PROBELAB_GIT_HEAD", raising=False)
        return run_sweep("dmma-f64", "sim", target="sm_90", repeats=2, allow_blind=True,
                         out_root=tmp_path_factory.mktemp("sim")).path


def test_matrix_table_inverts_the_lane_map(sim_path: Path) -> None:
    ds = dataset.load(sim_path)
    for kernel in ("m8n8k4", "m16n8k16"):
        k = ds.sel(kernel=kernel)
        for op, (rows, cols) in {"a": ("M", "K"), "b": ("K", "N"), "d": ("M", "N")}.items():
            lane, reg = matrix_table(ds, kernel, op)
            assert lane.shape == (int(k[rows]), int(k[cols])) and (lane >= 0).all()
            r = k[f"{op}_row"].values[lane, reg]
            c = k[f"{op}_col"].values[lane, reg]
            assert (r == np.arange(lane.shape[0])[:, None]).all()
            assert (c == np.arange(lane.shape[1])[None, :]).all()


def test_register_table_rows_are_register_and_lane_block(sim_path: Path) -> None:
    ds = dataset.load(sim_path)
    text, labels, shade = register_table(ds, "m8n8k4", "d")
    assert labels == ["v0 · L0-15", "v0 · L16-31", "v1 · L0-15", "v1 · L16-31"]
    k = ds.sel(kernel="m8n8k4")
    assert text[3][5] == f"{int(k.d_row[21, 1])},{int(k.d_col[21, 1])}"  # lane 21, reg 1
    assert shade[3][5] == int(k.d_row[21, 1])
    assert operands(ds, "m8n8k4") == ["a", "b", "d"]  # C held as D: drawn once, as C/D


@pytest.mark.slow
def test_plot_lanemap_writes_both_views_per_kernel(sim_path: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["plot", "lanemap", str(sim_path), "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    names = sorted(p.name for p in tmp_path.iterdir())
    for kernel in ("m8n8k4", "m16n8k4", "m16n8k8", "m16n8k16"):
        for view in ("matrix", "registers"):
            for fmt in ("png", "svg"):
                assert f"{sim_path.stem}.lanemap.{kernel}.{view}.{fmt}" in names
    svg = (tmp_path / f"{sim_path.stem}.lanemap.m8n8k4.matrix.svg").read_text()
    assert "SIMULATED" in svg  # text stays text in the SVG


def test_a_refused_kernel_gets_no_lane_map(sim_path: Path) -> None:
    ds = dataset.load(sim_path)
    ds["recovered"].values[0] = 0  # as if m8n8k4 had formed no layout
    assert sorted(lane_map_figures(ds)) == [f"{k}.{v}" for k in ("m16n8k16", "m16n8k4",
                                                                 "m16n8k8")
                                            for v in ("matrix", "registers", "table")]


def test_the_lane_map_table_holds_every_element_once_with_its_register_bits(
        sim_path: Path) -> None:
    """The machine-readable export: one row per (operand, lane, value) holding an element,
    f64 values spanning two registers; every (row, col) of each operand exactly once."""
    from probelab.kits.lane_id.figures import lane_map_table

    ds = dataset.load(sim_path)
    table = lane_map_table(ds, "m16n8k16")
    assert table.columns == ("operand", "lane", "value", "register", "bits", "row", "col")
    by = {}
    for operand, _lane, value, register, bits, row, col in table.rows:
        assert register == 2 * value and bits == "0-63"
        by.setdefault(operand, []).append((row, col))
    assert sorted(by) == ["A", "B", "C/D"]
    for operand, size in (("A", 16 * 16), ("B", 16 * 8), ("C/D", 16 * 8)):
        assert len(by[operand]) == len(set(by[operand])) == size



def _hidden_labels(ds, probe) -> dict[str, np.ndarray]:
    """The simulated unit's own (row, col) per slot as the helpers a hypothesis would give."""
    shapes = {s.name: s for s in probe.shapes}
    layouts = [probe.hidden_layout(shapes[str(k)]) for k in ds["kernel"].values]
    return {name: np.stack([getattr(lay, operand)[..., axis] for lay in layouts])
            for operand, names in (("a", ("a_m", "a_k")), ("b", ("b_k", "b_n")),
                                   ("d", ("d_m", "d_n")))
            for axis, name in enumerate(names)}


def test_a_confirmed_numbering_relabels_the_map_to_the_documented_table(sim_path: Path) -> None:
    """Given the labels a table gives every slot, the canonical map is renumbered into
    exactly that table (here the simulated unit's hidden one, which canonical labels only
    match up to renumbering); labels that merge two measured rows, or leave a held slot
    unlabelled, are refused rather than drawn."""
    from probelab.errors import IntegrityError
    from probelab.kits.lane_id.figures import _cells, lane_map_table
    from probelab.lanemaps import numbering_of
    from probelab.probe import get_probe

    ds = dataset.load(sim_path)
    probe = get_probe("dmma-f64")
    labels = _hidden_labels(ds, probe)
    layout = probe.hidden_layout(next(s for s in probe.shapes if s.name == "m16n8k16"))
    numbering = numbering_of(ds, "m16n8k16", labels, "hidden")
    for operand in "abd":
        rows, cols = _cells(ds, "m16n8k16", operand, numbering)
        np.testing.assert_array_equal(rows, getattr(layout, operand)[..., 0])
        np.testing.assert_array_equal(cols, getattr(layout, operand)[..., 1])
    assert _cells(ds, "m16n8k16", "a")[1].tolist() != _cells(ds, "m16n8k16", "a", numbering)[
        1].tolist()  # the renumbering did something: canonical k is not the hidden k
    row = next(r for r in lane_map_table(ds, "m16n8k16", numbering).rows if r[0] == "A")
    assert row[5:] == tuple(int(x) for x in layout.a[row[1], row[2]])
    merged = labels | {n: np.where(labels[n] == 1, 0, labels[n]) for n in ("a_k", "b_k")}
    with pytest.raises(IntegrityError, match="two measured ks one label"):
        numbering_of(ds, "m16n8k16", merged, "merged")
    with pytest.raises(IntegrityError, match="two labels"):  # A and B disagree on a k
        numbering_of(ds, "m16n8k16", merged | {"b_k": labels["b_k"]}, "split")
    unlabelled = labels | {"d_n": np.where(labels["d_n"] == 3, -1, labels["d_n"])}
    with pytest.raises(IntegrityError, match="disagree on which slots hold"):
        numbering_of(ds, "m16n8k16", unlabelled, "unlabelled")


def test_a_lane_map_is_numbered_only_by_a_hypothesis_that_confirms_it(sim_path: Path) -> None:
    """The file's helpers are read as it states them (PTX's a_m = groupID at lane 5), but
    no kernel confirmed by the literal scoring means no numbered figure, and a helper the
    file lacks is named."""
    from probelab.errors import UsageError
    from probelab.hypothesis import helper_values, load_hypothesis

    ds = dataset.load(sim_path)
    h = load_hypothesis(ROOT / "preregistrations" / "dmma-f64" / "ptx-fragments.toml")
    values = helper_values(h, ds, {"a_m": ("kernel", "a_lane", "a_value")})["a_m"]
    k16 = [str(k) for k in ds["kernel"].values].index("m16n8k16")
    assert values[k16, 5, 0] == 1 and values[k16, 5, 1] == 9
    with pytest.raises(UsageError, match="on no kernel"):
        lane_map_figures(ds, about={"hypothesis": h, "literal_confirmed": []})
    with pytest.raises(UsageError, match="no helper"):
        helper_values(h, ds, {"e_m": ("kernel",)})
