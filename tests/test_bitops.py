"""The bit-op probes of issue 39 item 3 (prmt-modes, lop3, shf, bfe-bfi, bit-scan, bmsk, fns)
on the bitops kit (their kernel sources, rendered from the declarations, are the archive's:
tests/test_rendered_sources.py): on the simulated device (the PTX reading, never evidence)
each sealed file's table is the data on every claimed cell and each of its near misses is
not, and a unit that follows a near miss instead fits that near miss and refutes the sealed
reading; offline, every kernel passes its evidence gate on sm_90 with the SASS this file
names (the lowerings included), and a kernel whose instruction was changed does not.

Compile tests need NVRTC and nvdisasm (the `[cuda]` extra) and skip cleanly without them."""

import re
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from quick import quick_first

from probelab.hypothesis import load_hypothesis, predict
from probelab.probe import Kernel, get_probe, load_sibling
from probelab.sweep import run_sweep

ROOT = Path(__file__).resolve().parents[1]
# probe id -> (folder, sealed file)
PROBES = {"prmt-modes": ("prmt_modes", "ptx-modes"), "lop3": ("lop3", "ptx-immlut"),
          "shf": ("shf", "ptx-clamp-wrap"), "bfe-bfi": ("bfe_bfi", "ptx-fields"),
          "bit-scan": ("bit_scan", "ptx-bit-scan"), "bmsk": ("bmsk", "ptx-bmsk"),
          "fns": ("fns", "ptx-fns")}


def module(probe_id: str):
    return load_sibling(ROOT / "probes" / PROBES[probe_id][0] / "probe.py")


def sealed(probe_id: str):
    return load_hypothesis(ROOT / "preregistrations" / probe_id / f"{PROBES[probe_id][1]}.toml")


def simulated(probe, vendor: str = "nvidia"):
    """The dataset the simulated device gives (each kernel's model over the launch)."""
    stimulus = probe.stimulus()
    launch = probe.launch(stimulus)
    outputs = {k.name: probe.simulate(k, launch.inputs) for k in probe.kernels(vendor)}
    return probe.assemble(stimulus, outputs)


def mismatches(ds, h, table) -> int:
    rows = [list(ds["kernel"].values).index(k) for k in h.kernels]
    predicted = np.broadcast_to(table["value"], ds["value"].shape)[rows]
    return int((predicted != ds["value"].values[rows]).sum())


@pytest.mark.parametrize("probe_id", sorted(PROBES))
def test_the_ptx_reading_fits_every_cell_and_each_near_miss_does_not(probe_id: str) -> None:
    fits_and_each_near_miss_does_not(probe_id, sealed(probe_id))


def fits_and_each_near_miss_does_not(probe_id: str, h) -> None:
    """The sealed file `h` of a bit-op probe claims every kernel, its table is the simulated
    data on every claimed cell, and each of its near misses misses some cell."""
    probe = get_probe(probe_id)
    ds = simulated(probe)
    assert set(h.kernels) == {k.name for k in probe.kernels("nvidia")}
    assert mismatches(ds, h, predict(h, ds, probe.observables)["literal"]) == 0
    assert h.near_misses
    for name in h.near_misses:
        differ = mismatches(ds, h, predict(h.near_miss(name), ds, probe.observables)["literal"])
        assert differ > 0, name


def _with(model, **changes):
    """`model` with some of its arguments replaced by functions of all of them."""
    return lambda **kw: model(**{**kw, **{k: f(kw) for k, f in changes.items()}})


def _unsigned_bfind(model):
    return _with(model, op=lambda kw: {3: 2, 5: 4}.get(int(kw["op"]), kw["op"]))


# probe id -> (near miss, kernel -> the model a unit that follows it would have)
NEAR_UNITS = {
    "prmt-modes": ("ecl-ecr-swapped", lambda m: {
        "ecl": _with(m, mode=lambda kw: 5), "ecr": _with(m, mode=lambda kw: 4)}),
    "lop3": ("a-c-swapped", lambda m: {"lop3": _with(m, a=lambda kw: kw["c"],
                                                     c=lambda kw: kw["a"])}),
    "shf": ("clamp-wrap-swapped", lambda m: {
        name: _with(m, clamp=lambda kw: 1 - kw["clamp"]) for name in m.__forms__}),
    "bfe-bfi": ("fields-mod-32", lambda m: {
        name: _with(model, pos=lambda kw: kw["pos"] & np.uint64(31),
                    len=lambda kw: kw["len"] & np.uint64(31))
        for name, model in m.__models__.items()}),
    "bit-scan": ("bfind-s32-unsigned", lambda m: {
        name: _unsigned_bfind(m) for name in ("bfind_s32", "bfind_shiftamt_s32")}),
    "bmsk": ("clamp-wrap-swapped", lambda m: {
        name: _with(m, clamp=lambda kw: 1 - kw["clamp"]) for name in m.__forms__}),
    "fns": ("offset-zero-searches", lambda m: {
        name: _with(m, offset=lambda kw: np.where(kw["offset"] == 0, np.uint64(1),
                                                  kw["offset"]))
        for name in m.__forms__}),
}


@pytest.mark.parametrize("probe_id", sorted(NEAR_UNITS))
def test_a_unit_that_follows_a_near_miss_fits_it_and_refutes_the_ptx_reading(probe_id: str
                                                                             ) -> None:
    probe = get_probe(probe_id)
    mod = module(probe_id)
    near, make = NEAR_UNITS[probe_id]
    model = probe.ops[0].model
    model.__forms__ = [op.name for op in probe.ops]
    model.__models__ = {op.name: op.model for op in probe.ops}
    unit = replace(probe, sim_models=make(model))
    assert unit.sim_models and mod.PROBE.sim_models == {}
    ds = simulated(unit)
    h = sealed(probe_id)
    assert mismatches(ds, h, predict(h, ds, probe.observables)["literal"]) > 0
    assert mismatches(ds, h, predict(h.near_miss(near), ds, probe.observables)["literal"]) == 0


def test_a_simulated_sweep_stores_every_kernel_and_cell(tmp_path: Path) -> None:
    """`probelab sweep prmt-modes --backend sim`: one value per (kernel, word, selector), the
    three repeats identical, marked simulated; the sealed reading fits it."""
    import xarray as xr

    result = run_sweep("prmt-modes", "sim", target="sm_90", out_root=tmp_path)
    ds = xr.open_dataset(result.path)
    assert ds["value"].dims == ("kernel", "word", "selector")
    assert list(ds["kernel"].values) == list(module("prmt-modes").MODES)
    assert ds["value"].shape == (6, 16, 288)
    h = sealed("prmt-modes")
    assert mismatches(ds, h, predict(h, ds, get_probe("prmt-modes").observables)["literal"]) == 0
    # f4e with selector 1 on the byte-named pair: bytes 4 3 2 1 (the low bits name them)
    f4e = ds["value"].sel(kernel="f4e", word=0, selector=1).item()
    assert f4e == 0x05040302


def test_the_stimulus_puts_every_bit_combination_where_lop3_needs_it() -> None:
    """On the ISA's own words (a = 0xF0.., b = 0xCC.., c = 0xAA..) every byte holds all
    eight (a, b, c) bit combinations, so d is the truth table repeated in every byte."""
    probe = get_probe("lop3")
    ds = simulated(probe)
    d = ds["value"].sel(kernel="lop3", triple=0).values
    assert [int(x) for x in d] == [lut * 0x01010101 for lut in range(256)]


# ---- offline: the code objects on sm_90 ------------------------------------------------------

# kernel -> the SASS instruction(s) its gate found, beyond the histogram the gate records
SASS = {
    "prmt-modes": {m: f"PRMT.{m.upper()}" for m in ("f4e", "b4e", "rc8", "ecl", "ecr", "rc16")},
    "shf": {"shf_l_clamp": "SHF.L.U32.HI", "shf_l_wrap": "SHF.L.W.U32.HI",
            "shf_r_clamp": "SHF.R.U32", "shf_r_wrap": "SHF.R.W.U32",
            "funnelshift_l": "SHF.L.W.U32.HI", "funnelshift_lc": "SHF.L.U32.HI",
            "funnelshift_r": "SHF.R.W.U32", "funnelshift_rc": "SHF.R.U32"},
    "bfe-bfi": {"bfe_u32": "SGXT.U32", "bfe_s32": "SGXT", "bfi_b32": "LOP3.LUT"},
    "bit-scan": {"brev": "BREV", "bfind_u32": "FLO.U32", "bfind_s32": "FLO",
                 "bfind_shiftamt_u32": "FLO.U32.SH", "bfind_shiftamt_s32": "FLO.SH",
                 "clz": "FLO.U32", "cuda_brev": "BREV", "cuda_clz": "FLO.U32",
                 "cuda_ffs": "FLO.U32.SH"},
    "bmsk": {"bmsk_clamp": "BMSK", "bmsk_wrap": "BMSK.W"},
    "fns": {"fns": "POPC", "cuda_fns": "POPC"},
    "lop3": {"lop3": "LOP3.LUT"},
}


@pytest.mark.parametrize("probe_id", quick_first(sorted(PROBES), keep=len(PROBES)))
def test_every_kernel_passes_its_gate_on_sm_90_with_the_named_sass(probe_id: str) -> None:
    from probelab.asm import inspect
    from tests.toolchains import nvidia_tools

    nvidia_tools()
    reports = inspect(probe_id, "sm_90")
    assert [r.status for r in reports] == ["ok"] * len(reports) and reports, \
        [r.detail for r in reports]
    for report in reports:
        want = SASS[probe_id][report.kernel]
        assert report.histogram.get(want), (report.kernel, want, report.histogram)


def test_lop3_holds_all_256_truth_tables_in_order_on_the_same_three_loads() -> None:
    from tests.toolchains import nvidia_tools

    nvidia = nvidia_tools()
    (kernel,) = get_probe("lop3").kernels("nvidia")
    code = nvidia.build(kernel, "sm_90").functions[kernel.symbol]
    lops = [i for i in code if i.mnemonic == "LOP3.LUT"]
    assert sorted(int(i.operands[4], 16) for i in lops) == list(range(256))
    assert len({tuple(o.removesuffix(".reuse") for o in i.operands[1:4]) for i in lops}) == 1
    # each table's result is what the store to its own slot (out[i * 256 + lut]) holds
    written: dict[str, int] = {}
    stored: dict[int, int] = {}
    for insn in code:
        if insn.mnemonic == "LOP3.LUT":
            written[insn.operands[0]] = int(insn.operands[4], 16)
        elif insn.mnemonic.startswith("STG"):
            offset = re.search(r"\+(0x[0-9a-f]+)\]", insn.operands[0])
            stored[int(offset.group(1), 16) // 4 if offset else 0] = written[insn.operands[1]]
    assert stored == {lut: lut for lut in range(256)}


def test_the_lowerings_are_what_the_evidence_says() -> None:
    """bfe/bfi take the low byte of pos and len (PRMT) before the shift, fns is a routine
    with branches, clz is 31 - FLO."""
    from tests.toolchains import nvidia_tools

    nvidia = nvidia_tools()

    def texts(probe_id: str, name: str) -> list[str]:
        kernel = next(k for k in get_probe(probe_id).kernels("nvidia") if k.name == name)
        return [i.text for i in nvidia.build(kernel, "sm_90").functions[kernel.symbol]]

    for name in ("bfe_u32", "bfe_s32", "bfi_b32"):
        body = texts("bfe-bfi", name)
        assert not [t for t in body if re.match(r"BF[EI]\b", t)]
        assert sum(t.startswith("PRMT") for t in body) == 3, name
    assert any(re.match(r"IADD3 R\d+, -R\d+, 0x1f, RZ", t) for t in texts("bit-scan", "clz"))
    fns = texts("fns", "fns")
    assert any(t.startswith("BSSY") for t in fns) and sum(t.startswith("POPC") for t in fns) >= 4
    def unlabelled(name: str) -> list[str]:
        return [re.sub(r"\.L_x_\d+", ".L", t) for t in texts("fns", name)]

    assert unlabelled("fns") == unlabelled("cuda_fns")  # __fns is the same builtin


@pytest.mark.parametrize(("probe_id", "name", "old", "new", "times"), [
    ("prmt-modes", "ecl", "prmt.b32.ecl", "prmt.b32", 1),  # the default mode instead
    ("shf", "shf_l_clamp", "shf.l.clamp.b32", "shf.l.wrap.b32", 1),
    ("bmsk", "bmsk_wrap", "bmsk.wrap.b32", "bmsk.clamp.b32", 1),
    ("bit-scan", "bfind_s32", "bfind.s32", "bfind.u32", 1),
    ("bit-scan-64", "bfind_s64", "bfind.s64", "bfind.u64", 1),
    ("bit-scan-64", "popc_b64", "popc.b64 %0, x;", "popc.b32 %0, %1;", 1),
    ("lop3-pred", "and_p", "lop3.and.b32", "lop3.or.b32", 256),  # one per truth table
    # q folded to a constant (ptxas writes !PT or PT): the predicate reaches no load
    ("lop3-pred", "or_p", "setp.ne.u32 q, %4, 0;", "setp.ne.u32 q, %1, %1;", 256),
    ("lop3-pred", "and_d", "setp.ne.u32 q, %4, 0;", "setp.eq.u32 q, %1, %1;", 256),
])
def test_a_kernel_built_with_another_form_fails_its_gate(tmp_path: Path, probe_id: str,
                                                         name: str, old: str, new: str,
                                                         times: int) -> None:
    from probelab.evidence import gate
    from probelab.vendors.nvidia.isa import SASS as ISA
    from tests.toolchains import nvidia_tools

    nvidia = nvidia_tools()
    good = next(k for k in get_probe(probe_id).kernels("nvidia") if k.name == name)
    text = good.source_text()
    body = text[text.index(f"probe_{name}("):]
    body = body[:body.index("\n}\n")]
    assert body.count(old + " ") == times
    source = tmp_path / f"{name}.cu"
    source.write_text(text.replace(body, body.replace(old + " ", new + " ")))
    bad = Kernel(good.name, good.symbol, source, "nvidia", good.evidence)
    report = gate(name, good.evidence, nvidia.build(bad, "sm_90").functions[good.symbol], ISA)
    assert not report.ok, report.to_dict()
    ok = gate(name, good.evidence, nvidia.build(good, "sm_90").functions[good.symbol], ISA)
    assert ok.ok, ok.problems
