"""wgmma-sp: the kernels on real compiled code (offline: NVRTC + nvdisasm) pass their
evidence gates, each one sparse warpgroup MMA (HGMMA.SP / QGMMA.SP / IGMMA.SP) with A's
registers, C and the metadata straight from their loads and the selector as written; and
the sparse kit over a warpgroup on simulated units (never evidence): a hidden law is
recovered, and the sealed PTX/CuTe reading and its PTX-text restatement predict a unit built
from `probes/wgmma_sp/ptx.py` while each near miss, and the own-thread rival, misses
somewhere."""

import re
from pathlib import Path

import numpy as np
import pytest
from quick import quick_first
from test_sparse import check_reading, expected_met, run
from toolchains import nvidia_tools

from probelab.evidence import gate
from probelab.kits.sparse.engine import NONE
from probelab.probe import get_probe, info, load_sibling
from probelab.vendors.nvidia.isa import SASS

ROOT = Path(__file__).resolve().parents[1]
ptx_law = load_sibling(ROOT / "probes" / "wgmma_sp" / "ptx.py").ptx_law
KINDS = ("f16", "bf16", "tf32", "e4m3", "e5m2", "s8")


def test_every_kernel_is_one_sparse_warpgroup_mma_fed_from_its_loads() -> None:
    nvidia = nvidia_tools()
    kernels = 0
    for kind in KINDS:
        probe = get_probe(f"wgmma-sp-{kind}")
        for kernel, unit in zip(probe.kernels("nvidia"), probe.design.units, strict=True):
            code = nvidia.build(kernel, "sm_90").functions[kernel.symbol]
            report = gate(kernel.name, kernel.evidence, code, SASS)
            assert report.ok, (kernel.name, report.problems)
            (match,) = report.matches
            assert ".SP.64x8x" in match and match.endswith("gsb0")
            # the floating types name their selector after the metadata register; the fp8
            # and integer forms take selector 0 only and print none
            selector = re.search(r", (0x\d), gsb0$", match)
            assert (selector.group(1) if selector else None) == (
                f"0x{unit.sel}" if kind in ("f16", "bf16", "tf32") else None)
            shared_a = unit.name.endswith("_ss")
            assert ("gdesc" in match.split(",")[1]) == shared_a  # A a descriptor, or registers
            assert len(report.operands) == (3 if shared_a else 4)
            kernels += 1
    assert kernels == 18


@pytest.mark.parametrize("kind", quick_first(("f16", "tf32", "s8")))
def test_a_hidden_law_is_recovered_over_a_warpgroup(kind: str) -> None:
    probe = get_probe(f"wgmma-sp-{kind}")
    units = probe.design.units[-1:]  # the shared-A form, the last selector
    ds, problems = run(probe, units)
    assert problems == []
    meta, (unit,) = probe.design.meta, units
    law, sub = probe.hidden_law(unit), ds.sel(kernel=unit.name)
    assert (law.a_row >= 0).all() and law.gov_lane.max() >= 96  # every warp's threads
    np.testing.assert_array_equal(sub["gov_lane"].values, law.gov_lane)
    np.testing.assert_array_equal(sub["gov_field"].values, law.gov_field)
    for w, word in enumerate(meta.valid):
        value = ((meta.uniform(word) >> (2 * law.gov_field)) & 3) >> law.shift
        got = sub["met_lane"].values[w].astype(np.int64) * probe.design.b_elems + \
            sub["met_elem"].values[w]
        np.testing.assert_array_equal(got, expected_met(law, value))
    assert (sub["met_count"].values == 8).all() and (sub["random_ok"].values == 1).all()
    assert (sub["superposed"].values == 1).all() and NONE not in sub["row_lane"].values


@pytest.mark.parametrize("kind", quick_first(KINDS))
def test_the_sealed_reading_predicts_a_ptx_unit_and_its_near_misses_do_not(kind: str) -> None:
    """Both sealed readings (the PTX ISA text's restatement first, so that its near misses,
    the parent's and the text's misreadings, are the ones held to missing)."""
    check_reading(get_probe(f"wgmma-sp-{kind}"), ptx_law,
                  ("ptx-isa-wgmma-sp", "ptx-cute-sparse"), "own-thread-metadata")


def test_the_tiles_and_the_warpgroup_are_recorded_in_the_stimulus_facts() -> None:
    facts = info(get_probe("wgmma-sp-s8")).stimulus
    assert facts["lanes"] == 128 and facts["buffers"] == {"a": 4, "b": 1, "c": 4, "e": 1}
    rs, ss = (facts["kernels"][f"s8_k64_s0_{form}"]["tiles"] for form in ("rs", "ss"))
    assert sorted(rs) == ["b"] and sorted(ss) == ["a", "b"]
    assert (ss["a"]["lbo"], ss["a"]["sbo"], ss["a"]["bytes"], ss["b"]["bytes"]) == (
        128, 256, 2048, 512)
    assert "v * lanes + l" in ss["a"]["element_order"]
