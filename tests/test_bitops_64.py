"""The 64-bit bit-scan forms (bit-scan-64) and lop3's predicate-output form (lop3-pred) on the
bit-op kit: on the simulated device (the PTX reading, never evidence) each sealed file's
table is the data on every claimed cell and each of its near misses is not, and a unit that
follows a near miss fits that near miss and refutes the sealed reading; offline, every
kernel passes its evidence gate on sm_90 with the SASS its README names (the lowerings
included) (a kernel whose instruction was changed fails its gate: tests/test_bitops.py); each
rendered source is what its generate.py prints and is kept in no file.

Compile tests need NVRTC and nvdisasm (the `[cuda]` extra) and skip cleanly without them."""

import re
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from test_bitops import _with, fits_and_each_near_miss_does_not, mismatches, simulated

from probelab.hypothesis import load_hypothesis, predict
from probelab.probe import get_probe

ROOT = Path(__file__).resolve().parents[1]
# probe id -> (folder, sealed file)
PROBES = {"bit-scan-64": ("bit_scan_64", "ptx-bit-scan-64"),
          "lop3-pred": ("lop3_pred", "ptx-lop3-boolop")}


def sealed(probe_id: str):
    return load_hypothesis(ROOT / "preregistrations" / probe_id / f"{PROBES[probe_id][1]}.toml")


@pytest.mark.parametrize("probe_id", sorted(PROBES))
def test_the_ptx_reading_fits_every_cell_and_each_near_miss_does_not(probe_id: str) -> None:
    fits_and_each_near_miss_does_not(probe_id, sealed(probe_id))


def _swapped(model):
    """The 64-bit value built as {hi, lo} wherever mov.b64 packs it."""
    return lambda **kw: model(**(kw | ({"lo": kw["hi"], "hi": kw["lo"]} if kw["packed"]
                                       else {})))


# probe id -> (near miss, kernel -> the model a unit that follows it would have)
NEAR_UNITS = [
    ("bit-scan-64", "bfind-s64-unsigned", lambda probe: {
        name: _with(probe.ops[0].model, op=lambda kw: {5: 4, 7: 6}[int(kw["op"])])
        for name in ("bfind_s64", "bfind_shiftamt_s64")}),
    ("bit-scan-64", "halves-swapped", lambda probe: {
        op.name: _swapped(op.model) for op in probe.ops if op.facts["packed"]}),
    ("lop3-pred", "boolop-swapped", lambda probe: {
        op.name: _with(op.model, boolop=lambda kw: 1 - int(kw["boolop"])) for op in probe.ops}),
    ("lop3-pred", "p-from-a", lambda probe: {
        op.name: (lambda **kw: np.where(kw["out"], probe.ops[0].model(
            **(kw | {"lut": np.uint64(0xF0)})), probe.ops[0].model(**kw)))
        for op in probe.ops}),
]


@pytest.mark.parametrize(("probe_id", "near", "make"), NEAR_UNITS,
                         ids=[f"{p}-{n}" for p, n, _ in NEAR_UNITS])
def test_a_unit_that_follows_a_near_miss_fits_it_and_refutes_the_ptx_reading(
        probe_id: str, near: str, make) -> None:
    probe = get_probe(probe_id)
    unit = replace(probe, sim_models=make(probe))
    assert unit.sim_models and probe.sim_models == {}
    ds = simulated(unit)
    h = sealed(probe_id)
    assert mismatches(ds, h, predict(h, ds, probe.observables)["literal"]) > 0
    assert mismatches(ds, h, predict(h.near_miss(near), ds, probe.observables)["literal"]) == 0


def test_the_stimulus_puts_every_boundary_in_both_halves() -> None:
    """Every bit position holds the highest set bit of some word and its lowest; each half is
    zero under a nonzero other half, and all ones under a nonzero other half."""
    ds = get_probe("bit-scan-64").stimulus()
    x = (ds["hi"].values.astype(np.uint64) << np.uint64(32)) | ds["lo"].values
    assert len(set(x.tolist())) == len(x)
    top = {int(v).bit_length() - 1 for v in x if v}
    low = {(int(v) & -int(v)).bit_length() - 1 for v in x if v}
    assert top == low == set(range(64))
    lo, hi = ds["lo"].values, ds["hi"].values
    assert ((lo == 0) & (hi != 0)).any() and ((hi == 0) & (lo != 0)).any()
    assert ((hi == 0xFFFFFFFF) & (lo != 0xFFFFFFFF)).any()
    assert ((lo == 0xFFFFFFFF) & (hi != 0xFFFFFFFF)).any()


def test_d_is_zero_and_nonzero_under_every_table_but_the_constants() -> None:
    ds = simulated(get_probe("lop3-pred"))
    d = ds["value"].sel(kernel="or_d").values
    nonzero = (d != 0).any(axis=0)
    zero = (d == 0).any(axis=0)
    assert (nonzero & zero).sum() == 254 and not nonzero[0] and not zero[255]
    assert sorted(set(ds["q"].values.tolist())) == [0, 1]


@pytest.mark.parametrize("probe_id", sorted(PROBES))
def test_the_rendered_source_is_what_generate_prints_and_no_file(probe_id: str) -> None:
    folder = ROOT / "probes" / PROBES[probe_id][0]
    (text,) = {k.text for k in get_probe(probe_id).kernels("nvidia")}
    printed = subprocess.run([sys.executable, str(folder / "generate.py")], check=True,
                             capture_output=True, text=True, cwd=ROOT).stdout
    assert printed == text
    assert not list(folder.glob("*.cu"))


# ---- offline: the code objects on sm_90 ------------------------------------------------------

# kernel -> {SASS mnemonic: exact count} its gate's histogram must show
SASS = {
    "bit-scan-64": {
        "popc_b32": {"POPC": 1}, "cuda_popc": {"POPC": 1},
        "popc_b64": {"POPC": 2}, "cuda_popcll": {"POPC": 2},
        "clz_b64": {"FLO.U32": 1}, "cuda_clzll": {"FLO.U32": 1},
        "bfind_u64": {"FLO.U32": 2}, "bfind_s64": {"FLO": 1, "FLO.U32": 2},
        "bfind_shiftamt_u64": {"FLO.U32.SH": 2},
        "bfind_shiftamt_s64": {"FLO.SH": 1, "FLO.U32.SH": 2},
        "brev_b64_lo": {"BREV": 1}, "brev_b64_hi": {"BREV": 1},
        "cuda_brevll_lo": {"BREV": 1}, "cuda_brevll_hi": {"BREV": 1},
        "cuda_ffsll": {"FLO.U32": 1},
    },
    "lop3-pred": {"or_d": {"LOP3.LUT": 256}, "or_p": {"LOP3.LUT": 256, "SEL": 256},
                  "and_d": {"LOP3.LUT.PAND": 256}, "and_p": {"LOP3.LUT.PAND": 256, "SEL": 256}},
}


def _code(probe_id: str, name: str):
    from tests.toolchains import nvidia_tools

    nvidia = nvidia_tools()
    kernel = next(k for k in get_probe(probe_id).kernels("nvidia") if k.name == name)
    return nvidia.build(kernel, "sm_90").functions[kernel.symbol]


@pytest.mark.parametrize("probe_id", sorted(PROBES))
def test_every_kernel_passes_its_gate_on_sm_90_with_the_named_sass(probe_id: str) -> None:
    from probelab.asm import inspect
    from tests.toolchains import nvidia_tools

    nvidia_tools()
    reports = inspect(probe_id, "sm_90")
    assert [r.status for r in reports] == ["ok"] * len(reports) and reports, \
        [r.detail for r in reports]
    assert {r.kernel for r in reports} == set(SASS[probe_id])
    for report in reports:
        for mnemonic, count in SASS[probe_id][report.kernel].items():
            assert report.histogram.get(mnemonic) == count, (report.kernel, mnemonic,
                                                             report.histogram)


def test_the_64_bit_lowerings_are_what_the_evidence_says() -> None:
    """popc.b64 sums two POPCs; clz.b64 is 63 - or 31 - FLO.U32; bfind.s64 scans the low
    word or its complement; each brev.b64 half loads only the other half's word (lo's
    buffer is parameter 1 at c[0x0][0x218], hi's parameter 2 at c[0x0][0x220])."""
    def texts(name: str) -> list[str]:
        return [i.text for i in _code("bit-scan-64", name)]

    for name in ("popc_b64", "cuda_popcll"):
        assert any(re.match(r"IADD3 R\d+, R\d+, R\d+, RZ", t) for t in texts(name)), name
    for name in ("clz_b64", "cuda_clzll"):
        body = texts(name)
        assert any("0x3f" in t for t in body) and any("0x1f" in t for t in body), name
    assert any(re.match(r"FLO\.U32 R\d+, ~R\d+", t) for t in texts("bfind_s64"))
    for name, loads, skips in (("brev_b64_lo", "0x220", "0x218"),
                               ("cuda_brevll_lo", "0x220", "0x218"),
                               ("brev_b64_hi", "0x218", "0x220"),
                               ("cuda_brevll_hi", "0x218", "0x220")):
        body = texts(name)
        assert any(f"c[0x0][{loads}]" in t for t in body), name
        assert not any(f"c[0x0][{skips}]" in t for t in body), name


@pytest.mark.slow  # four builds of 256 tables each: seconds apiece with a cold compile cache
def test_the_predicate_forms_hold_all_256_tables_write_p_and_read_q() -> None:
    """Each kernel's LOP3s carry the 256 immediates once each; the p kernels write a
    predicate (d to RZ) and every LOP3 reads the predicate the q word set."""
    for name in ("or_d", "or_p", "and_d", "and_p"):
        code = _code("lop3-pred", name)
        q = [i for i in code if i.mnemonic == "ISETP.NE.U32.AND"]
        assert len(q) == 1, name
        lops = [i for i in code if i.base == "LOP3"]
        assert sorted(int(i.operands[-2], 16) for i in lops) == list(range(256)), name
        assert {i.operands[-1] for i in lops} == {q[0].operands[0]}, name
        if name.endswith("_p"):
            assert all(re.fullmatch(r"P\d", i.operands[0]) and i.operands[1] == "RZ"
                       for i in lops), name
        else:
            assert all(re.fullmatch(r"R\d+", i.operands[0]) for i in lops), name
