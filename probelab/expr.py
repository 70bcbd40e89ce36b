"""A tiny, safe integer expression language for preregistered hypotheses.

Hypotheses come from other people, so their expressions are never executed as Python: sources
are size-checked, parsed with ``ast.parse(mode="eval")``, checked against a strict whitelist and
then interpreted here, vectorized over numpy int64 arrays with two's-complement wraparound.

Each cell gets exactly the value Python would compute for that cell's coordinates (reduced to
int64), including short-circuiting: ``a if c else b``, ``and``/``or`` and chained comparisons
count an operand's errors only on the cells where Python would evaluate it, so
``x // y if y else 0`` is fine.

Evaluation is whole-array numpy, one pass per syntax node, with no per-cell work in Python:
every value keeps its own broadcast shape (an expression of the selector alone is computed
once per selector, not once per cell of a selector x operand grid), both branches of a
conditional are computed and merged with ``where``, and errors travel as a per-cell fault
code beside the values, so a cell that faults where Python would not evaluate fails nothing.

A program may be given named constant integer tables (`compile_program`'s `tables`: a layout
given as an explicit table, probelab.layouts); ``NAME[i, j]`` reads one, one index per axis,
and only in that form: a table is no value, and an index outside its axis is a fault.
"""

from __future__ import annotations

import ast
import keyword
import re
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

MAX_SOURCE_CHARS = 4096
MAX_BRACKET_DEPTH = 64
MAX_NODES = 2000
MAX_DEPTH = 100
MAX_DEFINITIONS = 512
MAX_TABLE_AXES = 8
_TABLE = "[table]"  # where evaluation keeps a table among the values: no name looks like it
_INT64_MAX = 2**63 - 1
_ASCII_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

_BINOPS: dict[type[ast.operator], Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    ast.Add: np.add,
    ast.Sub: np.subtract,
    ast.Mult: np.multiply,
    ast.FloorDiv: np.floor_divide,
    ast.Mod: np.remainder,
    ast.Pow: np.power,
    ast.LShift: np.left_shift,
    ast.RShift: np.right_shift,
    ast.BitAnd: np.bitwise_and,
    ast.BitOr: np.bitwise_or,
    ast.BitXor: np.bitwise_xor,
}
_UNARY: dict[type[ast.unaryop], Callable[[np.ndarray], np.ndarray]] = {
    ast.Invert: lambda v: np.invert(_int(v)),
    ast.USub: lambda v: np.negative(_int(v)),
    ast.UAdd: lambda v: np.positive(_int(v)),
    ast.Not: lambda v: np.equal(v, 0),
}
_BITWISE = (ast.BitAnd, ast.BitOr, ast.BitXor)  # on two truth values: a truth value, as in Python
_COMPARE: dict[type[ast.cmpop], Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    ast.Eq: np.equal,
    ast.NotEq: np.not_equal,
    ast.Lt: np.less,
    ast.LtE: np.less_equal,
    ast.Gt: np.greater,
    ast.GtE: np.greater_equal,
}
_ALLOWED = (ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Compare, ast.IfExp, ast.Constant, ast.Name)
_ALLOWED += (ast.Load, ast.And, ast.Or, *_BINOPS, *_UNARY, *_COMPARE)
# Friendlier names for constructs people are likely to try; anything else uses the class name.
_REJECTED = {
    ast.Attribute: "attribute access",
    ast.Call: "function calls",
    ast.Subscript: "subscripts",
    ast.Lambda: "lambda",
    ast.ListComp: "comprehensions",
    ast.SetComp: "comprehensions",
    ast.DictComp: "comprehensions",
    ast.GeneratorExp: "generator expressions",
    ast.Starred: "starred expressions",
    ast.NamedExpr: "assignment expressions (:=)",
    ast.JoinedStr: "f-strings",
    ast.Div: "true division '/' (use //)",
    ast.MatMult: "'@'",
    ast.Is: "'is'",
    ast.IsNot: "'is not'",
    ast.In: "'in'",
    ast.NotIn: "'not in'",
}


class ExprError(ValueError):
    """Any rejected, malformed or failing expression; message names the definition and says why."""


@dataclass(frozen=True)
class Program:
    """An ordered set of named definitions; each may use the given coordinate names and earlier
    definitions. Build it with `compile_program`, which validates everything."""

    definitions: tuple[tuple[str, str], ...]  # (name, source) in order
    coordinates: tuple[str, ...]
    _trees: tuple[ast.expr, ...] = field(repr=False, compare=False)
    nodes: int = 0  # syntax nodes in all definitions: evaluation costs about nodes x cells
    depth: int = 0  # the deepest nesting: about that many temporaries are alive at once
    # syntax nodes per definition: a definition is computed over the axes its operands span
    # (broadcast views are compacted), so it costs its nodes x the cells of those axes
    per_definition: tuple[int, ...] = ()
    tables: tuple[tuple[str, np.ndarray], ...] = field(default=(), repr=False, compare=False)

    def evaluate(self, env: Mapping[str, np.ndarray | int],
                 keep: Iterable[str] | None = None, compact: bool = False
                 ) -> dict[str, np.ndarray]:
        """Evaluate every definition in order over numpy arrays (broadcast together); returns
        name -> int64 array of the broadcast shape (scalars broadcast too), for the names in
        `keep` (default: every definition); `compact`: each as computed, over only the axes
        its operands span (it broadcasts to the same values), for use as a coordinate.

        `env` must give every coordinate as integers (any integer or bool dtype; uint64 values
        are reinterpreted as two's complement); other keys are ignored."""
        wanted = None if keep is None else set(keep)
        values = {_TABLE + name: table for name, table in self.tables}
        for name in self.coordinates:
            if name not in env:
                raise ExprError(f"coordinate {name!r} is missing")
            value = np.asarray(env[name])
            if value.dtype.kind not in "iub":
                raise ExprError(f"coordinate {name!r} must be integers, got dtype {value.dtype}")
            values[name] = _compact(value).astype(np.int64)
        try:
            shape = np.broadcast_shapes(*(np.shape(env[name]) for name in self.coordinates))
        except ValueError as e:
            raise ExprError(f"coordinates do not broadcast together: {e}") from None
        results = {}
        with np.errstate(all="ignore"):  # int64 overflow wraps by design
            for (name, _), tree in zip(self.definitions, self._trees, strict=True):
                value, fault = _compute(tree, values)
                if fault is not None and (first := fault[fault != 0]).size:
                    raise ExprError(f"definition {name!r}: {_FAULTS[int(first[0])]}")
                values[name] = value
                if wanted is None or name in wanted:
                    value = _int(value)  # copied only where it is not an array of its own
                    own = isinstance(value, np.ndarray) and value.shape == shape and \
                        value.flags.owndata and value.flags.writeable
                    results[name] = np.asarray(value) if compact else \
                        value if own else np.broadcast_to(value, shape).copy()
        return results


def compile_program(
    definitions: Sequence[tuple[str, str]] | Mapping[str, str], names: Iterable[str],
    tables: Mapping[str, np.ndarray] | None = None
) -> Program:
    """Validate everything up front (syntax, whitelist, names, limits) and raise ExprError
    before any evaluation. `tables`: constant integer arrays the definitions may read as
    ``NAME[i, ...]`` (their names are no values: a table and a value may share one)."""
    constants = tuple((name, _table(name, value)) for name, value in (tables or {}).items())
    items = tuple(definitions.items() if isinstance(definitions, Mapping) else definitions)
    coordinates = tuple(names)
    key = (items, coordinates, tuple((name, value.shape, value.tobytes())
                                     for name, value in constants))
    try:
        program = _PROGRAMS.get(key)
    except TypeError:  # an item that is no (name, source) pair of strings: said below
        return _compiled(items, coordinates, constants)
    if program is None:
        program = _PROGRAMS[key] = _compiled(items, coordinates, constants)
        if len(_PROGRAMS) > MAX_PROGRAMS:
            del _PROGRAMS[next(iter(_PROGRAMS))]
    return program


# programs by all they are compiled from: a verify compiles each claim's sources for every
# grid and observable it plans, keys and checks (30,000 compilations of ~2,000 programs)
_PROGRAMS: dict[tuple, Program] = {}
MAX_PROGRAMS = 8192


def _compiled(items: tuple, coordinates: tuple[str, ...],
              constants: tuple[tuple[str, np.ndarray], ...]) -> Program:
    axes = {name: value.ndim for name, value in constants}
    if len(items) > MAX_DEFINITIONS:
        raise ExprError(f"{len(items)} definitions; at most {MAX_DEFINITIONS} are allowed")
    pairs: list[tuple[str, str]] = []
    for item in items:
        try:
            name, source = item
        except (TypeError, ValueError):
            raise ExprError(f"a definition must be a (name, source) pair, got {item!r}") from None
        pairs.append((name, source))
    all_names = [name for name, _ in pairs]
    trees, nodes, depth, counts = [], 0, 0, []
    for i, (name, source) in enumerate(pairs):
        try:
            _check_name(name, coordinates, all_names[:i])
            tree = _parse(source)
            count, deepest = _check_tree(tree, set(coordinates) | set(all_names[:i]), name,
                                         all_names[i + 1 :], axes)
        except ExprError as e:
            raise ExprError(f"definition {name!r}: {e}") from None
        trees.append(tree)
        counts.append(count)
        nodes, depth = nodes + count, max(depth, deepest)
    return Program(tuple(pairs), coordinates, tuple(trees), nodes, depth, tuple(counts),
                   constants)


def _table(name: object, value: np.ndarray) -> np.ndarray:
    if not is_ascii_name(name) or name.startswith("_"):
        raise ExprError(f"table {name!r}: the name must be ASCII letters, digits and '_'")
    table = np.array(value, dtype=np.int64)  # a copy of its own, read-only: a constant
    if not 1 <= table.ndim <= MAX_TABLE_AXES or 0 in table.shape:
        raise ExprError(f"table {name!r}: 1 to {MAX_TABLE_AXES} axes, none empty")
    table.flags.writeable = False
    return table


def is_ascii_name(name: object) -> bool:
    """Letters, digits and '_' of ASCII only: a look-alike letter (Cyrillic 'х' for 'x')
    must never pass for another name."""
    return isinstance(name, str) and _ASCII_NAME.fullmatch(name) is not None


def _check_name(name: object, coordinates: tuple[str, ...], earlier: list[str]) -> None:
    if not isinstance(name, str) or not name.isidentifier() or keyword.iskeyword(name):
        raise ExprError("the name must be a Python identifier that is not a keyword")
    if name.startswith("_"):
        raise ExprError("the name must not start with '_'")
    if not is_ascii_name(name):
        raise ExprError("the name must be ASCII letters, digits and '_' (no look-alikes)")
    if name in coordinates:
        raise ExprError("the name clashes with a coordinate")
    if name in earlier:
        raise ExprError("the name is defined twice")


def _parse(source: object) -> ast.expr:
    """Parse one source after cheap checks that keep hostile input from hanging the parser."""
    if not isinstance(source, str):
        raise ExprError(f"the source must be str, got {type(source).__name__}")
    if len(source) > MAX_SOURCE_CHARS:
        raise ExprError(f"the source has {len(source)} characters; at most {MAX_SOURCE_CHARS}")
    if "\x00" in source:
        raise ExprError("the source contains a null byte")
    depth = 0
    for char in source:
        if char in "([{":
            depth += 1
            if depth > MAX_BRACKET_DEPTH:
                raise ExprError(f"brackets nest deeper than {MAX_BRACKET_DEPTH}")
        elif char in ")]}":
            depth = max(depth - 1, 0)
    try:
        with warnings.catch_warnings(action="ignore"):  # e.g. SyntaxWarning for `1 is 1`
            # Strip so indented (e.g. multi-line TOML) sources parse, as eval() would allow.
            return ast.parse(source.strip(), mode="eval").body
    except SyntaxError as e:
        raise ExprError(f"syntax error: {e.msg}") from None
    except (RecursionError, MemoryError, ValueError, OverflowError) as e:
        raise ExprError(f"cannot parse: {type(e).__name__}: {e}") from None


def _check_tree(tree: ast.expr, known: set[str], name: str, later: list[str],
                tables: Mapping[str, int]) -> tuple[int, int]:
    """Enforce size limits and the whitelist iteratively, so even deep trees cannot recurse.
    Returns (number of nodes, deepest nesting)."""
    count = deepest = 0
    stack: list[tuple[ast.AST, int]] = [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        count, deepest = count + 1, max(deepest, depth)
        if count > MAX_NODES:
            raise ExprError(f"more than {MAX_NODES} syntax nodes")
        if depth > MAX_DEPTH:
            raise ExprError(f"expression nests deeper than {MAX_DEPTH}")
        _check_node(node, known, name, later, tables)
        # a lookup's table name and index tuple are syntax of the lookup, not values
        children = _indices(node) if isinstance(node, ast.Subscript) else \
            list(ast.iter_child_nodes(node))
        stack.extend((child, depth + 1) for child in reversed(children))
    return count, deepest


def _indices(node: ast.Subscript) -> list[ast.expr]:
    return list(node.slice.elts) if isinstance(node.slice, ast.Tuple) else [node.slice]


def _check_node(node: ast.AST, known: set[str], name: str, later: list[str],
                tables: Mapping[str, int]) -> None:
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and \
            node.value.id in tables:
        if len(_indices(node)) != tables[node.value.id]:  # the indices are checked as nodes
            raise ExprError(f"table {node.value.id!r} takes {tables[node.value.id]} integer "
                            "indices, NAME[i, ...]")
        return
    if not isinstance(node, _ALLOWED):
        what = _REJECTED.get(type(node), type(node).__name__)
        if isinstance(node, ast.Attribute):
            what += f" (.{node.attr})"
        raise ExprError(f"not allowed: {what}")
    if isinstance(node, ast.Constant):
        if type(node.value) not in (int, bool):
            raise ExprError(f"only integer literals are allowed, not {type(node.value).__name__}")
        if abs(node.value) > _INT64_MAX:
            raise ExprError("integer literal outside int64 range (magnitude must be < 2**63)")
    elif isinstance(node, ast.Name):
        if not is_ascii_name(node.id):
            raise ExprError(f"name {node.id!r} is not ASCII letters, digits and '_'")
        if node.id.startswith("_"):
            raise ExprError(f"name {node.id!r} starts with '_' (dunder access is not allowed)")
        if node.id == name:
            raise ExprError("the definition refers to itself")
        if node.id in later:
            raise ExprError(f"forward reference to {node.id!r}, which is defined later")
        if node.id not in known:
            raise ExprError(f"unknown name {node.id!r}")
    elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow):
        exponent = node.right.value if isinstance(node.right, ast.Constant) else None
        if type(exponent) not in (int, bool) or not 0 <= exponent <= 63:
            raise ExprError("huge/non-literal exponent: ** needs a literal exponent in 0..63")


# Fault codes: what Python would raise at a cell (0: nothing).
_FAULTS = {1: "integer division or modulo by zero", 2: "shift amount outside [0, 63]",
           3: "table index outside the table"}
Value = tuple[np.ndarray, np.ndarray | None]  # (int64 values, int8 fault codes or None)


def _compact(a: np.ndarray) -> np.ndarray:
    """A broadcast view's own values: length 1 along every axis it was broadcast over."""
    return a[tuple(slice(None, 1) if stride == 0 and n > 1 else slice(None)
                   for stride, n in zip(a.strides, a.shape, strict=True))]


def _first(*faults: np.ndarray | None) -> np.ndarray | None:
    """Per cell, the fault Python meets first: operands are listed in evaluation order."""
    out = None
    for fault in faults:
        if fault is not None:
            out = fault if out is None else np.where(out != 0, out, fault)
    return out


def _only(fault: np.ndarray | None, evaluated: np.ndarray) -> np.ndarray | None:
    """The faults of an operand Python evaluates only where `evaluated` holds."""
    if fault is None:
        return None
    fault = np.where(evaluated, fault, 0).astype(np.int8)
    return fault if fault.any() else None


def _compute(node: ast.expr, values: dict[str, np.ndarray]) -> Value:
    if isinstance(node, ast.Constant):
        return np.int64(node.value), None
    if isinstance(node, ast.Name):
        return values[node.id], None
    if isinstance(node, ast.UnaryOp):
        operand, fault = _compute(node.operand, values)
        return _UNARY[type(node.op)](operand), fault
    if isinstance(node, ast.BinOp):
        return _binop(node, values)
    if isinstance(node, ast.Subscript):
        return _lookup(node, values)
    if isinstance(node, ast.IfExp):
        (test, tf), (body, bf), (orelse, of) = (_compute(n, values) for n in
                                                 (node.test, node.body, node.orelse))
        taken = _truth(test)
        return (np.where(taken, body, orelse),
                _first(tf, _only(bf, taken), None if of is None else _only(of, ~taken)))
    if isinstance(node, ast.BoolOp):
        # `or` is settled by the first true operand, `and` by the first false one; a later
        # operand is evaluated only where no earlier one settled it (which matters only
        # where an operand faults: otherwise the truths are simply combined)
        settling = isinstance(node.op, ast.Or)
        computed = [_compute(operand, values) for operand in node.values]
        truths = [_truth(value) for value, _ in computed]
        if all(fault is None for _, fault in computed):
            combine = np.logical_or if settling else np.logical_and
            result = truths[0]
            for truth in truths[1:]:
                result = combine(result, truth)
            return np.asarray(result), None
        settled, faults = np.bool_(False), []
        for truth, (_, fault) in zip(truths, computed, strict=True):
            faults.append(_only(fault, ~settled))
            settled = settled | (truth == settling)
        return np.asarray(settled == settling), _first(*faults)
    if isinstance(node, ast.Compare):
        # a < b < c is (a < b) and (b < c), with c only evaluated where a < b holds.
        left, fault = _compute(node.left, values)
        holds, faults = None, [fault]
        for op, comparator in zip(node.ops, node.comparators, strict=True):
            right, fault = _compute(comparator, values)
            faults.append(_only(fault, np.bool_(True) if holds is None else holds))
            compared = _COMPARE[type(op)](left, right)  # the first holds as it is: no copy
            holds = compared if holds is None else holds & compared
            left = right
        return np.asarray(holds), _first(*faults)
    raise AssertionError(f"unvalidated node {type(node).__name__}")  # compile_program bug


def _truth(value: np.ndarray) -> np.ndarray:
    """Where a value is true (nonzero), as bool; a truth value as it is."""
    return value if value.dtype == np.bool_ else value != 0


def _int(value: np.ndarray) -> np.ndarray:
    """A truth value (a comparison's, kept as bool: 8 times less to move) as the int64 0 or
    1 Python's arithmetic reads it as; an integer as it is."""
    return value.astype(np.int64) if value.dtype == np.bool_ else value


def _binop(node: ast.BinOp, values: dict[str, np.ndarray]) -> Value:
    (left, lf), (right, rf) = _compute(node.left, values), _compute(node.right, values)
    op, here = type(node.op), None
    if not (op in _BITWISE and left.dtype == right.dtype == np.bool_):
        left, right = _int(left), _int(right)
    if op in (ast.FloorDiv, ast.Mod, ast.LShift, ast.RShift):
        division = op in (ast.FloorDiv, ast.Mod)
        bad = right == 0 if division else (right < 0) | (right > 63)
        if np.any(bad):  # computed with a harmless operand there, and marked as a fault
            here = np.where(bad, 1 if division else 2, 0).astype(np.int8)
            right = np.where(bad, 1 if division else 0, right)
    if here is None and (same := _identity(op, left, right)) is not None:
        return same, _first(lf, rf)
    return _BINOPS[op](left, right), _first(lf, rf, here)


# An operand that leaves the other as it is (x // 1, 1 * x, x + 0, x << 0, x & -1 ...): the
# other is the result, exactly (int64 wraps as numpy does, so these hold for every value),
# without a pass over it. Sealed files spell scale factors this way (`e = "1"`, `bP // e`)
# over grids of tens of millions of cells. (op: (identity on the right, on the left or None))
_IDENTITIES: dict[type[ast.operator], tuple[int, int | None]] = {
    ast.Add: (0, 0), ast.Sub: (0, None), ast.Mult: (1, 1), ast.FloorDiv: (1, None),
    ast.LShift: (0, None), ast.RShift: (0, None),
    ast.BitOr: (0, 0), ast.BitXor: (0, 0), ast.BitAnd: (-1, -1),
}


def _identity(op: type[ast.operator], left: np.ndarray, right: np.ndarray
              ) -> np.ndarray | None:
    """`left op right` where one operand is one int64 value that leaves the other (int64, of
    the result's shape) unchanged: that other operand; None otherwise."""
    if op not in _IDENTITIES or left.dtype != np.int64 or right.dtype != np.int64:
        return None
    on_right, on_left = _IDENTITIES[op]
    for unit, other, value in ((right, left, on_right), (left, right, on_left)):
        # one value broadcasts to the other's own shape where it has no more axes
        if value is not None and unit.size == 1 and unit.ndim <= other.ndim and \
                unit.item() == value:
            return other
    return None


def _lookup(node: ast.Subscript, values: dict[str, np.ndarray]) -> Value:
    table = values[_TABLE + node.value.id]  # a Name: _check_node saw to it
    computed = [_compute(index, values) for index in _indices(node)]
    indices = [_int(index) for index, _ in computed]
    bad = np.bool_(False)
    for index, size in zip(indices, table.shape, strict=True):
        bad = bad | (index < 0) | (index >= size)
    here = np.where(bad, 3, 0).astype(np.int8) if np.any(bad) else None
    found = table[tuple(np.where(bad, 0, index) for index in indices)]
    return np.asarray(found), _first(*(fault for _, fault in computed), here)
