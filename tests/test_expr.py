import operator
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from probelab.expr import ExprError, compile_program

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def wrap(v: int) -> int:
    """Reduce a Python int to int64 two's complement."""
    return (v + 2**63) % 2**64 - 2**63


def run(source: str, **env) -> np.ndarray:
    program = compile_program([("f", source)], env)
    return program.evaluate(env)["f"]


# Small grid: x down the rows, y across the columns; y avoids 0 so // and % are defined.
X = np.arange(-5, 6).reshape(-1, 1)
Y = np.array([1, 2, 3, -4])


def expected(fn) -> np.ndarray:
    return np.array([[wrap(fn(int(x), int(y))) for y in Y] for x in X[:, 0]])


BINARY = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "//": operator.floordiv,
    "%": operator.mod,
    "&": operator.and_,
    "|": operator.or_,
    "^": operator.xor,
    "==": lambda a, b: int(a == b),
    "!=": lambda a, b: int(a != b),
    "<": lambda a, b: int(a < b),
    "<=": lambda a, b: int(a <= b),
    ">": lambda a, b: int(a > b),
    ">=": lambda a, b: int(a >= b),
    "and": lambda a, b: int(bool(a and b)),
    "or": lambda a, b: int(bool(a or b)),
}


@pytest.mark.parametrize("op", BINARY)
def test_binary_operators(op):
    result = run(f"x {op} y", x=X, y=Y)
    assert result.dtype == np.int64
    assert np.array_equal(result, expected(BINARY[op]))


@pytest.mark.parametrize(
    ("source", "fn"),
    [
        ("x << (y & 3)", lambda x, y: x << (y & 3)),
        ("x >> (y & 3)", lambda x, y: x >> (y & 3)),
        ("x ** 3", lambda x, y: x**3),
        ("y ** 0", lambda x, y: 1),
        ("-x", lambda x, y: -x),
        ("+x", lambda x, y: x),
        ("~x", lambda x, y: ~x),
        ("not x", lambda x, y: int(not x)),
        ("x if y > 1 else -y", lambda x, y: x if y > 1 else -y),
        ("-2 <= x < y", lambda x, y: int(-2 <= x < y)),
        ("x < y == 2 != x", lambda x, y: int(x < y == 2 != x)),
        ("-2 ** 2 + 1 + 2 * 3", lambda x, y: -(2**2) + 1 + 2 * 3),
        ("x + 1 if x else y - 1", lambda x, y: (x + 1) if x else (y - 1)),
        ("0x10 + 0b11 + True - False", lambda x, y: 20),
    ],
)
def test_unary_conditional_and_precedence(source, fn):
    assert np.array_equal(run(source, x=X, y=Y), expected(fn))


def test_int64_wraparound():
    x = np.array([INT64_MIN, -1, 0, 3, 2**62, INT64_MAX])
    assert run("x + 1", x=x).tolist() == [wrap(v + 1) for v in x.tolist()]
    assert run("x * x", x=x).tolist() == [wrap(v * v) for v in x.tolist()]
    assert run("-x", x=x).tolist() == [wrap(-v) for v in x.tolist()]
    assert run("x ** 63", x=x).tolist() == [wrap(v**63) for v in x.tolist()]
    assert run("x << 63", x=x).tolist() == [wrap(v << 63) for v in x.tolist()]
    assert run("x // -1", x=x).tolist() == [wrap(v // -1) for v in x.tolist()]


def test_definitions_use_earlier_ones_in_order():
    program = compile_program({"a": "x + y", "b": "a * 2", "c": "b - a + x"}, ["x", "y"])
    assert program.definitions == (("a", "x + y"), ("b", "a * 2"), ("c", "b - a + x"))
    out = program.evaluate({"x": X, "y": Y})
    assert list(out) == ["a", "b", "c"]
    assert np.array_equal(out["c"], expected(lambda x, y: (x + y) + x))


def test_broadcasting_of_scalars_and_arrays():
    program = compile_program([("k", "7"), ("s", "x + y + z"), ("t", "z")], ["x", "y", "z"])
    out = program.evaluate({"x": np.arange(3).reshape(3, 1), "y": np.arange(4), "z": 10})
    assert all(v.shape == (3, 4) and v.dtype == np.int64 for v in out.values())
    assert np.array_equal(out["k"], np.full((3, 4), 7))
    assert np.array_equal(out["s"], np.arange(3).reshape(3, 1) + np.arange(4) + 10)
    out["k"][0, 0] = 0  # outputs are independent, writable arrays
    assert out["t"][0, 0] == 10
    scalars = program.evaluate({"x": 1, "y": np.int8(2), "z": True})
    assert scalars["s"].shape == () and int(scalars["s"]) == 4


def test_uint_inputs_are_widened_not_wrapped():
    x = np.array([0xFFFFFFFF, 0, 1, 0x80000000], dtype=np.uint32)
    assert run("x + 1", x=x).tolist() == [0x100000000, 1, 2, 0x80000001]
    assert run("~x & 0xFFFFFFFF", x=x).tolist() == [0, 0xFFFFFFFF, 0xFFFFFFFE, 0x7FFFFFFF]
    assert run("x >> 31", x=x).tolist() == [1, 0, 0, 1]
    assert run("x", x=np.array([2**64 - 1], dtype=np.uint64)).tolist() == [-1]


def test_guarded_operands_are_only_evaluated_where_python_would():
    x, y = np.array([7, -7, 7, 5]), np.array([2, 0, -3, 70])
    assert run("x // y if y else 0", x=x, y=y).tolist() == [3, 0, -3, 0]
    assert run("y != 0 and x % y == 1", x=x, y=y).tolist() == [1, 0, 0, 0]
    assert run("y == 0 or x // y < 0", x=x, y=y).tolist() == [0, 1, 1, 0]
    assert run("64 > y >= 0 <= x << y", x=x, y=y).tolist() == [1, 0, 0, 0]


def test_environment_errors():
    program = compile_program({"f": "x + y"}, ["x", "y"])
    with pytest.raises(ExprError, match="'y' is missing"):
        program.evaluate({"x": 1})
    with pytest.raises(ExprError, match="must be integers"):
        program.evaluate({"x": np.array([1.5]), "y": 1})
    with pytest.raises(ExprError, match="broadcast"):
        program.evaluate({"x": np.arange(3), "y": np.arange(4)})


# --- PTX prmt.b32, default mode -------------------------------------------------------------

PRMT = {"v": "y << 32 | x"}
for k in range(4):
    PRMT[f"n{k}"] = f"selector >> {4 * k} & 0xF"
    PRMT[f"b{k}"] = f"v >> 8 * (n{k} & 7) & 0xFF"
    PRMT[f"r{k}"] = f"(0xFF if b{k} & 0x80 else 0) if n{k} & 8 else b{k}"
PRMT["d"] = "r0 | r1 << 8 | r2 << 16 | r3 << 24"


def prmt_reference(x: int, y: int, selector: int) -> int:
    source = (y << 32 | x).to_bytes(8, "little")
    result = 0
    for k in range(4):
        nibble = (selector >> 4 * k) & 0xF
        byte = source[nibble & 7]
        if nibble & 8:
            byte = 0xFF if byte & 0x80 else 0
        result |= byte << 8 * k
    return result


def prmt_inputs(n: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(1234)
    return {c: rng.integers(0, 2**32, n, dtype=np.uint32) for c in ("x", "y", "selector")}


def test_prmt_default_mode_matches_reference():
    env = prmt_inputs(4000)
    got = compile_program(PRMT, env).evaluate(env)["d"]
    want = [prmt_reference(*map(int, cell)) for cell in zip(*env.values(), strict=True)]
    assert got.tolist() == want


def test_evaluation_is_vectorized():
    env = prmt_inputs(1_000_000)
    program = compile_program(PRMT, env)
    start = time.perf_counter()
    program.evaluate(env)
    assert time.perf_counter() - start < 5  # a per-cell interpreter would take minutes


# --- rejection ------------------------------------------------------------------------------

ESCAPES = [
    ("x.__class__", "attribute"),
    ("().__class__.__bases__", "attribute"),
    ("__import__('os')", "call"),
    ("open('f')", "call"),
    ("x[0]", "subscript"),
    ("lambda: 1", "lambda"),
    ("[i for i in x]", "comprehension"),
    ("(y := 1)", ":="),
    ("f'{x}'", "f-string"),
    ("'s'", "integer literals"),
    ("b's'", "integer literals"),
    ("None", "integer literals"),
    ("1j", "integer literals"),
    ("1.5", "integer literals"),
    ("...", "integer literals"),
    ("x / 2", "true division"),
    ("2 ** 100000", "exponent"),
    ("x ** y", "exponent"),
    ("x ** -1", "exponent"),
    ("x ** 64", "exponent"),
    ("2 ** 3 ** 2", "exponent"),
    ("x is y", "'is'"),
    ("x in y", "'in'"),
    ("x @ y", "'@'"),
    ("(x, y)", "Tuple"),
    ("*x", "syntax"),
    ("z", "unknown name 'z'"),
    ("print", "unknown name"),
    ("_x", "_x"),
    ("__builtins__", "__builtins__"),
    ("9223372036854775808", "int64"),
    ("-0x8000000000000000", "int64"),
    ("x +", "syntax"),
    ("", "syntax"),
    ("x = 1", "syntax"),
    ("(" * 10_000 + "1" + ")" * 10_000, "characters"),
    ("(" * 65 + "1" + ")" * 65, "brackets"),
    ("[" * 3000, "brackets"),
    ("x" * 100_000, "characters"),
    ("1+" * 50_000 + "1", "characters"),
    ("-" * 4000 + "x", "deeper|parse"),
    ("not " * 200 + "x", "deeper"),
    ("x if x else " * 300 + "x", "deeper"),
    ("x<" * 1100 + "x", "nodes"),
    ("x\x00", "null byte"),
]


@pytest.mark.parametrize(("source", "why"), ESCAPES)
def test_escapes_and_malformed_sources_are_rejected(source, why):
    with pytest.raises(ExprError, match=rf"definition 'f': .*(?i:{why})"):
        compile_program([("f", source)], ["x", "y"])


def test_non_str_source_is_rejected():
    with pytest.raises(ExprError, match="must be str"):
        compile_program([("f", b"x")], ["x"])


def test_indented_source_is_accepted():
    assert run("\n    x + 1\n", x=np.array([1])).tolist() == [2]


@pytest.mark.parametrize(
    ("definitions", "why"),
    [
        ({"a": "b + 1", "b": "1"}, "forward reference to 'b'"),
        ({"a": "a + 1"}, "refers to itself"),
        ({"1a": "1"}, "identifier"),
        ({"": "1"}, "identifier"),
        ({"a b": "1"}, "identifier"),
        ({"if": "1"}, "keyword"),
        ({"None": "1"}, "keyword"),
        ({"_a": "1"}, "start with '_'"),
        ({"x": "1"}, "clashes with a coordinate"),
        ([("a", "1"), ("a", "2")], "defined twice"),
        ([(3, "1")], "identifier"),
        ({"\N{MATHEMATICAL BOLD SMALL A}": "1"}, "ASCII"),
        ({"\N{CYRILLIC SMALL LETTER HA}": "1"}, "ASCII"),  # reads as 'x'
        ({"a": "\N{CYRILLIC SMALL LETTER HA} + 1"}, "not ASCII"),
        ([("a", "1", "2")], "pair"),
        ({f"d{i}": "1" for i in range(513)}, "at most 512"),
        ({"a": "1", "b": "x.y"}, "attribute"),  # checked up front, not when reached
    ],
)
def test_bad_definitions_are_rejected(definitions, why):
    with pytest.raises(ExprError, match=why):
        compile_program(definitions, ["x"])


# --- evaluation errors ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "why"),
    [
        ("x // y", "by zero"),
        ("x % y", "by zero"),
        ("x << y - 3", "shift"),
        ("x >> y - 1", "shift"),
        ("x << y + 63", "shift"),
        ("x >> 64 + y", "shift"),
        ("1 // (x - x)", "by zero"),
    ],
)
def test_evaluation_errors_name_the_definition(source, why):
    # y is zero in exactly one cell, so only that cell fails.
    program = compile_program([("ok", "x"), ("bad", source)], ["x", "y"])
    env = {"x": np.array([[5], [6]]), "y": np.array([3, 0, 2])}
    with pytest.raises(ExprError, match=f"definition 'bad': .*{why}"):
        program.evaluate(env)


# --- fuzzing --------------------------------------------------------------------------------

FUZZ_ENV = {"x": np.arange(-3, 4), "y": np.arange(3).reshape(3, 1)}
TOKENS = [
    "x", "y", "a", "0", "1", "7", "63", "64", "0x", "0b1", "9" * 25, "1.5", "(", ")", "[", "]",
    "**", "*", "//", "/", "%", "<<", ">>", "&", "|", "^", "~", "-", "+", "<", "<=", "==", "!=",
    "not", "and", "or", "if", "else", ".", "__class__", "_", ",", ":", "lambda", ":=", "'", "is",
    "in", "True", "None", " ", "\n", "\\", "#", "{", "}", "f'", "@",
]  # fmt: skip
token_soup = st.builds(
    lambda sep, parts: sep.join(parts),
    st.sampled_from(["", " "]),
    st.lists(st.sampled_from(TOKENS), max_size=40),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(st.text(max_size=200), token_soup), token_soup)
def test_fuzzed_sources_only_ever_raise_expr_error(first, second):
    try:
        program = compile_program([("a", first), ("b", second)], FUZZ_ENV)
    except ExprError:
        return
    try:
        out = program.evaluate(FUZZ_ENV)
    except ExprError:
        return
    assert all(v.shape == (3, 7) and v.dtype == np.int64 for v in out.values())


class Undefined(Exception):
    """The reference hit a division by zero or an out-of-range shift."""


ARITH = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "&": operator.and_,
    "|": operator.or_,
    "^": operator.xor,
}
COMPARE = {
    "==": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}


def reference(tree: tuple, env: dict[str, int]) -> int:
    """Per-cell Python-int semantics with int64 wraparound, short-circuiting like Python."""
    kind, *args = tree
    if kind == "lit":
        return args[0]
    if kind == "name":
        return env[args[0]]
    if kind == "unary":
        value = reference(args[1], env)
        return {"-": wrap(-value), "+": value, "~": ~value, "not ": int(not value)}[args[0]]
    if kind == "pow":
        return wrap(reference(args[0], env) ** args[1])
    if kind == "binary":
        op, a, b = args[0], reference(args[1], env), reference(args[2], env)
        if op in ARITH:
            return wrap(ARITH[op](a, b))
        if op in ("//", "%"):
            if b == 0:
                raise Undefined
            return wrap(a // b if op == "//" else a % b)
        if not 0 <= b <= 63:
            raise Undefined
        return wrap(a << b) if op == "<<" else a >> b
    if kind == "compare":
        left = reference(args[0], env)
        for op, operand in args[1]:
            right = reference(operand, env)
            if not COMPARE[op](left, right):
                return 0
            left = right
        return 1
    if kind == "and":
        return int(all(reference(v, env) != 0 for v in args[0]))  # all() short-circuits
    if kind == "or":
        return int(any(reference(v, env) != 0 for v in args[0]))
    test, body, orelse = args
    return reference(body, env) if reference(test, env) != 0 else reference(orelse, env)


def render(tree: tuple) -> str:
    kind, *args = tree
    if kind == "lit":
        return f"({args[0]})"
    if kind == "name":
        return args[0]
    if kind == "unary":
        return f"({args[0]}{render(args[1])})"
    if kind == "pow":
        return f"({render(args[0])} ** {args[1]})"
    if kind == "binary":
        return f"({render(args[1])} {args[0]} {render(args[2])})"
    if kind == "compare":
        parts = [render(args[0])]
        for op, operand in args[1]:
            parts += [op, render(operand)]
        return f"({' '.join(parts)})"
    if kind in ("and", "or"):
        return "(" + f" {kind} ".join(render(v) for v in args[0]) + ")"
    test, body, orelse = args
    return f"({render(body)} if {render(test)} else {render(orelse)})"


def extend(children: st.SearchStrategy) -> st.SearchStrategy:
    operands = st.lists(children, min_size=2, max_size=3)
    return st.one_of(
        st.tuples(st.just("unary"), st.sampled_from(["-", "+", "~", "not "]), children),
        st.tuples(st.just("pow"), children, st.sampled_from([0, 1, 2, 3, 63])),
        st.tuples(
            st.just("binary"),
            st.sampled_from([*ARITH, "//", "%", "<<", ">>"]),
            children,
            children,
        ),
        st.tuples(
            st.just("compare"),
            children,
            st.lists(st.tuples(st.sampled_from(list(COMPARE)), children), min_size=1, max_size=2),
        ),
        st.tuples(st.sampled_from(["and", "or"]), operands),
        st.tuples(st.just("if"), children, children, children),
    )


trees = st.recursive(
    st.one_of(
        st.tuples(st.just("lit"), st.integers(-9, 70)),
        st.tuples(st.just("name"), st.sampled_from(["x", "y"])),
    ),
    extend,
    max_leaves=12,
)
GRID_X = [INT64_MIN, -9, -1, 0, 1, 2, 3, 63, INT64_MAX]
GRID_Y = [-2, 0, 1, 5, 64, 2**40]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(trees)
def test_random_expressions_match_python_reference(tree):
    program = compile_program([("f", render(tree))], ["x", "y"])
    env = {"x": np.array(GRID_X).reshape(-1, 1), "y": np.array(GRID_Y)}
    try:
        want = [[reference(tree, {"x": x, "y": y}) for y in GRID_Y] for x in GRID_X]
    except Undefined:
        with pytest.raises(ExprError, match=r"by zero|shift"):
            program.evaluate(env)
        return
    assert program.evaluate(env)["f"].tolist() == want


# --- constant tables (a layout given as an explicit table: probelab.layouts) ---------------

TABLE = np.arange(12).reshape(3, 4) * 10


def test_a_table_is_read_one_index_per_axis_and_faults_only_where_read() -> None:
    x = np.arange(-2, 6)
    program = compile_program([("f", "t[x % 3, x // 3] if 0 <= x < 6 else -1")], ["x"],
                              {"t": TABLE})
    assert program.evaluate({"x": x})["f"].tolist() == [-1, -1, 0, 40, 80, 10, 50, 90]
    outside = compile_program([("f", "t[x, 0]")], ["x"], {"t": TABLE})
    with pytest.raises(ExprError, match="table index outside the table"):
        outside.evaluate({"x": x})


@pytest.mark.parametrize(("source", "why"), [
    ("t[x]", "takes 2 integer indices"), ("t", "unknown name 't'"), ("u[x, 0]", "subscripts"),
    ("t[0:1, 0]", "Slice"), ("t[x, y]", "unknown name 'y'"), ("x[0]", "subscripts"),
])
def test_a_table_is_only_a_lookup(source: str, why: str) -> None:
    with pytest.raises(ExprError, match=why):
        compile_program([("f", source)], ["x"], {"t": TABLE})


def test_without_tables_a_subscript_is_refused_as_ever() -> None:
    with pytest.raises(ExprError, match="not allowed: subscripts"):
        compile_program([("f", "t[0, 0]")], ["t"])


def test_a_program_is_compiled_once_per_sources_names_and_tables():
    """Claims compile the same sources for every grid and observable: the program is kept
    under all it is compiled from (the definitions, the coordinates in order, each table's
    shape and values); anything else compiles afresh, and a refused source is refused again."""
    table = np.arange(4)
    first = compile_program([("x", "a + T[a]")], ["a"], {"T": table})
    assert compile_program({"x": "a + T[a]"}, ("a",), {"T": table.copy()}) is first
    assert compile_program([("x", "a + T[a]")], ["a", "b"], {"T": table}) is not first
    other = compile_program([("x", "a + T[a]")], ["a"], {"T": table + 1})
    assert other is not first
    env = {"a": np.array([1, 2])}
    assert first.evaluate(env)["x"].tolist() == [2, 4]
    assert other.evaluate(env)["x"].tolist() == [3, 5]
    for _ in range(2):
        with pytest.raises(ExprError, match="unknown name"):
            compile_program([("x", "a + c")], ["a"])
    listed = compile_program([["x", "a + 1"]], ["a"])  # a list is no key: compiled, not kept
    assert listed.evaluate(env)["x"].tolist() == [2, 3]
    assert compile_program([["x", "a + 1"]], ["a"]) is not listed


@pytest.mark.parametrize("source", [
    "x // e", "x * e", "e * x", "x + z", "z + x", "x - z", "x << z", "x >> z", "x | z",
    "z | x", "x ^ z", "z ^ x", "x & m", "m & x", "(x // e) * e + z", "x < y < x + z",
    "y > z < x"])
def test_an_operand_that_leaves_the_other_unchanged_gives_the_same_values(source: str) -> None:
    """x // 1, 1 * x, x + 0, x << 0, x & -1 ... give the other operand itself (no pass over
    it): the same values, dtype and shape as numpy's operation, at the ends of int64 too, and
    a one-value operand with more axes than the other still broadcasts it."""
    x = np.array([np.iinfo(np.int64).min, -7, -1, 0, 1, 63, np.iinfo(np.int64).max])
    y = np.arange(7)[::-1]
    for e, z, m in ((1, 0, -1), (np.ones((1, 1), np.int64), np.zeros((1, 1), np.int64),
                                 np.full((1, 1), -1))):
        env = {"x": x, "y": y, "e": e, "z": z, "m": m}
        got = compile_program([("v", source)], env).evaluate(env)["v"]
        ints = {k: np.asarray(v, np.int64) for k, v in env.items()}
        python = {"x < y < x + z": "(x < y) & (y < x + z)", "y > z < x": "(y > z) & (z < x)"}
        with np.errstate(all="ignore"):
            want = eval(python.get(source, source), {}, ints)  # numpy's own operations
        assert got.dtype == np.int64
        assert got.shape == np.shape(want)
        assert (got == want).all()
