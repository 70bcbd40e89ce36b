"""What a cached answer's key binds of probelab's code (probelab.depends): the module that
computes it and every probelab module it can import, at module level or inside a function,
absolutely or relatively; nothing else, so an edit elsewhere keeps the answer warm."""

from pathlib import Path

import pytest

from probelab import depends

FILES = {
    "__init__.py": "",
    "top.py": "import os\nfrom probelab import sub, a_function\nfrom probelab.pkg import thing\n",
    "sub.py": "def later():\n    import probelab.late  # only when called\n",
    "late.py": "from . import rel\n",
    "rel.py": "",
    "pkg/__init__.py": "from .inner import thing\n",
    "pkg/inner.py": "from .. import deep\nthing = 1\n",
    "deep.py": "",
    "typed.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                "    from probelab import never\nelse:\n    from probelab import rel\n",
    "never.py": "",
    "unrelated.py": "import probelab.top\n",
}
TOP_CLOSURE = ["probelab", "probelab.deep", "probelab.late", "probelab.pkg", "probelab.pkg.inner",
               "probelab.rel", "probelab.sub", "probelab.top"]


@pytest.fixture
def package(tmp_path: Path) -> Path:
    root = tmp_path / "probelab"
    for name, text in FILES.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def _append(root: Path, name: str, text: str = "\n# edited\n") -> None:
    path = root / name
    path.write_text((path.read_text() if path.exists() else "") + text)


def test_the_closure_is_every_module_an_import_can_run(package: Path) -> None:
    tree = depends.Tree(package)
    assert tree.closure(("probelab.top",)) == TOP_CLOSURE
    # code under `if TYPE_CHECKING:` never runs; its `else:` does
    assert tree.closure(("probelab.typed",)) == ["probelab", "probelab.rel", "probelab.typed"]
    assert tree.closure(("os", "probelab.missing")) == []  # not probelab modules: nothing


@pytest.mark.parametrize("edited", ["unrelated.py", "never.py", "typed.py"])
def test_an_edit_to_a_module_the_answer_does_not_import_keeps_its_key(package: Path,
                                                                      edited: str) -> None:
    before = depends.Tree(package).digest(("probelab.top",))
    _append(package, edited)
    assert depends.Tree(package).digest(("probelab.top",)) == before


@pytest.mark.parametrize("edited", ["top.py", "late.py", "rel.py", "pkg/__init__.py",
                                    "pkg/inner.py", "deep.py", "__init__.py"],
                         ids=["itself", "imported-in-a-function", "relative", "package-init",
                              "from-a-package", "two-levels-up", "the-root-package"])
def test_an_edit_to_any_module_it_imports_changes_its_key(package: Path, edited: str) -> None:
    before = depends.Tree(package).digest(("probelab.top",))
    _append(package, edited)
    assert depends.Tree(package).digest(("probelab.top",)) != before


def test_a_new_module_a_dependency_imports_is_covered(package: Path) -> None:
    keys = [depends.Tree(package).digest(("probelab.top",))]
    _append(package, "fresh.py", "")
    keys.append(depends.Tree(package).digest(("probelab.top",)))  # nothing imports it yet
    _append(package, "deep.py", "def f():\n    from probelab import fresh\n")
    keys.append(depends.Tree(package).digest(("probelab.top",)))
    _append(package, "fresh.py")
    keys.append(depends.Tree(package).digest(("probelab.top",)))
    assert keys[0] == keys[1] and len(set(keys[1:])) == 3
    assert "probelab.fresh" in depends.Tree(package).closure(("probelab.top",))


def test_a_folders_key_is_its_files_and_the_probelab_code_they_import(
        package: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A probe folder: its own files, the kit it imports (here probelab.pkg.inner) and the
    modules named by the caller; a file that does not parse is keyed by its bytes alone."""
    folder = tmp_path / "probes" / "p"
    folder.mkdir(parents=True)
    (folder / "probe.py").write_text("from probelab.pkg.inner import thing\n")
    (folder / "broken.py").write_text("def (\n")

    def key() -> str:
        monkeypatch.setattr(depends, "_tree", depends.Tree(package))
        return depends.digest_folder(folder, "probelab.sub")

    first = key()
    _append(package, "unrelated.py")
    assert key() == first
    seen = {first}
    for edited in ("pkg/inner.py", "late.py"):  # the kit's code; the caller's module's
        _append(package, edited)
        seen.add(key())
    _append(folder, "probe.py")
    seen.add(key())
    assert len(seen) == 4


def test_the_running_probelab_keys_each_answer_by_its_own_code() -> None:
    """The real closures: a dataset's content hash needs no claim evaluation, scoring needs
    evaluation, and none needs the CLI."""
    closure = depends._tree.closure
    content, tables, scores = (set(closure((m,))) for m in
                               ("probelab.dataset", "probelab.hypothesis", "probelab.check"))
    assert "probelab.hypothesis" not in content and content < scores
    assert {"probelab.hypothesis", "probelab.expr", "probelab.numerics.models"} <= tables
    assert tables < scores
    assert not {"probelab.cli", "probelab.plot", "probelab.verify"} & (scores | set(
        closure(("probelab.power",))))


def test_what_a_file_imports_is_kept_and_a_bad_entry_is_parsed_again(tmp_path: Path,
                                                                       monkeypatch) -> None:
    """A fresh process reads a file's imports from the cache instead of parsing it (a warm
    `list` keys its probe index on them); an entry that does not verify (its payload edited,
    its tag forged) is a miss, parsed again and filed afresh."""
    from probelab import cache

    monkeypatch.setenv("PROBELAB_CACHE", str(tmp_path / "cache"))
    source = b"import probelab.dataset\nfrom probelab.kits import lane_id\n"
    want = depends.imported(source)
    assert {"probelab.dataset", "probelab.kits", "probelab.kits.lane_id"} <= want
    (entry,) = (tmp_path / "cache" / "imports").iterdir()
    depends._imported.cache_clear()  # as a fresh process
    monkeypatch.setattr(depends, "_parsed", lambda *a: pytest.fail("parsed again"))
    assert depends.imported(source) == want
    monkeypatch.undo()
    monkeypatch.setenv("PROBELAB_CACHE", str(tmp_path / "cache"))
    for forged in (entry.read_bytes()[:-3] + b'"]]', b"x" * 40 + b'["probelab.cli"]'):
        entry.write_bytes(forged)
        depends._imported.cache_clear()
        assert depends.imported(source) == want
        assert cache.lookup("imports", entry.stem) == entry.read_bytes()[cache.TAG_BYTES:]
