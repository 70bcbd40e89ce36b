"""Measured lane maps in CuTe and linear-layout form (probelab.lanemaps) and the `probelab
layout show|compare` commands: a form is found from the map alone and proved on every cell,
a map that has none says why, and a user's layout is scored literally or up to the
renumbering a lane-id experiment leaves open."""

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from probelab import lanemaps
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
    offset = LaneMap("k", "a", m.rows + 1, m.cols, "test labels")
    assert "thread 0, value 0" in lanemaps.cute_of(offset)


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


def test_a_tile_map_is_fitted_as_the_tiles_own_layout_with_its_swizzle() -> None:
    """An operand read from a memory tile (slot = element offset v * lanes + l): its CuTe
    form is the tile's layout (row, col) -> offset, swizzled where a plain one does not
    fit; a wrong layout misses cells, one that sends two elements to one offset too."""
    tile = parse_cute("Swizzle<3,3,3> o (64,64):(64,1)")
    (offset,) = evaluate(tile, np.arange(64)[:, None], np.arange(64)[None, :])
    lanes, values = 128, 32
    rows, cols = np.full((lanes, values), -1), np.full((lanes, values), -1)
    row, col = np.indices((64, 64))
    rows[offset % lanes, offset // lanes], cols[offset % lanes, offset // lanes] = row, col
    m = LaneMap("k", "a", rows, cols, "test labels", tile=True)
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
