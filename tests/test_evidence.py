"""The evidence gate on real NVRTC-compiled kernels (no GPU needed, NVRTC + nvdisasm are)."""

from pathlib import Path

import pytest

from probelab.errors import Unavailable
from probelab.evidence import gate
from probelab.probe import Evidence, Kernel, get_probe
from probelab.vendors.nvidia.isa import SASS

nvidia = pytest.importorskip("probelab.vendors.nvidia.toolchain")

try:
    nvidia.nvrtc_version()
    HAVE_TOOLS = nvidia.find_nvdisasm() is not None
except Unavailable:
    HAVE_TOOLS = False
pytestmark = pytest.mark.skipif(not HAVE_TOOLS, reason="NVRTC or nvdisasm not installed")

PRELUDE = "typedef unsigned int u32;\n"
RAW = Evidence("PRMT", operands=("unmodified", "unmodified", "unmodified"))


def compiled(tmp_path: Path, body: str, evidence: Evidence = RAW):
    source = tmp_path / "k.cu"
    source.write_text(PRELUDE + 'extern "C" __global__ void k(const u32* x, const u32* y, '
                      f"const u32* s, u32* out) {{ u32 i = threadIdx.x; {body} }}")
    kernel = Kernel("k", "k", source, "nvidia", evidence)
    code = nvidia.build(kernel, "sm_90")
    return gate("k", evidence, code.functions["k"], SASS)


def test_byte_perm_probe_kernels_pass_the_gate_and_the_intrinsic_transform_is_recorded():
    probe = get_probe("byte-perm")
    reports = {}
    for kernel in probe.kernels("nvidia"):
        code = nvidia.build(kernel, "sm_90")
        reports[kernel.name] = gate(kernel.name, kernel.evidence, code.functions[kernel.symbol],
                                    SASS)
    assert all(r.ok for r in reports.values()), {k: r.problems for k, r in reports.items()}
    assert [t.reaches for t in reports["prmt"].operands] == ["unmodified"] * 3
    # Whatever __byte_perm does to its selector on the way is on record, not hidden.
    selector = reports["byte_perm"].operands[1]
    assert selector.reaches in ("unmodified", "from_memory")
    assert selector.path and "LDG" in selector.path[-1]


def test_raw_prmt_from_memory_passes(tmp_path):
    r = compiled(tmp_path, 'u32 r; asm volatile("prmt.b32 %0, %1, %2, %3;" : "=r"(r) : '
                           '"r"(x[i]), "r"(y[i]), "r"(s[i])); out[i] = r;')
    assert r.ok, r.problems


def test_constant_selector_is_caught(tmp_path):
    r = compiled(tmp_path, 'u32 r; asm volatile("prmt.b32 %0, %1, %2, %3;" : "=r"(r) : '
                           '"r"(x[i]), "r"(y[i]), "r"(0x3210u)); out[i] = r;')
    assert not r.ok
    assert any("not_from_memory" in p for p in r.problems)


def test_masked_operand_is_caught_where_unmodified_is_required(tmp_path):
    r = compiled(tmp_path, 'u32 r; asm volatile("prmt.b32 %0, %1, %2, %3;" : "=r"(r) : '
                           '"r"(x[i]), "r"(y[i]), "r"(s[i] & 0x7777u)); out[i] = r;')
    assert not r.ok
    masked = [t for t in r.operands if t.reaches == "from_memory"]
    assert masked and any("LOP3" in step for step in masked[0].path)


def test_missing_instruction_and_forbidden_relative_are_caught(tmp_path):
    r = compiled(tmp_path, "out[i] = x[i] + y[i] + s[i];")
    assert not r.ok and any("no instruction" in p for p in r.problems)
    forbid = Evidence("PRMT", forbidden=("IADD3",), operands=())
    r = compiled(tmp_path, 'u32 r; asm volatile("prmt.b32 %0, %1, %2, %3;" : "=r"(r) : '
                           '"r"(x[i]), "r"(y[i]), "r"(s[i])); out[i] = r + x[i + 1];', forbid)
    assert not r.ok and any("forbidden" in p for p in r.problems)


def test_instruction_count_is_enforced(tmp_path):
    twice = Evidence("PRMT", count=1, operands=())
    r = compiled(tmp_path, 'u32 a, b; asm volatile("prmt.b32 %0, %1, %2, %3;" : "=r"(a) : '
                           '"r"(x[i]), "r"(y[i]), "r"(s[i])); asm volatile("prmt.b32 %0, %1, '
                           '%2, %3;" : "=r"(b) : "r"(y[i]), "r"(x[i]), "r"(s[i])); '
                           "out[i] = a ^ b;", twice)
    assert not r.ok and any("expected 1" in p for p in r.problems)


def test_fp8_lowering_companions_are_proven_and_a_missing_or_misplaced_one_is_caught():
    """The fp8 mma.sync gate requires the unpacking before the last HMMA and C's adds after
    it, one per D register: the real kernel passes; the same code with its adds moved before
    the MMA fails on that companion alone, and with one unpack gone, on its count too."""
    probe = get_probe("mma-e4m3-f32")
    (kernel,) = probe.kernels("nvidia")
    code = list(nvidia.build(kernel, "sm_90").functions[kernel.symbol])
    ok = gate(kernel.name, kernel.evidence, code, SASS)
    assert ok.ok, ok.problems
    assert [(c["place"], len(c["found"])) for c in ok.companions] == [("before", 12), ("after", 4)]
    first = next(i for i, c in enumerate(code) if c.mnemonic.startswith("HMMA"))
    adds = [c for c in code if c.mnemonic == "FADD"]
    early = [c for c in code if c.mnemonic != "FADD"]
    early[first:first] = adds  # C added before the MMAs: C would join the sum
    moved = gate(kernel.name, kernel.evidence, early, SASS)
    assert moved.problems == [f"{kernel.name}: 0 instructions matching 'FADD' after the last "
                              "'HMMA\\\\.16816\\\\.F32', expected 4"]
    unpack = next(i for i, c in enumerate(code) if c.mnemonic.startswith("F2FP"))
    fewer = gate(kernel.name, kernel.evidence, code[:unpack] + code[unpack + 1:], SASS)
    assert any("11 instructions matching 'F2FP" in p for p in fewer.problems), fewer.problems


def test_companions_are_declared_with_a_place_and_a_positive_count():
    with pytest.raises(ValueError, match="place must be"):
        Evidence("HMMA", companions=(("FADD", "around", 1),))
    with pytest.raises(ValueError, match="count None or positive"):
        Evidence("HMMA", companions=(("FADD", "after", 0),))


def test_declared_modifiers_must_be_exactly_the_instructions() -> None:
    """AMD sign flags and clamp print as modifiers; a kernel whose builtin call got one wrong
    computes something else, so where a probe declares them (Evidence.modifiers) the gate
    refuses any other set, missing or extra; None leaves them unchecked."""
    from probelab.evidence import gate
    from probelab.isa import Instruction
    from probelab.vendors.amd.isa import GCN

    def code(modifiers: tuple[str, ...]) -> list[Instruction]:
        text = " ".join(["v_dot8_i32_iu4 v2, v2, v3, v4", *modifiers])
        return [Instruction(0, "v_dot8_i32_iu4", ("v2", "v2", "v3", "v4"), "", text,
                            modifiers)]

    signed = Evidence("v_dot8_i32_iu4", modifiers=("neg_lo:[1,1,0]",))
    assert gate("k", signed, code(("neg_lo:[1,1,0]",)), GCN).ok
    for wrong in ((), ("neg_lo:[1,0,0]",), ("neg_lo:[1,1,0]", "clamp")):
        report = gate("k", signed, code(wrong), GCN)
        assert not report.ok and "carries modifiers" in report.problems[0], wrong
    assert not gate("k", Evidence("v_dot8_i32_iu4", modifiers=()), code(("clamp",)), GCN).ok
    assert gate("k", Evidence("v_dot8_i32_iu4"), code(("clamp",)), GCN).ok


def test_a_declared_operand_the_instruction_lacks_fails_and_a_predicate_is_traced() -> None:
    """Each declared operand requirement needs an operand to hold it (zip used to drop the
    extra ones unchecked); a predicate source (SASS P registers) is traced to the compare
    and the load that set it, and PT reaches none (red-team: lop3-pred's q)."""
    from probelab.isa import Instruction

    def insn(text: str) -> Instruction:
        mnemonic, _, rest = text.partition(" ")
        return Instruction(0, mnemonic, tuple(o.strip() for o in rest.split(",")), "", text,
                           ())

    loads = [insn("LDG.E R2, desc[UR4][R8.64]"), insn("LDG.E R3, desc[UR4][R10.64]")]
    q = insn("ISETP.NE.U32.AND P0, PT, R3, RZ, PT")
    wanted = Evidence(r"LOP3\.LUT", operands=("unmodified", "unmodified", "unmodified", "any",
                                              "from_memory"))
    good = gate("k", wanted, [*loads, q, insn("LOP3.LUT R5, R2, R2, R2, 0x80, P0")], SASS)
    assert good.ok, good.problems
    assert good.operands[-1].reaches == "from_memory"
    folded = gate("k", wanted, [*loads, insn("LOP3.LUT R5, R2, R2, R2, 0x80, !PT")], SASS)
    assert not folded.ok and "must be from_memory" in folded.problems[0]
    short = gate("k", wanted, [*loads, insn("LOP3.LUT R5, R2, R2, R2")], SASS)
    assert not short.ok and "fewer than the 5 its evidence declares" in short.problems[0]
