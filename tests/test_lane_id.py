"""The lane-id engine on simulated units: can the stimulus + decode recover a hidden layout,
and does it refuse units that have none? Tests of the design, never evidence.

Expectations come from the hidden layouts themselves (relations and relabelings computed
here), never from decoding.
"""

from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from probelab.kits.lane_id import engine as lane_id
from probelab.kits.lane_id.engine import NONE, Layout, Shape, Sizes
from probelab.probe import get_probe
from probelab.sweep import run_sweep

SHAPES = (Shape("m8n8k4", 8, 8, 4, 32, 1, 1, 2), Shape("m16n8k8", 16, 8, 8, 32, 4, 2, 4),
          Shape("m16n8k16", 16, 8, 16, 32, 8, 4, 4))
AMD = (Shape("mfma", 16, 16, 4, 64, 1, 1, 4),)


def run_unit(shapes, layouts: dict[str, Layout], unit=lane_id.multiply, seed: int = 7,
             design: str = lane_id.BOTH):
    grid = lane_id.stimulus(shapes, trials=3, seed=seed, design=design)
    w = lane_id.waves(grid, lane_id.codec_of(shapes))
    lanes = Sizes.widest(shapes).lanes
    codec = lane_id.codec_of(shapes)
    outputs = {s.name: lane_id.registers(codec, "d", unit(layouts[s.name], w["a"], w["b"],
                                                          w["c"], s), lanes) for s in shapes}
    return lane_id.assemble(grid, shapes, outputs)


def hidden(shapes, seed: int) -> dict[str, Layout]:
    rng = np.random.default_rng(seed)
    size = Sizes.widest(shapes)
    return {s.name: lane_id.random_layout(s, rng, size) for s in shapes}


def relabeling(hidden_cells: np.ndarray, found: np.ndarray) -> dict[int, int] | None:
    """The one-to-one label map taking hidden labels to found ones, or None if there is none."""
    pairs = {}
    for h, f in zip(hidden_cells.reshape(-1), found.reshape(-1), strict=True):
        if pairs.setdefault(int(h), int(f)) != int(f):
            return None
    values = list(pairs.values())
    return pairs if len(set(values)) == len(values) else None


def assert_same_up_to_relabeling(ds, shape: Shape, layout: Layout) -> None:
    """Rows of A, C and D, k of A and B, columns of B, C and D: each one consistent
    renumbering of the hidden labels (-1, 'no element', maps to -1)."""
    found = {n: np.stack([ds[f"{n}_row"].sel(kernel=shape.name).values,
                          ds[f"{n}_col"].sel(kernel=shape.name).values], -1) for n in "abcd"}
    groups = {"row": [("a", 0), ("c", 0), ("d", 0)], "k": [("a", 1), ("b", 0)],
              "col": [("b", 1), ("c", 1), ("d", 1)]}
    for what, members in groups.items():
        h = np.concatenate([getattr(layout, n)[..., i].reshape(-1) for n, i in members])
        f = np.concatenate([found[n][..., i].reshape(-1) for n, i in members])
        mapping = relabeling(h, f)
        assert mapping is not None, f"{shape.name}: {what} labels are not a relabeling"
        assert mapping.get(-1, -1) == -1


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), design=st.sampled_from(lane_id.DESIGNS))
def test_any_hidden_layout_is_recovered(seed: int, design: str) -> None:
    layouts = hidden(SHAPES, seed)
    ds = run_unit(SHAPES, layouts, design=design)
    assert ds["recovered"].values.tolist() == [1] * len(SHAPES), ds["recovered"].attrs["why"]
    assert ds["gemm_exact"].values.all()
    for shape in SHAPES:
        assert_same_up_to_relabeling(ds, shape, layouts[shape.name])


@pytest.mark.parametrize("design", lane_id.DESIGNS)
def test_relations_match_the_hidden_layout_cell_for_cell(design: str) -> None:
    layouts = hidden(AMD, 3)
    ds = run_unit(AMD, layouts, design=design)
    lay = layouts["mfma"]
    a, b, d = lay.a[:, 0], lay.b[:, 0], lay.d  # (64, 2), (64, 2), (64, 4, 2)
    same_row = a[:, None, None, 0] == d[None, :, :, 0]  # (a_lane, d_lane, d_reg)
    same_k = a[:, None, 1] == b[None, :, 0]
    same_col = b[:, None, None, 1] == d[None, :, :, 1]
    if design == lane_id.BOTH:
        for suffix in ("", "_b"):
            np.testing.assert_array_equal(ds[f"same_row{suffix}"].values[0, :, 0], same_row)
            np.testing.assert_array_equal(ds[f"same_k{suffix}"].values[0, :, 0, :, 0], same_k)
            np.testing.assert_array_equal(ds[f"same_col{suffix}"].values[0, :, 0], same_col)
    else:  # APART stores b_src, the table the three relations project
        assert "same_row" not in ds
        b_src = ds["b_src"].values[0, :, 0]  # (a_lane, d_lane, d_reg): B slots are lanes
        want = np.where(same_row, np.argmax(same_k[:, :, None, None] & same_col[None], 1),
                        NONE)
        np.testing.assert_array_equal(b_src, want)
    slot = np.arange(64)[:, None] + 64 * np.arange(4)[None, :]
    np.testing.assert_array_equal(ds["c_src"].values[0], slot)  # C lands where D is read


@pytest.mark.parametrize("design", lane_id.DESIGNS)
def test_padded_slots_relate_to_nothing(design: str) -> None:
    """m8n8k4 reads one A register of the eight the buffers have, writes two of D's four."""
    ds = run_unit(SHAPES, hidden(SHAPES, 5), design=design).sel(kernel="m8n8k4")
    if design == lane_id.BOTH:
        assert not ds["same_row"].values[:, 1:].any() and not ds["same_k"].values[:, 1:].any()
        assert not ds["same_col"].values[..., 2:].any()
    else:
        assert (ds["b_src"].values[:, 1:] == NONE).all()
        assert (ds["b_src"].values[..., 2:] == NONE).all()
    assert (ds["c_src"].values[:, 2:] == NONE).all()
    assert (ds["a_row"].values[:, 1:] == -1).all() and (ds["d_row"].values[:, 2:] == -1).all()


def _garble(kind: str, design: str = lane_id.BOTH):
    def unit(layout, a, b, c, shape):
        d = lane_id.multiply(layout, a, b, c, shape)
        if kind == "sum":  # D slot 0 also gets D slot 1's value: no longer one element
            d[:, 0] += d[:, 1]
        elif kind == "lane-swap":  # lanes 3 and 4 of D swap on the first named waves only
            size = Sizes.widest([shape])
            first = size.slots("b") if design == lane_id.BOTH else 1 + size.slots("a") // 2
            d[:first, [3, 4]] = d[:first, [4, 3]]
        elif kind == "fraction":  # an inexact unit: not integer-valued
            d[:, 7] += 0.5
        return d
    return unit


def test_apart_refuses_named_waves_the_gemm_waves_contradict() -> None:
    """D lanes 3 and 4 swapped in every b-named wave and nowhere else: one consistent
    layout by those waves alone, but not the unit's (C and GEMM waves disagree), so APART,
    which names nothing twice, recovers none (BOTH refuses it through the a-named waves)."""
    def unit(layout, a, b, c, shape):
        d = lane_id.multiply(layout, a, b, c, shape)
        size = Sizes.widest([shape])
        named = slice(1, 1 + size.slots("a"))  # one C wave, then one b-named wave per A slot
        d[named, 3], d[named, 4] = d[named, 4].copy(), d[named, 3].copy()
        return d
    ds = run_unit(AMD, hidden(AMD, 11), unit=unit, design=lane_id.APART)
    assert ds["recovered"].values.tolist() == [0]
    assert "GEMM waves disagree" in ds["recovered"].attrs["why"]


@pytest.mark.parametrize("design", lane_id.DESIGNS)
@pytest.mark.parametrize("kind", ["sum", "lane-swap", "fraction"])
def test_units_without_a_layout_are_refused(kind: str, design: str) -> None:
    ds = run_unit(AMD, hidden(AMD, 11), unit=_garble(kind, design), design=design)
    assert ds["recovered"].values.tolist() == [0]
    assert "recovered" not in ds["recovered"].attrs["why"].split(": ", 1)[1]
    assert not ds["gemm_exact"].values.any()
    assert (ds["a_row"].values == -1).all()  # no lane map is drawn from a refused unit


def test_the_sim_backend_recovers_the_probes_hidden_layout(tmp_path: Path,
                                                           monkeypatch) -> None:
    """End to end, as `probelab sweep mfma-f64 --backend sim` runs it: the probe's own hidden
    (seeded random) layout, recovered up to relabeling, marked simulated."""
    monkeypatch.delenv("PROBELAB_GIT_HEAD", raising=False)
    for probe_id, target in (("mfma-f64", "gfx942"), ("dmma-f64", "sm_90")):
        probe = get_probe(probe_id)
        result = run_sweep(probe_id, "sim", target=target, out_root=tmp_path, allow_blind=True)
        assert result.provenance["simulated"] is True
        ds = result.dataset
        assert ds["recovered"].values.all(), ds["recovered"].attrs["why"]
        assert ds["gemm_exact"].values.all()
        for shape in probe.shapes:
            assert_same_up_to_relabeling(ds, shape, probe.hidden_layout(shape))


def test_shapes_must_fill_their_matrices() -> None:
    with pytest.raises(ValueError, match="not 32 lanes x 2 values"):
        Shape("bad", 16, 8, 8, 32, 2, 2, 4)


def test_a_helper_is_compiled_only_where_it_is_used() -> None:
    """`d_m` names d_lane, which same_k's grid lacks: fine, same_k never uses it. A helper
    that is used and names a missing coordinate is still an error."""
    from probelab.errors import UsageError
    from probelab.hypothesis import evaluate_claim, parse_hypothesis

    grid = lane_id.stimulus(AMD, trials=1, seed=1)
    text = """schema = 1
id = "t"
probe = "mfma-f64"
claim = "c"
coordinates = "raw"
[let]
a_k = "a_lane // 16"
d_m = "d_lane % 16"
b_k = "b_lane // 16"
[predict]
same_k = "a_k == b_k"
"""
    h = parse_hypothesis(Path("t.toml"), text.encode())
    tables, _ = evaluate_claim(h, grid, lane_id.OBSERVABLES)
    assert tables["literal"]["same_k"].shape == (1, 64, 1, 64, 1)
    bad = parse_hypothesis(Path("t.toml"), text.replace('"a_k == b_k"', '"a_k == d_m"').encode())
    with pytest.raises(UsageError, match="d_lane"):
        evaluate_claim(bad, grid, lane_id.OBSERVABLES)


def _layout(shape: Shape, size: Sizes, a, b, d) -> Layout:
    def table(f, used: int, regs: int) -> np.ndarray:
        out = np.full((shape.lanes, regs, 2), -1)
        for lane in range(shape.lanes):
            for reg in range(used):
                out[lane, reg] = f(lane, reg)
        return out

    dd = table(d, shape.d_values, size.d_values)
    return Layout(table(a, shape.a_values, size.a_values), table(b, shape.b_values, size.b_values),
                  dd, dd)


def test_canonical_labels_are_the_documented_ones_for_documented_units() -> None:
    """The labelling convention (first appearance, register-major) reproduces the PTX and
    calculator labels when a unit lays out operands as documented, so lane maps of such
    hardware read like the vendor tables. (The tables here only drive a simulated unit.)"""
    ptx = (lambda ln, i: ((ln >> 2) + 8 * (i & 1), ln % 4 + 4 * (i >> 1)),
           lambda ln, i: (ln % 4 + 4 * i, ln >> 2),
           lambda ln, i: ((ln >> 2) + 8 * (i >> 1), 2 * (ln % 4) + (i & 1)))
    cdna = (lambda ln, r: (ln % 16, ln // 16), lambda ln, r: (ln // 16, ln % 16),
            lambda ln, r: (4 * r + ln // 16, ln % 16))
    for shapes, tables in ((SHAPES, ptx), (AMD, cdna)):
        size = Sizes.widest(shapes)
        layouts = {s.name: _layout(s, size, *tables) for s in shapes}
        ds = run_unit(shapes, layouts)
        for s in shapes:
            for n in "abcd":
                found = np.stack([ds[f"{n}_row"].sel(kernel=s.name).values,
                                  ds[f"{n}_col"].sel(kernel=s.name).values], -1)
                np.testing.assert_array_equal(found, getattr(layouts[s.name], n))


@pytest.mark.slow
def test_a_shape_too_big_for_one_id_digit_is_carried_in_digit_waves() -> None:
    """1,024 A slots once exceeded the f64 encoding (C's scale was 1024); now their ids
    travel in two digit waves, as they do for 1,024 f16 A slots into an f16 accumulator
    (C's scale 512, three C levels), and the hidden layout is recovered."""
    from probelab.formats import F16
    from probelab.kits.elements import Codec

    for codec in (lane_id.F64_CODEC, Codec(F16, F16)):
        shapes = (Shape("big", 64, 16, 16, 64, 16, 4, 16, codec=codec),)  # 1,024 A slots
        layouts = hidden(shapes, 2)
        ds = run_unit(shapes, layouts)
        assert ds.sizes["digit"] >= 2
        assert ds["recovered"].values.tolist() == [1], ds["recovered"].attrs["why"]
        assert ds["gemm_exact"].values.all()
        assert_same_up_to_relabeling(ds, shapes[0], layouts["big"])
