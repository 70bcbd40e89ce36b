"""The offline AMDGPU toolchain and the evidence gate on real compiled AMD kernels."""

import re
import subprocess
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from probelab.cli import app
from probelab.errors import IntegrityError, Unavailable
from probelab.evidence import gate
from probelab.probe import Evidence, Kernel, get_probe
from probelab.vendors.amd import toolchain as amdgpu
from probelab.vendors.amd.isa import GCN

try:
    amdgpu.find_clang()
except Unavailable as exc:
    pytest.skip(f"no AMDGPU clang: {exc}", allow_module_level=True)

PRELUDE = """#define __global__ __attribute__((global))
typedef int v2i __attribute__((ext_vector_type(2)));
typedef int v4i __attribute__((ext_vector_type(4)));
typedef int v8i __attribute__((ext_vector_type(8)));
#define LANE __builtin_amdgcn_workitem_id_x()
"""
# SWMMAC's accumulator is tied to its destination: the sources are A, B and the index.
IU4 = Evidence("v_swmmac_i32_16x16x32_iu4", forbidden=(r"v_swmmac_.*_iu8",),
               operands=("unmodified",) * 3)


def gated(tmp_path: Path, body: str, evidence: Evidence = IU4, target: str = "gfx1201",
          a_type: str = "int", b_type: str = "v2i", toolchain: amdgpu.Toolchain | None = None):
    source = tmp_path / "k.hip"
    source.write_text(PRELUDE + f'extern "C" __global__ void k(const {a_type}* a, '
                      f"const {b_type}* b, const v8i* c, const int* idx, v8i* d) {{ {body} }}")
    code = amdgpu.build(Kernel("k", "k", source, "amd", evidence), target, toolchain=toolchain)
    return gate("k", evidence, code.functions["k"], GCN)


def swmmac(builtin: str = "iu4", a: str = "a[LANE]", idx: str = "idx[LANE]") -> str:
    return (f"d[LANE] = __builtin_amdgcn_swmmac_i32_16x16x32_{builtin}_w32(true, {a}, true, "
            f"b[LANE], c[LANE], {idx}, false);")


def test_clang_found_with_targets_and_objects_are_raw_and_reproducible(tmp_path):
    clang = amdgpu.find_clang()
    assert clang.major >= 19
    assert {"gfx1201", "gfx942", "gfx90a"} <= amdgpu.supported_targets()
    source = PRELUDE + 'extern "C" __global__ void k(int* o) { o[LANE] = LANE; }'
    first, _ = amdgpu.compile_object(source, "gfx942", fresh=True)
    second, _ = amdgpu.compile_object(source, "gfx942", fresh=True)
    assert first == second  # no random __hip_cuid
    assert first[:4] == b"\x7fELF" and b"__CLANG_OFFLOAD_BUNDLE__" not in first[:64]


def test_a_target_this_clang_cannot_build_names_what_would():
    if "gfx950" in amdgpu.supported_targets():
        pytest.skip("this clang builds gfx950")
    with pytest.raises(Unavailable, match=r"gfx950.*amdclang"):
        amdgpu.check_target("gfx950")


def test_every_operand_from_memory_passes(tmp_path):
    report = gated(tmp_path, swmmac())
    assert report.ok, report.problems
    assert [t.reaches for t in report.operands] == ["unmodified"] * 3
    assert all("global_load" in t.path[0] for t in report.operands)


def test_near_relative_instead_of_the_instruction_is_caught(tmp_path):
    report = gated(tmp_path, swmmac("iu8"), a_type="v2i", b_type="v4i")
    assert not report.ok
    assert any("no instruction" in p for p in report.problems)
    assert any("forbidden" in p for p in report.problems)


def test_constant_folded_operand_is_caught(tmp_path):
    report = gated(tmp_path, swmmac(idx="0x1234"))
    assert not report.ok
    assert report.operands[-1].reaches == "not_from_memory"


def test_masked_operand_is_caught(tmp_path):
    report = gated(tmp_path, swmmac(a="a[LANE] & 0x0F0F0F0F"))
    assert not report.ok
    assert report.operands[0].reaches == "from_memory"
    assert any(re.match(r"v_(and|bfe)", step) for step in report.operands[0].path)


def test_truncated_operand_is_caught(tmp_path):
    report = gated(tmp_path, swmmac(a="(short)a[LANE]"))
    assert not report.ok
    assert report.operands[0].reaches == "from_memory"


@pytest.mark.parametrize("toolchain", [t.name for t in amdgpu.toolchains()])
def test_k32_index_mask_is_dropped_exactly_where_the_builtin_index_is_16_bits(tmp_path,
                                                                            toolchain):
    # clang 19 types the builtin's index as i16 (LAB_NOTES): masking it to 16 bits changes
    # nothing, so the compiler drops the mask and the loaded word goes straight in. A
    # toolchain that declares it i32 (clang 22) must keep the mask, and the gate must see it.
    tc = amdgpu.select(toolchain)[0]
    source = tmp_path / "ir.hip"
    source.write_text(PRELUDE + 'extern "C" __global__ void k(const int* a, const v2i* b, '
                      f"const v8i* c, const int* idx, v8i* d) {{ {swmmac()} }}")
    flags = [f for f in amdgpu.FLAGS if f != "-c"]
    ir = subprocess.run([tc.path, *flags, "--offload-arch=gfx1201", "-S", "-emit-llvm", "-o",
                         "-", source], capture_output=True, text=True, check=True).stdout
    width = re.search(r"@llvm\.amdgcn\.swmmac\.i32\.16x16x32\.iu4\.[\w.]*\.i(16|32)\(", ir)
    assert width, ir
    report = gated(tmp_path, swmmac(idx="idx[LANE] & 0xFFFF"), toolchain=tc)
    assert report.operands[-1].reaches == ("unmodified" if width.group(1) == "16"
                                           else "from_memory")


def test_asm_cli_json_and_exit_codes():
    runner = CliRunner()
    result = runner.invoke(app, ["asm", "builtin-modifiers", "--arch", "gfx942", "--json"])
    assert result.exit_code == 0, result.output
    import json

    reports = json.loads(result.stdout)
    # The swmmac kernels are for gfx12 and say so; the f64 MFMA one passes the gate.
    assert {r["kernel"]: r["status"] for r in reports} == {
        "k32": "skipped", "k64": "skipped", "mfma_f64": "ok"}
    assert reports[-1]["histogram"]
    assert runner.invoke(app, ["asm", "builtin-modifiers", "--arch", "sm_90"]).exit_code == 2


@pytest.mark.slow
def test_static_sweep_records_builds_and_modifiers(tmp_path, own_lab):
    from probelab import dataset
    from probelab.sweep import run_sweep

    own_lab("builtin_modifiers")
    result = run_sweep("builtin-modifiers", target="gfx942", out_root=tmp_path)
    ds = dataset.load(result.path)
    prov = dataset.provenance(ds)
    assert prov["static"] is True and prov["simulated"] is False and prov["target"] == "gfx942"
    family = ds["family"].values
    builds = ds["builds"].values[0]
    assert np.all(builds[family == 0] == 0) and np.all(builds[family == 1] == 1)
    assert all("needs target feature" in d for d in ds["diagnostic"].values[family == 0])
    # The decoded numbers say what the instruction text says (parsed independently here).
    for i in np.flatnonzero(family == 1):
        text = str(ds["instruction"].values[i])
        neg = re.search(r"neg:\[(\d),(\d),(\d)\]", text)
        want = sum(int(b) << k for k, b in enumerate(neg.groups())) if neg else 0
        assert int(ds["mod_neg"].values[0, i]) == want
        cbsz = re.search(r"cbsz:(\d+)", text)
        assert int(ds["mod_cbsz"].values[0, i]) == (int(cbsz.group(1)) if cbsz else 0)


def test_static_sweep_refuses_a_nondeterministic_toolchain(tmp_path, monkeypatch, own_lab):
    from probelab.sweep import run_sweep

    own_lab("builtin_modifiers")
    real = amdgpu.build

    def flaky(kernel, target, fresh=False, toolchain=None):
        code = real(kernel, target, toolchain=toolchain)
        return type(code)(code.target, code.binary + (b"x" if fresh else b""),
                          code.functions, code.toolchain)

    monkeypatch.setattr(amdgpu, "build", flaky)
    with pytest.raises(IntegrityError, match="two builds differ"):
        run_sweep("builtin-modifiers", target="gfx942", out_root=tmp_path)
    assert not list(tmp_path.rglob("*.nc"))


def test_probe_kernels_declare_the_instruction_and_its_relatives():
    probe = get_probe("builtin-modifiers")
    for kernel in probe.kernels("amd"):
        assert kernel.evidence.instruction and kernel.evidence.forbidden


def test_dual_issue_pairs_are_two_instructions_with_two_writes():
    from probelab.vendors.amd.disasm import parse_gcn

    kernel = next(k for k in get_probe("byte-perm").kernels("amd") if k.name == "v_perm")
    blob, _ = amdgpu.compile_object(kernel.source_text(), "gfx1201")
    text = amdgpu.disassemble(blob, "gfx1201")
    pairs = [line.split("//")[0].strip() for line in text.splitlines() if " :: " in line]
    assert pairs, "gfx1201 code is expected to use v_dual_* pairs"
    parsed = [i for fn in parse_gcn(text).values() for i in fn]
    for pair in pairs:
        first, second = (half.strip() for half in pair.split(" :: "))
        halves = [i for i in parsed if i.text in (first, second)]
        assert {i.mnemonic for i in halves} == {first.split()[0], second.split()[0]}
        for insn in halves:  # each half's destination is a write the gate can see
            assert GCN.defines(insn) == set(GCN.registers(insn.operands[0]))
