"""Measured lane maps in CuTe and linear-layout form (probelab.lanemaps) and the `probelab
layout show|compare` commands: a form is found from the map alone and proved on every cell,
a map that has none says why, and a user's layout is scored literally or up to the
renumbering a lane-id experiment leaves open."""

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from probelab import lanemaps, vocabulary
from probelab.cli import app
from probelab.lanemaps import LaneMap
from probelab.layouts import evaluate, parse_cute

SM80_A = "((4,8),(2,2,2)):((32,1),(16,8,128))"  # CuTe's SM80_16x8x16 ALayout, (m, k) 16 x 16


def _map_of(layout: str, lanes: int, values: int, rows: int, operand: str = "a") -> LaneMap:
    """The map a CuTe layout (thread, value) -> m + rows * k gives."""
    (index,) = evaluate(parse_cute(layout), np.arange(lanes)[:, None], np.arange(values)[None])
    index = np.broadcast_to(index, (lanes, values))
    return LaneMap("k", operand, index % rows, index // rows, "test labels")


def test_the_smallest_cute_form_is_found_from_the_map_alone_and_reproduces_it() -> None:
    m = _map_of(SM80_A, 32, 8, 16)
    found = lanemaps.cute_of(m)
    assert not isinstance(found, str) and found.text() == SM80_A
    score = lanemaps.reproduces(found, m)
    assert (score.matches, score.cells, score.first) == (256, 256, [])
    coalesced = _map_of("(32,8):(1,32)", 32, 8, 32)  # contiguous sub-modes are one mode
    assert lanemaps.cute_of(coalesced).text() == "(32,8):(1,32)"


def test_a_swizzled_map_is_no_cute_layout_but_is_f2_linear() -> None:
    m = _map_of("Swizzle<2,0,3> o (32,8):(1,32)", 32, 8, 32)
    why = lanemaps.cute_of(m)
    assert isinstance(why, str) and why.startswith("not a CuTe layout")
    linear = lanemaps.linear_of(m)
    assert not isinstance(linear, str)
    assert lanemaps.reproduces(linear, m).matches == 256
    assert dict(linear.bases)["register"][0] == (0, 1)  # value bit 0: column 1


def test_a_map_with_a_hole_or_a_non_power_of_two_says_which_form_fails_and_why() -> None:
    m = _map_of(SM80_A, 32, 8, 16)
    rows = m.rows.copy()
    rows[5, 3] = -1
    holed = LaneMap("k", "a", rows, np.where(rows < 0, -1, m.cols), "test labels")
    assert "slot (lane 5, value 3) holds nothing" in lanemaps.cute_of(holed)
    assert "slot (lane 5, value 3) holds nothing" in lanemaps.linear_of(holed)
    six = _map_of("(32,6):(1,32)", 32, 6, 32)
    assert lanemaps.cute_of(six).text() == "(32,6):(1,32)"
    assert lanemaps.linear_of(six) == "not F2-linear: 6 values is not a power of two"
    # every row moved down one: the index plus a constant (1, as (0, 0) now holds (1, 0)),
    # a CuTe form with an offset; affine, so not F2-linear
    offset = LaneMap("k", "a", m.rows + 1, m.cols, "test labels")
    based = lanemaps.cute_of(offset)
    assert not isinstance(based, str) and based.offset == int(offset.index()[0, 0]) == 1
    assert based.text().startswith("1 o ")
    assert lanemaps.reproduces(based, offset).matches == 256
    assert "a linear map sends 0 to 0" in lanemaps.linear_of(offset)
    # a shuffled map with no form: the failing cell's numbers are said to be less the base
    index = np.random.default_rng(1).permutation(256).reshape(32, 8)
    shuffled = LaneMap("k", "a", index % 16, index // 16, "test labels")
    why = lanemaps.cute_of(shuffled)
    assert isinstance(why, str) and why.endswith(f"less the {index[0, 0]} at (0, 0))")


def test_a_layout_is_scored_literally_or_up_to_one_renumbering_per_axis() -> None:
    m = _map_of(SM80_A, 32, 8, 16)
    # the same slots with k renumbered (the canonical labels of the lab's decode): literally
    # different, the same up to a renumbering; a wrong layout is wrong either way
    renumbered = "((4,8),(2,2,2)):((16,1),(64,8,128))"
    assert lanemaps.reproduces(parse_cute(renumbered), m).matches < 256
    assert lanemaps.reproduces(parse_cute(renumbered), m, relabel=True).matches == 256
    wrong = lanemaps.reproduces(parse_cute("((4,8),(2,2,2)):((32,1),(8,16,128))"), m,
                                relabel=True)
    assert wrong.matches == 64 and wrong.mismatched.sum() == 192
    lane, value, row, col, their_row, their_col = wrong.first[0]
    assert (lane, value) == (0, 1) and (row, col) != (their_row, their_col)
    assert wrong.mismatched[lane, value]


@pytest.fixture
def wmma_lab(sealed_lab):
    return sealed_lab("wmma_gfx12", "wmma-f16-f32", "calculator-layout")


def _run(*args: str):
    return CliRunner().invoke(app, ["layout", *args])


def test_layout_show_and_compare_read_a_sealed_table_marked_as_a_prediction(
        wmma_lab: Path, tmp_path: Path) -> None:
    """An AMD map nobody has measured: the sealed calculator table's, shown and compared as
    a prediction; its CSV export compares back exactly (exit 0), an edited one does not (1,
    with the first differing cells), and a wrong CuTe layout draws its mismatch map."""
    sealed = "preregistrations/wmma-f16-f32/calculator-layout.toml"
    shown = _run("show", "--sealed", sealed, "--operand", "A")
    assert shown.exit_code == 0, shown.output
    assert "PREDICTED by sealed calculator-layout" in shown.output
    assert "reproduces 256/256 cells" in shown.output and "F2-linear: yes" in shown.output
    csv = _run("show", "--sealed", sealed, "--operand", "A", "--as", "csv")
    assert csv.exit_code == 0 and csv.output.startswith("lane,value,row,col\n")
    table = tmp_path / "calculator.csv"
    table.write_text(csv.output)
    same = _run("compare", "--sealed", sealed, "--operand", "A", "--table", str(table))
    assert same.exit_code == 0 and same.output.startswith("MATCH: the table reproduces 256/256")
    lines = csv.output.splitlines()
    lane, value, row, col = lines[5].split(",")
    lines[5] = f"{lane},{value},{int(row) ^ 1},{col}"  # one cell moved to the next row
    table.write_text("\n".join(lines) + "\n")
    edited = _run("compare", "--sealed", sealed, "--operand", "A", "--table", str(table))
    assert edited.exit_code == 1 and "MISMATCH" in edited.output
    assert f"lane {lane}, value {value}: predicted ({row}, {col}), the layout gives " \
           f"({int(row) ^ 1}, {col})" in edited.output
    assert edited.output.count("\n  lane ") == 1  # that cell alone: compared literally
    cute = shown.output.split("cute   ")[1].split()[0]
    assert _run("compare", "--sealed", sealed, "--operand", "A", "--cute", cute).exit_code == 0
    import json

    described = json.loads(_run("show", "--sealed", sealed, "--operand", "A", "--as",
                                "json").output)["maps"][0]
    assert described["f2_linear"] and described["linear_reproduces"] == [256, 256]
    (tmp_path / "linear.json").write_text(json.dumps(described["linear"]))
    assert _run("compare", "--sealed", sealed, "--operand", "A", "--linear",
                str(tmp_path / "linear.json")).exit_code == 0
    figure = tmp_path / "mismatch"
    wrong = _run("compare", "--sealed", sealed, "--operand", "A", "--cute", "(32,8):(1,32)",
                 "--figure", str(figure))
    assert wrong.exit_code == 1 and (tmp_path / "mismatch.png").stat().st_size > 0


def test_layout_commands_refuse_bad_input_in_one_line(wmma_lab: Path, tmp_path: Path) -> None:
    sealed = "preregistrations/wmma-f16-f32/calculator-layout.toml"
    cases = {("compare", "--sealed", sealed, "--operand", "A"): "give exactly one layout",
             ("compare", "--sealed", sealed, "--operand", "E", "--cute", "8:1"): "one of A",
             ("compare", "--sealed", sealed, "--operand", "A", "--cute", "(4,8:(1,4)"):
                 "character",
             ("show", "--sealed", sealed, "--as", "svg"): "one of cute, linear, csv, json",
             ("show", "--sealed", sealed, "--as", "csv"): "--as csv writes one map",
             ("show", "wmma-f16-f32"): "no pinned dataset"}
    for args, said in cases.items():
        result = _run(*args)
        assert result.exit_code == 2 and said in result.output, (args, result.output)
    edited = wmma_lab / sealed
    edited.write_text(edited.read_text() + "\n# edited\n")
    result = _run("show", "--sealed", sealed)
    assert result.exit_code == 3 and "edited since" in result.output
    # the ledger line rewritten to hash as the edited file: the ledger's chain breaks
    import hashlib

    ledger = wmma_lab / "preregistrations" / "LEDGER.jsonl"
    old = json.loads(ledger.read_text().splitlines()[-1])["file_sha256"]
    ledger.write_text(ledger.read_text().replace(
        old, hashlib.sha256(edited.read_bytes()).hexdigest()))
    result = _run("show", "--sealed", sealed)
    assert result.exit_code == 3 and "ledger" in result.output, result.output


def test_a_simulated_dataset_is_never_shown_as_a_measured_map(own_lab, tmp_path: Path,
                                                              monkeypatch) -> None:
    """The simulated device's lane map (a hidden law the decode recovers) is a model's
    output: `layout show` and `compare` refuse it in one line, whatever else it holds."""
    from probelab.sweep import run_sweep

    own_lab("dmma_f64")
    monkeypatch.delenv("PROBELAB_GIT_HEAD", raising=False)
    monkeypatch.setenv("PROBELAB_CACHE", str(tmp_path / "cache"))
    path = run_sweep("dmma-f64", "sim", target="sm_90", repeats=2, allow_blind=True,
                     out_root=tmp_path / "sim").path
    for args in (("show", "--dataset", str(path)),
                 ("compare", "--dataset", str(path), "--operand", "A", "--cute", "8:1")):
        result = _run(*args)
        assert result.exit_code == 2 and "is simulated: a model's output, never a measured " \
            "map" in result.output, result.output


def _tile_map(layout: str, extent: tuple[int, int], values: int, op: str) -> LaneMap:
    """The map of a memory tile laid out by `layout` over `extent` (rows, cols): element
    (row, col) in slot (offset % 128, offset // 128) of 128 lanes and `values` values."""
    (offset,) = evaluate(parse_cute(layout), np.arange(extent[0])[:, None],
                         np.arange(extent[1])[None, :])
    lanes = 128
    rows, cols = np.full((lanes, values), -1), np.full((lanes, values), -1)
    row, col = np.indices(extent)
    rows[offset % lanes, offset // lanes], cols[offset % lanes, offset // lanes] = row, col
    return LaneMap("k", op, rows, cols, "test labels", tile=True)


def test_a_tile_map_is_fitted_as_the_tiles_own_layout_with_its_swizzle() -> None:
    """An operand read from a memory tile (slot = element offset v * lanes + l): its CuTe
    form is the tile's layout (row, col) -> offset, swizzled where a plain one does not
    fit; a wrong layout misses cells, one that sends two elements to one offset too."""
    m = _tile_map("Swizzle<3,3,3> o (64,64):(64,1)", (64, 64), 32, "a")
    found = lanemaps.cute_of(m)
    assert not isinstance(found, str) and found.text() == "Swizzle<3,3,3> o (64,64):(64,1)"
    assert lanemaps.reproduces(found, m).matches == 4096
    assert lanemaps.reproduces(parse_cute("(64,64):(64,1)"), m).matches < 4096
    collided = lanemaps.reproduces(parse_cute("(64,64):(1,1)"), m)  # offsets repeat
    assert collided.matches < 4096 and collided.mismatched.any()


@pytest.mark.slow
def test_the_committed_layout_maps_table_is_what_the_archive_gives(tmp_path: Path) -> None:
    """docs/layout-maps.md and .json, regenerated from the archive's datasets, are the
    committed files byte for byte: a structural finding the data no longer bear out (or a
    hand edit) fails here."""
    import os
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[1]
    done = subprocess.run([sys.executable, str(root / "scripts" / "layout_maps.py"), "--out",
                           str(tmp_path)], cwd=root, capture_output=True, text=True,
                          timeout=900, env={**os.environ,
                                            "PROBELAB_ROOT": str(root),
                                            "PROBELAB_CACHE": str(tmp_path / "cache")})
    assert done.returncode == 0, done.stderr[-2000:]
    for name in ("layout-maps.md", "layout-maps.json"):
        assert (tmp_path / name).read_text() == (root / "docs" / name).read_text(), name


# -- the matrix-move and sparse kits' maps (probelab.kitmaps), offsets -----------------------

ROOT = Path(__file__).resolve().parents[1]


def _newest(probe: str) -> Path:
    """The probe's newest committed dataset (read only)."""
    return max((ROOT / "data" / probe).glob("*/*.nc"))


def _ptx_fragment(num: int, trans: bool) -> tuple[np.ndarray, np.ndarray]:
    """(lane, value) -> (row, col) of the rows the lanes' addresses named, as the PTX ISA
    documents ldmatrix and stmatrix (PTX ISA 8.x, "Warp-level matrix load instruction:
    ldmatrix", its fragment figure for one 8x8 matrix of 16-bit elements: lane l holds
    elements 2(l % 4) and 2(l % 4) + 1 of row l / 4; matrix j in register j, its rows named
    by the addresses of lanes 8j..8j+7; with .trans, the matrix transposed: row and column
    exchange). A value is an element: value 2j + i is element i of register j."""
    lane, value = np.arange(32)[:, None], np.arange(2 * num)[None, :]
    matrix, element = value // 2, value % 2
    along, across = np.broadcast_arrays(lane // 4, 2 * (lane % 4) + element)  # in matrix j
    if trans:
        along, across = across, along
    return 8 * matrix + along, across


@pytest.mark.parametrize("probe", ["ldmatrix-b16", "stmatrix-b16"])
def test_matrix_move_maps_are_the_ptx_fragments_and_cutes_copy_atoms(probe: str) -> None:
    """The measured ldmatrix/stmatrix maps, read off the committed datasets, in physical
    labels: each is PTX's documented fragment (turned round for a store), and its CuTe form,
    found from the data, is CuTe's LDSM/STSM atom: SM75_U32x4_LDSM_N's DstLayout
    (32,(32,4)):(32,(1,1024)) over bits (include/cute/atom/copy_traits_sm75.hpp,
    NVIDIA/cutlass) is (32,(2,4)):(2,(1,64)) over 16-bit elements."""
    import xarray as xr

    from probelab import kitmaps

    with xr.open_dataset(_newest(probe)) as ds:
        maps = kitmaps.maps_of(ds, None, None)
        nums, trans = ds["num"].values.tolist(), ds["trans"].values.tolist()
    assert [m.kernel for m in maps] and len(maps) == len(nums)
    for m, num, transposed in zip(maps, nums, trans, strict=True):
        rows, cols = _ptx_fragment(num, bool(transposed))
        assert np.array_equal(m.rows, rows) and np.array_equal(m.cols, cols), m.kernel
        found = lanemaps.cute_of(m)
        assert not isinstance(found, str)
        assert lanemaps.reproduces(found, m).matches == m.held == 64 * num
        assert not isinstance(lanemaps.linear_of(m), str)
        if num == 4 and not transposed:
            atom = parse_cute("(32,(2,4)):(2,(1,64))")
            assert lanemaps.reproduces(atom, m).matches == 256


def test_movmatrix_map_is_the_transpose_of_the_ptx_fragment() -> None:
    """movmatrix.trans: lane l's half h holds the source fragment's element (2(l % 4) + h,
    l / 4) (PTX ISA, "movmatrix": the destination fragment is the transposed matrix in
    ldmatrix's fragment layout), i.e. source lane 4 row + col / 2, half col % 2."""
    import xarray as xr

    from probelab import kitmaps

    with xr.open_dataset(_newest("movmatrix-b16")) as ds:
        (m,) = kitmaps.maps_of(ds, None, "source")
    row, col = _ptx_fragment(1, True)
    assert np.array_equal(m.rows, 4 * row + col // 2) and np.array_equal(m.cols, col % 2)
    found = lanemaps.cute_of(m)
    assert not isinstance(found, str) and lanemaps.reproduces(found, m).matches == 64


@pytest.mark.parametrize("op", ["load", "store", "move"])
def test_a_matrix_move_map_is_the_law_the_kit_simulates(op: str) -> None:
    """Data built here: the kit's simulated unit under a random law (a bijection), decoded
    by the kit; the map read off the dataset is that law, turned round for a store."""
    from probelab import kitmaps
    from probelab.kits.matrix_move import engine

    form = engine.Form("k", op, 1 if op == "move" else 4, op == "move")
    law = engine.random_law(form, np.random.default_rng(7))
    grid = engine.stimulus([form], 3)
    ds = engine.assemble(grid, [form], {"k": engine.simulate(form, law, engine.buffers(grid))})
    (m,) = kitmaps.maps_of(ds, "k", None)
    t = law.table
    if op == "store":  # (address lane, col) -> (lane, reg, half): every entry turned round
        row, col = np.nonzero(t[..., 0] >= 0)
        lane, value = t[row, col, 0], t[row, col, 1] * 2 + t[row, col, 2]
        assert np.array_equal(m.rows[lane, value], row)
        assert np.array_equal(m.cols[lane, value], col) and m.held == len(row)
    else:
        want = t.reshape(32, -1, 2)
        assert np.array_equal(m.rows, want[..., 0]) and np.array_equal(m.cols, want[..., 1])
    found = lanemaps.cute_of(m)  # a random law: a form only where one proves every cell
    assert isinstance(found, str) or lanemaps.reproduces(found, m).matches == m.held


def test_sparse_maps_are_the_datasets_rows_pairings_and_governing_fields() -> None:
    """mma.sp's A map, read off a committed dataset: two slots share a row label exactly when
    their products fill the same D register, a k label exactly when they meet the same B
    slot, labels numbered by first appearance (value-major); the metadata map is the
    governing (lane, field) itself, a selector's offset its CuTe form's base offset."""
    import xarray as xr

    from probelab import kitmaps

    with xr.open_dataset(_newest("mma-sp-f16")) as stored:
        ds = vocabulary.translated(stored)  # an archive dataset: a_elem, read as a_value
        maps = kitmaps.maps_of(ds, None, None)
        k = ds.sel(kernel=maps[0].kernel)
        values = int(k["elems"])
        rows = (k["row_lane"].values * 8 + k["row_reg"].values)[:, :values]
        met = (k["met_lane"].values[0] * 64 + k["met_elem"].values[0])[:, :values]
        gov = {m.kernel: (ds["gov_lane"].sel(kernel=m.kernel).values,
                          ds["gov_field"].sel(kernel=m.kernel).values) for m in maps}
    a = maps[0]
    assert a.operand == "a" and a.held == a.rows.size
    for labels, keys in ((a.rows, rows), (a.cols, met)):
        assert np.array_equal(labels[:, :, None] == labels.T.reshape(-1)[None, None],
                              keys[:, :, None] == keys.T.reshape(-1)[None, None])
        order = labels.T.reshape(-1)
        assert list(dict.fromkeys(order.tolist())) == list(range(order.max() + 1))
    for m in maps:
        found = lanemaps.cute_of(m)
        assert not isinstance(found, str) and lanemaps.reproduces(found, m).matches == m.held
        if m.operand == "meta":
            lane, field = gov[m.kernel]
            assert np.array_equal(m.rows, lane[:, : m.values])
            assert np.array_equal(m.cols, field[:, : m.values])
            assert found.offset == lane[0, 0] * 16 + field[0, 0]
            assert isinstance(lanemaps.linear_of(m), str) == bool(found.offset)


def test_of_the_swizzles_that_fit_a_tile_the_one_leaving_the_fewest_sub_modes_is_shown() -> None:
    """A box half a 64B swizzle span wide (rows padded to the span): Swizzle<1,3,3> over a
    row mode split in three fits too, but what a reader writes is the plain (32,16) under
    Swizzle<2,3,3>; both reproduce every cell."""
    m = _tile_map("Swizzle<2,3,3> o (32,16):(32,1)", (32, 16), 8, "smem")
    found = lanemaps.cute_of(m)
    assert not isinstance(found, str) and found.text() == "Swizzle<2,3,3> o (32,16):(32,1)"
    split = parse_cute("Swizzle<1,3,3> o ((4,2,4),16):((32,144,256),1)")
    assert split.sub_modes == 4 > found.sub_modes == 2
    assert lanemaps.reproduces(split, m).matches == lanemaps.reproduces(found, m).matches == 512


def test_a_tile_starting_past_offset_0_gets_its_base_offset_inside_the_swizzle() -> None:
    """A tile whose element (0, 0) is at offset 256 of a swizzled buffer: its CuTe form is
    Swizzle o 256 o LAYOUT (CuTe's ComposedLayout), proved on every cell; the same layout
    without the offset, or with it outside the swizzle, misses cells."""
    tile = parse_cute("Swizzle<2,3,3> o 256 o (16,16):(16,1)")
    assert tile.text() == "Swizzle<2,3,3> o 256 o (16,16):(16,1)" and tile.offset == 256
    assert parse_cute("32:1").offset == 0  # a layout that starts with a digit is no offset
    m = _tile_map(tile.text(), (16, 16), 4, "b")
    row, col = np.indices((16, 16))
    (offset,) = evaluate(tile, row, col)
    found = lanemaps.cute_of(m)
    assert not isinstance(found, str) and found.offset == int(offset[0, 0]) == 256
    assert lanemaps.reproduces(found, m).matches == 256
    assert lanemaps.reproduces(parse_cute("Swizzle<2,3,3> o (16,16):(16,1)"), m).matches < 256
    unswizzled = evaluate(parse_cute("256 o (16,16):(16,1)"), row, col)[0]
    assert (unswizzled != offset).any()  # the offset outside the swizzle is another tile


def test_the_wgmma_tiles_past_offset_0_are_proved_with_their_base_offset() -> None:
    """ss_sw64_hi's and rs_sw128_k1's B (committed datasets): element (0, 0) is not at tile
    offset 0; the form found carries that offset and reproduces every cell."""
    import xarray as xr

    for probe, kernel in (("wgmma-f16-ss", "ss_sw64_hi"), ("wgmma-f16-rs", "rs_sw128_k1")):
        with xr.open_dataset(_newest(probe)) as ds:
            (m,) = lanemaps.lane_maps(vocabulary.translated(ds), kernel, "b")
        found = lanemaps.cute_of(m)
        assert not isinstance(found, str) and found.offset == m.offsets()[0, 0] > 0
        assert lanemaps.reproduces(found, m).matches == m.held


def test_layout_show_exports_a_kit_map_and_refuses_what_is_no_lane_map(repo_lab) -> None:
    """`layout show` on the archive: an ldmatrix map with its reproduce count (and its CSV
    compared back, literally); an operand a sparse dataset does not map, and a dataset with no
    lane map, each refused in one line naming what it holds (exit 2)."""
    shown = _run("show", "ldmatrix-b16", "--kernel", "ldmatrix_x4", "--operand", "SMEM")
    assert shown.exit_code == 0, shown.output
    assert "reproduces 256/256 cells" in shown.output and "F2-linear: yes" in shown.output
    csv = _run("show", "ldmatrix-b16", "--kernel", "ldmatrix_x4", "--operand", "smem", "--as",
               "csv")
    rows, cols = _ptx_fragment(4, False)
    lines = csv.output.splitlines()
    assert lines[0] == "lane,value,row,col" and len(lines) == 257
    assert lines[1 + 32 * 3 + 5] == f"5,3,{rows[5, 3]},{cols[5, 3]}"  # value-major, lane fastest
    refused = _run("show", "mma-sp-f16", "--operand", "B")
    assert refused.exit_code == 2 and "A and META maps" in refused.output, refused.output
    assert refused.output.count("\n") == 1
    byte_perm = _newest("byte-perm")
    import xarray as xr

    with xr.open_dataset(byte_perm) as ds:
        first = next(iter(ds.data_vars))
    none = _run("show", "--dataset", str(byte_perm))
    assert none.exit_code == 2 and "holds no lane map" in none.output and first in none.output
    assert none.output.count("\n") == 1
