"""What a new user trips on: versions, one-line errors that say what is wrong, flags a probe
cannot honour, unknown targets, exit codes, a copy without history, plots and reports."""

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from toolchains import amd_tools, nvidia_tools
from toylab import ToyLab, copy_probe, git, invoke, without_history

from probelab import prereg
from probelab.probe import catalog

REPO = Path(__file__).resolve().parents[1]


def with_probe(lab: ToyLab, folder: str) -> None:
    """Copy one of the repository's probes into the lab (loaded afresh, not the repo's)."""
    copy_probe(lab.root, folder)
    import sys

    sys.modules.pop(f"probelab_probe_{folder}_probe", None)
    catalog.cache_clear()


def seal_sum_and_one_about_sm_80(lab: ToyLab, other: str) -> None:
    prereg.seal(lab.write_hyp("sum", "a + b"))
    path = lab.write_hyp(other, "a")
    path.write_text(path.read_text().replace('coordinates = "raw"',
                                             'coordinates = "raw"\ntargets = ["sm_80"]'))
    prereg.seal(path)


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


def test_an_unknown_probe_gets_the_closest_few_and_the_list_not_every_id(toylab: ToyLab) -> None:
    with_probe(toylab, "byte_perm")
    result = invoke("sweep", "byte-prem", "--backend", "sim")
    assert result.exit_code == 2
    assert "did you mean 'byte-perm'? (`probelab list` shows all 2)" in result.stderr
    assert "toy" not in result.stderr  # not like it: not named
    assert "`probelab list`" in invoke("sweep", "nothing-like-any").stderr


def test_an_unknown_architecture_suggests_the_plain_one_before_its_variants(
        toylab: ToyLab) -> None:
    with_probe(toylab, "byte_perm")
    result = invoke("asm", "byte-perm", "--arch", "sm_999")
    assert result.exit_code == 2
    assert "did you mean sm_90, sm_90a or sm_89?" in result.stderr
    assert "did you mean gfx1251, gfx1250 or gfx1201?" in invoke(
        "asm", "byte-perm", "--arch", "gfx1299").stderr


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
    seal_sum_and_one_about_sm_80(toylab, "elsewhere")
    result = invoke("sweep", "toy", "--backend", "sim", "--check")
    assert result.exit_code == 1  # simulated: NOT-EVIDENCE, as `check` would say
    assert "elsewhere: not applicable (it is about targets ['sm_80']" in result.stdout


def test_a_copy_without_history_says_so(toylab: ToyLab, tmp_path: Path, monkeypatch) -> None:
    hyp = toylab.write_hyp("sum", "a + b")
    prereg.seal(hyp)
    data = toylab.as_measured(toylab.sim_dataset())
    copy = without_history(toylab.root, tmp_path / "tarball", monkeypatch)
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


# ---- second pass: a new-user review of the fixes ------------------------------------------


def test_an_error_is_the_first_line_even_after_the_progress_display(toylab: ToyLab) -> None:
    result = invoke("sweep", "nosuch")
    assert result.stderr.startswith("error: unknown probe")


@pytest.mark.parametrize("flags", [["--target", "gfx942"], ["--backend", "hip", "--target",
                                                              "sm_90"]], ids=["cuda", "hip"])
def test_a_target_of_the_other_vendor_is_refused_before_any_device(toylab: ToyLab,
                                                                  flags) -> None:
    result = invoke("sweep", "toy", *flags)
    assert result.exit_code == 2 and "target; the" in result.stderr and "backend runs" in \
        result.stderr


def test_target_id_features_are_checked(toylab: ToyLab) -> None:
    with_probe(toylab, "byte_perm")
    result = invoke("asm", "byte-perm", "--arch", "gfx942:bogus")
    assert result.exit_code == 2 and "unknown features ['bogus']" in result.stderr
    assert "did you mean gfx942" in invoke("asm", "byte-perm", "--arch", "GFX942").stderr


def test_a_static_probe_refuses_a_timeout_too(toylab: ToyLab) -> None:
    with_probe(toylab, "builtin_modifiers")
    result = invoke("sweep", "builtin-modifiers", "--target", "gfx942", "--timeout", "5")
    assert result.exit_code == 2 and "--timeout does not apply" in result.stderr


def test_power_says_what_a_target_leaves_out(toylab: ToyLab) -> None:
    seal_sum_and_one_about_sm_80(toylab, "other")
    notes = json.loads(invoke("prereg", "power", "toy", "--target", "sm_90", "--json").stdout)
    assert notes["notes"] == ["other: left out, about targets ['sm_80'], not sm_90"]
    result = invoke("prereg", "power", "toy", "--target", "gfx942")
    assert result.exit_code == 2 and "toy does not target gfx942" in result.stderr


def test_a_mismatch_map_of_an_edited_seal_is_refused(toylab: ToyLab) -> None:
    with_probe(toylab, "byte_perm")
    hyp = toylab.root / "preregistrations" / "byte-perm" / "cuda-contract.toml"
    hyp.parent.mkdir(parents=True)
    shutil.copy(REPO / "preregistrations" / "byte-perm" / "cuda-contract.toml", hyp)
    prereg.seal(hyp)
    from probelab.sweep import run_sweep

    data = run_sweep("byte-perm", "sim", repeats=2).path
    with open(hyp, "a") as handle:
        handle.write("# x\n")
    result = invoke("plot", "mismatch-map", data, "--prereg", hyp, "--out", toylab.root / "f")
    assert result.exit_code == 3 and "TAMPERED" in result.stderr
    assert not (toylab.root / "f").exists()


def test_report_and_check_name_wrong_files(toylab: ToyLab) -> None:
    hyp = toylab.write_hyp("sum", "a + b")
    prereg.seal(hyp)
    data = toylab.sim_dataset()
    missing = invoke("report", data, toylab.root / "nope.nc")
    assert missing.exit_code == 2 and "no such file" in missing.stderr
    other = invoke("report", hyp)
    assert other.exit_code == 2 and "neither a dataset" in other.stderr
    twice = invoke("check", data, data)
    assert twice.exit_code == 2 and "is a dataset, not a hypothesis" in twice.stderr


def test_plot_arguments_in_the_wrong_place_are_named(toylab: ToyLab) -> None:
    data = toylab.sim_dataset()
    forgot = invoke("plot", "lanemap")
    assert forgot.exit_code == 2 and "the DATASET comes after it" in forgot.stderr
    swapped = invoke("plot", data, "lanemap")
    assert swapped.exit_code == 2 and "the DATASET comes last" in swapped.stderr


def test_a_simulated_sweep_check_is_exit_1_even_with_nothing_to_check(toylab: ToyLab) -> None:
    result = invoke("sweep", "toy", "--backend", "sim", "--check")
    assert result.exit_code == 1


def test_a_lab_inside_another_repository_has_no_history_of_its_own(
        toylab: ToyLab, tmp_path: Path, monkeypatch) -> None:
    hyp = toylab.write_hyp("sum", "a + b")
    prereg.seal(hyp)
    data = toylab.as_measured(toylab.sim_dataset())
    toylab.git("add", "-A")
    toylab.git("commit", "-q", "-m", "measurement")
    vendored = toylab.root / "vendored"
    shutil.copytree(toylab.root, vendored, ignore=shutil.ignore_patterns(".git", "vendored"))
    monkeypatch.setenv("PROBELAB_ROOT", str(vendored))
    monkeypatch.chdir(vendored)
    import sys

    from toylab import TOY_MODULE

    sys.modules.pop(TOY_MODULE, None)  # the vendored copy's toy probe, not the outer one's
    catalog.cache_clear()
    doc = json.loads(invoke("check", vendored / hyp.relative_to(toylab.root),
                            vendored / data.relative_to(toylab.root), "--json").stdout)
    assert doc["verdict"] == "POST-HOC" and "of its own" in " ".join(doc["reasons"])


# ---- issue 35: what following the README leaves behind ------------------------------------


@pytest.mark.slow
def test_a_sweep_into_the_archive_says_so_in_its_last_line(own_lab, tmp_path: Path) -> None:
    """A sweep that adds to data/ says what it added, last; one with --out adds nothing
    there and says nothing of it; --check with --out (no verdict could count) is refused
    before anything is built."""
    amd_tools()
    root = own_lab("builtin_modifiers", "byte_perm")
    (root / "data").mkdir()
    trial = invoke("sweep", "byte-perm", "--backend", "sim", "--out", tmp_path / "try")
    assert trial.exit_code == 0, trial.stderr
    assert trial.stdout.splitlines()[-1].startswith(str(tmp_path / "try"))
    refused = invoke("sweep", "builtin-modifiers", "--target", "gfx942", "--check", "--out",
                     tmp_path / "try")
    assert refused.exit_code == 2 and "--check is for the archive" in refused.stderr
    assert not any((root / "data").iterdir()) and not (tmp_path / "try" / "builtin-modifiers"
                                                       ).exists()
    (toolchain,) = [t.name for t in amd_tools().select(None)]
    added = invoke("sweep", "builtin-modifiers", "--target", "gfx942", "--toolchain", toolchain)
    assert added.exit_code == 0, added.stderr
    *_, path, last = added.stdout.splitlines()
    assert Path(path).parent == root / "data" / "builtin-modifiers" / "gfx942"
    assert last.startswith("added to the archive: 1 dataset in data/builtin-modifiers/gfx942/, "
                           "pinned in data/MANIFEST.jsonl, and 0 verdicts beside them")
    assert Path(path).name in (root / "data" / "MANIFEST.jsonl").read_text()


def _dev_requirements() -> list[Requirement]:
    """probelab's own requirements and its [dev] extra's, its self-references expanded."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    todo, found = [*project["dependencies"], *extras["dev"]], []
    while todo:
        req = Requirement(todo.pop())
        if canonicalize_name(req.name) == "probelab":
            todo += [r for extra in req.extras for r in extras[extra]]
        else:
            found.append(req)
    return found


def _installed_tree(requirements: list[Requirement]) -> set[str]:
    """The names of every distribution the requirements bring in, from what is installed."""
    names, todo = set(), [(req, frozenset(req.extras)) for req in requirements]
    while todo:
        req, extras = todo.pop()
        name = canonicalize_name(req.name)
        if (name, extras) in names:
            continue
        names.add((name, extras))
        for sub in map(Requirement, metadata.requires(name) or []):
            if sub.marker is None or any(sub.marker.evaluate({"extra": e})
                                         for e in {"", *extras}):
                todo.append((sub, frozenset(sub.extras)))
    return {name for name, _ in names}


def test_the_install_is_pinned_by_a_constraints_file_within_pyproject_ranges() -> None:
    """constraints.txt pins the exact release of every package [dev] installs (so a fresh
    install draws the committed figures byte for byte), each within pyproject's range, and
    the README's install and CI use it."""
    try:
        metadata.distribution("probelab")
    except metadata.PackageNotFoundError:  # e.g. the GPU machine: the code on PYTHONPATH
        pytest.skip("probelab is not pip-installed here: no [dev] install to hold to the pins")
    pins = {canonicalize_name(name): version for name, version in (
        line.split("==") for line in (REPO / "constraints.txt").read_text().splitlines()
        if line and not line.startswith("#"))}
    requirements = _dev_requirements()
    assert _installed_tree(requirements) <= set(pins)
    for req in requirements:
        assert req.specifier.contains(pins[canonicalize_name(req.name)]), req
    for text in ((REPO / "README.md").read_text(), (REPO / ".ci" / "run").read_text()):
        assert "-c constraints.txt -e '.[dev]'" in text


# ---- the README, followed in a fresh clone -------------------------------------------------

README = REPO / "README.md"
ADDED = re.compile(r"added to the archive: (\d+) datasets? in (.+), pinned in "
                   r"data/MANIFEST\.jsonl, and (\d+) verdicts?")
STAND_INS = ("apt-get", "python3", ".", "pip", "git", "ray", "jupyter")  # set-up, or commits


def readme_commands() -> list[list[str]]:
    """Every command of the README's bash blocks in order, as words: continued lines
    joined, comments dropped, `a && b` two commands."""
    commands = []
    for block in re.findall(r"^```bash\n(.*?)^```", README.read_text(), re.S | re.M):
        for line in block.replace("\\\n", " ").splitlines():
            words = shlex.split(line, comments=True)
            while words:
                cut = words.index("&&") if "&&" in words else len(words)
                commands.append(words[:cut])
                words = words[cut + 1:]
    return commands


def not_walked(words: list[str]) -> str | None:
    """Why the walk leaves a README command out (None: it runs it): a placeholder to fill,
    set-up this test's own environment stands in for, or what this machine may lack."""
    from probelab.probe import get_probe

    if any(re.search(r"<[^>]*>", word) for word in words):
        return "a placeholder"
    if words[0] in STAND_INS or words[0].startswith("scripts/"):
        return "set-up, a commit, Ray or a device machine's script"
    if words[:3] == ["python", "-m", "pytest"]:
        return None if any(w.startswith("tests/") for w in words) else "the whole suite"
    assert words[0] == "probelab", f"a README command the walk cannot place: {words}"
    if words[1] == "fleet":
        return "a Ray cluster"
    if words[1] == "sweep" and not getattr(get_probe(words[2]), "static", False) \
            and "sim" not in words:
        return "a GPU"
    return None


def fresh_clone(dest: Path) -> Path:
    """A clone of this repository at its HEAD, with the working tree's changes to tracked
    files outside data/ committed on top: the README and code as they are now."""
    try:
        shallow = git(REPO, "rev-parse", "--is-shallow-repository") != "false"
    except RuntimeError:
        pytest.skip("a copy without git history: nothing to clone")
    if shallow:
        pytest.skip("a shallow clone: `probelab verify` needs the whole history")
    git(REPO.parent, "clone", "-q", "--no-checkout", str(REPO), str(dest))
    git(dest, "fetch", "-q", str(REPO), "HEAD")
    git(dest, "checkout", "-q", "--detach", "FETCH_HEAD")
    changed = subprocess.run(["git", "diff", "HEAD", "--binary", "--", ".", ":!data"],
                             cwd=REPO, capture_output=True, check=True).stdout
    if changed:
        subprocess.run(["git", "apply", "--index"], cwd=dest, input=changed, check=True)
        git(dest, "-c", "user.name=walk", "-c", "user.email=walk@localhost", "commit", "-q",
            "-m", "the working tree")
    return dest


@pytest.mark.slow  # the README's commands: a cold verify, plots, three static sweeps
def test_following_the_readme_leaves_only_what_a_command_says_it_added(
        tmp_path: Path, repo_lab) -> None:
    """Issue 35: every README command that needs no GPU, Ray or placeholder, run in a fresh
    clone by a user of their own (an empty home: no cache), leaves `git status` clean but
    for what a command's last line says it added to the archive; the install's own leftovers
    (.venv/, the egg-info) are ignored by git."""
    amd_tools()  # the static probes and `asm` need an AMDGPU clang
    clone, home = fresh_clone(tmp_path / "clone"), tmp_path / "home"
    (home / "tmp").mkdir(parents=True)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PROBELAB_", "GIT_", "XDG_")) and k != "MPLCONFIGDIR"}
    env |= {"HOME": str(home), "TMPDIR": str(home / "tmp"), "PYTHONPATH": str(clone),
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"}
    walked, folders, datasets = [], [], 0
    for words in readme_commands():
        if not_walked(words):
            continue
        argv = [sys.executable if w == "python" else re.sub(r"^~(?=/)", str(home), w)
                for w in words]
        done = subprocess.run(argv, cwd=clone, env=env, capture_output=True, text=True)
        assert done.returncode in (0, 1), f"{shlex.join(words)}: {done.stderr[-2000:]}"
        walked.append(shlex.join(words))
        if said := ADDED.match((done.stdout.splitlines() or [""])[-1]):
            datasets += int(said[1])
            folders += said[2].split(", ")
            assert "--check" not in words or int(said[3]) > 0  # counted verdicts, saved
    assert {"probelab verify", "probelab sweep builtin-modifiers --toolchain all --check"} \
        <= set(walked) and any(w.startswith("probelab plot") for w in walked)
    status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"],
                            cwd=clone, capture_output=True, text=True, check=True).stdout
    added = [line[3:] for line in status.splitlines() if line != " M data/MANIFEST.jsonl"]
    assert all(line.startswith("?? ") for line in status.splitlines()
               if line != " M data/MANIFEST.jsonl"), status
    assert all(path.startswith(tuple(folders)) for path in added), status
    assert sum(path.endswith(".nc") for path in added) == datasets
    assert (" M data/MANIFEST.jsonl" in status) == bool(datasets)
    leftovers = [".venv/bin/python", "probelab.egg-info/PKG-INFO"]  # the install's
    ignored = subprocess.run(["git", "check-ignore", *leftovers], cwd=clone,
                             capture_output=True, text=True).stdout.split()
    assert ignored == leftovers



def readme_section(title: str) -> str:
    return README.read_text().split(f"\n## {title}\n")[1].split("\n## ")[0]


def latest_result(kind: str) -> dict:
    """The newest bench result of a kind (bench/results/DATE-KIND.json)."""
    return json.loads(max((REPO / "bench" / "results").glob(f"*-{kind}.json")).read_text())


def test_the_readme_says_what_set_up_verify_and_the_tests_cost() -> None:
    """Issue 35 item 12: install time and size, verify cold and warm, the default and the
    slow tests on 2 cores, as docs/benchmarks.md measured them, and a quick subset."""
    set_up, tests = readme_section("Set up and run (fresh Debian 12 machine, no GPU needed)"), \
        readme_section("Run the tests")
    install = re.search(r"\*\*(\d+) min (\d+) s\*\*, the venv\s+\*\*(\d+) MB\*\*",
                        (REPO / "docs" / "benchmarks.md").read_text())
    assert install, "docs/benchmarks.md: the install's time and size"
    minutes = round(int(install[1]) + int(install[2]) / 60)
    assert f"install takes about {minutes} min and {install[3]} MB" in " ".join(set_up.split())
    verify = latest_result("verify-cpu")["sizes"]["x1"]
    assert f"{verify['cold_s']:.0f} s" in set_up and f"{verify['warm_median_s']:.1f} s" in set_up
    runs = latest_result("tests-cpu")["runs"]
    default, slow = runs["default"]["s"] / 60, runs["slow"]["s"] / 60
    for figure in (default, slow, default + slow):
        assert f"{figure:.1f} min" in tests
    (quick,) = [w for w in readme_commands() if w[:3] == ["python", "-m", "pytest"]
                and not_walked(w) is None]
    assert all((REPO / w).is_file() for w in quick if w.startswith("tests/"))


def test_the_readme_says_how_a_new_hypothesis_counts(repo_lab) -> None:
    """Issue 35 item 13: one sentence says that a new hypothesis counts only on data
    measured after its seal, and names the sweep that gives a counted verdict without a GPU
    (a static probe's, into the archive: the walk above runs it) and the one on a GPU."""
    from probelab.probe import get_probe

    text = " ".join(readme_section("Try it without a GPU").split())
    (sentence,) = [s for s in re.split(r"(?<=\.)\s+(?=[A-Z])", text)
                   if "counts only on data measured after its seal" in s]
    static, gpu = re.findall(r"`(probelab sweep [^`]+)`", sentence)
    probe = static.split()[2]
    assert get_probe(probe).static and "--check" in static and "--out" not in static
    assert shlex.split(static) in readme_commands()
    assert gpu == "probelab sweep PROBE --check" and "on a GPU" in sentence
