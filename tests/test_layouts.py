"""Layouts in the field's own notation (probelab.layouts) and a hypothesis file's [layout].

The definitions checked against, with the sources they were read from:
- CuTe's crd2idx: include/cute/stride.hpp (NVIDIA/cutlass df357b890e3deed2c11a46bcac9ae16da3e8a435):
  an integer coordinate is split over a tuple mode's sub-modes, first fastest, the last
  sub-mode taking the rest unreduced.
- CuTe's Swizzle<B,M,S>::apply: include/cute/swizzle.hpp (NVIDIA/cutlass
  d572cc1aabfcbd45944219fb8690f0e49e22b5a3), with shiftr from include/cute/numeric/math.hpp
  (6433f9917fa6dc8a0b65c617182e09b524dafebb).
- Triton's LinearLayout: include/triton/Tools/LinearLayout.h (triton-lang/triton
  c2f40ae5d44b6ac72da54c15286841fe301ec188): bases[inDim][i] is the image of inDim = 2**i.
"""

import hashlib
import itertools
import time
import tomllib
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

from probelab.errors import UsageError
from probelab.expr import compile_program
from probelab.hypothesis import _claim_key, parse_hypothesis, predict
from probelab.layouts import (
    MAX_TABLE_BYTES,
    Cute,
    evaluate,
    parse_cute,
    parse_linear,
    parse_table,
    read_table,
)
from probelab.probe import catalog

ROOT = Path(__file__).resolve().parents[1]
TRAITS = ROOT / "preregistrations" / "mma-f16-f32" / "cute-traits.toml"


# -- independent references ------------------------------------------------------------------

def crd2idx(x: int, shape, stride) -> int:
    """CuTe's crd2idx of an integer coordinate, transcribed from stride.hpp's recursion."""
    if isinstance(shape, int):
        return x * stride
    total = 0
    for i, (s, d) in enumerate(zip(shape, stride, strict=True)):
        size = int(np.prod(list(leaves(s))))
        last = i == len(shape) - 1
        total += crd2idx(x if last else x % size, s, d)
        x //= size
    return total


def leaves(shape):
    if isinstance(shape, int):
        yield shape
    else:
        for s in shape:
            yield from leaves(s)


def swizzle(offset: int, b: int, m: int, s: int) -> int:
    """Swizzle<B,M,S>::apply: offset ^ shiftr(offset & yyy_msk, S)."""
    yyy = ((1 << b) - 1) << (m + max(0, s))
    picked = offset & yyy
    return offset ^ (picked >> s if s >= 0 else picked << -s)


def linear(bases: dict[str, list[list[int]]], inputs: dict[str, int]) -> list[int]:
    width = len(next(iter(bases.values()))[0])
    out = [0] * width
    for dim, vectors in bases.items():
        for bit, v in enumerate(vectors):
            if inputs[dim] >> bit & 1:
                out = [o ^ e for o, e in zip(out, v, strict=True)]
    return out


# -- CuTe ------------------------------------------------------------------------------------

CUTE = ["32:1", "(8,64):(64,1)", "((4,8),(2,2,2)):((32,1),(16,8,128))", "(4,(2,3)):(0,(1,8))",
        "((2,(2,2)),3):((1,(0,4)),-2)", "((8,64)):((64,1))", "(3,1,5):(7,100,1)"]


@pytest.mark.parametrize("text", CUTE)
def test_cute_is_crd2idx_over_its_whole_domain_and_past_it(text: str) -> None:
    layout = parse_cute(text)
    modes = [(layout.shape, layout.stride)] if isinstance(layout.shape, int) else \
        list(zip(layout.shape, layout.stride, strict=True))
    # each input past its mode's extent too: CuTe extends along the last sub-mode
    ranges = [range(-3, 2 * int(np.prod(list(leaves(s)))) + 1) for s, _ in modes]
    grids = np.meshgrid(*(np.array(r) for r in ranges), indexing="ij")
    got = evaluate(layout, *grids)[0]
    for at in itertools.product(*(range(len(r)) for r in ranges)):
        coords = [r[i] for r, i in zip(ranges, at, strict=True)]
        assert got[at] == sum(crd2idx(c, s, d) for c, (s, d) in
                              zip(coords, modes, strict=True)), (text, coords)


@pytest.mark.parametrize("text", CUTE)
def test_cute_text_is_canonical_and_parses_back(text: str) -> None:
    layout = parse_cute(text)
    assert layout.text() == text
    assert parse_cute(layout.text()) == layout


def test_cute_reads_cute_print_spelling_and_spaces() -> None:
    assert parse_cute("(_8, _64) : (_64, _1)") == parse_cute("(8,64):(64,1)")
    assert parse_cute("Sw<3,4,3> o (8,64):(64,1)").text() == "Swizzle<3,4,3> o (8,64):(64,1)"
    assert parse_cute("S<3,4,3> o (8,64):(64,1)") == parse_cute("Swizzle<3,4,3> o (8,64):(64,1)")


def test_cute_strings_are_the_cute_traits_hand_typed_lets() -> None:
    """cute-traits.toml transcribes CuTe's MMA traits by hand; the CuTe strings its claim
    quotes give the same indices over every (thread, value) of the grid."""
    lets = dict(tomllib.loads(TRAITS.read_text())["let"])
    cases = {"a_idx": ("((4,8),(2,2,2)):((32,1),(16,8,128))", 8),
             "b_idx": ("((4,8),(2,2)):((16,1),(8,64))", 4),
             "d_idx": ("((4,8),(2,2)):((32,1),(16,8))", 4)}
    for name, (text, regs) in cases.items():
        lane, reg = np.meshgrid(np.arange(32), np.arange(regs), indexing="ij")
        env = {f"{name[0]}_lane": lane, f"{name[0]}_reg": reg}
        typed = compile_program([(name, lets[name])], env).evaluate(env)[name]
        assert np.array_equal(evaluate(parse_cute(text), lane, reg)[0], typed), name


@pytest.mark.parametrize(("bits", "width", "rule"), [
    (3, 128, lambda r: r & 7), (2, 64, lambda r: (r >> 1) & 3), (1, 32, lambda r: (r >> 2) & 1)])
def test_swizzles_of_byte_offsets_are_cutes_and_the_16_byte_chunk_rule(bits, width, rule) -> None:
    """Swizzle<B,4,3> on byte offsets of rows `width` bytes long (128B, 64B and 32B
    swizzles): 16-byte chunk c of row r lands at chunk c ^ rule(r), bytes within a chunk in
    place; and the whole map is CuTe's apply."""
    layout = parse_cute(f"Swizzle<{bits},4,3> o ({width},32):(1,{width})")
    byte, row = np.meshgrid(np.arange(width), np.arange(32), indexing="ij")
    got = evaluate(layout, byte, row)[0]
    chunk, within = byte // 16, byte % 16
    assert np.array_equal(got, row * width + (chunk ^ rule(row)) * 16 + within)
    assert np.array_equal(got, np.vectorize(swizzle)(row * width + byte, bits, 4, 3))
    assert sorted(got.ravel()) == list(range(32 * width))  # a permutation of the rows


@pytest.mark.parametrize("params", [(2, 0, 3), (2, 1, -3), (3, 2, -4), (1, 5, 1), (0, 3, 2)])
def test_swizzle_is_cutes_apply_for_either_sign_of_shift(params) -> None:
    b, m, s = params
    layout = parse_cute(f"Swizzle<{b},{m},{s}> o 4096:1")
    x = np.arange(4096)
    assert np.array_equal(evaluate(layout, x)[0], [swizzle(int(v), b, m, s) for v in x])


# -- linear ----------------------------------------------------------------------------------

def test_linear_is_the_4x4_example_of_triton_linear_layout_h() -> None:
    """The (thread, warp) -> (x, y) table LinearLayout.h works out from L(1,0) = (1,1),
    L(2,0) = (2,2), L(0,1) = (0,1), L(0,2) = (0,2)."""
    layout = parse_linear({"t": [[1, 1], [2, 2]], "w": [[0, 1], [0, 2]]})
    t, w = np.meshgrid(np.arange(4), np.arange(4), indexing="ij")
    x, y = evaluate(layout, t, w)
    assert np.array_equal(x, t) and np.array_equal(y, w ^ t)


def test_linear_is_the_xor_of_the_basis_vectors_of_its_set_bits() -> None:
    bases = {"lane": [[0, 1], [0, 2], [0, 4], [1, 0], [2, 0]], "register": [[0, 8], [4, 0]],
             "warp": [[0, 0], [8, 3]]}
    layout = parse_linear(bases)
    lane, reg, warp = np.meshgrid(np.arange(32), np.arange(4), np.arange(4), indexing="ij")
    got = evaluate(layout, lane, reg, warp)
    for i in itertools.product(range(32), range(4), range(4)):
        want = linear(bases, dict(zip(["lane", "register", "warp"], i, strict=True)))
        assert [int(g[i]) for g in got] == want
    # linear over F2: L(a ^ b) = L(a) ^ L(b), and bits past a dim's bases are not read
    a, b = (7, 2, 1), (20, 3, 3)
    both = evaluate(layout, *(p ^ q for p, q in zip(a, b, strict=True)))
    assert [int(v) for v in both] == [int(p) ^ int(q) for p, q in
                                      zip(evaluate(layout, *a), evaluate(layout, *b),
                                          strict=True)]
    assert [int(v) for v in evaluate(layout, 32 + 5, 4 + 1, 8 + 2)] == \
        [int(v) for v in evaluate(layout, 5, 1, 2)]


def test_linear_text_is_the_toml_it_was_given() -> None:
    bases = {"lane": [[0, 1], [1, 0]], "register": [[0, 0]]}
    layout = parse_linear(bases)
    assert tomllib.loads(f"x = {layout.text()}")["x"] == bases
    assert parse_linear(tomllib.loads(f"x = {layout.text()}")["x"]) == layout
    # a dim that maps to nothing is still an input (checked, like every expression)
    assert "register" not in layout.sources(["lane", "register"])[1]
    assert "register * 0" in " ".join(layout.sources(["lane", "register"]))


# -- tables ----------------------------------------------------------------------------------

def csv(rows: list[list[int]], header: str = "lane,reg,m,n") -> bytes:
    return (header + "\n" + "\n".join(",".join(map(str, r)) for r in rows) + "\n").encode()


def d_rows() -> list[list[int]]:
    """mma's m16n8 D fragment: (lane, reg) -> (m, n), listed in a shuffled order."""
    rows = [[lane, reg, lane // 4 + 8 * (reg // 2), 2 * (lane % 4) + reg % 2]
            for lane in range(32) for reg in range(4)]
    return [rows[i] for i in np.random.default_rng(1).permutation(len(rows))]


def test_a_table_is_looked_up_and_an_input_outside_it_faults(tmp_path: Path) -> None:
    raw = csv(d_rows())
    (tmp_path / "d.csv").write_bytes(raw)
    table = read_table(tmp_path, "d.csv", hashlib.sha256(raw).hexdigest(), 2)
    assert table.header == ("lane", "reg", "m", "n") and table.values.shape == (32, 4, 2)
    lane, reg = np.meshgrid(np.arange(32), np.arange(4), indexing="ij")
    m, n = evaluate(table, lane, reg)
    assert np.array_equal(m, lane // 4 + 8 * (reg // 2))
    assert np.array_equal(n, 2 * (lane % 4) + reg % 2)
    again = parse_table(table.text().encode(), 2)  # the canonical text reads back
    assert again.header == table.header and np.array_equal(again.values, table.values)
    assert again.text() == table.text()
    with pytest.raises(UsageError, match="table index outside the table"):
        evaluate(table, np.arange(33), 0)


@pytest.mark.parametrize(("rows", "why"), [
    (d_rows()[:-1], "some are missing"),
    ([*d_rows(), [3, 1, 0, 0]], "an input tuple repeats"),
    ([*d_rows()[:-1], [-1, 0, 0, 0]], "a negative input"),
])
def test_a_table_must_hold_each_input_tuple_once(tmp_path: Path, rows, why: str) -> None:
    with pytest.raises(UsageError, match=why):
        parse_table(csv(rows), 2)


def test_a_table_is_refused_unless_its_bytes_are_the_pinned_ones(tmp_path: Path) -> None:
    raw = csv(d_rows())
    (tmp_path / "d.csv").write_bytes(raw)
    with pytest.raises(UsageError, match="sha256 is"):
        read_table(tmp_path, "d.csv", "0" * 64, 2)
    for bad in ("/etc/passwd", "../d.csv", ""):
        with pytest.raises(UsageError, match="relative path"):
            read_table(tmp_path, bad, hashlib.sha256(raw).hexdigest(), 2)
    big = b"a,b\n" + b"1,1\n" * (MAX_TABLE_BYTES // 4)
    (tmp_path / "big.csv").write_bytes(big)
    with pytest.raises(UsageError, match="more than"):
        read_table(tmp_path, "big.csv", hashlib.sha256(big).hexdigest(), 1)
    for raw, why in ((b"a,b\n1,x\n", "line 2"), (b"a\n1\n", "line 1"), ("a,b\n1,\u00e9\n"
                     .encode(), "not ASCII")):
        with pytest.raises(UsageError, match=why):
            parse_table(raw, 1)


# -- malformed, and bounded ------------------------------------------------------------------

@pytest.mark.parametrize(("text", "where"), [
    ("(4,8):(1)", "character 7"), ("(4,8:(1,4)", "character 5"), ("(4,8):(1,4))", "character 12"),
    ("(4,8)(1,4)", "character 6"), ("(4,,8):(1,4)", "character 4"), ("", "character 1"),
    ("Swizzle<3,4> o 8:1", "character 12"), ("Swizzle<3,4,3> 8:1", "character 16"),
    ("Foo<1,1,1> o 8:1", "character 4"), ("(4,-8):(1,4)", "character 4"),
    ("(4,8):(1,4.0)", "character 11"), ("(((((1))))):(((((1)))))", "character 5"),
    ("(0,4):(1,1)", "character 1"), ("Swizzle<3,4,2> o 8:1", "|S| >= B"),
])
def test_a_malformed_cute_layout_is_refused_naming_where(text: str, where: str) -> None:
    with pytest.raises(UsageError, match=where.replace("|", r"\|")) as caught:
        parse_cute(text)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize("text", ["(4294967296,1):(1,1)", "(65537,1):(1,1)",
                                  "(1" + "0" * 5000 + ",1):(1,1)", "(" * 100_000,
                                  "(" + ",".join(["2"] * 10_000) + "):(1)",
                                  "(65536,65536,2):(1,1,1)", "8:" + "9" * 30])
def test_huge_layouts_are_refused_before_any_work(text: str) -> None:
    started = time.perf_counter()
    with pytest.raises(UsageError):
        parse_cute(text)
    assert time.perf_counter() - started < 0.5  # a parse of the whole would take far longer


@pytest.mark.parametrize(("spec", "why"), [
    ({}, "a table of input dims"), ({"lane": []}, "non-empty"),
    ({"lane": [[1, 0], [1]]}, r"lane\[1\]: 1 outputs"), ({"lane": [[-1]]}, r"lane\[0\]\[0\]"),
    ({"lane": [[1.5]]}, r"lane\[0\]\[0\]"), ({"lane": [[1 << 40]]}, "integer in"),
    ({"lane": [[1]] * 33}, "more than 32"), ({"_x": [[1]]}, "name"),
])
def test_a_malformed_linear_layout_is_refused_naming_where(spec, why: str) -> None:
    with pytest.raises(UsageError, match=why):
        parse_linear(spec)


# -- [layout] in hypothesis files ------------------------------------------------------------

LAYOUTS = """
[layout.a_idx]
cute = "((4,8),(2,2,2)):((32,1),(16,8,128))"
of = ["a_lane", "a_reg"]
[layout.b]
linear = { lane = [[16],[32],[1],[2],[4]], register = [[8],[64]] }
of = { lane = "b_lane", register = "b_reg" }
out = ["b_idx"]
[layout.d]
table = "tables/d.csv"
sha256 = "SHA"
of = ["d_lane", "d_reg"]
out = ["d_idx"]
"""


def restated(tmp_path: Path, layouts: str = LAYOUTS) -> Path:
    """cute-traits.toml with its hand-typed a_idx, b_idx, d_idx given as a CuTe layout, a
    linear layout and a table instead."""
    rows = [[lane, reg, 32 * (lane % 4) + lane // 4 + 16 * (reg % 2) + 8 * (reg // 2)]
            for reg in range(4) for lane in range(32)]
    raw = csv(rows, "lane,reg,idx")
    (tmp_path / "tables").mkdir(exist_ok=True)
    (tmp_path / "tables" / "d.csv").write_bytes(raw)
    text = TRAITS.read_text()
    lines = [line for line in text.splitlines() if not line.startswith(("a_idx", "b_idx",
                                                                       "d_idx"))]
    text = "\n".join(lines).replace("[let]", layouts.replace(
        "SHA", hashlib.sha256(raw).hexdigest()) + "\n[let]")
    path = tmp_path / "cute-traits.toml"
    path.write_text(text)
    return path


def test_a_restated_hypothesis_predicts_exactly_what_the_hand_typed_one_does(
        tmp_path: Path) -> None:
    probe = catalog().probes["mma-f16-f32"]
    grid = probe.stimulus()
    original = parse_hypothesis(TRAITS, TRAITS.read_bytes())
    path = restated(tmp_path)
    h = parse_hypothesis(path, path.read_bytes())
    assert [n for n, _ in h.lets][:3] == ["a_idx", "b_idx", "d_idx"]
    assert set(h.tables) == {"d"}
    want, got = predict(original, grid, probe.observables), predict(h, grid, probe.observables)
    assert want.keys() == got.keys() == {"literal", "cute_tv_to_lane_reg"}
    for scoring in want:
        assert want[scoring].keys() == got[scoring].keys()
        for name, table in want[scoring].items():
            assert np.array_equal(table, got[scoring][name]), (scoring, name)


def test_a_tables_values_are_part_of_the_claims_key(tmp_path: Path) -> None:
    path = restated(tmp_path)
    h = parse_hypothesis(path, path.read_bytes())
    other = tmp_path / "other"
    other.mkdir()
    moved = restated(other)
    raw = (other / "tables" / "d.csv").read_bytes().replace(b"\n0,0,0\n", b"\n0,0,1\n")
    (other / "tables" / "d.csv").write_bytes(raw)
    text = moved.read_text()
    old = hashlib.sha256((tmp_path / "tables" / "d.csv").read_bytes()).hexdigest()
    moved.write_text(text.replace(old, hashlib.sha256(raw).hexdigest()))
    changed = parse_hypothesis(moved, moved.read_bytes())
    grid = catalog().probes["mma-f16-f32"].stimulus()
    observables = catalog().probes["mma-f16-f32"].observables
    assert h.lets == changed.lets
    assert _claim_key(h, grid, observables)[0] != _claim_key(changed, grid, observables)[0]


@pytest.mark.parametrize(("layouts", "why"), [
    ('[layout.a]\ncute = "(4,8):(1"\nof = ["x"]', r"\[layout.a\] cute: character 9"),
    ('[layout.a]\ncute = "(4,8):(1,4)"\nof = ["x"]', "of: a list of 2 expressions"),
    ('[layout.a]\ncute = "8:1"\nof = ["x"]\nsize = 3', r"unknown keys \['size'\]"),
    ('[layout.a]\ncute = "8:1"\nlinear = {x = [[1]]}\nof = ["x"]', "exactly one of"),
    ('[layout.a]\ncute = "8:1"\nof = ["x"]\nout = ["a_m"]', r"\['a_m'\] also defined in \[let\]"),
    ('[layout.a]\ncute = "8:1"\nof = ["x"]\nout = ["p", "q"]', "2 names for 1 outputs"),
    ('[layout.a]\ncute = "8:1"\nof = ["x) + (y"]', r"of\[0\]: character 2 closes"),
    ('[layout.a]\nlinear = {x = [[1]]}\nof = {y = "a_lane"}', "each input dim"),
    ('[layout.a]\ntable = "t.csv"\nof = ["x"]', "sha256 goes with table"),
    ('[layout.a]\ntable = "t.csv"\nsha256 = "00"\nof = ["x"]', "64 lowercase hex"),
    ('[layout.a]\ntable = "none.csv"\nsha256 = "' + "0" * 64 + '"\nof = ["x"]', "cannot read"),
    ('[layout.a]\ncute = "8:1"\nof = ["x"]\n[layout.b]\ncute = "8:1"\nof = ["x"]\nout = ["a"]',
     r"\[layout.b\] out: \['a'\] also defined by an earlier layout"),
    ('[layout.a]\nlinear = {x = [[1, 2]]}\nof = {x = "a_lane"}\nout = ["p", "p"]',
     "a name given twice"),
])
def test_a_malformed_layout_table_is_refused_naming_file_and_place(
        tmp_path: Path, layouts: str, why: str) -> None:
    path = restated(tmp_path, layouts)
    with pytest.raises(UsageError, match=why) as caught:
        parse_hypothesis(path, path.read_bytes())
    assert str(caught.value).startswith(str(path)) and "\n" not in str(caught.value)


def test_a_layout_input_naming_nothing_known_is_refused_at_evaluation(tmp_path: Path) -> None:
    path = restated(tmp_path, LAYOUTS.replace('"a_reg"]', '"a_reg + nowhere"]'))
    h = parse_hypothesis(path, path.read_bytes())
    probe = catalog().probes["mma-f16-f32"]
    with pytest.raises(UsageError, match="definition 'a_idx': unknown name 'nowhere'"):
        predict(h, probe.stimulus(), probe.observables)


def test_every_sealed_file_parses_and_keys_as_before() -> None:
    """A sealed file without a [layout] (every one sealed before [layout] existed) parses to
    its own [let] and no tables, and its claim key reads exactly the fields it read before
    (compared once, out of this test, with the code before: every preregistration's fields
    and key alike); one with layouts (the restatements) has their helpers before its own."""
    def items(table):
        return tuple((k, items(v) if isinstance(v, dict) else v) for k, v in table.items())

    grid = xr.Dataset(coords={"x": ("x", np.arange(3))})
    files = sorted((ROOT / "preregistrations").glob("**/*.toml"))
    assert files
    for path in files:
        h = parse_hypothesis(path, path.read_bytes())
        doc = tomllib.loads(path.read_text())
        own = tuple(doc.get("let", {}).items())
        if "layout" in doc:
            outs = [out for name, spec in doc["layout"].items() for out in spec.get("out", [name])]
            assert [n for n, _ in h.lets] == [*outs, *(n for n, _ in own)], path
            assert h.lets[len(outs):] == own, path
            continue
        assert h.tables == {}
        assert h.lets == own
        before = (str(h.path), items(dict(h.predict)), h.lets, h.where,
                  items({k: dict(v) for k, v in h.translations.items()}),
                  items({k: dict(v) for k, v in h.near_misses.items()}), items(h.model or {}))
        assert _claim_key(h, grid, {o: ("x",) for o in h.predict})[0] == repr(before), path


def test_cute_is_a_dataclass_of_its_parts() -> None:
    assert parse_cute("Swizzle<3,4,3> o (8,64):(64,1)") == Cute((8, 64), (64, 1), (3, 4, 3))
