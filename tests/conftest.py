import os
import re
import sys
from pathlib import Path

# the CLI's consoles take a width from COLUMNS when made (at import): pytest-xdist's workers
# inherit COLUMNS=80 where a plain run has none, and a test that sets COLUMNS must be read
os.environ.pop("COLUMNS", None)
os.environ.pop("LINES", None)

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from toylab import REPO, TOY_MODULE, CodeCopy, ToyLab, copy_probe, make_toylab

from probelab import prereg
from probelab.probe import catalog


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Leave the `slow` tests out of a plain run, so that it stays quick (`-m slow` runs
    them, CI both). A marker expression given (-m) selects instead, and a slow test named by
    its node id runs: naming it is asking for it (addopts' -m would deselect it too)."""
    if config.option.markexpr:
        return
    named = _named_node_ids(config)
    slow = [item for item in items if item.get_closest_marker("slow")
            and not any(item.nodeid == n or item.nodeid.startswith((f"{n}[", f"{n}::"))
                        for n in named)]
    if slow:
        config.hook.pytest_deselected(items=slow)
        left = set(map(id, slow))
        items[:] = [item for item in items if id(item) not in left]


def _named_node_ids(config: pytest.Config) -> list[str]:
    """The node ids on the command line (path::name...), spelled as pytest spells an item's
    (the path relative to the rootdir, whichever folder the run started in)."""
    named = []
    for arg in config.args:
        path, sep, rest = arg.partition("::")
        where = (config.invocation_params.dir / path).resolve()
        if sep and where.is_relative_to(config.rootpath):
            named.append(f"{where.relative_to(config.rootpath).as_posix()}::{rest}")
    return named


@pytest.fixture
def toylab(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ToyLab:
    """A fresh lab (git repo + the toy probe) in tmp_path; PROBELAB_ROOT and cwd point at it."""
    for var in ("PROBELAB_GIT_HEAD", "PROBELAB_GIT_DIRTY", "GIT_DIR", "GIT_WORK_TREE",
                "GIT_INDEX_FILE", "GIT_AUTHOR_DATE", "GIT_COMMITTER_DATE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("PROBELAB_CACHE", str(tmp_path / ".cache"))
    root = tmp_path / "lab"
    root.mkdir()
    monkeypatch.setenv("PROBELAB_ROOT", str(root))
    monkeypatch.chdir(root)
    lab = make_toylab(root)
    yield lab
    sys.modules.pop(TOY_MODULE, None)
    catalog.cache_clear()


@pytest.fixture
def code_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> CodeCopy:
    """probelab's code as a test edits it, for the keys of cached answers (toylab.CodeCopy)."""
    return CodeCopy(tmp_path / "code", monkeypatch)


@pytest.fixture
def own_lab(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """make(*folders): a lab of its own holding copies of the repository's probes `folders`
    and nothing sealed, so that a test sweeping them never consults the live ledger."""
    root = tmp_path / "own-lab"
    copied: list[str] = []

    def make(*folders: str) -> Path:
        for folder in folders:
            copy_probe(root, folder)
        copied.extend(folders)
        (root / "preregistrations").mkdir(parents=True, exist_ok=True)
        monkeypatch.setenv("PROBELAB_ROOT", str(root))
        _forget(copied)
        return root

    yield make
    _forget(copied)


def _forget(folders: list[str]) -> None:
    """Probe modules are cached by folder name: forget these, so the right copy is loaded."""
    for folder in folders:
        sys.modules.pop(f"probelab_probe_{folder}_probe", None)
    catalog.cache_clear()


@pytest.fixture
def sealed_lab(toylab: ToyLab):
    """make(folder, probe_id, *names) -> the lab: the toy lab (a git repository of its own)
    with a copy of the repository's probe `folder` committed and its hypotheses `names`
    sealed there afresh, so that a check orders seals and sweeps by this lab's history, in
    whatever copy of the repository the tests run (a tarball's has none)."""
    copied: list[str] = []

    def make(folder: str, probe_id: str, *names: str) -> Path:
        copy_probe(toylab.root, folder)
        copied.append(folder)
        folder_of = toylab.root / "preregistrations" / probe_id
        folder_of.mkdir(parents=True, exist_ok=True)
        for name in names:  # a parent is sealed in the repository's ledger, not this lab's
            text = (REPO / "preregistrations" / probe_id / f"{name}.toml").read_text("utf-8")
            (folder_of / f"{name}.toml").write_text(re.sub(r"(?m)^parent = .*\n", "", text),
                                                    "utf-8")
        toylab.git("add", "-A")
        toylab.git("commit", "-q", "-m", f"{folder} and its hypotheses")
        _forget(copied)
        for name in names:  # as the repository sealed them: some before seal saw blindness
            prereg.seal(folder_of / f"{name}.toml", allow_blind=True)
        return toylab.root

    yield make
    _forget(copied)


@pytest.fixture
def repo_lab(monkeypatch: pytest.MonkeyPatch):
    """The repository itself as the lab: its probes, preregistrations and archive."""
    monkeypatch.setenv("PROBELAB_ROOT", str(Path(__file__).resolve().parents[1]))
    catalog.cache_clear()
    yield
    catalog.cache_clear()


def _amd_toolchains() -> list[str]:
    from probelab.errors import Unavailable
    from probelab.vendors.amd import toolchain as amdgpu

    try:
        return [t.name for t in amdgpu.toolchains()]
    except Unavailable:
        return ["none"]  # the modules that use it skip without a clang


@pytest.fixture(params=_amd_toolchains())
def each_amd_toolchain(request, monkeypatch: pytest.MonkeyPatch):
    """Run a test once per AMDGPU toolchain found (clang-19, clang-22, ...), that toolchain
    the default: compile evidence must hold under every compiler the lab records."""
    from probelab.vendors.amd import toolchain as amdgpu

    if request.param == "none":
        pytest.skip("no AMDGPU toolchain")
    (chosen,) = amdgpu.select(request.param)
    monkeypatch.setattr(amdgpu, "find_clang", lambda: chosen)
    return chosen
