"""The lane-id kit's compact storage form (probelab.kits.lane_id.storage): lossless on clean
and on odd simulated units (the raw waves rebuilt bit for bit), the observables unchanged,
the layout known from the grid alone and within the bounds a new dataset has for every
lane-id probe, and the archive's datasets (the float form) still read. Tests of the design,
never evidence.
"""

from pathlib import Path

import h5py
import numpy as np
import pytest
from archive import needs_archive

from probelab import dataset, vocabulary
from probelab.formats import E4M3, F32, S8, S32
from probelab.kits.elements import Codec
from probelab.kits.lane_id import engine, storage
from probelab.kits.lane_id.engine import Shape, Sizes
from probelab.kits.lane_id.probe import LaneIdProbe
from probelab.probe import catalog

ROOT = Path(__file__).resolve().parents[1]
F64_AMD = (Shape("mfma", 16, 16, 4, 64, 1, 1, 4),)  # one digit: no digit dim
E4M3_MMA = (Shape("e4m3", 16, 8, 32, 32, 16, 8, 4, codec=Codec(E4M3, F32)),)  # two digits
S8_MMA = (Shape("s8", 16, 8, 32, 32, 16, 8, 4, codec=Codec(S8, S32)),)  # int64 raw values
F64_MMA = (Shape("m8n8k4", 8, 8, 4, 32, 1, 1, 2), Shape("m16n8k8", 16, 8, 8, 32, 4, 2, 4),
           Shape("m16n8k16", 16, 8, 16, 32, 8, 4, 4))  # three kernels, padded slots


def _odd(kind: str):
    """A unit that writes what the kit must keep whatever it is: in the b-named waves of
    APART (after one C wave; BOTH: the a-named waves come first, the garbling lands there)."""
    def unit(layout, a, b, c, shape):
        d = engine.multiply(layout, a, b, c, shape)
        named = slice(1, 1 + Sizes.widest([shape]).slots("a"))  # digit 0 of every A slot
        hot = d[named]
        cell = np.unravel_index(np.flatnonzero(hot)[3], hot.shape)  # where an id arrived
        zeros = np.flatnonzero(hot == 0)  # BOTH has none: C arrives everywhere
        empty = np.unravel_index(zeros[5] if len(zeros) > 5 else np.flatnonzero(hot)[7],
                                 hot.shape)
        if kind == "nan":
            hot[cell] = np.nan
        elif kind == "fraction":
            hot[cell] += 0.5
        elif kind == "beyond":  # an integer no digit is
            hot[cell] = 1000
        elif kind == "partial":  # nothing in digit 0 where the other digits named a slot
            hot[cell] = 0
        elif kind == "stray":  # something where nothing should arrive
            hot[empty] = 2
        elif kind == "negative-zero":  # an integer's value, but not its bits
            hot[empty] = -0.0
        d[named] = hot
        return d
    return unit


def _registers(shapes, design: str, unit=engine.multiply, seed: int = 5):
    grid = engine.stimulus(shapes, trials=3, seed=seed, design=design)
    codec = engine.codec_of(shapes)
    w = engine.waves(grid, codec)
    rng = np.random.default_rng(seed)
    size = Sizes.widest(shapes)
    out = {}
    for s in shapes:
        d = unit(engine.random_layout(s, rng, size), w["a"], w["b"], w["c"], s)
        out[s.name] = engine.registers(codec, "d", d, size.lanes)
    return grid, out


def _bits(values: np.ndarray) -> np.ndarray:
    return values.view(np.uint64) if values.dtype.kind == "f" else values


def _assert_same_raw(rebuilt, stored) -> None:
    assert rebuilt.dims == stored.dims and rebuilt.dtype == stored.dtype
    np.testing.assert_array_equal(_bits(rebuilt.values), _bits(stored.values))


# APART's factored waves on clean and odd units; BOTH's stored ones (narrowed or not)
CASES = [*((s, "clean", d) for s in (F64_AMD, E4M3_MMA, S8_MMA) for d in engine.DESIGNS),
         (S8_MMA, "beyond", engine.APART), (F64_AMD, "nan", engine.APART),
         (F64_AMD, "stray", engine.APART), (E4M3_MMA, "nan", engine.BOTH),
         (F64_MMA, "nan", engine.APART), (F64_MMA, "negative-zero", engine.APART),
         *((E4M3_MMA, k, engine.APART) for k in ("nan", "fraction", "beyond", "partial",
                                                 "stray", "negative-zero"))]


@pytest.mark.parametrize(("shapes", "kind", "design"), CASES,
                         ids=[f"{s[0].name}-{k}-{d.split()[0]}" for s, k, d in CASES])
def test_the_compact_form_rebuilds_the_raw_waves_bit_for_bit(shapes, kind: str, design: str,
                                                             tmp_path: Path) -> None:
    """The same registers assembled in the float form (the raw as the kit read it) and the
    compact one, saved and loaded: every raw wave rebuilt from the compact dataset equals
    the float form's bit for bit, and every observable is the same table."""
    grid, regs = _registers(shapes, design, engine.multiply if kind == "clean" else _odd(kind))
    floated = engine.assemble(grid, shapes, regs)
    path = dataset.save(engine.assemble(grid, shapes, regs, compact=True), tmp_path / "c.nc",
                        {"probe": "t", "simulated": True})
    compact = dataset.load(path)
    for name in engine.RAW:
        if name in floated:
            _assert_same_raw(engine.raw_named(compact, name), floated[name])
    observables = engine.OBSERVABLES_APART if design == engine.APART else engine.OBSERVABLES
    for name in (*observables, *(n for n in ("a_src", "b_src") if n in floated)):
        np.testing.assert_array_equal(compact[name].values, floated[name].values, name)
    factored = design == engine.APART
    assert ("d_bnamed" in compact) != factored
    if factored:  # a clean unit leaves no exception; every INVALID cell is one
        odd = compact.sizes["odd"]
        invalid = int((compact["b_src"].values == engine.INVALID).sum())
        spelled = kind == "stray" and invalid == 0  # one digit: a stray 2 spells id 1
        assert odd >= invalid and (odd == 0) == (kind == "clean" or spelled)
        assert (odd > invalid) == (kind == "negative-zero")  # NONE, but not +0.0's bits
        assert "floor(b_src" in compact["d_bnamed_odd"].attrs["reconstruction"]
        last = [str(compact["kernel"].values[-1])]  # exceptions are found by kernel name
        _assert_same_raw(engine.raw_named(compact.sel(kernel=last), "d_bnamed"),
                         floated["d_bnamed"].sel(kernel=last))


@pytest.mark.parametrize("kind", ["clean", "fraction", "negative-zero"])
def test_raw_waves_are_integers_exactly_where_every_value_is_one(kind: str) -> None:
    """BOTH's named waves in the narrowest integer dtype the plan needs when every value is
    an integer, float64 (as read) when one is a fraction or -0.0; the attrs say which."""
    grid, regs = _registers(E4M3_MMA, engine.BOTH,
                            engine.multiply if kind == "clean" else _odd(kind))
    ds = engine.assemble(grid, E4M3_MMA, regs, compact=True)
    spoiled = ds["d_anamed"]  # the garbled waves; d_bnamed stays clean
    assert (spoiled.dtype.kind in "iu") == (kind == "clean")
    assert ds["d_bnamed"].dtype.kind in "iu" and ds["d_bnamed"].attrs["read_as"] == "float64"
    planned = engine.stored(grid, compact=True)["d_anamed"].dtype
    assert spoiled.attrs["stored_as"].startswith("float64" if kind != "clean" else planned.name)
    assert ds["same_row"].dtype == np.uint8 and ds["b_src"].dtype == np.uint32


def test_assemble_writes_what_the_layout_says_and_refuses_to_differ(monkeypatch) -> None:
    for design in engine.DESIGNS:
        grid, regs = _registers(E4M3_MMA, design)
        for compact in (False, True):
            ds = engine.assemble(grid, E4M3_MMA, regs, compact=compact)  # checks it itself
            layout = engine.stored(grid, compact)
            assert {str(v) for v in ds.data_vars} == set(layout)
            assert sum(int(v.nbytes) for v in ds.variables.values()) == \
                engine.declared_bytes(grid, compact)
    real = engine.stored

    def wrong(grid, compact=False):
        out = real(grid, compact)
        out["c_src"] = engine.Stored(out["c_src"].dims, out["c_src"].shape, np.dtype(np.int64))
        return out
    monkeypatch.setattr(engine, "stored", wrong)
    with pytest.raises(RuntimeError, match="c_src"):
        engine.assemble(grid, E4M3_MMA, regs, compact=True)


def test_integer_dtypes_are_the_narrowest() -> None:
    cases = {(0, 0): np.uint8, (0, 256): np.uint16, (-215, 215): np.int16,
             (-128, 127): np.int8, (-320, 320): np.int16, (0, 2**24): np.uint32}
    for (low, high), want in cases.items():
        assert storage.integer_dtype(low, high) == want
    assert not storage.integral(np.array([0.0, -0.0])) and storage.integral(np.array([3.0]))


def _lane_id_probes() -> dict[str, LaneIdProbe]:
    return {pid: p for pid, p in catalog().probes.items() if isinstance(p, LaneIdProbe)}


def test_every_lane_id_probe_declares_what_a_new_dataset_may() -> None:
    """Known from each stimulus without a unit: the datasets a sweep would save stay within
    dataset.MAX_NEW_DATASET_BYTES (N = 256's fp8 probes declared 2.96 GB as floats)."""
    probes = _lane_id_probes()
    assert len(probes) > 40
    over = {pid: p.declared_bytes(p.stimulus()) for pid, p in probes.items()}
    assert not {k: v for k, v in over.items() if v > dataset.MAX_NEW_DATASET_BYTES}
    assert over["wgmma-e5m2-f32-n256"] < 300 * 10**6  # was 2,955 MB


def _archive(probe_ids) -> list[Path]:
    return sorted(p for pid in probe_ids for p in (ROOT / "data" / pid).glob("*/*.nc"))


@pytest.mark.slow
@needs_archive
def test_the_float_layout_is_what_the_archive_holds() -> None:
    """engine.stored names every data variable of the archive's lane-id datasets whose grid
    is today's stimulus, with its dims' sizes and dtype (read from the files' metadata), in
    the form their probe version stores (the float form, or the compact one of a compact
    probe's current version): the layout the bounds are computed from is the one sweeps
    wrote."""
    probes, seen, compact = _lane_id_probes(), 0, 0
    grids = {pid: p.stimulus() for pid, p in probes.items()}
    for path in _archive(probes):
        prov = dataset.stored_provenance(path)
        pid = prov["probe"]
        if prov["grid_sha256"] != dataset.grid_sha256(grids[pid]):
            continue  # an earlier stimulus
        form = probes[pid].compact and prov["probe_version"] == probes[pid].version
        compact += form
        with h5py.File(path, "r") as f:
            for name, want in engine.stored(grids[pid], form).items():
                text = want.dtype.kind == "U"  # stored as HDF5 variable-length text
                assert (f[name].shape, f[name].dtype.kind if text else f[name].dtype) == \
                    (want.shape, "O" if text else want.dtype), (path, name)
        seen += 1
    assert seen > 40 and compact >= 16


@needs_archive
def test_the_changed_probes_keep_the_stimulus_their_hypotheses_were_sealed_on() -> None:
    """Every probe now storing the compact form has the grid its archive datasets (and
    sealed tables) were made on, byte for byte."""
    changed = {pid: p for pid, p in _lane_id_probes().items() if p.compact}
    assert len(changed) >= 16  # the 16 changed to it (version 2), and those born compact
    for pid, probe in changed.items():
        recorded = {dataset.stored_provenance(p)["grid_sha256"] for p in _archive([pid])}
        assert recorded == {dataset.grid_sha256(probe.stimulus())}, pid


@pytest.mark.slow
@needs_archive
def test_an_archive_dataset_of_the_float_form_still_decodes_and_plots() -> None:
    """wgmma-f16-f32-wide version 1 (d_bnamed stored as float64): its raw waves read as
    stored, and its lane maps draw."""
    from probelab.kits.lane_id.figures import lane_map_table, tile_operands, tile_table

    path = _archive(["wgmma-f16-f32-wide"])[0]
    ds = vocabulary.translated(dataset.load(path))  # an archive dataset: a_reg, as a_value
    raw = engine.raw_named(ds, "d_bnamed")
    assert raw.dtype == np.float64 and raw.dims == ("kernel", "a_lane", "a_value", "d_lane",
                                                    "d_value")
    assert ((raw.values == 0) == (ds["b_src"].values == engine.NONE)).all()
    for kernel in map(str, ds["kernel"].values):
        assert lane_map_table(ds, kernel).rows
        for operand in tile_operands(ds, kernel):
            assert (tile_table(ds, kernel, operand)[0] != "").any()


def test_a_sweep_whose_dataset_could_not_be_saved_is_refused_before_any_kernel_runs(
        tmp_path: Path, monkeypatch) -> None:
    from probelab.errors import UsageError
    from probelab.probe import get_probe
    from probelab.sweep import run_sweep

    probe = get_probe("dmma-f64")
    monkeypatch.setattr(dataset, "MAX_NEW_DATASET_BYTES", 10**6)  # dmma-f64 declares 5 MB

    def never(*_):
        raise AssertionError("a kernel ran")
    monkeypatch.setattr(probe, "simulate", never)
    with pytest.raises(UsageError, match=r"dmma-f64: not swept: the dataset would declare "
                       r"5\.0 MB decoded, over the 1 MB"):
        run_sweep(probe.id, "sim", target="sm_90", out_root=tmp_path, allow_blind=True)
    assert not list(tmp_path.rglob("*.nc"))
