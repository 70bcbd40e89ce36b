"""The f64 lane-id probes' kernels on real compiled code (offline: NVRTC + nvdisasm for
dmma-f64, clang >= 19 for mfma-f64): each passes the evidence gate it declares, the gate
fails for a kernel that alters one register of a fragment, and gfx908 gets no kernel."""

import re
from pathlib import Path

import pytest
from toolchains import amd_tools, nvidia_tools
from typer.testing import CliRunner

from probelab.cli import app
from probelab.errors import Unavailable, UsageError
from probelab.evidence import gate
from probelab.probe import Kernel, get_probe, require_target
from probelab.vendors.amd.isa import GCN
from probelab.vendors.nvidia.isa import SASS

ROOT = Path(__file__).resolve().parents[1]


def test_every_dmma_kernel_passes_its_gate_with_whole_fragments_traced() -> None:
    nvidia = nvidia_tools()
    probe = get_probe("dmma-f64")
    for kernel, shape in zip(probe.kernels("nvidia"), probe.shapes, strict=True):
        report = gate(kernel.name, kernel.evidence, nvidia.build(kernel, "sm_90").functions[
            kernel.symbol], SASS)
        assert report.ok, report.problems
        assert report.matches == [m for m in report.matches if
                                  f"DMMA.{shape.M}x{shape.N}x{shape.K} " in m]
        traced = [t.path for t in report.operands]  # every register of A, B, C from a load
        values = (shape.a_values, shape.b_values, shape.d_values)  # one 64-bit load each
        for path, n in zip(traced, values, strict=True):
            assert len(path) == n and all(p.startswith("LDG.E.64") for p in path)


def test_the_gate_sees_an_altered_second_register(tmp_path: Path) -> None:
    """m16n8k4 with a1 = -a1: only the fragment's second double is altered. Traced over the
    whole span the gate fails; told the operand is one register wide it would pass, which is
    why the probe declares spans."""
    nvidia = nvidia_tools()
    probe = get_probe("dmma-f64")
    source = (ROOT / "probes" / "dmma_f64" / "dmma_f64.cu").read_text()
    altered = source.replace('"d"(pa[0]), "d"(pa[1]), "d"(pb[0]),',
                             '"d"(pa[0]), "d"(-pa[1]), "d"(pb[0]),')
    assert altered != source
    path = tmp_path / "altered.cu"
    path.write_text(altered)
    real = next(k for k in probe.kernels("nvidia") if k.name == "m16n8k4")
    kernel = Kernel(real.name, real.symbol, path, "nvidia", real.evidence)
    code = nvidia.build(kernel, "sm_90").functions[kernel.symbol]
    report = gate(kernel.name, kernel.evidence, code, SASS)
    assert not report.ok and "must be unmodified" in report.problems[0]
    narrow = type(real.evidence)(real.evidence.instruction, real.evidence.forbidden,
                                 real.evidence.operands)
    assert gate(kernel.name, narrow, code, SASS).ok


@pytest.mark.parametrize("target", ["gfx90a", "gfx942", "gfx950"])
def test_the_mfma_kernel_passes_its_gate(target: str, each_amd_toolchain) -> None:
    amdgpu = amd_tools()
    if target not in amdgpu.supported_targets(each_amd_toolchain):  # clang 19: no CDNA4
        pytest.skip(f"{each_amd_toolchain.name} does not build {target}")
    (kernel,) = get_probe("mfma-f64").kernels("amd")
    code = amdgpu.build(kernel, target).functions[kernel.symbol]
    report = gate(kernel.name, kernel.evidence, code, GCN)
    assert report.ok, report.problems
    spelled = "v_mfma_f64_16x16x4f64" if target == "gfx90a" else "v_mfma_f64_16x16x4_f64"
    assert [re.split(r"\s", m)[0] for m in report.matches] == [spelled]
    assert [t.reaches for t in report.operands] == ["unmodified"] * 3


def test_gfx908_is_refused_with_the_reason_and_the_source_will_not_build_there(
        each_amd_toolchain) -> None:
    probe = get_probe("mfma-f64")
    with pytest.raises(UsageError, match="no FP64 matrix core"):
        require_target(probe, "gfx908")
    result = CliRunner().invoke(app, ["asm", "mfma-f64", "--arch", "gfx908"])
    assert result.exit_code == 2 and "no FP64 matrix core" in result.output
    amdgpu = amd_tools()
    (kernel,) = probe.kernels("amd")
    with pytest.raises(Unavailable, match="no f64 matrix instruction"):
        amdgpu.build(kernel, "gfx908", fresh=True)  # a compile error, never a zero fallback
