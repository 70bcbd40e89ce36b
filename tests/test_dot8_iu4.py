"""dot8-iu4: the gfx12 kernels as clang builds them (under every AMDGPU toolchain found), the
decode on simulated units, and the sealed hypotheses against units that follow each law.

Compile tests build real code objects with clang >= 19 (-nogpuinc -nogpulib) and skip cleanly
without one. Simulated units are tests of the design, never evidence.
"""

import re
import subprocess
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kernargs import pointer_arguments
from toylab import checked_with_and_without_history

from probelab.errors import Unavailable
from probelab.evidence import gate
from probelab.hypothesis import load_hypothesis, predict
from probelab.isa import Instruction
from probelab.kits.sentinels import INVALID, NONE
from probelab.probe import Kernel, load_sibling
from probelab.vendors.amd.disasm import parse_gcn
from probelab.vendors.amd.isa import GCN

ROOT = Path(__file__).resolve().parents[1]
MODULE = load_sibling(ROOT / "probes" / "dot8_iu4" / "probe.py")
PROBE = MODULE.PROBE
PREREG = ROOT / "preregistrations" / "dot8-iu4"
KERNELS = list(MODULE.VARIANTS)
SUDOT8 = KERNELS[:4]
TARGETS = ["gfx1201", "gfx1200"]
ARGS = ("params", "a", "b", "c", "d")  # the kernel's pointers, 8 bytes each in the kernarg
# What each kernel's instruction must print after its operands: the builtin's sign flags
# as neg_lo bits (A, B, C), and no clamp.
MODIFIERS = {"iu4_ss": ("neg_lo:[1,1,0]",), "iu4_su": ("neg_lo:[1,0,0]",),
             "iu4_us": ("neg_lo:[0,1,0]",), "iu4_uu": (), "u4": ()}
CALL = {name: f"__builtin_amdgcn_sudot8({sa}, (int)a[t], {sb}, (int)b[t], (int)c[t], false)"
        for name, (sa, sb) in zip(SUDOT8, [("true", "true"), ("true", "false"),
                                            ("false", "true"), ("false", "false")], strict=True)}


@pytest.fixture
def amd(each_amd_toolchain, request):
    """The toolchain under test, skipping a target it does not build."""
    from probelab.vendors.amd import toolchain as amdgpu

    target = request.node.callspec.params.get("target", "gfx1201")
    if target not in amdgpu.supported_targets(each_amd_toolchain):
        pytest.skip(f"{each_amd_toolchain.name} does not build {target}")
    return amdgpu


def kernel(name: str) -> Kernel:
    return next(k for k in PROBE.kernels("amd") if k.name == name)


def build(amdgpu, k: Kernel, target: str = "gfx1201") -> list[Instruction]:
    return amdgpu.build(k, target).functions[k.symbol]


def mutant(tmp_path: Path, name: str, old: str, new: str) -> Kernel:
    """Kernel `name` built from the probe's file with exactly one text replaced."""
    good = kernel(name)
    text = good.source_text()
    assert text.count(old) == 1, old
    source = tmp_path / f"{name}_mutant.hip"
    source.write_text(text.replace(old, new))
    return Kernel(good.name, good.symbol, source, "amd", good.evidence)


def dot(code: list[Instruction], name: str) -> int:
    (index,) = [i for i, insn in enumerate(code) if insn.mnemonic == MODULE.instruction(name)]
    return index


def arguments(code: list[Instruction], index: int, operand: str) -> set[str]:
    """The pointer arguments an operand's value is computed from (its hidden ones left out)."""
    return pointer_arguments(code, index, operand, ARGS) - {"hidden"}


# ---- the kernels as declared -----------------------------------------------------------------


def test_one_amd_kernel_per_variant_and_nothing_for_nvidia():
    assert [k.name for k in PROBE.kernels("amd")] == KERNELS
    assert PROBE.kernels("nvidia") == []
    assert PROBE.targets == ("gfx1200", "gfx1201")
    for k in PROBE.kernels("amd"):
        assert k.symbol == f"probe_dot8_{k.name}" and k.headers is None
        assert k.evidence.operands == ("unmodified",) * 3 and k.evidence.count == 1
        assert MODULE.instruction(k.name) not in k.evidence.forbidden


def test_the_launch_holds_whole_waves_one_case_per_thread():
    grid = PROBE.stimulus()
    launch = PROBE.launch(grid)
    threads = MODULE.ONE_HOT + MODULE.N_DENSE
    assert launch.threads == threads and threads % 32 == 0
    assert int(launch.inputs["params"][0]) == threads // 32  # the kernels' bound is in waves
    i, j, p = 5, 2, 16 * 0x8 + 0x7
    t = (i * 8 + j) * 256 + p
    assert int(launch.inputs["a"][t]) == 0x8 << 20 and int(launch.inputs["b"][t]) == 0x7 << 8
    assert int(launch.inputs["c"][t]) == int(grid["onehot_c"].values[i, j, p])
    assert np.array_equal(launch.inputs["b"][MODULE.ONE_HOT:], grid["b_word"].values)


# ---- what clang builds -------------------------------------------------------------------------


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name", KERNELS)
def test_kernel_passes_the_gate_with_its_neg_lo_and_a_b_c_from_their_pointers(amd, name, target):
    k = kernel(name)
    code = build(amd, k, target)
    report = gate(name, k.evidence, code, GCN)
    assert report.ok, report.problems
    assert len(report.matches) == 1 and not report.forbidden_found
    for trace in report.operands:
        assert trace.reaches == "unmodified"
        assert [step.split()[0] for step in trace.path] == ["global_load_b32"]
    at = dot(code, name)
    insn = code[at]
    assert insn.modifiers == MODIFIERS[name], insn.text  # the flags as neg_lo, no clamp
    loads = []
    for operand in insn.operands[1:]:
        (reg,) = GCN.registers(operand)
        j = max(j for j in range(at) if reg in GCN.defines(code[j]))
        loads.append(arguments(code, j, code[j].operands[1]))
    assert loads == [{"a"}, {"b"}, {"c"}]  # src0, src1, src2 = A, B, C in builtin order


@pytest.mark.parametrize("name", KERNELS)
def test_exec_is_whole_and_d_is_stored_unchanged_through_its_pointer(amd, name):
    code = build(amd, kernel(name))
    at = dot(code, name)
    before, after = code[:at], code[at + 1:]
    # the bound is a scalar compare of the first lane's wave index: EXEC is never narrowed
    assert not [i.text for i in before if "exec" in i.text or i.mnemonic.startswith("v_cmpx")]
    assert any(i.mnemonic == "v_readfirstlane_b32" for i in before)
    assert any(i.mnemonic == "s_cbranch_scc1" for i in before)
    dest = set(GCN.registers(code[at].operands[0]))
    stores = [i for i, insn in enumerate(code) if insn.mnemonic == "global_store_b32"]
    assert len(stores) == 1 and stores[0] > at
    store = code[stores[0]]
    assert set(GCN.registers(store.operands[1])) == dest
    assert not any(GCN.defines(insn) & dest for insn in after[:stores[0] - at - 1])
    assert arguments(code, stores[0], store.operands[0]) == {"d"}


def test_a_per_lane_bound_would_narrow_exec(amd, tmp_path):
    # Why the bound reads the wave index through v_readfirstlane: per lane, it compiles to
    # v_cmpx, which narrows EXEC before the instruction.
    k = mutant(tmp_path, "iu4_ss", "__builtin_amdgcn_readfirstlane(t) / 32u", "t / 32u")
    code = build(amd, k)
    assert [i for i in code[:dot(code, "iu4_ss")] if i.mnemonic.startswith("v_cmpx")]


# ---- the gate fails wrong variants, compiled for real -------------------------------------


def test_a_flipped_a_operand_fails_the_gate(amd, tmp_path):
    k = mutant(tmp_path, "iu4_ss", CALL["iu4_ss"],
               CALL["iu4_ss"].replace("(int)a[t]", "(int)(a[t] ^ 0xFu)"))
    report = gate(k.name, k.evidence, build(amd, k), GCN)
    assert len(report.matches) == 1 and not report.ok
    a, b, c = report.operands
    assert a.reaches == "from_memory" and (b.reaches, c.reaches) == ("unmodified",) * 2
    assert a.path[0].startswith("v_xor_b32") and ", 15, " in a.path[0], a.path


def test_udot8_in_a_sudot8_kernel_fails_the_gate(amd, tmp_path):
    k = mutant(tmp_path, "iu4_ss", CALL["iu4_ss"],
               "__builtin_amdgcn_udot8(a[t], b[t], c[t], false)")
    code = build(amd, k)
    report = gate(k.name, k.evidence, code, GCN)
    assert [i.mnemonic for i in code if i.mnemonic.startswith("v_dot")] == ["v_dot8_u32_u4"]
    assert not report.ok
    assert any("no instruction matching 'v_dot8_i32_iu4'" in p for p in report.problems)
    assert any("forbidden relative present" in p for p in report.problems)


def test_a_constant_accumulator_fails_the_gate(amd, tmp_path):
    k = mutant(tmp_path, "iu4_su", CALL["iu4_su"], CALL["iu4_su"].replace("(int)c[t]", "1000"))
    report = gate(k.name, k.evidence, build(amd, k), GCN)
    assert not report.ok and report.operands[2].reaches == "not_from_memory"


@pytest.mark.parametrize(("change", "printed"), [
    (("true, (int)a[t], true", "false, (int)a[t], true"), ("neg_lo:[0,1,0]",)),
    (("(int)c[t], false)", "(int)c[t], true)"), ("neg_lo:[1,1,0]", "clamp")),
])
def test_wrong_flags_fail_the_gate(amd, tmp_path, change, printed):
    """A kernel with the wrong sign flag, or with clamp, computes something else: the gate
    reads the instruction's modifiers (Evidence.modifiers) and refuses it, naming them."""
    old, new = change
    k = mutant(tmp_path, "iu4_ss", CALL["iu4_ss"], CALL["iu4_ss"].replace(old, new))
    code = build(amd, k)
    assert code[dot(code, "iu4_ss")].modifiers == printed != MODIFIERS["iu4_ss"]
    report = gate(k.name, k.evidence, code, GCN)
    assert not report.ok and f"carries modifiers {sorted(printed)}" in report.problems[0]


def test_sdot8_is_refused_on_gfx12(amd, tmp_path):
    """gfx9's signed x signed __builtin_amdgcn_sdot8 (v_dot8_i32_i4) needs dot1-insts, which
    gfx12 lacks: sudot8 is the only signed route."""
    k = mutant(tmp_path, "iu4_ss", CALL["iu4_ss"],
               "__builtin_amdgcn_sdot8((int)a[t], (int)b[t], (int)c[t], false)")
    with pytest.raises(Unavailable, match="needs target feature dot1-insts"):
        build(amd, k)


def test_the_file_refuses_other_targets(amd):
    with pytest.raises(Unavailable, match="gfx1200 and gfx1201"):
        amd.build(kernel("u4"), "gfx1100")


GFX12_DOTS = """k:
  v_dot2_f32_f16 v0, v1, v2, v3
  v_dot2_f32_bf16 v0, v1, v2, v3
  v_dot2_f16_f16 v0, v1, v2, v3
  v_dot2_bf16_bf16 v0, v1, v2, v3
  v_dot4_i32_iu8 v0, v1, v2, v3
  v_dot4_u32_u8 v0, v1, v2, v3
  v_dot4_f32_fp8_fp8 v0, v1, v2, v3
  v_dot4_f32_fp8_bf8 v0, v1, v2, v3
  v_dot4_f32_bf8_fp8 v0, v1, v2, v3
  v_dot4_f32_bf8_bf8 v0, v1, v2, v3
  v_dot8_i32_iu4 v0, v1, v2, v3
  v_dot8_u32_u4 v0, v1, v2, v3
"""


def assembled(amdgpu, tmp_path: Path, text: str) -> list[Instruction] | None:
    """`text` assembled for gfx1201 by the toolchain and disassembled again (None: refused)."""
    src, obj = tmp_path / "dots.s", tmp_path / "dots.o"
    src.write_text(text)
    run = subprocess.run([amdgpu.find_clang().path, "-x", "assembler",
                          "--target=amdgcn-amd-amdhsa", "-mcpu=gfx1201", "-c", "-o", obj, src],
                         capture_output=True, text=True)
    if run.returncode != 0:
        return None
    return parse_gcn(amdgpu.disassemble(obj.read_bytes(), "gfx1201"))["k"]


def test_forbidden_patterns_cover_every_other_gfx12_dot(amd, tmp_path):
    code = assembled(amd, tmp_path, GFX12_DOTS)
    assert code is not None and len(code) == GFX12_DOTS.count("\n  v_")
    for name in KERNELS:
        evidence = kernel(name).evidence
        for insn in code:
            claimed = re.fullmatch(evidence.instruction, insn.mnemonic) is not None
            forbidden = any(re.fullmatch(p, insn.mnemonic) for p in evidence.forbidden)
            assert claimed != forbidden, (name, insn.mnemonic)
            assert claimed == (insn.mnemonic == MODULE.instruction(name))


def test_the_gfx9_name_v_dot8_i32_i4_is_unsigned_iu4_where_it_assembles(amd, tmp_path):
    """A porting hazard: clang 22 assembles gfx9's signed x signed mnemonic on gfx12, as
    v_dot8_i32_iu4 with no neg_lo, i.e. both operands UNSIGNED; clang 19 refuses it."""
    code = assembled(amd, tmp_path, "k:\n  v_dot8_i32_i4 v0, v1, v2, v3\n")
    if code is None:  # refused: nothing to mislead (clang 22 is known to accept it)
        assert amd.find_clang().name != "clang-22"
        return
    (insn,) = code
    assert insn.mnemonic == "v_dot8_i32_iu4" and insn.modifiers == ()


# ---- the decode, on simulated units (never evidence) ---------------------------------------


def decoded(laws: dict, names: list[str] | None = None):
    """The dataset of units following `laws`, for the kernels `names` (default: all)."""
    grid = PROBE.stimulus()
    if names is not None:
        grid = grid.sel(kernel=names)
    launch = PROBE.launch(grid)
    outputs = {name: {"d": MODULE.dot8(laws[name], launch.inputs["a"], launch.inputs["b"],
                                       launch.inputs["c"])} for name in grid["kernel"].values}
    return PROBE.assemble(grid, outputs)


def raw_outputs(grid, d_of) -> dict:
    """Outputs of a unit that is not a Law: d_of(a, b, c) per kernel."""
    launch = PROBE.launch(grid)
    return {str(k): {"d": d_of(launch.inputs["a"], launch.inputs["b"], launch.inputs["c"])}
            for k in grid["kernel"].values}


@settings(max_examples=12, deadline=None)
@given(pairing=st.permutations(range(8)), a_signed=st.booleans(), b_signed=st.booleans())
def test_the_decode_recovers_any_hidden_pairing_and_signedness(pairing, a_signed, b_signed):
    law = MODULE.Law(tuple(pairing), a_signed, b_signed)
    ds = decoded({"iu4_su": law}, ["iu4_su"]).sel(kernel="iu4_su")
    assert list(ds["partner"].values) == list(pairing)
    assert (int(ds["a_signed"]), int(ds["b_signed"])) == (a_signed, b_signed)
    assert (ds["linear"].values == 1).all()
    want = MODULE.dot8(law, ds["a_word"].values, ds["b_word"].values, ds["c_word"].values)
    assert np.array_equal(ds["d_dense"].values, want)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_sim_backends_hidden_units_are_recovered(seed):
    probe = MODULE.Dot8Iu4()
    rng = np.random.default_rng(seed)
    probe.sim_laws = {name: MODULE.random_law(rng) for name in KERNELS}
    grid = probe.stimulus()
    launch = probe.launch(grid)
    ds = probe.assemble(grid, {k.name: probe.simulate(k, launch.inputs)
                               for k in probe.kernels("amd")})
    for name, law in probe.sim_laws.items():
        sub = ds.sel(kernel=name)
        assert tuple(sub["partner"].values) == law.pairing
        assert (int(sub["a_signed"]), int(sub["b_signed"])) == (law.a_signed, law.b_signed)


def test_products_are_d_minus_c_as_int32():
    ds = decoded({"iu4_ss": MODULE.documented_law("iu4_ss")}, ["iu4_ss"]).sel(kernel="iu4_ss")
    cell = {"a_nib": 3, "b_nib": 3, "pair": 16 * 0x8 + 0x7}  # -8 x 7
    assert int(ds["product"].sel(cell).values.view(np.int32)) == -56
    d, c = int(ds["d_onehot"].sel(cell)), int(ds["onehot_c"].sel(cell))
    assert (d - c) % 2**32 == int(ds["product"].sel(cell))
    off = {"a_nib": 3, "b_nib": 4, "pair": 16 * 0x8 + 0x7}
    assert int(ds["product"].sel(off)) == 0


def test_a_nibble_that_meets_none_or_two_is_coded_and_the_signedness_still_read():
    grid = PROBE.stimulus().sel(kernel=["iu4_ss"])

    def unit(a, b, c):  # A nibble 0 meets nothing, A nibble 1 meets B nibbles 1 and 2
        x, y = MODULE.nibbles(a, True), MODULE.nibbles(b, True)
        terms = (x[:, 1] * y[:, 2] + (x[:, 1:] * y[:, 1:]).sum(-1))
        return ((c.astype(np.int64) + terms) & 0xFFFFFFFF).astype(np.uint32)

    ds = PROBE.assemble(grid, raw_outputs(grid, unit)).sel(kernel="iu4_ss")
    assert list(ds["partner"].values) == [NONE, INVALID, 2, 3, 4, 5, 6, 7]
    assert (int(ds["a_signed"]), int(ds["b_signed"])) == (1, 1)
    assert (ds["linear"].values == 1).all()  # still a sum of nibble-pair terms
    assert ds["partner"].attrs["flag_meanings"] == "none invalid"


def law_free(fa, fb, total=lambda t: t):
    """A unit D = C + total(sum over i of fa(A nibble i) * fb(B nibble i)), wrapping."""
    def d_of(a, b, c):
        x, y = fa(MODULE.nibbles(a, False)), fb(MODULE.nibbles(b, False))
        return ((c.astype(np.int64) + total((x * y).sum(-1))) & 0xFFFFFFFF).astype(np.uint32)
    return d_of


def test_a_reading_that_is_neither_signed_nor_unsigned_is_invalid():
    grid = PROBE.stimulus().sel(kernel=["iu4_uu"])
    sign_magnitude = law_free(lambda v: np.where(v >= 8, -(v & 7), v), lambda v: v)
    ds = PROBE.assemble(grid, raw_outputs(grid, sign_magnitude)).sel(kernel="iu4_uu")
    assert (int(ds["a_signed"]), int(ds["b_signed"])) == (INVALID, 0)
    assert list(ds["partner"].values) == list(range(8)) and (ds["linear"].values == 1).all()
    assert ds["a_signed"].attrs["flag_meanings"] == "unsigned signed none invalid"


def test_a_unit_that_does_not_superpose_is_said():
    grid = PROBE.stimulus().sel(kernel=["iu4_uu"])
    # A's codes read as code - 8 (offset binary): a zero A nibble is -8, so every one-hot
    # cell adds -8 x B, the pairing cannot be read and the 64 terms do not sum to D
    ds = PROBE.assemble(grid, raw_outputs(grid, law_free(lambda v: v - 8, lambda v: v)))
    ds = ds.sel(kernel="iu4_uu")
    assert (ds["partner"].values == INVALID).all() and int(ds["a_signed"]) == NONE
    assert (ds["linear"].values == 0).all()
    # a sum clamped to int8: one-hot products are small and read as usual, but only the
    # dense cases whose sum fits in int8 superpose
    saturating = law_free(lambda v: v, lambda v: v, lambda t: np.clip(t, -128, 127))
    ds = PROBE.assemble(grid, raw_outputs(grid, saturating)).sel(kernel="iu4_uu")
    assert list(ds["partner"].values) == list(range(8))
    assert 0 < int(ds["linear"].sum()) < ds.sizes["case"]


def test_the_hidden_sim_law_is_not_the_documented_one():
    """The sim backend's unit is seeded and random: a simulated sweep that confirmed the ISA
    reading would be a coincidence, not a model echoing the claim."""
    laws = [PROBE.hidden_law(name) for name in KERNELS]
    assert any(law != MODULE.documented_law(name) for law, name in zip(laws, KERNELS,
                                                                         strict=True))


# ---- the sealed hypotheses against units that follow each law ------------------------------


def tables(ds, name: str, scoring: str = "literal") -> dict:
    return predict(load_hypothesis(PREREG / f"{name}.toml"), ds, PROBE.observables)[scoring]


def fits(ds, table: dict, kernels: list[str]) -> bool:
    """Every predicted observable equals the data on the kernels the claim is about."""
    rows = [list(ds["kernel"].values).index(k) for k in kernels]
    return all(np.array_equal(ds[name].values[rows],
                              np.broadcast_to(values, ds[name].shape)[rows])
               for name, values in table.items())


def documented() -> dict:
    return {name: MODULE.documented_law(name) for name in KERNELS}


def test_the_files_parse_and_claim_gfx12_only():
    for path in sorted(PREREG.glob("*.toml")):
        h = load_hypothesis(path)
        assert h.probe == "dot8-iu4" and h.coordinates == "raw"
        assert h.targets == ("gfx1200", "gfx1201")
        assert h.about_target("gfx1201") and not h.about_target("gfx1100")
    assert load_hypothesis(PREREG / "isa-nibble-pairs.toml").kernels == tuple(KERNELS)
    for rival in ("ck-high-nibble-first", "nibble-reversed"):
        assert load_hypothesis(PREREG / f"{rival}.toml").kernels == tuple(SUDOT8)


def test_an_isa_unit_fits_the_isa_reading_and_refutes_both_rivals():
    ds = decoded(documented())
    assert fits(ds, tables(ds, "isa-nibble-pairs"), KERNELS)
    for rival in ("ck-high-nibble-first", "nibble-reversed"):
        table = tables(ds, rival)
        assert not fits(ds, table, SUDOT8), rival
        for observable in ("product", "partner", "d_dense"):
            assert not fits(ds, {observable: table[observable]}, SUDOT8), (rival, observable)
    # named in CK's pk_int4_t order, CK's rule is the ISA law: only the mixed port is wrong
    assert fits(ds, tables(ds, "ck-high-nibble-first", "ck_labels"), SUDOT8)


@pytest.mark.parametrize(("rival", "partner"), [("ck-high-nibble-first", lambda i: i ^ 1),
                                                 ("nibble-reversed", lambda i: 7 - i)])
def test_a_unit_that_follows_a_rival_fits_it_and_refutes_the_isa(rival, partner):
    laws = {name: MODULE.Law(tuple(partner(i) for i in range(8)), law.a_signed, law.b_signed)
            for name, law in documented().items()}
    ds = decoded(laws)
    assert fits(ds, tables(ds, rival), SUDOT8)
    assert not fits(ds, tables(ds, "isa-nibble-pairs"), KERNELS)
    assert list(ds["partner"].sel(kernel="iu4_ss").values) == [partner(i) for i in range(8)]


def test_the_near_misses_are_units_of_their_own():
    isa = load_hypothesis(PREREG / "isa-nibble-pairs.toml")
    swapped = {name: MODULE.Law(tuple(range(8)), law.b_signed, law.a_signed)
               for name, law in documented().items()}
    signed = {name: MODULE.Law(tuple(range(8)), True, True) for name in KERNELS}
    for laws, near in ((swapped, "flags-swapped"), (signed, "always-signed")):
        ds = decoded(laws)
        assert fits(ds, predict(isa.near_miss(near), ds, PROBE.observables)["literal"],
                    KERNELS), near
        assert not fits(ds, tables(ds, "isa-nibble-pairs"), KERNELS), near
        assert fits(ds, {"partner": tables(ds, "isa-nibble-pairs")["partner"]}, KERNELS)


def test_the_stimulus_tells_every_pair_apart_on_many_cells():
    """`prereg power` on the sealed files: no pair is blind, and the rivals differ on every
    paired product, every partner and nearly every dense case."""
    from probelab.power import power

    pairs, notes = power(PROBE, target="gfx1201")
    assert notes == [] and len(pairs) == 5 and not any(p.blind for p in pairs)
    rivals = [p for p in pairs if p.kind == "rivals"]
    assert len(rivals) == 3
    # 4 kernels x 8 A nibbles x 2 cells (its partner under each law) x 225 nonzero code pairs
    assert all(p.differing >= 4 * 8 * 2 * 225 + 4 * 8 for p in rivals)
    assert {p.b for p in pairs if p.kind == "near miss"} == {
        "isa-nibble-pairs~flags-swapped", "isa-nibble-pairs~always-signed"}


def test_sim_sweep_end_to_end_is_marked_simulated(tmp_path: Path, sealed_lab, monkeypatch):
    """The whole path on the simulated device: the dataset is marked simulated (never
    evidence) and its decode recovers the sim backend's hidden unit, not the ISA's. In a lab
    with its history the sealed ISA law would be REFUTED; in a copy without it (a tarball,
    the GPU machine's) the order cannot be shown: it would be POST-HOC. Either way it is
    NOT-EVIDENCE."""
    from probelab import dataset
    from probelab.notary.rules import Finding, Outcome, Rule
    from probelab.sweep import run_sweep

    lab = sealed_lab("dot8_iu4", "dot8-iu4", "isa-nibble-pairs")
    result = run_sweep("dot8-iu4", "sim", target="gfx1201", repeats=2, out_root=tmp_path / "sim")
    assert dataset.is_simulated(result.dataset)
    assert result.path.is_relative_to(tmp_path / "sim")
    for name in KERNELS:
        law = PROBE.hidden_law(name)
        assert tuple(result.dataset["partner"].sel(kernel=name).values) == law.pairing
    hyp = lab / "preregistrations" / "dot8-iu4" / "isa-nibble-pairs.toml"
    full, copy = checked_with_and_without_history(hyp, result.path, tmp_path / "copy",
                                                  monkeypatch)
    for judged in (full, copy):
        assert judged.outcome == Outcome.NOT_EVIDENCE and judged.doc["dataset"]["simulated"]
    assert full.findings == (Finding(Rule.SIMULATED, detail=Outcome.REFUTED),)
    assert copy.findings == (Finding(Rule.SIMULATED, detail=Outcome.POST_HOC),
                             Finding(Rule.NO_HISTORY))
