"""byte-perm on AMD, offline: what clang puts in the code object, and the v_perm_b32 claim.

Compile tests build real code objects with clang >= 19 (-nogpuinc -nogpulib) and skip
cleanly without one. The hypothesis test checks the preregistered *expressions* against an
independent Python statement of the seeds/002 section 5 rule; no device is involved.
"""

import re
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
from kernargs import pointer_arguments

from probelab.asm import inspect
from probelab.errors import Unavailable
from probelab.evidence import gate
from probelab.hypothesis import load_hypothesis, predict
from probelab.isa import Instruction
from probelab.probe import Evidence, Kernel, load_sibling
from probelab.vendors.amd.isa import GCN

ROOT = Path(__file__).resolve().parents[1]
PROBE = load_sibling(ROOT / "probes" / "byte_perm" / "probe.py").PROBE
HYPOTHESIS = ROOT / "preregistrations" / "byte-perm" / "v-perm-seeds.toml"
TARGETS = ["gfx1201", "gfx942", "gfx950"]  # gfx950 (CDNA4): clang >= 20
# Kernel arguments in order; each is one 8-byte pointer in the kernarg segment.
ARGS = ("params", "x", "y", "sel", "out")
pytestmark = pytest.mark.usefixtures("each_amd_toolchain")  # under every AMDGPU toolchain


@pytest.fixture(autouse=True)
def _target_built_by_the_toolchain(request, each_amd_toolchain):
    from probelab.vendors.amd import toolchain as amdgpu

    target = getattr(request.node, "callspec", None) and request.node.callspec.params.get(
        "target")
    if target and target not in amdgpu.supported_targets(each_amd_toolchain):
        pytest.skip(f"{each_amd_toolchain.name} does not build {target}")


@pytest.fixture(scope="module")
def clang():
    from probelab.vendors.amd import toolchain as amdgpu

    try:
        return amdgpu.find_clang()
    except Unavailable as exc:
        pytest.skip(f"no clang >= 19 with the AMDGPU target: {exc}")


def amd_kernel(name: str) -> Kernel:
    return next(k for k in PROBE.kernels("amd") if k.name == name)


def build(kernel: Kernel, target: str) -> list[Instruction]:
    from probelab.vendors.amd import toolchain as amdgpu

    return amdgpu.build(kernel, target).functions[kernel.symbol]


# ---- the kernels as declared -----------------------------------------------------------------


def test_amd_kernels_line_up_with_the_cuda_ones():
    nvidia = {k.name for k in PROBE.kernels("nvidia")}
    amd = {k.name: k for k in PROBE.kernels("amd")}
    assert set(amd) == {"byte_perm", "v_perm"}
    assert "byte_perm" in nvidia  # same name, so the datasets line up
    assert amd["byte_perm"].headers == "hip" and amd["byte_perm"].evidence.instruction is None
    assert amd["v_perm"].headers is None
    assert "gfx*" in PROBE.targets and "sm_*" in PROBE.targets


@pytest.mark.parametrize("target", TARGETS)
def test_asm_reports_v_perm_ok_and_byte_perm_skipped(clang, repo_lab, target):
    reports = {r.kernel: r for r in inspect("byte-perm", target)}
    skipped = reports["byte_perm"]
    assert skipped.status == "skipped"
    assert "HIP's headers" in skipped.detail and "hiprtc" in skipped.detail

    ok = reports["v_perm"]
    assert ok.status == "ok", ok.detail
    assert ok.histogram.get("v_perm_b32") == 1
    assert len(ok.evidence["matches"]) == 1
    traces = ok.evidence["operands"]
    assert [t["reaches"] for t in traces] == ["unmodified"] * 3
    for t in traces:
        assert len(t["path"]) == 1 and t["path"][0].startswith("global_load")


def _definition(code: list[Instruction], index: int, reg: str) -> int | None:
    return next((j for j in range(index - 1, -1, -1) if reg in GCN.defines(code[j])), None)


@pytest.mark.parametrize("target", TARGETS)
def test_v_perm_operands_are_x_y_selector_in_that_order(clang, repo_lab, target):
    """GCN prints v_perm_b32 vD, src0, src1, src2: src0 must be loaded through the x pointer,
    src1 through y and src2 through sel (builtin order), each load's address traced back to
    the kernarg registers it was computed from."""
    code = build(amd_kernel("v_perm"), target)
    (index,) = [i for i, insn in enumerate(code) if insn.mnemonic == "v_perm_b32"]
    sources = code[index].operands[1:]
    loaded_through = []
    for operand in sources:
        (reg,) = GCN.registers(operand)
        j = _definition(code, index, reg)
        assert j is not None and code[j].mnemonic.startswith("global_load"), code[j].text
        loaded_through.append(pointer_arguments(code, j, code[j].operands[1], ARGS) - {"hidden"})
    assert loaded_through == [{"x"}, {"y"}, {"sel"}]


@pytest.mark.parametrize("target", TARGETS)
def test_no_dual_issue_write_hides_between_load_and_v_perm(clang, repo_lab, target):
    """The gate reads one destination per instruction; a VOPD pair (`a :: b`, gfx11+) writes
    two. Make sure no second half writes a v_perm source between its load and the v_perm."""
    code = build(amd_kernel("v_perm"), target)
    (index,) = [i for i, insn in enumerate(code) if insn.mnemonic == "v_perm_b32"]
    for operand in code[index].operands[1:]:
        (reg,) = GCN.registers(operand)
        j = _definition(code, index, reg)
        for insn in code[j + 1:index]:
            second = re.search(r"::\s*\S+\s+([vs]\d+)", insn.text)
            assert not (second and second.group(1) == reg), insn.text


# ---- the gate fails broken variants, compiled for real --------------------------------------

SELECTOR_CALL = "__builtin_amdgcn_perm(x[op], y[op], sel[se]);"
BROKEN = {
    "constant_selector": "__builtin_amdgcn_perm(x[op], y[op], 0x05040100u);",
    "masked_selector": "__builtin_amdgcn_perm(x[op], y[op], sel[se] & 0x0F0Fu);",
}


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("variant", sorted(BROKEN))
def test_broken_v_perm_variants_fail_the_gate(clang, tmp_path, target, variant):
    good = amd_kernel("v_perm")
    text = good.source_text()
    assert text.count(SELECTOR_CALL) == 1
    source = tmp_path / f"{variant}.hip"
    source.write_text(text.replace(SELECTOR_CALL, BROKEN[variant]))
    broken = Kernel(good.name, good.symbol, source, "amd", good.evidence)
    code = build(broken, target)
    report = gate(broken.name, broken.evidence, code, GCN)
    assert len(report.matches) == 1  # the instruction is still there...
    assert not report.ok  # ...but its selector is not the stimulus, straight from memory
    x, y, selector = report.operands
    assert (x.reaches, y.reaches) == ("unmodified", "unmodified")
    assert not selector.ok
    expected = "not_from_memory" if variant == "constant_selector" else "from_memory"
    assert selector.reaches == expected
    if variant == "masked_selector":
        assert any(step.startswith("v_and_b32") and "0xf0f" in step for step in selector.path)
    # The well-formed kernel passes the same gate on the same target.
    assert gate(good.name, good.evidence, build(good, target), GCN).ok


@pytest.mark.parametrize("target", TARGETS)
def test_evidence_without_an_instruction_records_only(clang, target):
    """Evidence(instruction=None): nothing is claimed; forbidden relatives still count."""
    code = build(amd_kernel("v_perm"), target)
    report = gate("v_perm", Evidence(instruction=None), code, GCN)
    assert report.ok and report.matches == [] and report.operands == []
    report = gate("v_perm", Evidence(instruction=None, forbidden=(r"v_perm_b32",)), code, GCN)
    assert not report.ok and len(report.forbidden_found) == 1


# ---- the v_perm_b32 hypothesis vs an independent statement of the rule --------------------


def v_perm_byte(x: int, y: int, selector_byte: int) -> int:
    """One output byte of v_perm_b32(x, y, s), as seeds/002 section 5 states it (values 16-255
    from the ISA documents' '13 and above: 0xFF'). Bytes 0-3 are y's, 4-7 are x's."""
    source = list(y.to_bytes(4, "little") + x.to_bytes(4, "little"))
    if selector_byte <= 7:
        return source[selector_byte]
    if selector_byte <= 11:
        odd = {8: 1, 9: 3, 10: 5, 11: 7}[selector_byte]
        return 0xFF if source[odd] >= 0x80 else 0x00
    if selector_byte == 12:
        return 0x00
    return 0xFF


def v_perm_word(x: int, y: int, s: int) -> int:
    return sum(v_perm_byte(x, y, (s >> (8 * k)) & 0xFF) << (8 * k) for k in range(4))


# seeds/002 section 5, as printed: rows are operand patterns, columns selector values 0-15.
SEEDS_TABLE = """
01 01 01 01 01 01 01 01 00 00 00 00 00 FF FF FF
81 81 81 81 81 81 81 81 FF FF FF FF 00 FF FF FF
80 01 01 01 01 01 01 01 00 00 00 00 00 FF FF FF
01 80 01 01 01 01 01 01 FF 00 00 00 00 FF FF FF
01 01 80 01 01 01 01 01 00 00 00 00 00 FF FF FF
01 01 01 80 01 01 01 01 00 FF 00 00 00 FF FF FF
01 01 01 01 80 01 01 01 00 00 00 00 00 FF FF FF
01 01 01 01 01 80 01 01 00 00 FF 00 00 FF FF FF
01 01 01 01 01 01 80 01 00 00 00 00 00 FF FF FF
01 01 01 01 01 01 01 80 00 00 00 FF 00 FF FF FF
"""


def seeds_operands() -> list[tuple[int, int]]:
    """(x, y) per seeds row: all bytes 0x01, all 0x81, then only source byte k = 0x80."""
    rows = [[0x01] * 8, [0x81] * 8] + [[0x80 if j == k else 0x01 for j in range(8)]
                                       for k in range(8)]
    pairs = []
    for source in rows:  # source bytes 0-3 are y's, 4-7 are x's
        y = int.from_bytes(bytes(source[:4]), "little")
        x = int.from_bytes(bytes(source[4:]), "little")
        pairs.append((x, y))
    return pairs


def seeds_grid() -> xr.Dataset:
    xs, ys = zip(*seeds_operands(), strict=True)
    return xr.Dataset(coords={
        "operand": ("operand", np.arange(len(xs), dtype=np.uint32)),
        "x": ("operand", np.array(xs, np.uint32)), "y": ("operand", np.array(ys, np.uint32)),
        "selector": ("selector", np.arange(16, dtype=np.uint32))})


def test_the_python_rule_reproduces_the_seeds_table():
    table = [[int(v, 16) for v in row.split()] for row in SEEDS_TABLE.strip().splitlines()]
    got = [[v_perm_byte(x, y, s) for s in range(16)] for x, y in seeds_operands()]
    assert got == table


def test_hypothesis_reproduces_the_seeds_table_in_every_lane():
    """All four output bytes agree (seeds: 'all four agree'), with selector v in every byte."""
    h = load_hypothesis(HYPOTHESIS)
    table = np.array([[int(v, 16) for v in row.split()]
                      for row in SEEDS_TABLE.strip().splitlines()], np.uint32)
    grid = seeds_grid()
    grid = grid.assign_coords(selector=grid["selector"] * np.uint32(0x01010101))
    predicted = predict(h, grid, PROBE.observables)["literal"]["value"]
    for lane in range(4):
        assert np.array_equal((predicted >> (8 * lane)) & 0xFF, table), lane


def test_hypothesis_matches_the_python_rule_on_the_whole_grid():
    h = load_hypothesis(HYPOTHESIS)
    assert h.kernels == ("v_perm",) and h.targets == ("gfx*",)
    assert h.about_target("gfx1201") and h.about_target("gfx942")
    assert not h.about_target("sm_90")
    grid = PROBE.stimulus()
    tables = predict(h, grid, PROBE.observables)
    xs, ys = grid["x"].values, grid["y"].values
    selectors = grid["selector"].values
    # Output byte k depends only on (operand, selector byte k): tabulate the rule per operand
    # and selector-byte value in plain Python, then assemble every 16-bit selector's word.
    byte_table = np.array([[v_perm_byte(int(x), int(y), s) for s in range(256)]
                           for x, y in zip(xs, ys, strict=True)], np.uint32)
    low, high = selectors & 0xFF, selectors >> 8
    expected = (byte_table[:, low] | byte_table[:, high] << 8
                | byte_table[:, [0]] << 16 | byte_table[:, [0]] << 24)
    assert np.array_equal(tables["literal"]["value"], expected)
    # Spot-check whole words straight from the rule, including selector bytes >= 16.
    rng = np.random.default_rng(2)
    for op, se in zip(rng.integers(0, len(xs), 500), rng.integers(0, len(selectors), 500),
                      strict=True):
        want = v_perm_word(int(xs[op]), int(ys[op]), int(selectors[se]))
        assert int(tables["literal"]["value"][op, se]) == want
    # The declared translation exchanges the operands, so it predicts a different law.
    swapped = tables["operands_swapped"]["value"]
    assert int(swapped[0, 0]) == v_perm_word(int(ys[0]), int(xs[0]), 0) != int(expected[0, 0])


def test_simulated_v_perm_follows_the_same_rule():
    """The sim backend's model (never evidence) agrees with the claim, so a simulated sweep
    exercises the pipeline the way a device that fits the seeds would."""
    h = load_hypothesis(HYPOTHESIS)
    grid = PROBE.stimulus()
    launch = PROBE.launch(grid)
    out = PROBE.simulate(amd_kernel("v_perm"), launch.inputs)["out"].reshape(
        grid.sizes["operand"], grid.sizes["selector"])
    assert np.array_equal(out, predict(h, grid, PROBE.observables)["literal"]["value"])


def test_simulated_hip_byte_perm_is_the_cuda_contract():
    grid = PROBE.stimulus()
    launch = PROBE.launch(grid)
    cuda = next(k for k in PROBE.kernels("nvidia") if k.name == "byte_perm")
    amd = PROBE.simulate(amd_kernel("byte_perm"), launch.inputs)["out"]
    assert np.array_equal(amd, PROBE.simulate(cuda, launch.inputs)["out"])
    h = load_hypothesis(ROOT / "preregistrations" / "byte-perm" / "cuda-contract.toml")
    want = predict(h, grid, PROBE.observables)["literal"]["value"].reshape(-1)
    assert np.array_equal(amd, want)



# ---- v-perm-seeds scoped to what the seed measured, and the ISA reading as its own claim ----


def _sealed_text(name: str) -> Path:
    return ROOT / "preregistrations" / "byte-perm" / f"{name}.toml"


def test_the_measured_scope_is_the_seeds_patterns_and_selector_bytes_0_to_15_on_gfx1201():
    from probelab.hypothesis import evaluate_claim

    h = load_hypothesis(_sealed_text("v-perm-seeds-measured"))
    assert h.targets == ("gfx1201",) and h.parent == "v-perm-seeds"
    grid = PROBE.stimulus()
    tables, scopes = evaluate_claim(h, grid, PROBE.observables)
    scope = scopes["literal"]["value"]
    names, selectors = grid["pattern"].values, grid["selector"].values
    want = (np.char.startswith(names.astype(str), "msb_")[:, None]
            & ((selectors & 0xFF) < 16)[None, :] & ((selectors >> 8) < 16)[None, :])
    assert np.array_equal(scope, want) and int(scope.sum()) == 10 * 256
    whole = predict(load_hypothesis(HYPOTHESIS), grid, PROBE.observables)["literal"]["value"]
    assert np.array_equal(tables["literal"]["value"][scope], whole[scope])  # the same law


def test_the_isa_reading_claims_exactly_the_unmeasured_selector_bytes_and_a_nibble_rival():
    from probelab.hypothesis import evaluate_claim

    h = load_hypothesis(_sealed_text("v-perm-isa-reading"))
    grid = PROBE.stimulus()
    tables, scopes = evaluate_claim(h, grid, PROBE.observables)
    scope = scopes["literal"]["value"]
    selectors = grid["selector"].values
    live = np.maximum(selectors & 0xFF, selectors >> 8)
    assert np.array_equal(scope[0], live >= 16)
    value = tables["literal"]["value"]
    for op, se in [(0, 0x10), (3, 0x2001), (9, 0xFFFF), (12, 0x0D11)]:
        assert scope[op, se]
        assert int(value[op, se]) == v_perm_word(int(grid["x"].values[op]),
                                                 int(grid["y"].values[op]), se)
    # a selector byte of 0x1X reads as 0xFF, where a nibble-reading unit would pick byte X
    near, _ = evaluate_claim(h.near_miss("low-nibble"), grid, PROBE.observables)
    differ = (near["literal"]["value"] != value) & scope
    assert differ.any() and int(value[0, 0x10]) & 0xFF == 0xFF != int(
        near["literal"]["value"][0, 0x10]) & 0xFF
