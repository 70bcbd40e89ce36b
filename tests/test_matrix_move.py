"""The matrix-move kit (ldmatrix, stmatrix, movmatrix): on simulated units with hidden laws,
the decode recovers each law exactly, the random waves replay through it, and a unit that
breaks the law anywhere shows where; the probes' kernels pass their evidence gates offline,
and sm_90's ptxas refuses the 8-bit forms."""

from pathlib import Path

import numpy as np
import pytest

from probelab.kits.matrix_move import engine
from probelab.kits.matrix_move.engine import INVALID, NONE, Form, Law
from probelab.kits.matrix_move.figures import move_map_figures
from probelab.probe import Kernel, load_sibling
from tests.toolchains import nvidia_tools

PROBES = load_sibling(Path(__file__).parents[1] / "probes/matrix_move/probe.py").PROBES


def _run(probe, tamper=None):
    """The dataset a simulated sweep would assemble; `tamper(kernel, words)` edits a
    kernel's raw output first."""
    grid = probe.stimulus()
    launch = probe.launch(grid)
    outputs = {}
    for kernel in probe.kernels("nvidia"):
        words = probe.simulate(kernel, launch.inputs)["out"].copy()
        if tamper:
            tamper(kernel.name, words)
        outputs[kernel.name] = {"out": words}
    return grid, probe.assemble(grid, outputs)


def _decoded(ds, op: str, kernel: str) -> np.ndarray:
    fields = {"load": ("from_addr_lane", "from_col"),
              "store": ("from_lane", "from_reg", "from_half"),
              "move": ("from_lane", "from_half")}[op]
    return np.stack([ds[f].sel(kernel=kernel).values for f in fields], -1).astype(np.int64)


@pytest.mark.parametrize("probe", PROBES, ids=lambda p: p.id)
def test_the_decode_recovers_every_hidden_law(probe) -> None:
    _, ds = _run(probe)
    for form in probe.forms:
        law = probe.hidden_law(form).table
        assert np.array_equal(_decoded(ds, probe.op, form.name), np.where(law >= 0, law, NONE))
        # the law moves exactly 8 * num rows' worth of elements: the rest is "none"
        moved = np.count_nonzero(_decoded(ds, probe.op, form.name)[..., 0] != NONE)
        assert moved == (64 * form.num if form.op != "move" else 64)
    assert ds["replayed"].values.tolist() == [1] * len(probe.forms)
    if probe.op == "store":
        assert ds["stray"].values.tolist() == [0] * len(probe.forms)


def test_addresses_and_row_places_are_not_confounded() -> None:
    grid = PROBES[0].stimulus()
    address = grid["address"].values
    ids = grid["role"].values == "ids"
    assert all(len(set(a)) == 32 for a in address)  # every lane its own row
    assert not np.array_equal(address[ids][0], address[ids][1])  # rows move between waves
    assert (address[ids][0] != address[ids][1]).mean() > 0.9


def test_a_unit_that_ignores_the_lanes_addresses_cannot_pass_for_one_that_follows_them() -> None:
    """A unit that reads (or writes) row `lane` of the tile, whatever address the lane gave,
    is the same law in every wave only if the addresses are ignored: the waves' rows differ,
    so its sources are not one consistent address lane (INVALID), or its stores land in rows
    nobody addressed (stray)."""
    load, store = PROBES[0], PROBES[1]
    grid = load.stimulus()

    def by_lane(kernel: str, words: np.ndarray) -> None:  # row = lane, element = half
        tile = grid["tile"].values
        out = words.reshape(4, 32, 4)
        for w in range(4):
            for lane in range(32):
                out[w, lane] = [tile[w, lane, 2 * r] | (tile[w, lane, 2 * r + 1] << 16)
                                for r in range(4)]

    _, ds = _run(load, by_lane)
    got = ds["from_addr_lane"].values
    assert np.count_nonzero(got == INVALID) > 0.9 * got.size
    grid = store.stimulus()

    def to_lane_rows(kernel: str, words: np.ndarray) -> None:
        held = grid["held"].values
        tile = words.reshape(4, 64, 4)
        tile[:] = 0
        for w in range(4):
            tile[w, :32] = held[w, :, :, 0] | (held[w, :, :, 1] << 16)

    _, ds = _run(store, to_lane_rows)
    assert (ds["stray"].values > 0).all()


def test_a_unit_that_differs_in_one_id_wave_is_marked_invalid_there() -> None:
    probe = PROBES[0]  # ldmatrix: out words (wave, lane, reg)

    def tamper(kernel: str, words: np.ndarray) -> None:
        if kernel == "ldmatrix_x4":
            w = words.reshape(4, 32, 4)
            w[1, 5, 2] = w[1, 6, 2]  # id wave 1: lane 5's register 2 repeats lane 6's

    _, ds = _run(probe, tamper)
    got = ds["from_addr_lane"].sel(kernel="ldmatrix_x4").values
    assert (got[5, 2] == INVALID).all() and np.count_nonzero(got == INVALID) == 2
    assert int(ds["replayed"].sel(kernel="ldmatrix_x4")) == 1  # random waves untouched


@pytest.mark.parametrize("index", [0, 1])
def test_a_unit_that_differs_in_a_random_wave_does_not_replay(index: int) -> None:
    for probe in PROBES:
        victim = probe.forms[-1].name

        wave = np.flatnonzero(probe.stimulus()["role"].values == "random")[index]

        def tamper(kernel: str, words: np.ndarray, victim=victim, wave=wave) -> None:
            if kernel == victim:
                per_wave = words.size // 4
                i = wave * per_wave + (per_wave // 2)
                words[i] ^= 0x00010000 if words[i] else 0x1  # one element, one bit

        _, ds = _run(probe, tamper)
        assert int(ds["replayed"].sel(kernel=victim)) == 0, probe.id
        assert ds["replayed"].values.sum() == len(probe.forms) - 1


def test_a_store_to_a_row_no_lane_addressed_is_stray() -> None:
    probe = PROBES[1]
    grid = probe.stimulus()

    def tamper(kernel: str, words: np.ndarray) -> None:
        if kernel == "stmatrix_x1":
            nobody = sorted(set(range(64)) - set(grid["address"].values[0].tolist()))[0]
            words.reshape(4, 64, 4)[0, nobody, 0] = 0x00070007

    _, ds = _run(probe, tamper)
    assert int(ds["stray"].sel(kernel="stmatrix_x1")) == 2
    assert ds["stray"].values.sum() == 2


def test_a_store_that_writes_beyond_num_is_seen() -> None:
    """x1 stores through lanes 0-7's addresses only: a unit that also stored through lane 8's
    row shows an element there."""
    probe = PROBES[1]
    form = probe.forms[0]
    law = probe.hidden_law(form).table.copy()
    law[8] = law[0]  # lane 8's row gets lane 0's row's elements too
    probe.sim_laws[form.name] = Law(law)
    try:
        _, ds = _run(probe)
    finally:
        probe.sim_laws.pop(form.name)
    got = ds["from_lane"].sel(kernel=form.name).values
    assert (got[8] != NONE).all() and (got[9:] == NONE).all()


def test_forms_refuse_what_the_instructions_do_not_have() -> None:
    with pytest.raises(ValueError, match=r"x1/\.x2/\.x4"):
        Form("k", "load", 3, False)
    with pytest.raises(ValueError, match="movmatrix"):
        Form("k", "move", 1, False)
    with pytest.raises(ValueError, match="not one of"):
        Form("k", "shuffle", 1, False)
    with pytest.raises(ValueError, match="one op"):
        engine.op_of([Form("a", "load", 1, False), Form("b", "store", 1, False)])


def test_figures_and_tables_say_what_the_dataset_says() -> None:
    probe = PROBES[0]
    _, ds = _run(probe)
    out = move_map_figures(ds)
    assert sorted(out) == sorted(f"{f.name}.{x}" for f in probe.forms for x in ("map", "table"))
    table = out["ldmatrix_x2.table"]
    assert table.columns == ("lane", "register", "half", "addr_lane", "col")
    assert len(table.rows) == 32 * 2 * 2  # x2: two registers of two halves per lane
    law = probe.hidden_law(probe.forms[1]).table
    lane, reg, half, addr, col = table.rows[7]
    assert (addr, col) == tuple(law[lane, reg, half])


@pytest.mark.parametrize("probe", PROBES, ids=lambda p: p.id)
def test_every_kernel_passes_its_evidence_gate_offline(probe) -> None:
    nvidia = nvidia_tools()
    from probelab.evidence import gate
    from probelab.vendors import of

    for kernel in probe.kernels("nvidia"):
        code = nvidia.build(kernel, "sm_90")
        report = gate(kernel.name, kernel.evidence, code.functions[kernel.symbol],
                      of("sm_90").isa)
        assert report.ok, (kernel.name, report.problems)
        assert len(report.matches) == 1


def test_sm_90_has_no_8_bit_ldmatrix_or_stmatrix(tmp_path) -> None:
    """PTX 8.6's .b8 forms (ldmatrix .m16n16/.m8n16, stmatrix .m16n8) are sm_100a's: ptxas
    refuses them for sm_90, which is why the probes measure .b16 only."""
    nvidia = nvidia_tools()
    forms = {"ld": 'asm volatile("ldmatrix.sync.aligned.m16n16.x1.trans.shared.b8 {%0, %1}, '
                   '[%2];" : "=r"(r0), "=r"(r1) : "r"(a));',
             "st": 'asm volatile("stmatrix.sync.aligned.m16n8.x1.trans.shared.b8 [%0], {%1};" '
                   ':: "r"(a), "r"(r0));'}
    for name, body in forms.items():
        source = tmp_path / f"{name}.cu"
        source.write_text('extern "C" __global__ void k(unsigned* d) { unsigned r0 = d[0], '
                          f'r1 = 0, a = d[1]; {body} d[2] = r0 + r1; }}\n')
        kernel = Kernel(name, "k", source, "nvidia", None)
        what = {"ld": "ldmatrix", "st": "stmatrix"}[name]
        with pytest.raises(Exception, match=rf"Feature '{what}\.b8' not supported on "
                                            r"\.target 'sm_90'"):
            nvidia.build(kernel, "sm_90", fresh=True)
