import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from toylab import TOY_MODULE, CodeCopy, ToyLab, copy_probe, make_toylab

from probelab.probe import catalog


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

    def forget() -> None:  # probe modules are cached by folder name: load the right copy
        for folder in copied:
            sys.modules.pop(f"probelab_probe_{folder}_probe", None)
        catalog.cache_clear()

    def make(*folders: str) -> Path:
        for folder in folders:
            copy_probe(root, folder)
        copied.extend(folders)
        (root / "preregistrations").mkdir(parents=True, exist_ok=True)
        monkeypatch.setenv("PROBELAB_ROOT", str(root))
        forget()
        return root

    yield make
    forget()


@pytest.fixture
def repo_lab(monkeypatch: pytest.MonkeyPatch):
    """The repository itself as the lab: its probes, preregistrations and archive."""
    monkeypatch.setenv("PROBELAB_ROOT", str(Path(__file__).resolve().parents[1]))
    catalog.cache_clear()
    yield
    catalog.cache_clear()


def _amd_toolchains() -> list[str]:
    from probelab.errors import Unavailable
    from probelab.toolchains import amdgpu

    try:
        return [t.name for t in amdgpu.toolchains()]
    except Unavailable:
        return ["none"]  # the modules that use it skip without a clang


@pytest.fixture(params=_amd_toolchains())
def each_amd_toolchain(request, monkeypatch: pytest.MonkeyPatch):
    """Run a test once per AMDGPU toolchain found (clang-19, clang-22, ...), that toolchain
    the default: compile evidence must hold under every compiler the lab records."""
    from probelab.toolchains import amdgpu

    if request.param == "none":
        pytest.skip("no AMDGPU toolchain")
    (chosen,) = amdgpu.select(request.param)
    monkeypatch.setattr(amdgpu, "find_clang", lambda: chosen)
    return chosen
