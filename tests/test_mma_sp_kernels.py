"""The mma-sp kernels on real compiled code (offline: NVRTC + nvdisasm): each passes the
evidence gate it declares; the s4 shapes are lowered (two s8 sparse IMMAs fed through
unpacking), fp8 too (two f16 sparse HMMAs after unpacking and cross-lane shuffles); the two
metadata forms compile to the same instructions on this toolchain."""

import re

import numpy as np
import pytest
from toolchains import nvidia_tools

from probelab.evidence import gate
from probelab.probe import get_probe
from probelab.vendors.nvidia.isa import SASS

KINDS = ("f16", "s8", "s4", "bf16", "tf32", "e4m3", "e5m2")
LOWERED = ("s4", "e4m3", "e5m2")  # sm_90 has no unit of their own


@pytest.fixture(scope="module")
def built():
    nvidia = nvidia_tools()
    out = {}
    for kind in KINDS:
        probe = get_probe(f"mma-sp-{kind}")
        for kernel, unit in zip(probe.kernels("nvidia"), probe.design.units, strict=True):
            out[unit.name] = (kernel, unit, nvidia.build(kernel, "sm_90").functions[kernel.symbol])
    return out


def test_every_kernel_passes_its_gate(built) -> None:
    assert len(built) == 52
    for kernel, unit, code in built.values():
        report = gate(kernel.name, kernel.evidence, code, SASS)
        assert report.ok, report.problems
        fp8 = unit.name.startswith(("e4m3", "e5m2"))
        assert (report.lowered is None) == (not unit.name.startswith(LOWERED))
        selector = {re.search(r"(0x\d)$", m).group(1) for m in report.matches}
        # the selector reaches the instruction as written; fp8's lowering splits K in two
        # f16 halves, one per selector of the f16 m16n8k32 instruction
        assert selector == ({"0x0", "0x1"} if fp8 else {f"0x{unit.sel}"})


def test_fp8_is_lowered_to_two_f16_sparse_hmma_after_unpacking_and_shuffles(built) -> None:
    fp8 = [(k, u, c) for k, u, c in built.values() if u.name.startswith(("e4m3", "e5m2"))]
    assert len(fp8) == 4
    for kernel, unit, code in fp8:
        report = gate(kernel.name, kernel.evidence, code, SASS)
        first, second = (m.split(",") for m in report.matches)
        assert first[3].strip() == "RZ" and second[3].strip() == first[0].split()[-1]
        assert "no fp8 sparse unit" in report.to_dict()["lowered"]
        element = unit.name.split("_")[0].upper()
        found = {c["pattern"]: len(c["found"]) for c in report.companions}
        assert found[rf"F2FP\.F16\.{element}\.UNPACK_B"] == 16 and found[r"FADD"] == 4
        assert found[r"SHFL\..*"] > 0  # metadata and A move between lanes
        metadata = report.operands[3]  # the first HMMA's metadata, rewritten from its load
        assert metadata.reaches == "from_memory" and len(metadata.path) > 1


def test_s4_is_lowered_to_two_s8_sparse_imma_through_unpacking(built) -> None:
    for kernel, unit, code in built.values():
        if unit.bits != 4:
            continue
        report = gate(kernel.name, kernel.evidence, code, SASS)
        assert len(report.matches) == 2 and all(".S8.S8" in m for m in report.matches)
        assert "no 4-bit sparse unit" in report.to_dict()["lowered"]  # recorded per dataset
        a, b = report.operands[0], report.operands[1]  # A and B of the first IMMA
        assert a.reaches == b.reaches == "from_memory" and len(a.path) > unit.regs
        metas = {m.split(",")[4].strip() for m in report.matches}
        assert len(metas) == 1  # one metadata register serves both halves
        assert len(code) > 2 * len(built[unit.name.replace("s4", "s8").replace(
            f"k{unit.K}", f"k{unit.K // 2}")][2])


def _text(code, symbol: str) -> list[str]:
    """Instruction text with what is numbered or named per kernel made anonymous: branch
    labels, ptxas's internal subroutines (the s4 lowering calls one) and the kernel's name."""
    anonymous = [(r"\.L_x_\d+", ".L"), (r"__internal_\d+_", "__internal_"),
                 (re.escape(symbol), "KERNEL")]
    out = []
    for insn in code:
        text = insn.text
        for pattern, name in anonymous:
            text = re.sub(pattern, name, text)
        out.append(text)
    return out


def test_sp_and_ordered_metadata_compile_to_the_same_instructions(built) -> None:
    pairs = [(built[u.name], built[u.name.replace("_sp", "_om")]) for _, u, _ in built.values()
             if u.name.endswith("_sp")]
    assert len(pairs) == 26
    for (sp, unit, code), (om, other, om_code) in pairs:
        assert other.ordered and not unit.ordered
        np.testing.assert_array_equal(_text(code, sp.symbol), _text(om_code, om.symbol))
