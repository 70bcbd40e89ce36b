"""More than one AMDGPU toolchain: discovery and naming, static datasets per (target,
toolchain), the pipeline kind of static probe (f8f6f4-operand-width), and verify/diff
across toolchains. Compile tests skip without the toolchain they need."""

import hashlib
import json
import re
import subprocess
from pathlib import Path
from types import MappingProxyType

import pytest
from quick import quick_first

from probelab.errors import IntegrityError, Unavailable, UsageError
from probelab.notary.rules import Finding, Rule
from probelab.notary.words import lines
from probelab.probe import BuiltCase, Evidence
from probelab.records import toolchain_label, toolchain_name
from probelab.toolchains import identity
from probelab.vendors.amd import toolchain as amdgpu
from probelab.vendors.amd.disasm import gcn_instruction
from probelab.verify import across_toolchains

try:
    FOUND = {t.name: t for t in amdgpu.toolchains()}
except Unavailable as exc:
    pytest.skip(f"no AMDGPU clang: {exc}", allow_module_level=True)


def needs(target: str) -> amdgpu.Toolchain:
    """The first toolchain here that builds `target`, else skip."""
    for tc in FOUND.values():
        if target in amdgpu.supported_targets(tc):
            return tc
    pytest.skip(f"no toolchain here builds {target}")


# ---- discovery and names ----------------------------------------------------------------


def test_each_toolchain_is_named_by_its_release_and_uses_its_own_llvm_tools():
    for name, tc in FOUND.items():
        assert name == f"clang-{tc.major}" or name.startswith("rocm-")
        for tool in ("llc", "llvm-mc"):
            if not tc.has(tool):
                continue
            out = subprocess.run([tc.tool(tool), "--version"], capture_output=True, text=True)
            # never the /usr/bin/llc of another release that happens to be on $PATH
            assert f"version {tc.major}." in out.stdout + out.stderr, (name, tool)


def test_select_names_one_all_or_the_default_and_refuses_an_unknown_name():
    assert amdgpu.select(None) == [amdgpu.find_clang()]
    assert [t.name for t in amdgpu.select("all")] == list(FOUND)
    first = next(iter(FOUND))
    assert amdgpu.select(first) == [FOUND[first]]
    with pytest.raises(UsageError, match=r"no toolchain 'clang-7'.*found: "):
        amdgpu.select("clang-7")


def test_probelab_clang_sets_the_default_and_a_bad_one_is_refused(monkeypatch):
    last = list(FOUND.values())[-1]
    try:
        monkeypatch.setenv("PROBELAB_CLANG", str(last.path))
        amdgpu.toolchains.cache_clear()
        assert amdgpu.find_clang().name == last.name
        assert {t.name for t in amdgpu.toolchains()} == set(FOUND)  # the others still listed
        monkeypatch.setenv("PROBELAB_CLANG", "/nonexistent/clang")
        amdgpu.toolchains.cache_clear()
        with pytest.raises(Unavailable, match="PROBELAB_CLANG=/nonexistent/clang"):
            amdgpu.toolchains()
    finally:
        monkeypatch.delenv("PROBELAB_CLANG")
        amdgpu.toolchains.cache_clear()


def test_a_dataset_from_before_toolchains_had_names_is_named_from_its_compiler():
    old = {"static": True, "toolchain": {"compiler": "Debian clang version 19.1.7 (3~deb12u1)",
                                         "origin": "LLVM"}}
    assert toolchain_name(old) == "clang-19"
    rocm = "AMD clang version 19.0.0git (https://github.com/RadeonOpenCompute/llvm-project " \
           "roc-6.4.1 25133 c7fe45cf4b819c5991fe208aaa96edf142730f1d)"
    # named as the toolchain itself would be: one compiler, one name, old dataset or new
    assert toolchain_name({"static": True, "toolchain": {"compiler": rocm, "origin": "ROCm"}}) \
        == amdgpu.compiler_name(rocm, "ROCm") == "rocm-6.4.1"
    assert toolchain_name({"static": True, "toolchain": {"name": "clang-22"}}) == "clang-22"
    assert toolchain_name({"static": False, "toolchain": {"name": "nvrtc-13.5"}}) is None


def test_a_static_dataset_is_named_after_its_toolchain_exactly(repo_lab):
    from probelab import manifest
    from probelab.paths import data_dir

    assert toolchain_label(Path("20261202T011633Z.clang-22.nc")) == "clang-22"
    assert toolchain_label(Path("20261202T011633Z-2.clang-22.nc")) == "clang-22"
    assert toolchain_label(Path("20261202T011633Z.rocm-7.2.2.nc")) == "rocm-7.2.2"
    assert toolchain_label(Path("20261202T011633Z-2.nc")) is None
    prov = {"probe": "builtin-modifiers", "target": "gfx1201", "static": True,
            "toolchain": {"name": "clang-22"}}
    home = data_dir() / "builtin-modifiers" / "gfx1201"
    assert manifest.misplacement(home / "20261202T011633Z.clang-22.nc", prov) is None
    # a clang-22 dataset renamed to pass for clang-19's is misplaced
    assert manifest.misplacement(home / "20261202T011633Z.clang-19.nc", prov) == \
        Finding(Rule.MISNAMED, "20261202T011633Z.clang-19.nc", "clang-22")
    assert manifest.misplacement(home / "20261202T011633Z.nc", prov)  # the name dropped
    # a dataset from before the names: its compiler names it, and a label must agree
    old = {"probe": "builtin-modifiers", "target": "gfx1201", "static": True,
           "toolchain": {"compiler": "Debian clang version 19.1.7 (3~deb12u1)"}}
    assert manifest.misplacement(home / "20261130T014748Z.nc", old) is None
    assert manifest.misplacement(home / "20261130T014748Z.clang-22.nc", old)
    device = {"probe": "byte-perm", "target": "gfx1201", "static": False}
    assert manifest.misplacement(data_dir() / "byte-perm" / "gfx1201" /
                                 "20261130T014748Z.clang-22.nc", device)


def test_verify_compares_verdicts_across_toolchains_and_says_which_changed():
    def run(verdict, toolchain, utc):
        return ("d.nc", verdict, "head", "1", {"utc": utc, "toolchain": {"name": toolchain}})

    counted = {
        ("p", "gfx1201", "h", "clang-19"): [run("CONFIRMED", "clang-19", "2026-11-30")],
        ("p", "gfx1201", "h", "clang-22"): [run("CONFIRMED", "clang-22", "2026-12-01"),
                                            run("REFUTED", "clang-22", "2026-12-02")],
        ("p", "gfx942", "h", "clang-22"): [run("CONFIRMED", "clang-22", "2026-12-02")],
        ("q", "sm_90", "h", None): [run("CONFIRMED", "x", "2026-12-02")],  # not static
    }
    (row,) = across_toolchains(counted)  # one toolchain only on gfx942; sm_90 not static
    assert row == {"probe": "p", "target": "gfx1201", "hypothesis": "h", "probe_version": "1",
                   "verdicts": {"clang-19": "CONFIRMED", "clang-22": "REFUTED"},
                   "same": False}
    # versions are never mixed: clang-22's newer version is compared with nothing
    newer = ("d2.nc", "CONFIRMED", "head", "10", {"utc": "2026-12-03"})
    counted[("p", "gfx1201", "h", "clang-22")].append(newer)
    (row,) = across_toolchains(counted)
    assert row["probe_version"] == "1" and row["verdicts"]["clang-22"] == "REFUTED"


# ---- the pipeline kind of static probe, on a stand-in -------------------------------------


class Pipeline:
    """A stand-in pipeline probe whose `measure` returns what the test hands it."""

    id, version, summary = "stand-in", "1", "a pipeline probe for tests"
    targets = ("gfx950", "gfx942")
    static = True
    observables = MappingProxyType({"builds": ("case",), "count": ("case",),
                                    "width": ("case",)})
    plots = MappingProxyType({})
    texts = ("diagnostic",)
    tools = ()
    source = Path(__file__)

    def __init__(self, runs):
        self.runs = iter(runs)

    def kernels(self, vendor):
        return []

    def stimulus(self):
        import numpy as np
        import xarray as xr

        return xr.Dataset(coords={"case": ("case", np.arange(2, dtype=np.uint32))})

    def measure(self, grid, target, toolchain, step):
        return next(self.runs)


EV = Evidence("v_mfma_f64_16x16x4_f64", forbidden=(r"s_swappc_b64",), count=1)
MFMA = [gcn_instruction(0, "v_mfma_f64_16x16x4_f64 v[0:7], v[8:9], v[10:11], v[0:7]")]
CALL = [gcn_instruction(0, "s_swappc_b64 s[30:31], s[16:17]")]


def sweep(tmp_path, runs):
    from probelab.static import run_static_sweep

    return run_static_sweep(Pipeline(runs), "gfx942", toolchain=amdgpu.select(None)[0].name,
                            out_root=tmp_path / "out")


def test_a_pipeline_probe_gets_the_gate_s_builds_and_count_and_its_own_values(tmp_path):
    cases = [BuiltCase({"width": 8}, {}, EV, MFMA, "ab"),
             BuiltCase({"width": 3}, {"diagnostic": "llc: error"}, EV)]
    result = sweep(tmp_path, [cases, list(cases)])
    ds = result.dataset
    assert ds["builds"].values.tolist() == [[1, 0]] and ds["count"].values.tolist() == [[1, 0]]
    assert ds["width"].values.tolist() == [[8, 3]]
    assert ds["diagnostic"].values.tolist() == ["", "llc: error"]
    assert toolchain_label(result.path) == result.provenance["toolchain"]["name"]
    assert result.provenance["static"] and result.provenance["repeats"] == 2


def test_a_call_where_the_instruction_should_be_stops_the_sweep(tmp_path):
    # an unknown intrinsic can silently become a call: that is no measurement of it
    cases = [BuiltCase({}, {}, EV, CALL + MFMA, "ab"), BuiltCase({}, {}, EV, MFMA, "ab")]
    with pytest.raises(IntegrityError, match="forbidden relative"):
        sweep(tmp_path, [cases, list(cases)])
    assert not list(tmp_path.rglob("*.nc"))


def test_a_probe_cannot_say_builds_or_count_itself(tmp_path):
    cases = [BuiltCase({"count": 1}, {}, EV, CALL, "ab"), BuiltCase({}, {}, EV)]
    with pytest.raises(IntegrityError, match="evidence gate's to say"):
        sweep(tmp_path, [cases, list(cases)])


def test_a_pipeline_that_differs_between_its_two_runs_stops_the_sweep(tmp_path):
    first = [BuiltCase({"width": 8}, {}, EV, MFMA, "ab"), BuiltCase({}, {}, EV)]
    second = [BuiltCase({"width": 4}, {}, EV, MFMA, "ab"), BuiltCase({}, {}, EV)]
    with pytest.raises(IntegrityError, match="case 0: two runs of the pipeline differ"):
        sweep(tmp_path, [first, second])
    assert not list(tmp_path.rglob("*.nc"))


# ---- f8f6f4-operand-width on the real compilers -------------------------------------------


@pytest.fixture
def f8f6f4():
    from probelab.probe import load_sibling

    root = Path(__file__).resolve().parents[1] / "probes" / "f8f6f4_operand_width"
    return load_sibling(root / "probe.py")


@pytest.mark.parametrize("target", quick_first(["gfx950", "gfx1250"], keep=0))
def test_a_case_reads_the_same_in_its_module_as_alone(f8f6f4, target):
    # Cases are compiled many to a module: what one reads must not depend on its neighbours.
    tc = needs(target)
    probe = f8f6f4.PROBE
    cases = f8f6f4._cases()
    family = next(f for f, t in f8f6f4.FAMILY_TARGET.items() if t == target)
    numbers = [i for i, c in enumerate(cases) if c["family"] == family and c["selector"] == 1
               and c["route"] == 0][:12]
    together = probe._module(cases, numbers, target, tc)
    for n in numbers:
        (alone,) = probe._module(cases, [n], target, tc).values()
        assert (together[n].values, together[n].texts) == (alone.values, alone.texts), n


def test_a_module_a_tool_refuses_is_split_until_the_failing_case_stands_alone(f8f6f4,
                                                                          monkeypatch):
    tc = needs("gfx950")
    probe = f8f6f4.PROBE
    cases = [dict(c) for c in f8f6f4._cases()]
    numbers = [i for i, c in enumerate(cases) if c["family"] == 1 and c["route"] == 0
               and c["selector"] == 0][:6]
    cases[numbers[3]]["a_src"] = 3  # a <3 x i32> A: no overload the backend can select
    built = probe._split(cases, numbers, "gfx950", tc)
    assert sorted(built) == numbers
    assert built[numbers[3]].function is None and built[numbers[3]].texts["diagnostic"]
    assert all(built[n].function for n in numbers if n != numbers[3])


@pytest.mark.slow  # the whole f8f6f4 sweep under every toolchain found, each tool run twice
def test_the_sweep_under_all_toolchains_reads_widths_off_the_compiler(tmp_path, own_lab):
    # `probelab sweep f8f6f4-operand-width --toolchain all`, as a user runs it: every target
    # the probe lists under every toolchain here, a pair a toolchain cannot build said
    import numpy as np
    from toylab import invoke

    from probelab import dataset

    tc = needs("gfx950")
    own_lab("f8f6f4_operand_width")
    result = invoke("sweep", "f8f6f4-operand-width", "--toolchain", "all", "--out", tmp_path)
    assert result.exit_code == 0, result.output
    for name, each in FOUND.items():
        for target in ("gfx950", "gfx1250"):
            saved = list((tmp_path / "f8f6f4-operand-width" / target).glob(f"*.{name}.nc"))
            if target in amdgpu.supported_targets(each):
                assert len(saved) == 1, (name, target)
            else:
                assert not saved and f"skipped {target} × {name}: " in result.output
    (path,) = (tmp_path / "f8f6f4-operand-width" / "gfx950").glob(f"*.{tc.name}.nc")
    ds = dataset.load(path).isel(kernel=0)
    mine = ds["attempted"].values == 1
    assert np.array_equal(mine, ds["family"].values == 1)  # gfx950: the MFMA cases only
    assert (ds["builds"].values[mine] == 1).all() and (ds["count"].values[mine] == 1).all()
    # the widths are the compiler's: the object's tuples are what llvm-objdump printed
    def span(operand: str) -> int:
        m = re.fullmatch(r"[av]\[(\d+):(\d+)\]", operand)
        assert m, operand
        return int(m.group(2)) - int(m.group(1)) + 1

    for i in np.flatnonzero(mine):
        insn = gcn_instruction(0, str(ds["object_instruction"].values[i]))
        assert (ds["a_obj"].values[i], ds["b_obj"].values[i]) == \
            (span(insn.operands[1]), span(insn.operands[2]))
        printed = gcn_instruction(0, str(ds["instruction"].values[i]))
        assert (ds["a_text"].values[i], ds["b_text"].values[i]) == \
            (span(printed.operands[1]), span(printed.operands[2]))
        assert bool(ds["reassembles"].values[i]) == (str(ds["assembler"].values[i]) == "")
    assert (ds["a_obj"].values[~mine] == 0).all()  # WMMA cases: not attempted, nothing read


@pytest.mark.slow  # a static sweep under every toolchain found, then their diff
def test_diff_of_two_toolchains_lists_the_cases_that_changed(tmp_path, own_lab):
    from probelab.diff import diff, render
    from probelab.probe import get_probe
    from probelab.static import run_static_sweeps

    both = [t for t in FOUND.values() if "gfx90a" in amdgpu.supported_targets(t)]
    if len(both) < 2:
        pytest.skip("needs two toolchains that build gfx90a")
    own_lab("builtin_modifiers")
    results, _ = run_static_sweeps(get_probe("builtin-modifiers"), "gfx90a", "all",
                                   out_root=tmp_path)
    doc, a, b, _ = diff(str(results[0].path), str(results[1].path))
    assert {doc["a"]["toolchain"], doc["b"]["toolchain"]} == {t.name for t in both[:2]}
    ta, tb = (s.ds["instruction"].values for s in (a, b))
    changed = {row["case"] for row in doc["changed_cases"]}
    assert changed == {i for i in range(len(ta)) if ta[i] != tb[i]} | {
        i for p in doc["pairs"] for o in p["observables"] for i in range(len(ta))
        if a.ds[o].values[0, i] != b.ds[o].values[0, i]}
    assert doc["identical"] == (not changed)  # a changed instruction text is a difference
    text = render(doc)
    assert f"cases that changed with the compiler ({doc['a']['toolchain']} → " \
           f"{doc['b']['toolchain']}): {len(changed)}" in text
    assert "built by" in text


def test_sweep_cli_toolchain_errors_are_one_line_usage_errors(own_lab):
    from toylab import invoke

    own_lab("builtin_modifiers", "mfma_f64")
    result = invoke("sweep", "builtin-modifiers", "--target", "gfx942", "--toolchain", "gcc")
    assert result.exit_code == 2 and "no toolchain 'gcc'" in result.output
    result = invoke("sweep", "mfma-f64", "--backend", "sim", "--toolchain", "all")
    assert result.exit_code == 2 and "--toolchain is for static probes" in result.output


def test_asm_under_all_toolchains_says_which_lacks_the_target():
    from toylab import invoke

    result = invoke("asm", "mfma-f64", "--arch", "gfx950", "--toolchain", "all")
    for name, tc in FOUND.items():
        builds = "gfx950" in amdgpu.supported_targets(tc)
        assert f"for gfx950 by {name}: {'OK' if builds else 'SKIPPED'}" in result.output
    assert result.exit_code == 0


def test_a_tool_of_another_release_of_the_same_major_is_not_borrowed(tmp_path):
    # a clang 22.0.0git (say ROCm's, or a local build) with no llc beside it must not be
    # paired with Debian's llc-22 (22.1.8): its datasets would read as that toolchain's
    tc = next((t for t in FOUND.values() if t.has("llc")), None)
    if tc is None:
        pytest.skip("no toolchain with llc here")
    fake = tmp_path / "clang"
    fake.write_text(f"#!/bin/sh\necho 'clang version {tc.major}.0.0git'\n")
    fake.chmod(0o755)
    assert amdgpu._tool(fake, f"{tc.major}.0.0git", "llc") is None
    assert amdgpu._tool(tc.path, tc.release, "llc") == tc.tool("llc")


def test_llvm_mc_errors_no_kernel_line_names_are_never_read_as_reassembled(f8f6f4):
    ranges = {3: (10, 20), 4: (21, 30)}

    def ran(stderr: str, code: int) -> subprocess.CompletedProcess:
        return subprocess.CompletedProcess([], code, "", stderr)

    errors, unclear = f8f6f4._assembler_errors(
        ran("m.s:12:40: error: wrong register tuple size for cbsz value 3\n", 1), ranges)
    assert errors == [(12, "wrong register tuple size for cbsz value 3")] and unclear == ""
    for stderr, code in (("m.s:12:4: error: bad\nLLVM ERROR: out of memory\n", 1),  # no line
                         ("m.s:5:1: error: unknown directive\n", 1),  # outside the kernels
                         ("", 1), ("", -11)):  # no error named; a crash
        assert f8f6f4._assembler_errors(ran(stderr, code), ranges)[1], (stderr, code)


def test_an_object_without_the_case_s_code_is_not_a_build(tmp_path):
    cases = [BuiltCase({}, {}, EV, [], "ab"), BuiltCase({}, {}, EV)]
    with pytest.raises(IntegrityError, match="holds no code for it"):
        sweep(tmp_path, [cases, list(cases)])


# ---- identity: what the tools are, not what they are called -------------------------------


LLVM22 = Path("/usr/lib/llvm-22/bin")
KERNEL = 'extern "C" __attribute__((global)) void k() {}'


@pytest.fixture
def llvm22(monkeypatch) -> Path:
    """Debian's LLVM 22 folder, as its packages installed it (else skip), with toolchain
    discovery run afresh under the test's $PATH and $PROBELAB_CLANG, and after it."""
    if not (LLVM22 / "clang").is_file() or identity.identify(LLVM22 / "clang")["package_ok"] \
            is not True:
        pytest.skip("needs Debian's clang-22 (apt-get install clang-22 lld-22 llvm-22)")
    monkeypatch.delenv("PROBELAB_CLANG", raising=False)
    caches = (amdgpu.toolchains, amdgpu._tool, amdgpu.supported_targets)
    for found in caches:
        found.cache_clear()
    yield LLVM22
    for found in caches:
        found.cache_clear()


def script(path: Path, body: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)
    return path


def test_a_wrapper_clang_22_first_on_path_is_recorded_as_what_it_is(llvm22, tmp_path,
                                                                     monkeypatch, toylab):
    # a folder first on $PATH: clang-22 runs Debian's, its llvm-objdump rewrites what it prints
    from probelab.verify import verify_archive

    wrappers = tmp_path / "wrappers"
    clang = script(wrappers / "clang-22", f'exec {llvm22}/clang "$@"')
    objdump = script(wrappers / "llvm-objdump",
                     f'{llvm22}/llvm-objdump "$@" | sed "s/s_endpgm/s_nop 0/"')
    monkeypatch.setenv("PATH", f"{wrappers}:{Path('/usr/bin')}:{Path('/bin')}")
    (tc,) = amdgpu.select("clang-22")
    assert (tc.path, tc.objdump) == (clang, objdump)  # the name and --version are the real's
    blob, _ = amdgpu.compile_object(KERNEL, "gfx942", toolchain=tc)
    shown = amdgpu.disassemble(blob, "gfx942", tc)
    assert "s_nop 0" in shown and "s_endpgm" not in shown  # and it rewrites the text
    # ... but every dataset records what the files are, and whose they are not
    cases = [BuiltCase({"width": 8}, {}, EV, MFMA, "ab"), BuiltCase({}, {}, EV)]
    from probelab.static import run_static_sweep

    made = run_static_sweep(Pipeline([cases, list(cases)]), "gfx942", toolchain="clang-22",
                            out_root=tmp_path / "out").provenance["toolchain"]
    for name, path in (("clang", clang), ("llvm-objdump", objdump)):
        assert made["tools"][name] == {"path": str(path), "sha256": hashlib.sha256(
            path.read_bytes()).hexdigest(), "package": None, "package_ok": False}
    # which verify flags: the name clang-22 is only the wrapper's word
    toylab.as_measured(toylab.sim_dataset(), toolchain=made)
    toylab.git("add", "-A")
    toylab.git("commit", "-q", "-m", "a wrapper's measurement")
    found = "\n".join(lines(verify_archive()["problems"]))
    assert f"clang-22's clang ({clang}) is from no package: the name clang-22 is only what " \
           "the tool says of itself" in found
    assert f"clang-22's llvm-objdump ({objdump}) is from no package" in found


def test_probelab_clang_at_a_renamed_clang_22_claiming_23_is_no_new_coordinate(
        llvm22, tmp_path, monkeypatch):
    # a renamed clang-22 that says it is 23.0.0 (its llvm-objdump too), and execs the real
    renamed = tmp_path / "llvm-23" / "bin"
    script(renamed / "clang", 'case "$1" in --version) echo "clang version 23.0.0";; '
           f'*) exec {llvm22}/clang "$@";; esac')
    script(renamed / "llvm-objdump", 'case "$1" in --version) echo "LLVM version 23.0.0";; '
           f'*) exec {llvm22}/llvm-objdump "$@";; esac')
    monkeypatch.setenv("PROBELAB_CLANG", str(renamed / "clang"))
    tc = amdgpu.find_clang()
    assert (tc.name, tc.release) == ("clang-23", "23.0.0")  # what it says of itself
    described = amdgpu.describe(tc)
    assert {t["package_ok"] for t in described["tools"].values()} == {False}
    assert identity.package_problems(described) == [
        f"clang-23's {name} ({renamed / name}) is from no package: the name clang-23 is "
        "only what the tool says of itself" for name in ("clang", "llvm-objdump")]
    from toylab import invoke

    rows = {row["name"]: row for row in json.loads(invoke("doctor", "--json").stdout)["checks"]}
    assert not rows["clang-23 clang"]["ok"]
    assert rows["clang-23 clang"]["detail"] == (
        f"{renamed / 'clang'}, sha256 "
        f"{hashlib.sha256((renamed / 'clang').read_bytes()).hexdigest()[:12]}, not from a package")


def test_doctor_shows_each_tool_s_real_path_hash_and_package_in_full(monkeypatch):
    from toylab import invoke

    rows = {row["name"]: row for row in json.loads(invoke("doctor", "--json").stdout)["checks"]}
    details = [rows[f"{tc.name} {name}"]["detail"] for tc in FOUND.values()
               for name in tc.tools()]
    assert details == [f"{tool['path']}, sha256 {tool['sha256'][:12]}, "
                       f"{tool['package'] or 'not from a package'}"
                       for tc in FOUND.values() for tool in tc.tools().values()]
    monkeypatch.setenv("COLUMNS", "300")
    assert all(detail in invoke("doctor").stdout for detail in details)
    monkeypatch.setenv("COLUMNS", "60")  # a narrow terminal folds a path, never cuts it
    assert "…" not in invoke("doctor").stdout


def test_a_cached_object_is_never_handed_to_another_clang_at_the_same_path(llvm22, tmp_path,
                                                                          monkeypatch):
    # the same path, the same version line, other bytes (here: -O0): another compiler, whose
    # objects are its own, not those the cache kept from the file that was there before
    monkeypatch.setenv("PROBELAB_CACHE", str(tmp_path / "cache"))
    (real,) = amdgpu.select("clang-22")
    clang = script(tmp_path / "bin" / "clang", f'exec {llvm22}/clang "$@"')
    tc = amdgpu.Toolchain("clang-22", real.version, real.major, clang, real.objdump, "LLVM")
    source = 'extern "C" __attribute__((global)) void k(int* p) { p[0] = p[1] * 3 + p[2]; }'
    first, _ = amdgpu.compile_object(source, "gfx942", toolchain=tc)
    assert amdgpu.compile_object(source, "gfx942", toolchain=tc) == (first, True)
    script(clang, f'exec {llvm22}/clang "$@" -O0')
    other, hit = amdgpu.compile_object(source, "gfx942", toolchain=tc)
    assert not hit and other != first
