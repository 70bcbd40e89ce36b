"""The command line: JSON on stdout, documented exit codes, nothing written on failure."""

import json
from pathlib import Path

import pytest
from toylab import ToyLab
from typer.testing import CliRunner, Result

from probelab import prereg
from probelab.cli import app

runner = CliRunner()  # click >= 8.2 keeps stdout and stderr apart (result.stdout/.stderr)


def invoke(*args: str | Path) -> Result:
    result = runner.invoke(app, [str(a) for a in args])
    # An unexpected exception would also exit 1; only deliberate exits count here.
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result


def files_under(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file()) if folder.exists() else []


def sealed(lab: ToyLab, hyp_id: str, expr: str) -> Path:
    path = lab.write_hyp(hyp_id, expr)
    prereg.seal(path)
    return path


# ---- list / doctor ------------------------------------------------------------------------


def test_list_json(toylab: ToyLab) -> None:
    result = invoke("list", "--json")
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    (toy,) = [p for p in doc["probes"] if p["id"] == "toy"]
    assert toy["targets"] == ["sm_*"]
    assert toy["kernels"] == {"nvidia": ["add"]}
    assert doc["backends"]["sim"]["found"] is True
    assert "cuda" in doc["backends"]
    assert doc["broken"] == {}


def test_list_reports_a_broken_probe(toylab: ToyLab) -> None:
    broken = toylab.root / "probes" / "broken"
    broken.mkdir()
    (broken / "probe.py").write_text("raise RuntimeError('boom')\n")
    result = invoke("list", "--json")
    assert result.exit_code == 0
    doc = json.loads(result.stdout)
    assert "boom" in doc["broken"]["broken"]
    assert [p["id"] for p in doc["probes"]] == ["toy"]


LONG_ID = "a-probe-id-long-enough-to-be-cut-short-at-eighty"


@pytest.fixture
def long_probe(toylab: ToyLab):
    """A second toy probe, of a long id."""
    import sys

    from toylab import TOY_PROBE

    from probelab.probe import catalog

    folder = toylab.root / "probes" / "long"
    folder.mkdir()
    (folder / "probe.py").write_text(TOY_PROBE.replace('id = "toy"', f'id = "{LONG_ID}"'))
    catalog.cache_clear()
    yield
    sys.modules.pop("probelab_probe_long_probe", None)


def test_list_never_cuts_an_id_and_says_where_each_probe_is_measured(
        toylab: ToyLab, long_probe: None) -> None:
    sim = toylab.sim_dataset()
    for name in ("20260101T000000Z.nc", "20260102T030405Z.nc"):
        toylab.as_measured(sim, name)
    result = invoke("list")  # not a terminal: 80 columns, as when piped
    assert result.exit_code == 0, result.stderr
    assert "…" not in result.stdout
    assert LONG_ID in result.stdout and "sm_90: 2" in result.stdout
    assert "(2026-01-02)" in result.stdout
    doc = json.loads(invoke("list", "--json").stdout)
    assert {p["id"]: p["measured"] for p in doc["probes"]} == {
        LONG_ID: [], "toy": [{"target": "sm_90", "count": 2, "latest": "2026-01-02T03:04:05Z"}]}
    measured = json.loads(invoke("list", "--measured", "--json").stdout)
    assert [p["id"] for p in measured["probes"]] == ["toy"]
    assert LONG_ID not in invoke("list", "--measured").stdout


def test_list_with_a_broken_manifest_lists_the_probes_and_says_why(toylab: ToyLab) -> None:
    (toylab.data / "MANIFEST.jsonl").write_text("not json\n")
    result = invoke("list", "--json")
    assert result.exit_code == 0
    assert [p["measured"] for p in json.loads(result.stdout)["probes"]] == [[]]
    assert "no measured data shown: manifest line 1" in result.stderr


def test_doctor_json(toylab: ToyLab) -> None:
    result = invoke("doctor", "--json")
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    assert isinstance(doc["checks"], list) and doc["checks"]
    names = {c["name"] for c in doc["checks"]}
    assert {"python", "lab root", "git", "ledger", "backend sim"} <= names
    assert all(set(c) == {"name", "ok", "detail"} for c in doc["checks"])


def test_doctor_names_each_amd_target_the_lab_measures_and_cuts_nothing(
        toylab: ToyLab, monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    from rich.console import Console
    from toylab import copy_probe

    from probelab import cli
    from probelab.probe import catalog

    copy_probe(toylab.root, "dot8_iu4")  # gfx1200 and gfx1201
    sys.modules.pop("probelab_probe_dot8_iu4_probe", None)
    catalog.cache_clear()
    rows = [c for c in json.loads(invoke("doctor", "--json").stdout)["checks"]
            if c["name"].startswith("AMDGPU toolchain")]
    if not rows or not rows[0]["ok"]:
        pytest.skip("no AMDGPU toolchain")
    for row in rows:  # both clang-19 and clang-22 build them, as a sweep there does
        assert "builds gfx1200, gfx1201;" in row["detail"] and "not none" not in row["detail"]
        assert "gfx942" not in row["detail"]  # no probe of this lab targets it
    monkeypatch.setattr(cli, "out", Console(soft_wrap=True, width=40))
    result = invoke("doctor")
    assert "AMDGPU toolchain" in result.stdout and "…" not in result.stdout
    sys.modules.pop("probelab_probe_dot8_iu4_probe", None)


def test_paths_inside_a_lab_are_found_from_anywhere_and_two_labs_refused(
        toylab: ToyLab, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    hyp = sealed(toylab, "sum", "a + b")
    data = toylab.sim_dataset()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.delenv("PROBELAB_ROOT")
    monkeypatch.chdir(elsewhere)
    result = invoke("check", hyp.resolve(), data.resolve(), "--no-save")
    assert result.exit_code == 1 and "NOT-EVIDENCE" in result.stdout, result.stderr
    other = tmp_path / "other-lab"
    (other / "preregistrations").mkdir(parents=True)
    refused = invoke("check", hyp, other / "x.nc")
    assert refused.exit_code == 2
    assert refused.stderr == (f"error: the paths given are in 2 labs ({toylab.root.resolve()}, "
                              f"{other.resolve()}): "
                              "a command works in one (cd into it, or set PROBELAB_ROOT)\n")
    assert "not inside a probelab lab" in invoke("check", elsewhere / "h.toml",
                                                 elsewhere / "x.nc").stderr


# ---- sweep --------------------------------------------------------------------------------


def test_sweep_sim(toylab: ToyLab) -> None:
    result = invoke("sweep", "toy", "--backend", "sim")
    assert result.exit_code == 0, result.stderr
    (made,) = files_under(toylab.root / "sim-data")
    assert made.suffix == ".nc"
    assert "SIMULATED" in result.stderr
    assert files_under(toylab.data) == []


def test_sweep_prints_the_dataset_path_unwrapped(toylab: ToyLab,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    # Scripts capture the path: DATASET=$(probelab sweep ...). A long path must stay one line.
    monkeypatch.setenv("COLUMNS", "40")
    result = invoke("sweep", "toy", "--backend", "sim", "--repeats", "2")
    assert result.exit_code == 0
    (made,) = files_under(toylab.root / "sim-data")
    assert result.stdout.strip() == str(made)


def test_sweep_unknown_probe_is_usage_error(toylab: ToyLab) -> None:
    result = invoke("sweep", "nosuch", "--backend", "sim")
    assert result.exit_code == 2
    assert "unknown probe" in result.stderr
    assert result.stdout == ""


def test_sweep_sim_into_data_is_usage_error(toylab: ToyLab) -> None:
    result = invoke("sweep", "toy", "--backend", "sim", "--out", "data")
    assert result.exit_code == 2
    assert files_under(toylab.data) == []


def test_sweep_cuda_without_gpu_exits_4(toylab: ToyLab) -> None:
    from probelab.doctor import backend_status

    if backend_status()["cuda"]["usable"]:
        pytest.skip("a CUDA device is usable here")
    result = invoke("sweep", "toy", "--backend", "cuda")
    assert result.exit_code == 4, result.stderr
    assert files_under(toylab.data) == []
    assert not (toylab.root / "sim-data").exists()


# ---- prereg -------------------------------------------------------------------------------


def test_prereg_new_seal_list_verify(toylab: ToyLab) -> None:
    result = invoke("prereg", "new", "toy", "h1")
    assert result.exit_code == 0, result.stderr
    path = toylab.root / "preregistrations" / "toy" / "h1.toml"
    assert path.exists() and result.stdout.strip() == str(path)
    assert 'value = "0"' in path.read_text()

    again = invoke("prereg", "new", "toy", "h1")
    assert again.exit_code == 2

    listed = json.loads(invoke("prereg", "list", "--json").stdout)
    assert listed == [{"path": "preregistrations/toy/h1.toml", "sealed": False, "hash": None,
                       "retired": []}]

    sealed_out = invoke("prereg", "seal", path)
    assert sealed_out.exit_code == 0, sealed_out.stderr
    (entry,) = [json.loads(line) for line in toylab.ledger.read_text().splitlines()]
    assert entry["hash"] in sealed_out.stdout

    listed = json.loads(invoke("prereg", "list", "--json").stdout)
    assert listed == [{"path": "preregistrations/toy/h1.toml", "sealed": True,
                       "hash": entry["hash"], "retired": []}]

    verified = invoke("prereg", "verify", "--json")
    assert verified.exit_code == 0
    assert [r["ok"] for r in json.loads(verified.stdout)] == [True]
    assert invoke("prereg", "verify").exit_code == 0

    assert invoke("prereg", "seal", path).exit_code == 2  # sealed twice

    path.write_text(path.read_text().replace('value = "0"', 'value = "1"'))
    tampered = invoke("prereg", "verify", "--json")
    assert tampered.exit_code == 3
    assert [r["ok"] for r in json.loads(tampered.stdout)] == [False]
    assert invoke("prereg", "verify").exit_code == 3


def test_prereg_new_rejects_bad_ids(toylab: ToyLab) -> None:
    result = invoke("prereg", "new", "toy", "../escape")
    assert result.exit_code == 2
    assert not (toylab.root / "preregistrations" / "escape.toml").exists()
    assert invoke("prereg", "new", "nosuch", "h1").exit_code == 2


def test_prereg_verify_broken_ledger_exits_3(toylab: ToyLab) -> None:
    sealed(toylab, "one", "a")
    sealed(toylab, "two", "b")
    lines = toylab.ledger.read_text().splitlines()
    toylab.ledger.write_text("\n".join([lines[1], lines[0]]) + "\n")
    result = invoke("prereg", "verify")
    assert result.exit_code == 3
    assert "line 1" in result.stderr


# ---- check / report / verify --------------------------------------------------------------


@pytest.fixture
def measured(toylab: ToyLab) -> tuple[Path, Path, Path]:
    """Two sealed hypotheses (right, wrong), then a faked measurement (see as_measured)."""
    right = sealed(toylab, "sum", "a + b")
    wrong = sealed(toylab, "off", "a + b + 1")
    return right, wrong, toylab.as_measured(toylab.sim_dataset())


def test_check_exit_codes(toylab: ToyLab, measured: tuple[Path, Path, Path]) -> None:
    right, wrong, data = measured
    confirmed = invoke("check", right, data)
    assert confirmed.exit_code == 0, confirmed.stderr
    assert "CONFIRMED" in confirmed.stdout
    refuted = invoke("check", wrong, data)
    assert refuted.exit_code == 1
    assert "REFUTED" in refuted.stdout

    right.write_bytes(right.read_bytes() + b"\n")
    tampered = invoke("check", right, data, "--json")
    assert tampered.exit_code == 3
    assert json.loads(tampered.stdout)["verdict"] == "TAMPERED"


def test_check_post_hoc_exits_3(toylab: ToyLab) -> None:
    data = toylab.as_measured(toylab.sim_dataset())
    hyp = sealed(toylab, "sum", "a + b")
    result = invoke("check", hyp, data, "--json")
    assert result.exit_code == 3
    assert json.loads(result.stdout)["verdict"] == "POST-HOC"


def test_check_simulated_is_not_evidence(toylab: ToyLab) -> None:
    hyp = sealed(toylab, "sum", "a + b")
    result = invoke("check", hyp, toylab.sim_dataset(), "--json")
    assert result.exit_code == 1
    assert json.loads(result.stdout)["verdict"] == "NOT-EVIDENCE"


def test_check_json_is_pure_and_saved(toylab: ToyLab, measured: tuple[Path, Path, Path]) -> None:
    right, _, data = measured
    result = invoke("check", right, data, "--json")
    assert result.exit_code == 0
    doc = json.loads(result.stdout)
    assert doc["verdict"] == "CONFIRMED"
    saved = data.with_name(f"{data.stem}.sum.verdict.json")
    assert json.loads(saved.read_text()) == doc
    assert "verdict saved" in result.stderr


def test_check_no_save(toylab: ToyLab, measured: tuple[Path, Path, Path]) -> None:
    right, _, data = measured
    assert invoke("check", right, data, "--no-save").exit_code == 0
    assert list(data.parent.glob("*.verdict.json")) == []


def test_report_renders_markdown(toylab: ToyLab, measured: tuple[Path, Path, Path]) -> None:
    right, wrong, data = measured
    invoke("check", right, data)
    invoke("check", wrong, data)
    result = invoke("report", data)
    assert result.exit_code == 0, result.stderr
    text = result.stdout
    assert "`sum` — **CONFIRMED**" in text
    assert "`off` — **REFUTED on 128 of 128 cells**" in text
    rows = [line for line in text.splitlines() if line.startswith("| `add` |")]
    assert len(rows) == 2  # one kernel row per verdict
    assert any("128 / 128" in r and "CONFIRMED (literal)" in r for r in rows)
    assert any("0 / 128" in r and "REFUTED" in r for r in rows)
    as_json = invoke("report", data, "--json")
    assert {d["verdict"] for d in json.loads(as_json.stdout)} == {"CONFIRMED", "REFUTED"}


def test_report_tables_survive_a_narrow_terminal(toylab: ToyLab,
                                                 measured: tuple[Path, Path, Path],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    # Markdown for a PR must not be re-wrapped to the terminal width: every table line
    # must stay one line with all its cells.
    _, wrong, data = measured
    invoke("check", wrong, data)
    monkeypatch.setenv("COLUMNS", "40")
    text = invoke("report", data).stdout
    table = [line for line in text.splitlines() if line.startswith("|")]
    assert table and all(line.endswith("|") for line in table)
    assert any(line.startswith("| `add` |") and "REFUTED" in line for line in table)


def test_report_without_verdicts_is_usage_error(toylab: ToyLab,
                                                measured: tuple[Path, Path, Path]) -> None:
    assert invoke("report", measured[2]).exit_code == 2


def test_verify_ok_then_tampered(toylab: ToyLab, measured: tuple[Path, Path, Path]) -> None:
    right, wrong, data = measured
    invoke("check", right, data)
    invoke("check", wrong, data)
    ok = invoke("verify", "--json")
    assert ok.exit_code == 0, ok.stdout
    doc = json.loads(ok.stdout)
    assert doc["problems"] == []
    assert sorted(c["recorded"] for c in doc["checks"]) == ["same", "same"]
    assert invoke("verify").exit_code == 0

    wrong.write_text(wrong.read_text().replace("a + b + 1", "a + b"))
    bad = invoke("verify", "--json")
    assert bad.exit_code == 3
    doc = json.loads(bad.stdout)  # each problem in words, and its findings' wire form
    assert len(doc["problems"]) == len(doc["problem_findings"]) >= 1
    assert "SEAL_EDITED" in {f[0] for _, _, found in doc["problem_findings"] for f in found}
    assert {c["outcome"] for c in doc["checks"]} <= {"CONFIRMED", "REFUTED", "TAMPERED"}
    assert invoke("verify").exit_code == 3


# ---- usage errors -------------------------------------------------------------------------


def test_check_missing_hypothesis_file(toylab: ToyLab, measured: tuple[Path, Path, Path]) -> None:
    result = invoke("check", toylab.root / "preregistrations" / "toy" / "nope.toml", measured[2])
    assert result.exit_code == 2
    assert "cannot read" in result.stderr


def test_check_missing_dataset(toylab: ToyLab, measured: tuple[Path, Path, Path]) -> None:
    result = invoke("check", measured[0], toylab.data / "nope.nc")
    assert result.exit_code == 2


@pytest.mark.parametrize("inside", ["data/.cache", ".probelab-cache", "absolute", "a link"])
def test_a_cache_inside_the_lab_is_refused(toylab: ToyLab, measured: tuple[Path, Path, Path],
                                           monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                           inside: str) -> None:
    """A cache in the lab could be committed, or arrive with a pull, its secret with it:
    PROBELAB_CACHE there (relative, absolute, or through a link from outside) is one usage
    error that names the variable and says where to put it; nothing is written."""
    value = {"absolute": str(toylab.root / "preregistrations" / "cache"),
             "a link": str(tmp_path / "looks-outside" / "cache")}.get(inside, inside)
    (tmp_path / "looks-outside").symlink_to(toylab.data, target_is_directory=True)
    monkeypatch.setenv("PROBELAB_CACHE", value)
    before = [p for p in files_under(toylab.root) if ".git" not in p.parts]
    right, _, data = measured
    for args in (("list",), ("check", right, data), ("verify",)):
        result = invoke(*args)
        said = " ".join(result.stderr.split())
        assert result.exit_code == 2 and len(result.stderr.strip().splitlines()) <= 2, said
        assert "PROBELAB_CACHE=" in said and "is inside the lab" in said
        assert "put the cache outside it" in said
    assert [p for p in files_under(toylab.root) if ".git" not in p.parts] == before


@pytest.mark.parametrize(("content", "message"), [
    (b'schema = 1\nid = "bad"\nclaim = "caf\xe9"\n', "not UTF-8"),
    (b'schema = 1\nid = "bad\n', "not valid TOML"),
    (b'schema = 1\nid = "bad"\nprobe = "toy"\nclaim = "c"\ncoordinates = "raw"\n'
     b'surprise = 1\n[predict]\nvalue = "a"\n', "unknown keys"),
], ids=["non-utf8", "invalid-toml", "unknown-key"])
def test_bad_hypothesis_files_are_usage_errors(toylab: ToyLab, content: bytes,
                                               message: str) -> None:
    path = toylab.root / "preregistrations" / "toy" / "bad.toml"
    path.write_bytes(content)
    data = toylab.sim_dataset()
    for args in (("check", path, data), ("prereg", "seal", path)):
        result = invoke(*args)
        assert result.exit_code == 2, (args, result.stderr)
        assert message in result.stderr
    assert not toylab.ledger.exists()


def test_seal_rejects_a_bad_expression(toylab: ToyLab) -> None:
    path = toylab.write_hyp("bad", "__import__('os')")
    result = invoke("prereg", "seal", path)
    assert result.exit_code == 2
    assert "function calls" in result.stderr
    assert not toylab.ledger.exists()


def test_verify_with_corrupt_recorded_verdict_exits_3(
        toylab: ToyLab, measured: tuple[Path, Path, Path]) -> None:
    right, _, data = measured
    invoke("check", right, data)
    data.with_name(f"{data.stem}.sum.verdict.json").write_text("{not json")
    result = runner.invoke(app, ["verify"])
    assert result.exit_code == 3


def test_check_with_a_path_like_hypothesis_id_is_not_exit_1(
        toylab: ToyLab) -> None:
    path = toylab.write_hyp("x/y", "a + b", filename="xy.toml")
    sealed_out = runner.invoke(app, ["prereg", "seal", str(path)])
    if sealed_out.exit_code == 2:
        return  # refused at seal: fixed
    data = toylab.as_measured(toylab.sim_dataset())
    result = runner.invoke(app, ["check", str(path), str(data)])
    assert result.exit_code == 0, repr(result.exception)


def test_sweep_check_gives_every_applicable_verdict_at_once(toylab: ToyLab) -> None:
    sealed(toylab, "sum", "a + b")
    sealed(toylab, "wrong", "a * b")
    result = invoke("sweep", "toy", "--backend", "sim", "--check")
    assert result.exit_code == 1, result.output  # simulated data: not evidence, as `check` says
    lines = result.stdout.splitlines()
    dataset_path = Path(lines[0])
    assert "sum: NOT-EVIDENCE (add CONFIRMED)" in lines
    assert "wrong: NOT-EVIDENCE (add REFUTED)" in lines
    assert {p.name.split(".")[1] for p in dataset_path.parent.glob("*.verdict.json")} == {
        "sum", "wrong"}
    # a hypothesis edited after its seal is not counted: the sweep says so with exit 3
    path = toylab.root / "preregistrations" / "toy" / "sum.toml"
    path.write_text(path.read_text() + "\n")
    tampered = invoke("sweep", "toy", "--backend", "sim", "--check",
                      "--out", str(toylab.root / "sim-data" / "again"))  # not the same second
    # (the sweep does not even start: its blindness check needs the seals intact)
    assert tampered.exit_code == 3
    assert "sum.toml was edited after sealing" in " ".join(tampered.stderr.split())
    assert not (toylab.root / "sim-data" / "again").exists()


def test_a_reader_that_leaves_early_is_not_an_error() -> None:
    """`probelab prereg power swmmac-iu4 | head -1`: no traceback, no "internal error"."""
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[1]
    env = {**__import__("os").environ, "PROBELAB_ROOT": str(root)}
    proc = subprocess.Popen([sys.executable, "-m", "probelab", "prereg", "power", "swmmac-iu4"],
                            cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    first = proc.stdout.readline()
    proc.stdout.close()  # as head does after its line
    stderr = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 0
    assert first.startswith(b"ck-rule-v4 / ") and "error" not in stderr


def test_sweep_help_says_how_few_repeats_are_refused(toylab: ToyLab) -> None:
    result = invoke("sweep", "--help")
    assert result.exit_code == 0
    assert "(default 3, at least 2)" in " ".join(result.stdout.split())
    refused = invoke("sweep", "toy", "--repeats", "1", "--backend", "sim")
    assert refused.exit_code == 2 and "--repeats must be at least 2" in refused.stderr


@pytest.mark.slow
def test_the_command_process_flushes_everything_and_keeps_its_exit_code(toylab: ToyLab) -> None:
    """`probelab` leaves without the interpreter's teardown (cli.leave): what it printed
    must still arrive whole, and its exit code must be the command's."""
    import subprocess
    import sys

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "probelab", *args], capture_output=True,
                              text=True, cwd=toylab.root, timeout=120)

    listed = run("list", "--json")
    assert listed.returncode == 0 and json.loads(listed.stdout)["probes"][0]["id"] == "toy"
    refused = run("sweep", "nope")
    assert refused.returncode == 2 and refused.stderr.startswith("error: unknown probe 'nope'")
    assert run("sweep", "toy", "--backend", "sim").returncode == 0
    assert run("check").returncode == 2


def test_a_command_of_bool_flags_imports_no_pydantic(toylab: ToyLab) -> None:
    """typer would build a pydantic adapter for --help's None, importing pydantic (0.06 s of
    a `list`): probelab.typer_flags coerces bool flags without one, and they still work."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "probelab", "list",
                           "--json"], capture_output=True, text=True, cwd=toylab.root,
                          timeout=120)
    assert done.returncode == 0 and json.loads(done.stdout)["probes"][0]["id"] == "toy"
    imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines()
                if line.startswith("import time:")}
    assert "typer" in imported and "pydantic" not in imported
