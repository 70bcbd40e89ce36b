"""What a new user trips on: versions, one-line errors that say what is wrong, flags a probe
cannot honour, unknown targets, exit codes, a copy without history, plots and reports."""

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from toolchains import nvidia_tools
from toylab import ToyLab, invoke

from probelab import prereg
from probelab.probe import catalog

REPO = Path(__file__).resolve().parents[1]


def with_probe(lab: ToyLab, folder: str) -> None:
    """Copy one of the repository's probes into the lab (loaded afresh, not the repo's)."""
    shutil.copytree(REPO / "probes" / folder, lab.root / "probes" / folder,
                    ignore=shutil.ignore_patterns("__pycache__"))
    import sys

    sys.modules.pop(f"probelab_probe_{folder}_probe", None)
    catalog.cache_clear()


def test_version() -> None:
    import probelab

    result = invoke("--version")
    assert result.exit_code == 0 and result.stdout.strip() == f"probelab {probelab.__version__}"


def test_a_long_error_is_one_line(toylab: ToyLab) -> None:
    result = invoke("sweep", "a-probe-name-long-enough-to-push-the-message-past-eighty-columns")
    assert result.exit_code == 2
    (line,) = result.stderr.strip().splitlines()
    assert len(line) > 90 and line.startswith("error: unknown probe")


def test_a_misspelt_probe_gets_a_suggestion(toylab: ToyLab) -> None:
    with_probe(toylab, "byte_perm")
    result = invoke("sweep", "byte_perm", "--backend", "sim")
    assert result.exit_code == 2 and "did you mean 'byte-perm'?" in result.stderr


def test_swapped_check_arguments_are_named(toylab: ToyLab) -> None:
    hyp = toylab.write_hyp("sum", "a + b")
    prereg.seal(hyp)
    data = toylab.sim_dataset()
    result = invoke("check", data, hyp)
    assert result.exit_code == 2 and "the arguments are swapped" in result.stderr


@pytest.mark.parametrize("flag", [["--backend", "sim"], ["--backend", "hip"], ["--repeats", "3"]],
                         ids=["sim", "hip", "repeats"])
def test_a_static_probe_refuses_flags_it_cannot_honour(toylab: ToyLab, flag) -> None:
    with_probe(toylab, "builtin_modifiers")
    result = invoke("sweep", "builtin-modifiers", "--target", "gfx942", *flag)
    assert result.exit_code == 2 and "static probe" in result.stderr and flag[0] in result.stderr
    assert not any(toylab.data.rglob("*.nc"))


@pytest.mark.parametrize("command", [
    ["asm", "byte-perm", "--arch", "sm_999"],
    ["asm", "byte-perm", "--arch", "gfx9999"],
    ["sweep", "byte-perm", "--backend", "sim", "--target", "gfx1299"],
    ["sweep", "byte-perm", "--backend", "sim", "--target", "sm_999"],
    ["prereg", "power", "byte-perm", "--target", "nonsense"],
    ["sweep", "builtin-modifiers", "--target", "gfx9999"],
], ids=["asm-sm", "asm-gfx", "sim-gfx", "sim-sm", "power", "static"])
def test_unknown_targets_are_usage_errors(toylab: ToyLab, command) -> None:
    with_probe(toylab, "byte_perm")
    with_probe(toylab, "builtin_modifiers")
    result = invoke(*command)
    assert result.exit_code == 2 and "unknown target" in result.stderr, result.stderr
    assert "known: NVIDIA" in result.stderr
    assert not (toylab.root / "sim-data").exists()


def test_a_known_target_this_nvrtc_cannot_build_is_exit_4(toylab: ToyLab) -> None:
    nvidia_tools()
    with_probe(toylab, "byte_perm")
    result = invoke("asm", "byte-perm", "--arch", "sm_70")
    assert result.exit_code == 4 and "does not build sm_70" in result.stderr


def test_the_disassembler_is_chosen_by_rule_and_recorded() -> None:
    nvidia = nvidia_tools()
    described = nvidia.describe()
    assert str(nvidia.find_nvdisasm()) in described["disassembler"]
    if nvidia._release(str(nvidia.find_nvdisasm())) == nvidia.nvrtc_version():
        assert described["disassembler_matches_compiler"] == "yes"


def test_sweep_check_names_what_it_leaves_out(toylab: ToyLab) -> None:
    prereg.seal(toylab.write_hyp("sum", "a + b"))
    path = toylab.write_hyp("elsewhere", "a")
    path.write_text(path.read_text().replace('coordinates = "raw"',
                                             'coordinates = "raw"\ntargets = ["sm_80"]'))
    prereg.seal(path)
    result = invoke("sweep", "toy", "--backend", "sim", "--check")
    assert result.exit_code == 1  # simulated: NOT-EVIDENCE, as `check` would say
    assert "elsewhere: not applicable (it is about targets ['sm_80']" in result.stdout


def test_a_copy_without_history_says_so(toylab: ToyLab, tmp_path: Path, monkeypatch) -> None:
    hyp = toylab.write_hyp("sum", "a + b")
    prereg.seal(hyp)
    data = toylab.as_measured(toylab.sim_dataset())
    copy = tmp_path / "tarball"
    shutil.copytree(toylab.root, copy, ignore=shutil.ignore_patterns(".git"))
    monkeypatch.setenv("PROBELAB_ROOT", str(copy))
    monkeypatch.chdir(copy)
    catalog.cache_clear()
    result = invoke("check", copy / hyp.relative_to(toylab.root),
                    copy / data.relative_to(toylab.root), "--json")
    assert result.exit_code == 3
    assert "this copy has no git history" in " ".join(json.loads(result.stdout)["reasons"])
    checks = {c["name"]: c for c in json.loads(invoke("doctor", "--json").stdout)["checks"]}
    assert checks["git history"]["ok"] is False
    assert "no git history" in checks["git history"]["detail"]


def test_a_shallow_clone_makes_doctor_warn(toylab: ToyLab, tmp_path: Path, monkeypatch) -> None:
    clone = tmp_path / "shallow"
    subprocess.run(["git", "clone", "-q", "--depth", "1", f"file://{toylab.root}", str(clone)],
                   check=True, capture_output=True)
    monkeypatch.setenv("PROBELAB_ROOT", str(clone))
    checks = {c["name"]: c for c in json.loads(invoke("doctor", "--json").stdout)["checks"]}
    assert not checks["git history"]["ok"] and "shallow" in checks["git history"]["detail"]


# ---- plots and reports ---------------------------------------------------------------------


def test_plot_says_what_it_cannot_draw(toylab: ToyLab) -> None:
    data = toylab.sim_dataset()  # the toy probe offers no plots
    nothing = invoke("plot", data)
    assert nothing.exit_code == 2 and "toy offers no plot" in nothing.stderr
    two = invoke("plot", data, data)
    assert two.exit_code == 2 and "one dataset at a time" in two.stderr
    assert invoke("plot").exit_code == 2
    usage = invoke("plot", "--help").stdout.splitlines()[0]  # click's rendering varies
    assert "[KIND]" in usage and usage.endswith("[DATASET]") and "{" not in usage


def test_report_reports_the_rest_when_one_dataset_has_no_verdicts(toylab: ToyLab) -> None:
    hyp = toylab.write_hyp("sum", "a + b")
    prereg.seal(hyp)
    judged = toylab.as_measured(toylab.sim_dataset())
    bare = toylab.as_measured(toylab.sim_dataset(), utc="2099-01-01T00:00:00+00:00")
    assert invoke("check", hyp, judged).exit_code == 0
    result = invoke("report", judged, bare)
    assert result.exit_code == 0, result.stderr
    assert "`sum` — **CONFIRMED**" in result.stdout
    assert f"{bare} has no recorded verdicts" in result.stderr
