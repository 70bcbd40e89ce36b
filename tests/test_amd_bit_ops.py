"""amd-bit-ops: the AMD VALU bit instructions, offline and on the simulated device.

The sealed reading (preregistrations/amd-bit-ops/isa-bit-ops.toml) is checked against a
literal interpreter of the ISA pseudocode it quotes (loops, `break`, signext_from_bit), on
the simulated device it is the data on every cell (a simulated sweep: NOT-EVIDENCE, its
reading CONFIRMED) and a unit that follows any of its near misses fits that near miss and
refutes it. Offline, under every AMDGPU toolchain found, every kernel passes its evidence
gate on every target the toolchain builds, each operand is loaded through the pointer the
builtin's argument order says, and kernels written wrong fail their gate.

Compile tests need clang >= 19 with the AMDGPU target and skip cleanly without one."""

import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from kernargs import pointer_arguments
from test_bitops import mismatches
from test_bitops import simulated as bitops_simulated

from probelab.evidence import gate
from probelab.hypothesis import load_hypothesis, predict
from probelab.isa import Instruction
from probelab.probe import Kernel, load_sibling
from probelab.vendors.amd.isa import GCN

ROOT = Path(__file__).resolve().parents[1]
MOD = load_sibling(ROOT / "probes" / "amd_bit_ops" / "probe.py")
PROBE = MOD.PROBE
SEALED = ROOT / "preregistrations" / "amd-bit-ops" / "isa-bit-ops.toml"
TARGETS = ["gfx942", "gfx1201", "gfx950", "gfx90a", "gfx1200"]
ARGS = ("params", "a", "b", "c", "out")  # kernel arguments, one 8-byte pointer each
M = 0xFFFFFFFF


def simulated(probe):
    return bitops_simulated(probe, "amd")


# ---- the kernels as declared ----------------------------------------------------------------


def test_the_source_is_rendered_from_forms_and_generate_prints_it() -> None:
    kernels = PROBE.kernels("amd")
    assert [k.name for k in kernels] == list(MOD.FORMS)
    assert PROBE.kernels("nvidia") == []
    (text,) = {k.text for k in kernels}
    assert not MOD.SOURCE.exists()  # rendered, kept in no file
    printed = subprocess.run([sys.executable, str(ROOT / "probes" / "amd_bit_ops" / "generate.py")],
                             capture_output=True, text=True, check=True, cwd=ROOT).stdout
    assert printed == text
    for k in kernels:
        assert f'extern "C" __global__ void {k.symbol}(' in text
    # inline asm only where clang 19 and 22 have no builtin, with AMDGPU's constraints
    assert text.count("asm volatile") == 2 and '"=v"(r)' in text and '"r"(' not in text


# ---- the sealed reading ---------------------------------------------------------------------


def pseudocode(op: int, a: int, b: int, c: int) -> int:
    """The ISA pseudocode the sealed file quotes, interpreted literally, one case at a time."""
    bit = lambda x, i: (x >> i) & 1  # noqa: E731
    if op == 1:
        return (b + sum(bit(a, i) for i in range(32))) & M
    if op in (2, 3, 4):
        d = -1
        for i in (range(1, 32) if op == 3 else range(32)):
            if (op == 2 and bit(a, 31 - i)) or (op == 4 and bit(a, i)) or (
                    op == 3 and bit(a, 31 - i) != bit(a, 31)):
                d = i
                break
        return d & M
    if op == 5:
        return sum(bit(a, 31 - i) << i for i in range(32))
    if op in (6, 7):
        off, width = b & 31, c & 31
        s0 = a - (1 << 32) if op == 7 and bit(a, 31) else a  # S0.i32 (Python's >> is arithmetic)
        tmp = (s0 >> off) & ((1 << width) - 1)
        if op == 7 and width and bit(tmp, width - 1):  # signext_from_bit(tmp, width)
            tmp |= (M << width) & M
        return tmp & M
    if op == 8:
        return (a & b) | (~a & c & M)
    return (((a << 32) | b) >> (c & 31)) & M


def test_the_sealed_reading_is_the_quoted_pseudocode() -> None:
    """Every cell of the scan, insert and count families and a seeded fifth of the field and
    align cases (each offset, width and shift edge among them)."""
    grid = PROBE.stimulus()
    h = load_hypothesis(SEALED)
    table = predict(h, grid, PROBE.observables)["literal"]["value"]
    family = grid["family"].values
    rng = np.random.default_rng(5)
    small = (family != "field") & (family != "align")
    picked = np.nonzero(small | (rng.random(family.size) < 0.2))[0]
    a, b, c = (grid[n].values.astype(int) for n in "abc")
    for row, op in enumerate(grid["op"].values):
        got = [int(table[row, i]) for i in picked]
        want = [pseudocode(int(op), int(a[i]), int(b[i]), int(c[i])) for i in picked]
        assert got == want, str(grid["kernel"].values[row])


def test_the_simulated_unit_fits_the_sealed_reading_and_no_near_miss() -> None:
    ds = simulated(PROBE)
    h = load_hypothesis(SEALED)
    assert set(h.kernels) == set(MOD.FORMS)
    assert mismatches(ds, h, predict(h, ds, PROBE.observables)["literal"]) == 0
    assert len(h.near_misses) == 8
    for name in h.near_misses:
        assert mismatches(ds, h, predict(h.near_miss(name), ds, PROBE.observables)["literal"]) > 0


def _msb(x):
    return MOD._msb(x)


def _ctz(x):
    return _msb(x & ((~x + np.uint64(1)) & np.uint64(M)))


def _near(name: str):
    """The model of a unit that follows near miss `name` (numpy, stated here apart from the
    sealed file's expressions): op -> model(a, b, c)."""
    U, m32 = np.uint64, np.uint64(M)
    neg = lambda a: (a >> U(31)) == 1  # noqa: E731
    same = lambda a: np.where(neg(a), ~a & m32, a)  # noqa: E731  (bits unlike the sign)
    if name == "scan-zero-is-32":
        return {2: lambda a, b, c: np.where(a == 0, U(32), U(31) - _msb(a)),
                4: lambda a, b, c: np.where(a == 0, U(32), _ctz(a))}
    if name == "scans-without-break":
        return {2: lambda a, b, c: np.where(a == 0, m32, U(31) - _ctz(a)),
                4: lambda a, b, c: np.where(a == 0, m32, _msb(a)),
                3: lambda a, b, c: np.where(same(a) == 0, m32, U(31) - _ctz(same(a)))}
    if name == "ffbh-i32-minus-one-is-32":
        return {3: lambda a, b, c: np.where(a == m32, U(32), MOD.model(a, b, c, U(3)))}
    if name == "ffbh-i32-as-arm-cls":
        return {3: lambda a, b, c: np.where(same(a) == 0, U(31), U(30) - _msb(same(a)))}
    if name == "six-bit-operands":
        return {6: lambda a, b, c: MOD.bfe(a, b, c, False, 6),
                7: lambda a, b, c: MOD.bfe(a, b, c, True, 6),
                9: lambda a, b, c: (((a << U(32)) | b) >> (c & U(63))) & m32}
    if name == "bfe-eight-bit-fields":
        return {6: lambda a, b, c: MOD.bfe(a, b, c, False, 8),
                7: lambda a, b, c: MOD.bfe(a, b, c, True, 8)}
    if name == "bfe-width-zero-is-32":
        wide = lambda c: np.where(c & U(31) == 0, U(32), c & U(31))  # noqa: E731
        return {6: lambda a, b, c: MOD.bfe(a, b & U(31), wide(c), False, 6),
                7: lambda a, b, c: MOD.bfe(a, b & U(31), wide(c), True, 6)}
    assert name == "operands-swapped", name
    return {8: lambda a, b, c: MOD.model(a, c, b, U(8)),
            9: lambda a, b, c: MOD.model(b, a, c, U(9))}


NEAR_MISSES = ["scan-zero-is-32", "scans-without-break", "ffbh-i32-minus-one-is-32",
               "ffbh-i32-as-arm-cls", "six-bit-operands", "bfe-eight-bit-fields",
               "bfe-width-zero-is-32", "operands-swapped"]


@pytest.mark.parametrize("near", NEAR_MISSES)
def test_a_unit_that_follows_a_near_miss_fits_it_and_refutes_the_isa_reading(near: str) -> None:
    h = load_hypothesis(SEALED)
    assert sorted(h.near_misses) == sorted(NEAR_MISSES)
    laws = _near(near)
    models = {name: (lambda law: lambda a, b, c, op: law(a, b, c))(laws[form[0]])
              for name, form in MOD.FORMS.items() if form[0] in laws}
    unit = replace(PROBE, sim_models=models)
    assert PROBE.sim_models == {}
    ds = simulated(unit)
    assert mismatches(ds, h, predict(h, ds, PROBE.observables)["literal"]) > 0
    assert mismatches(ds, h, predict(h.near_miss(near), ds, PROBE.observables)["literal"]) == 0


def test_a_simulated_sweep_is_not_evidence_and_its_reading_confirmed(tmp_path: Path, sealed_lab,
                                                                     monkeypatch) -> None:
    """`probelab sweep amd-bit-ops --backend sim`: the dataset is marked simulated, so the
    sealed reading it fits is CONFIRMED only as a detail of NOT-EVIDENCE."""
    from probelab import dataset
    from probelab.check import assess
    from probelab.notary.rules import Finding, Outcome, Rule
    from probelab.sweep import run_sweep

    lab = sealed_lab("amd_bit_ops", "amd-bit-ops", "isa-bit-ops")
    result = run_sweep("amd-bit-ops", "sim", target="gfx942", repeats=2, out_root=tmp_path)
    assert dataset.is_simulated(result.dataset)
    assert result.dataset["value"].dims == ("kernel", "case")
    judged = assess(lab / "preregistrations" / "amd-bit-ops" / "isa-bit-ops.toml", result.path)
    assert judged.outcome == Outcome.NOT_EVIDENCE and judged.doc["dataset"]["simulated"]
    assert judged.findings == (Finding(Rule.SIMULATED, detail=Outcome.CONFIRMED),)


# ---- offline: the code objects --------------------------------------------------------------


@pytest.fixture
def amdgpu(each_amd_toolchain, request):
    from probelab.vendors.amd import toolchain as amdgpu

    target = request.node.callspec.params.get("target")
    if target and target not in amdgpu.supported_targets(each_amd_toolchain):
        pytest.skip(f"{each_amd_toolchain.name} does not build {target}")
    return amdgpu


def build(amdgpu, k: Kernel, target: str) -> list[Instruction]:
    return amdgpu.build(k, target).functions[k.symbol]


@pytest.mark.parametrize("target", TARGETS)
def test_every_kernel_passes_its_gate(amdgpu, target: str) -> None:
    for k in PROBE.kernels("amd"):
        code = build(amdgpu, k, target)
        report = gate(k.name, k.evidence, code, GCN)
        assert report.ok, report.problems
        assert [t.reaches for t in report.operands] == ["unmodified"] * len(MOD.reads(k.name))


def _loaded_through(code: list[Instruction], k: Kernel) -> list[set[str]]:
    """The pointer argument(s) each source operand of the claimed instruction is loaded
    through (the cell index is the workgroup id times its size, a hidden argument, plus
    the lane's id: left out)."""
    report = gate(k.name, k.evidence, code, GCN)
    (index,) = [i for i, insn in enumerate(code) if insn.text in report.matches]
    through = []
    for operand in code[index].operands[1:]:
        (reg,) = GCN.registers(operand)
        j = next(j for j in range(index - 1, -1, -1) if reg in GCN.defines(code[j]))
        assert code[j].mnemonic.startswith("global_load"), code[j].text
        through.append(pointer_arguments(code, j, code[j].operands[1], ARGS) - {"hidden"})
    return through


@pytest.mark.parametrize("target", ["gfx942", "gfx1201"])
def test_each_operand_is_loaded_through_its_own_pointer(amdgpu, target: str) -> None:
    """src0, src1, src2 of each instruction are loaded through a, b, c (the builtin's or the
    asm's argument order): bfi's mask is a, alignbit's high word a, bfe's offset b."""
    for k in PROBE.kernels("amd"):
        assert _loaded_through(build(amdgpu, k, target), k) == [
            {n} for n in MOD.reads(k.name)], k.name


@pytest.mark.parametrize("target", ["gfx942", "gfx1201"])
def test_a_bfi_with_its_operands_swapped_passes_the_gate_but_not_the_order_check(
        amdgpu, target: str) -> None:
    """The gate asks only that each operand come straight from a load; which load is the
    order check's to say."""
    k = next(k for k in PROBE.kernels("amd") if k.name == "bfi")
    swapped = replace(k, text=k.text.replace("v_bfi_b32 %0, %1, %2, %3",
                                             "v_bfi_b32 %0, %1, %3, %2"))
    code = build(amdgpu, swapped, target)
    assert gate(k.name, k.evidence, code, GCN).ok
    assert _loaded_through(code, k) == [{"a"}, {"c"}, {"b"}]


# a kernel written wrong -> (what replaces its call or asm in the source, the problem seen)
WRONG = {
    "bfe_u32": ("__builtin_amdgcn_sbfe((int)a_, b_, c_)", "forbidden relative"),
    "bfe_i32": ("(uint32_t)__builtin_amdgcn_sbfe((int)a_, b_ + 1u, c_)", "must be unmodified"),
    "alignbit": ("__builtin_amdgcn_alignbit(a_, b_, 7u)", "must be unmodified"),
    "ffbh_u32": ("(a_ ? __builtin_clz(a_) : 32u)", "forbidden relative"),
    "ffbh_i32": ("__builtin_clz(a_)", "no instruction matching"),
}


def _wrong(k: Kernel) -> Kernel:
    text = MOD.kernel_text(k.name)
    new, _ = WRONG[k.name]
    start = text.index("    out[i] = ") if "asm" not in text else text.index("    uint32_t r;")
    body = text[:start] + f"    out[i] = {new};\n}}\n"
    if "b_" in new and "const uint32_t b_" not in body:
        body = body.replace("    const uint32_t a_ = a[i];\n",
                            "    const uint32_t a_ = a[i];\n    const uint32_t b_ = b[i];\n"
                            "    const uint32_t c_ = c[i];\n")
    return replace(k, text=MOD.header() + "\n" + body)


@pytest.mark.parametrize("target", ["gfx942", "gfx1201"])
@pytest.mark.parametrize("name", sorted(WRONG))
def test_a_kernel_written_wrong_fails_its_gate(amdgpu, target: str, name: str) -> None:
    k = next(k for k in PROBE.kernels("amd") if k.name == name)
    report = gate(k.name, k.evidence, build(amdgpu, _wrong(k), target), GCN)
    assert not report.ok
    assert any(WRONG[name][1] in p for p in report.problems), report.problems
