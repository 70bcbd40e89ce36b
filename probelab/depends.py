"""What a cached answer depends on: a probelab module and every probelab module it imports.

An answer kept on disk (a content hash, a claim's tables, its scores) is keyed by the code
that computes it, not by all of probelab, so an edit to the CLI or a plot keeps every entry
warm while an edit to any module that answer's code can run is a miss. The imports are read
from the source with `ast`: module level and inside functions, absolute and relative, and
`from probelab import x` where x is a submodule; importing a package runs its `__init__.py`,
so that counts too. Only code under `if TYPE_CHECKING:` is skipped (it never runs).

Not followed: imports by name at run time (`importlib.import_module(f"...{name}")`), which
probelab uses only for backends, toolchains and figures; none of them computes a cached
answer. One exception is followed: `probelab.vendors` imports each vendor folder in it by
name, so each counts as imported (a third party's, under PROBELAB_VENDORS, is outside
probelab: the probe index is keyed by the vendors' names too). Each file is read and
parsed at most once per process (the code does not change under a running lab), and what a
file's bytes import is kept in the cache (probelab.cache, under their hash and this parser's
code): a fresh process reads it instead of parsing.
"""

import ast
import contextlib
import functools
import hashlib
import json
from functools import cache as memoised
from pathlib import Path

from probelab import bounded, cache

PACKAGE = "probelab"
FOUND_BY_NAME = "probelab.vendors"  # a package that imports every folder in it by name


class Tree:
    """The probelab modules under `root` (the package folder), each read once."""

    def __init__(self, root: Path) -> None:
        self.root = root
        # memoised per tree (the code does not change under a running lab)
        self.file = memoised(self._file)
        self.source = memoised(self._source)
        self.imports = memoised(self._imports)
        self.digest = memoised(self._digest)

    def _file(self, module: str) -> Path | None:
        """The file that runs when `module` is imported, or None if it is not one of ours."""
        parts = module.split(".")
        if parts[0] != PACKAGE or not all(p.isidentifier() for p in parts):
            return None
        base = self.root.joinpath(*parts[1:])
        for candidate in (base / "__init__.py", base.with_suffix(".py")):
            if candidate.is_file():
                return candidate
        return None

    def _source(self, module: str) -> bytes:
        path = self.file(module)
        return path.read_bytes() if path else b""

    def _imports(self, module: str) -> frozenset[str]:
        """The probelab modules `module` imports directly (its own packages included)."""
        path = self.file(module)
        package = module if path and path.name == "__init__.py" else module.rpartition(".")[0]
        found = {m for m in imported(self.source(module), package) if self.file(m)}
        if module == FOUND_BY_NAME:  # it imports each of its folders by name
            found |= {f"{module}.{p.parent.name}" for p in self.root.glob(
                f"{module.partition('.')[2]}/*/__init__.py")}
        return frozenset(found)

    def closure(self, modules: tuple[str, ...]) -> list[str]:
        seen: set[str] = set()
        todo = [m for m in modules if self.file(m)]
        while todo:
            module = todo.pop()
            if module not in seen:
                seen.add(module)
                todo.extend(self.imports(module) - seen)
        return sorted(seen)

    def _digest(self, modules: tuple[str, ...]) -> str:
        h = hashlib.sha256()
        for module in self.closure(modules):
            _update(h, module, self.source(module))
        return h.hexdigest()


def _update(h: "hashlib._Hash", name: str, data: bytes) -> None:
    named = name.encode()  # length-prefixed, so no two lists of files hash alike
    h.update(b"%d:%s%d:" % (len(named), named, len(data)) + data)


def imported(source: bytes, package: str = "", type_checking: bool = False) -> set[str]:
    """Every probelab module (and package) `source` may import, `package` being the one its
    relative imports are relative to; with `type_checking`, also those under `if
    TYPE_CHECKING:`. A name that may be a submodule is listed too (`from probelab import
    dataset` -> probelab.dataset); callers keep those that exist. The same bytes are parsed
    once per process."""
    return set(_imported(source, package, type_checking))


@functools.lru_cache(maxsize=1024)
def _imported(source: bytes, package: str, type_checking: bool) -> frozenset[str]:
    """`imported`, kept on disk under the bytes' hash and this parser's own code: parsing
    every probe folder's files and the modules they import was most of a warm `list` (the
    probe index is keyed on those digests)."""
    key = cache.cache_key(source=hashlib.sha256(source).hexdigest(), package=package,
                          type_checking=type_checking, parser=_PARSER)
    with contextlib.suppress(ValueError):
        kept = bounded.loads(cache.lookup("imports", key) or b"null")
        if isinstance(kept, list) and all(isinstance(name, str) for name in kept):
            return frozenset(kept)
    found = _parsed(source, package, type_checking)
    cache.store("imports", key, json.dumps(sorted(found)).encode())
    return found


_PARSER = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()


def _parsed(source: bytes, package: str, type_checking: bool) -> frozenset[str]:
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):  # a broken probe file: its bytes alone key it
        return frozenset()
    found: set[str] = set()
    for node in ast.walk(tree) if type_checking else _runnable(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(node, package)
            names = [base] + [f"{base}.{a.name}" for a in node.names if a.name != "*"]
        else:
            continue
        for name in names:
            parts = name.split(".")
            if parts[0] == PACKAGE:  # importing a.b.c runs a/__init__ and a/b/__init__ first
                found.update(".".join(parts[:i]) for i in range(1, len(parts) + 1))
    return frozenset(found)


def _absolute(node: ast.ImportFrom, package: str) -> str:
    if not node.level:
        return node.module or ""
    parts = package.split(".") if package else []
    base = parts[: len(parts) - node.level + 1] if node.level <= len(parts) else []
    return ".".join(base + ([node.module] if node.module else [])) if base else ""


def _runnable(tree: ast.AST) -> list[ast.AST]:
    """Every node of `tree` except the bodies of `if TYPE_CHECKING:` blocks."""
    out, todo = [], [tree]
    while todo:
        node = todo.pop()
        out.append(node)
        if isinstance(node, ast.If) and _type_checking(node.test):
            todo.extend(node.orelse)
            continue
        todo.extend(ast.iter_child_nodes(node))
    return out


def _type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or \
        (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


_tree = Tree(Path(__file__).parent)  # the code that runs (a test puts an edited copy here)


def digest(*modules: str) -> str:
    """The digest of `modules` and every probelab module they import, transitively: the
    code a cached answer computed by them depends on. Names that are not probelab modules
    are ignored (a probe folder may import anything)."""
    return _tree.digest(tuple(sorted(set(modules))))


def files_digest(folder: Path) -> str:
    """The sha256 of every file under `folder` (bytecode caches aside), each under its
    relative path: what a folder holds, whatever it imports."""
    h = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and
                       "__pycache__" not in p.parts):
        h.update(f"{path.relative_to(folder).as_posix()}\0".encode() + path.read_bytes())
    return h.hexdigest()


def digest_folder(folder: Path, *modules: str) -> str:
    """The digest of a folder of code outside probelab (a probe's): its Python files, each
    read once, and `modules` with every probelab module they or those files import."""
    h = hashlib.sha256()
    needed = set(modules)
    for path in sorted(p for p in folder.rglob("*.py") if "__pycache__" not in p.parts):
        data = path.read_bytes()
        _update(h, path.relative_to(folder).as_posix(), data)
        needed |= imported(data)
    _update(h, PACKAGE, digest(*needed).encode())
    return h.hexdigest()
