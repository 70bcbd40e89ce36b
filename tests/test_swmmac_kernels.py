"""swmmac-iu4's device kernels on real compiled code: the evidence the probe declares holds
for probes/swmmac_iu4/swmmac_iu4.hip, and fails for near-miss variants of it.

K=32 goes through the builtin; K=64 through inline asm, because clang 19 types the K=64
builtin's index as i16 while the instruction reads 32 bits (see the probe's README). Every
test runs under each AMDGPU toolchain found (clang 22 types the index i32).
"""

import re
import subprocess
from pathlib import Path

import pytest

from probelab.errors import Unavailable
from probelab.evidence import EvidenceReport, gate
from probelab.isa import Instruction
from probelab.probe import Evidence, Kernel
from probelab.vendors.amd import toolchain as amdgpu
from probelab.vendors.amd.disasm import parse_gcn
from probelab.vendors.amd.isa import GCN

try:
    amdgpu.find_clang()
except Unavailable as exc:
    pytest.skip(f"no AMDGPU clang: {exc}", allow_module_level=True)
pytestmark = pytest.mark.usefixtures("each_amd_toolchain")

HIP = Path(__file__).resolve().parents[1] / "probes" / "swmmac_iu4" / "swmmac_iu4.hip"
SOURCE = HIP.read_text()
SYMBOL = {"k32": "probe_swmmac_k32", "k64": "probe_swmmac_k64"}
INSTRUCTION = {"k32": r"v_swmmac_i32_16x16x32_iu4", "k64": r"v_swmmac_i32_16x16x64_iu4"}
RELATIVES = (r"v_swmmac_.*_iu8", r"v_swmmac_.*_(fp8|bf8)", r"v_swmmac_.*_(f16|bf16)",
             r"v_wmma_.*")
# The evidence swmmac-iu4 declares. The accumulator is tied to the destination, so the
# source operands in disassembly order are A, B and the index: each straight from a load.
EVIDENCE = {
    "k32": Evidence(INSTRUCTION["k32"], forbidden=(*RELATIVES, INSTRUCTION["k64"]),
                    operands=("unmodified",) * 3),
    "k64": Evidence(INSTRUCTION["k64"], forbidden=(*RELATIVES, INSTRUCTION["k32"]),
                    operands=("unmodified",) * 3),
}
# Per kernel: the load that must feed A, B and the index (full width, no narrowing).
LOADS = {"k32": ("global_load_b32", "global_load_b64", "global_load_b32"),
         "k64": ("global_load_b64", "global_load_b128", "global_load_b32")}

K32_CALL = re.compile(r"__builtin_amdgcn_swmmac_i32_16x16x32_iu4_w32\(.*?\);", re.S)
K64_ASM = re.compile(r"asm volatile\(.*?\);", re.S)


def variant(pattern: re.Pattern[str], replacement: str) -> str:
    """The kernel file with exactly one statement replaced (a mutant that did not change
    anything would prove nothing)."""
    text, n = pattern.subn(replacement, SOURCE)
    assert n == 1, f"{pattern.pattern!r} matched {n} times"
    return text


def build(tmp_path: Path, kernel: str, source: str | None = None, target: str = "gfx1201",
          fresh: bool = False):
    path = HIP
    if source is not None:
        path = tmp_path / "swmmac_variant.hip"
        path.write_text(source)
    code = amdgpu.build(Kernel(kernel, SYMBOL[kernel], path, "amd", EVIDENCE[kernel]), target,
                        fresh=fresh)
    return code, code.functions[SYMBOL[kernel]]


def gated(tmp_path: Path, kernel: str, source: str | None = None,
          target: str = "gfx1201") -> tuple[EvidenceReport, list[Instruction]]:
    _, code = build(tmp_path, kernel, source, target)
    return gate(kernel, EVIDENCE[kernel], code, GCN), code


def emit_llvm(tmp_path: Path, source: str, target: str = "gfx1201") -> str:
    """The LLVM IR of a source, with the very clang and flags the probe's build uses."""
    clang = amdgpu.find_clang()
    src = tmp_path / "ir.hip"
    src.write_text(source)
    flags = [f for f in amdgpu.FLAGS if f != "-c"]
    run = subprocess.run([clang.path, *flags, f"--offload-arch={target}", "-S", "-emit-llvm",
                          "-o", "-", src], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    return run.stdout


def ir_function(ir: str, symbol: str) -> str:
    m = re.search(rf"^define [^\n]*@{symbol}\(.*?^}}$", ir, re.S | re.M)
    assert m, f"{symbol} not in the IR"
    return m.group(0)


def swmmac_index(code: list[Instruction], kernel: str) -> int:
    hits = [i for i, insn in enumerate(code) if insn.mnemonic == INSTRUCTION[kernel]]
    assert len(hits) == 1
    return hits[0]


@pytest.mark.parametrize("target", ["gfx1201", "gfx1200"])
@pytest.mark.parametrize("kernel", ["k32", "k64"])
def test_kernel_passes_the_gate_with_full_width_loads_feeding_a_b_and_idx(
        tmp_path, kernel, target):
    report, code = gated(tmp_path, kernel, target=target)
    assert report.ok, report.problems
    assert len(report.matches) == 1 and not report.forbidden_found
    assert [t.reaches for t in report.operands] == ["unmodified"] * 3
    for trace, load in zip(report.operands, LOADS[kernel], strict=True):
        assert [step.split()[0] for step in trace.path] == [load], trace
    insn = code[swmmac_index(code, kernel)]
    assert insn.modifiers == ("neg_lo:[1,1,0]",)  # A and B signed, C not, no clamp
    a, b, index = insn.operands[1:]
    assert len(GCN.registers(a)) == (1 if kernel == "k32" else 2)
    assert len(GCN.registers(b)) == (2 if kernel == "k32" else 4)
    assert re.fullmatch(r"v\d+", index)  # one 32-bit VGPR, loaded by global_load_b32


@pytest.mark.parametrize("kernel", ["k32", "k64"])
def test_exec_is_untouched_loads_are_waited_for_and_all_of_d_is_stored(tmp_path, kernel):
    _, code = gated(tmp_path, kernel)
    at = swmmac_index(code, kernel)
    before, after = code[:at], code[at + 1:]
    # The wave bound is a scalar compare and branch: nothing narrows EXEC on the way
    # (v_cmpx writes EXEC without naming it).
    assert not [i.text for i in before if "exec" in i.text or i.mnemonic.startswith("v_cmpx")]
    assert any(i.mnemonic == "s_cbranch_scc1" for i in before)
    # The compiler waits for every load before the instruction (the asm route included).
    last_load = max(j for j, i in enumerate(before) if GCN.is_load(i))
    assert "s_wait_loadcnt 0x0" in [i.text for i in before[last_load + 1:]]
    # Every one of the 8 destination dwords is stored, unchanged, before the end.
    dest = set(GCN.registers(code[at].operands[0]))
    stored: set[str] = set()
    for insn in after:
        assert not (GCN.defines(insn) & dest), f"D overwritten by {insn.text}"
        if insn.mnemonic.startswith("global_store_"):
            stored |= set(GCN.registers(insn.operands[1]))
    assert dest == stored and len(dest) == 8


def test_a_per_lane_bound_would_narrow_exec(tmp_path):
    # Why the bound reads the wave index through v_readfirstlane: compared per lane, the
    # same bound compiles to v_cmpx + s_cbranch_execz, i.e. EXEC is narrowed before the
    # instruction, which the test above would catch.
    per_lane = SOURCE.replace("__builtin_amdgcn_readfirstlane(t) / 32u", "t / 32u")
    assert per_lane != SOURCE
    _, code = gated(tmp_path, "k64", per_lane)
    before = code[:swmmac_index(code, "k64")]
    assert [i for i in before if i.mnemonic.startswith("v_cmpx")]


def builtin_index_width(tmp_path: Path, k: int) -> int:
    """The width this toolchain declares the K=`k` builtin's index with, read off its IR."""
    builtin = variant(K64_ASM, "acc = __builtin_amdgcn_swmmac_i32_16x16x64_iu4_w32("
                               "true, a2, true, b4, acc, (int)index, false);")
    ir = ir_function(emit_llvm(tmp_path, builtin), SYMBOL[f"k{k}"])
    call = re.search(rf"@llvm\.amdgcn\.swmmac\.i32\.16x16x{k}\.iu4\.[\w.]*\.i(16|32)\(", ir)
    assert call, ir
    return int(call.group(1))


def test_builtin_index_reaches_the_intrinsic_at_its_declared_width_the_asm_route_as_i32(
        tmp_path):
    # clang 19 declares the index i16 (both K): the K=64 builtin truncates the loaded i32
    # before the intrinsic. clang 22 declares it i32: the word goes in as loaded.
    width = builtin_index_width(tmp_path, 64)
    builtin = variant(K64_ASM, "acc = __builtin_amdgcn_swmmac_i32_16x16x64_iu4_w32("
                               "true, a2, true, b4, acc, (int)index, false);")
    ir = ir_function(emit_llvm(tmp_path, builtin), SYMBOL["k64"])
    call = re.search(r"call <8 x i32> @llvm\.amdgcn\.swmmac\.i32\.16x16x64\.iu4\.[\w.]*"
                     rf"\(i1 true, <2 x i32> %\w+, i1 true, <4 x i32> %\w+, <8 x i32> %\w+, "
                     rf"i{width} (%\w+), i1 false\)", ir)
    assert call, ir
    truncated = re.search(rf"{re.escape(call.group(1))} = trunc i32 %\w+ to i16", ir)
    assert bool(truncated) == (width == 16)
    # The asm route: no intrinsic, the loaded i32 goes into the asm call as it is.
    ir = ir_function(emit_llvm(tmp_path, SOURCE), SYMBOL["k64"])
    assert "@llvm.amdgcn.swmmac" not in ir and "trunc" not in ir
    asm = re.search(r'asm sideeffect "v_swmmac_i32_16x16x64_iu4 \$0, \$1, \$2, \$3 '
                    r'neg_lo:\[1,1,0\]", "=v,v,v,v,0"\(<2 x i32> %\w+, <4 x i32> %\w+, '
                    r"i32 (%\w+), <8 x i32> %\w+\)", ir)
    assert asm, ir
    assert re.search(rf"{re.escape(asm.group(1))} = load i32, ptr addrspace\(1\)", ir)
    # The K=32 builtin's index is what the K=32 instruction reads (index_key picks a half).
    assert builtin_index_width(tmp_path, 32) in (16, 32)


def test_asm_route_costs_nothing_around_the_instruction(tmp_path):
    # With the index left alone, the builtin and the asm route compile to the same K=64 code:
    # same loads, same s_wait_loadcnt, same encoding, no s_nop or wait added for the asm.
    builtin = variant(K64_ASM, "acc = __builtin_amdgcn_swmmac_i32_16x16x64_iu4_w32("
                               "true, a2, true, b4, acc, (int)index, false);")
    _, via_builtin = build(tmp_path, "k64", builtin)
    _, via_asm = build(tmp_path, "k64")
    assert [i.text for i in via_builtin] == [i.text for i in via_asm]


def test_the_builtin_drops_what_the_source_puts_in_the_upper_index_half(tmp_path):
    # Flip the index's upper 16 bits in the source. Through a K=64 builtin with an i16 index
    # (clang 19) the compiler may, and does, drop the flip: the instruction reads the
    # unflipped word. With an i32 index (clang 22) the flip stays and the gate sees it. The
    # asm route keeps it either way. This is why K=64 uses asm, and why "unmodified" alone
    # cannot vouch for the builtin route.
    flip = "(index ^ 0xFFFF0000u)"
    builtin = variant(K64_ASM, "acc = __builtin_amdgcn_swmmac_i32_16x16x64_iu4_w32("
                               f"true, a2, true, b4, acc, (int){flip}, false);")
    report, code = gated(tmp_path, "k64", builtin)
    dropped = builtin_index_width(tmp_path, 64) == 16
    assert report.operands[2].reaches == ("unmodified" if dropped else "from_memory")
    assert bool([i.text for i in code if i.mnemonic.startswith("v_xor")]) != dropped
    asm = SOURCE.replace('"v"(index)', f'"v"{flip}')
    assert asm != SOURCE
    report, _ = gated(tmp_path, "k64", asm)
    assert report.operands[2].reaches == "from_memory" and not report.ok
    assert any(step.startswith("v_xor_b32") and "0xffff0000" in step
               for step in report.operands[2].path)


def test_fresh_builds_are_byte_identical(tmp_path):
    first, _ = build(tmp_path, "k64", fresh=True)
    second, _ = build(tmp_path, "k64", fresh=True)
    assert not first.cache_hit and not second.cache_hit
    assert first.binary == second.binary  # one code object holds both kernels
    assert set(SYMBOL.values()) <= set(first.functions)


MUTANTS = {
    "iu8 builtin in the K=32 kernel": ("k32", K32_CALL,
        "__builtin_amdgcn_swmmac_i32_16x16x32_iu8_w32(true, ((const probe_i2*)a)[t], true, "
        "((const probe_i4*)b)[t], c8, (int)idx[t], false);", INSTRUCTION["k32"],
        "v_swmmac_i32_16x16x32_iu8"),
    "K=64 builtin in the K=32 kernel": ("k32", K32_CALL,
        "__builtin_amdgcn_swmmac_i32_16x16x64_iu4_w32(true, ((const probe_i2*)a)[t], true, "
        "((const probe_i4*)b)[t], c8, (int)idx[t], false);", INSTRUCTION["k32"],
        "v_swmmac_i32_16x16x64_iu4"),
    "iu8 builtin in the K=64 kernel": ("k64", K64_ASM,
        "acc = __builtin_amdgcn_swmmac_i32_16x16x32_iu8_w32(true, a2, true, b4, acc, "
        "(int)index, false);", INSTRUCTION["k64"], "v_swmmac_i32_16x16x32_iu8"),
    "K=32 builtin in the K=64 kernel": ("k64", K64_ASM,
        "acc = __builtin_amdgcn_swmmac_i32_16x16x32_iu4_w32(true, a2.x, true, b4.xy, acc, "
        "(int)index, false);", INSTRUCTION["k64"], "v_swmmac_i32_16x16x32_iu4"),
}


@pytest.mark.parametrize("mutant", list(MUTANTS))
def test_a_wrong_instruction_fails_the_gate(tmp_path, mutant):
    kernel, pattern, replacement, missing, present = MUTANTS[mutant]
    report, code = gated(tmp_path, kernel, variant(pattern, replacement))
    assert [i.mnemonic for i in code if i.mnemonic.startswith("v_swmmac")] == [present]
    assert not report.ok
    assert any(f"no instruction matching {missing!r}" in p for p in report.problems)
    assert any("forbidden relative present" in p and present in p for p in report.problems)


GFX12_MATRIX = """k:
  v_wmma_f32_16x16x16_f16 v[0:7], v[8:11], v[12:15], v[0:7]
  v_wmma_f32_16x16x16_bf16 v[0:7], v[8:11], v[12:15], v[0:7]
  v_wmma_f16_16x16x16_f16 v[0:3], v[8:11], v[12:15], v[0:3]
  v_wmma_bf16_16x16x16_bf16 v[0:3], v[8:11], v[12:15], v[0:3]
  v_wmma_i32_16x16x16_iu8 v[0:7], v[8:9], v[12:13], v[0:7]
  v_wmma_i32_16x16x16_iu4 v[0:7], v8, v12, v[0:7]
  v_wmma_f32_16x16x16_fp8_fp8 v[0:7], v[8:9], v[12:13], v[0:7]
  v_wmma_f32_16x16x16_fp8_bf8 v[0:7], v[8:9], v[12:13], v[0:7]
  v_wmma_f32_16x16x16_bf8_fp8 v[0:7], v[8:9], v[12:13], v[0:7]
  v_wmma_f32_16x16x16_bf8_bf8 v[0:7], v[8:9], v[12:13], v[0:7]
  v_wmma_i32_16x16x32_iu4 v[0:7], v[8:9], v[12:13], v[0:7]
  v_swmmac_f32_16x16x32_f16 v[0:7], v[8:11], v[12:19], v20
  v_swmmac_f32_16x16x32_bf16 v[0:7], v[8:11], v[12:19], v20
  v_swmmac_f16_16x16x32_f16 v[0:3], v[8:11], v[12:19], v20
  v_swmmac_bf16_16x16x32_bf16 v[0:3], v[8:11], v[12:19], v20
  v_swmmac_i32_16x16x32_iu8 v[0:7], v[8:9], v[12:15], v20
  v_swmmac_i32_16x16x32_iu4 v[0:7], v8, v[12:13], v20
  v_swmmac_i32_16x16x64_iu4 v[0:7], v[8:9], v[12:15], v20
  v_swmmac_f32_16x16x32_fp8_fp8 v[0:7], v[8:9], v[12:15], v20
  v_swmmac_f32_16x16x32_fp8_bf8 v[0:7], v[8:9], v[12:15], v20
  v_swmmac_f32_16x16x32_bf8_fp8 v[0:7], v[8:9], v[12:15], v20
  v_swmmac_f32_16x16x32_bf8_bf8 v[0:7], v[8:9], v[12:15], v20
"""


def test_forbidden_patterns_cover_every_other_gfx12_matrix_instruction(tmp_path):
    # Every WMMA/SWMMAC of gfx12, assembled and disassembled by the lab's own toolchain, so the
    # patterns are checked against the spelling the gate will see.
    clang = amdgpu.find_clang()
    src, obj = tmp_path / "all.s", tmp_path / "all.o"
    src.write_text(GFX12_MATRIX)
    run = subprocess.run([clang.path, "-x", "assembler", "--target=amdgcn-amd-amdhsa",
                          "-mcpu=gfx1201", "-c", "-o", obj, src], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    code = parse_gcn(amdgpu.disassemble(obj.read_bytes(), "gfx1201"))["k"]
    assert len(code) == GFX12_MATRIX.count("\n  v_")
    for kernel, evidence in EVIDENCE.items():
        for insn in code:
            claimed = re.fullmatch(evidence.instruction, insn.mnemonic) is not None
            forbidden = any(re.fullmatch(p, insn.mnemonic) for p in evidence.forbidden)
            assert claimed != forbidden, (kernel, insn.mnemonic)
            assert claimed == (insn.mnemonic == INSTRUCTION[kernel])
