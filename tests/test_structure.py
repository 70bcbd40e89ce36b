"""The shape of the code, as the architecture promises it: the core never imports a kit,
and no two probelab modules import each other, directly or around a loop."""

import ast
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
