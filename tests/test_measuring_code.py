"""Which files could shape a dataset's data is read from the commit that measured it (git's
objects, parsed, never imported), so editing today's probe cannot take a changed module out
of a verdict's `code_changed_since_seal`."""

import subprocess
from pathlib import Path

import pytest

from probelab import codetree


def _git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True,
                          text=True).stdout.strip()


def _commit(root: Path, files: dict[str, str], message: str) -> str:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    _git(root, "add", "-A")
    _git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", message)
    return _git(root, "rev-parse", "HEAD")


@pytest.fixture
def lab(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "lab"
    root.mkdir()
    _git(root, "init", "-q")
    monkeypatch.setenv("PROBELAB_ROOT", str(root))
    for var in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE"):
        monkeypatch.delenv(var, raising=False)
    return root


def test_the_imports_followed_are_the_measured_commits(lab: Path) -> None:
    old = _commit(lab, {"probes/p/probe.py": "from probelab.kits import old_engine\n",
                        "probelab/kits/old_engine.py": "from probelab import shared\n",
                        "probelab/shared.py": "", "probelab/kits/new_engine.py": "",
                        "probelab/unrelated.py": ""}, "old")
    new = _commit(lab, {"probes/p/probe.py": "import probelab.kits.new_engine\n"}, "new")
    at_old = codetree.measuring_code("probes/p", old)
    at_new = codetree.measuring_code("probes/p", new)
    assert {"probelab/kits/old_engine.py", "probelab/shared.py"} <= set(at_old)
    assert "probelab/kits/new_engine.py" not in at_old
    assert "probelab/kits/new_engine.py" in at_new and "probelab/shared.py" not in at_new
    assert "probelab/unrelated.py" not in at_old + at_new
    assert "probes/p/probe.py" in at_old and "probes/p/probe.py" in at_new


def test_a_change_to_a_module_the_old_code_imported_is_still_seen(lab: Path) -> None:
    """The seal's code imported old_engine; the measured commit still does and changed it.
    Today's probe no longer imports it: the verdict's check reads the measured commit, so
    the change is named all the same."""
    seal = _commit(lab, {"probes/p/probe.py": "from probelab.kits import old_engine\n",
                         "probelab/kits/old_engine.py": "A = 1\n"}, "seal")
    measured = _commit(lab, {"probelab/kits/old_engine.py": "A = 2  # fitted to the data\n"},
                       "decode changed after the seal")
    _commit(lab, {"probes/p/probe.py": "X = 0  # today: imports nothing\n"}, "today")
    files = tuple(codetree.measuring_code("probes/p", measured))
    assert codetree.changed_between(seal, measured, files) == ["probelab/kits/old_engine.py"]
    today = tuple(codetree.measuring_code("probes/p", _git(lab, "rev-parse", "HEAD")))
    assert "probelab/kits/old_engine.py" not in today  # what reading today's code would miss


def test_a_source_named_alone_is_found_at_the_commit_and_none_found_means_all(lab: Path
                                                                              ) -> None:
    """Static datasets before 2026-12 named their kernel source without its folder: the
    folder is found among the files the measured commit has; where nothing is found, the
    whole scope is compared (never nothing, which would hide every change)."""
    from probelab.notary.order import measuring_code, probe_folders

    head = _commit(lab, {"probes/p/probe.py": "", "probes/p/k.hip": "",
                         "probes/q/probe.py": ""}, "two probes")
    named_alone = {"kernels": {"static": {"source": "k.hip"}}}
    assert probe_folders(named_alone, head) == ("probes/p",)
    assert probe_folders({"kernels": {"m": {"source": "probes/q/q.cu"}}}, head) == ("probes/q",)
    unknown = {"kernels": {"static": {"source": "gone.hip"}}}
    assert probe_folders(unknown, head) == ()
    assert measuring_code(unknown, head) == codetree.SCOPE
    assert codetree.changed_between(head, head, ()) == []  # no paths: the scope, unchanged
