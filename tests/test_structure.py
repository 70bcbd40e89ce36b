"""The shape of the code, as the architecture promises it: the core never imports a kit,
no two probelab modules import each other, directly or around a loop, and no module outside
a vendor's own files names a vendor, its backend or a target."""

import ast
import fnmatch
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "probelab"


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


def _imports(path: Path, name: str, known: dict[str, Path]) -> set[str]:
    """The probelab modules `path` imports, anywhere in it (a function-local import is still
    a dependency); `from package import module` counts the module."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name in known}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*up, *([node.module] if node.module else [])])
            out |= {base} & set(known)
            out |= {f"{base}.{a.name}" for a in node.names} & set(known)
    return out - {name}


def _graph() -> dict[str, set[str]]:
    known = _modules()
    return {name: _imports(path, name, known) for name, path in known.items()}


def test_the_core_imports_no_kit() -> None:
    graph = _graph()
    offenders = {m: sorted(d for d in deps if d.startswith("probelab.kits"))
                 for m, deps in graph.items() if not m.startswith("probelab.kits")}
    assert {m: d for m, d in offenders.items() if d} == {}
    assert any(m.startswith("probelab.kits.") for m in graph)  # the scan sees the kits


def test_no_module_imports_itself_around_a_loop() -> None:
    graph = _graph()
    index, low, stack, on, loops = {}, {}, [], set(), []

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                loops.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    assert loops == []


# A vendor is one folder (probelab/vendors/<name>/: its backends and toolchains included):
# nothing else in probelab names a vendor, a backend of one or a target. Docstrings and
# comments may (they explain); code may not: string literals and names, imports included.
VENDOR_WORDS = re.compile(r"\b(nvidia\w*|amd\w*|cuda\w*|hip\w*|rocm\w*|nvrtc\w*|nvdisasm\w*|"
                          r"sm_\d\w*|gfx\d\w*)\b", re.IGNORECASE)
# the vendor's own folder, alone: a kit's kernels are some vendor's, but the probe folder
# names it (probes/, outside the package) and the kit asks the vendor table for its facts
VENDOR_FILES = ("probelab/vendors/*/*",)
STILL_NAMING_A_VENDOR: dict[str, set[str]] = {}  # file -> words: none left; keep it so


def _vendor_words(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef,
                                       ast.AsyncFunctionDef))
                  and node.body and isinstance(node.body[0], ast.Expr)
                  and isinstance(node.body[0].value, ast.Constant)}
    said: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            said += [] if id(node) in docstrings else [node.value]
        elif isinstance(node, ast.Name):
            said.append(node.id)
        elif isinstance(node, ast.Attribute):
            said.append(node.attr)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            said.append(node.name)
        elif isinstance(node, ast.arg):
            said.append(node.arg)
        elif isinstance(node, ast.alias):
            said += [node.name, node.asname or ""]
        elif isinstance(node, ast.ImportFrom):
            said.append(node.module or "")
        elif isinstance(node, ast.keyword):
            said.append(node.arg or "")
    return {m.group(0) for text in said for m in VENDOR_WORDS.finditer(text)}


def test_no_module_outside_a_vendors_files_names_a_vendor() -> None:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE.parent).as_posix()
        if any(fnmatch.fnmatchcase(rel, pattern) for pattern in VENDOR_FILES):
            continue
        if words := _vendor_words(path):
            found[rel] = words
    assert found == STILL_NAMING_A_VENDOR
    # the scan sees what it must: the vendor folders name their vendors
    assert _vendor_words(PACKAGE / "vendors" / "amd" / "__init__.py") >= {"amd", "hip"}
    assert "sm_90" in _vendor_words(PACKAGE / "vendors" / "nvidia" / "__init__.py")
