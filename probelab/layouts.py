"""Layouts in the field's own notation, expanded into the lab's expression language.

Three forms, each parsed strictly and at bounded cost (UsageError, one line, naming where):

- CuTe: ``SHAPE:STRIDE`` of congruent nested tuples of integers, e.g.
  ``((4,8),(2,2,2)):((32,1),(16,8,128))``, ``(8,64):(64,1)``, ``32:1`` (``_8`` as
  cute::print writes a static 8 is read as 8), optionally ``Swizzle<B,M,S> o LAYOUT`` (also
  ``Sw<..>``, ``S<..>``), and ``[Swizzle<B,M,S> o] OFFSET o LAYOUT``: an index offset added
  before the swizzle, the O of CuTe's ComposedLayout<A, O, B> (A(O + B(c)), printed ``A o O
  o B``, include/cute/layout_composed.hpp, NVIDIA/cutlass
  19e8990d24a80152ea33ca64ee003aca60b02928: a tile whose element (0, 0) is not at offset 0;
  without a swizzle, A is the identity). One coordinate per top-level mode; a mode's integer
  coordinate is split over its sub-modes colexicographically (first fastest) and the index
  is the sum of sub-coordinate x stride, the last sub-mode taking the rest of the coordinate
  unreduced, as crd2idx_itt does (include/cute/stride.hpp, NVIDIA/cutlass
  df357b890e3deed2c11a46bcac9ae16da3e8a435): outside its domain a layout extends linearly
  along each mode's last sub-mode. A stride may be 0 (broadcast). The swizzle is applied to
  the index: with bit_msk = 2**B - 1 and yyy_msk = bit_msk << (M + max(0, S)), offset ^
  shiftr(offset & yyy_msk, S), a negative S shifting left (Swizzle::apply in
  include/cute/swizzle.hpp, NVIDIA/cutlass d572cc1aabfcbd45944219fb8690f0e49e22b5a3; shiftr
  in include/cute/numeric/math.hpp, 6433f9917fa6dc8a0b65c617182e09b524dafebb).
- Linear (Triton's LinearLayout over F2): named input dims, each a list of basis vectors, the
  i-th being the image of input bit i (bit 0 first), one integer per output; an input's image
  is the XOR of the vectors of its set bits, XORed over the dims (the `bases` member of
  include/triton/Tools/LinearLayout.h, triton-lang/triton
  c2f40ae5d44b6ac72da54c15286841fe301ec188). Input bits past a dim's bases are not read.
- Table: a CSV file, a header line then one row per input tuple, the inputs' columns first
  and then the outputs'; every input runs over 0..n-1 and each tuple of them appears exactly
  once. It is pinned by its sha256 and read only through probelab.bounded. Evaluated as a
  lookup on a constant table of the expression language (probelab.expr: an input outside its
  range is a fault, as a division by zero is).

A layout compiles to expression sources over its inputs (`sources`), which is how a hypothesis
file's [layout] table becomes ordinary [let] helpers (`expand`); `evaluate` runs the same
sources, so the semantics live in one place. `text` renders a layout canonically.

    [layout.a_idx]                       # one let, a_idx, unless `out` names others
    cute = "((4,8),(2,2,2)):((32,1),(16,8,128))"
    of = ["a_lane", "a_reg"]             # one expression per top-level mode
    [layout.b]
    linear = { lane = [[0,1],[0,2],[0,4],[1,0],[2,0]], register = [[0,8],[4,0]] }
    of = { lane = "b_lane", register = "b_reg" }   # one expression per input dim
    out = ["b_n", "b_k"]                 # one let per output
    [layout.c]
    table = "tables/c.csv"               # relative to the hypothesis file's folder
    sha256 = "..."
    of = ["d_lane", "d_reg"]             # one expression per input column
    out = ["d_m", "d_n"]                 # one let per output column
"""

import hashlib
import keyword
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import NoReturn

import numpy as np

from probelab import bounded
from probelab.errors import UsageError
from probelab.expr import MAX_SOURCE_CHARS, ExprError, compile_program, is_ascii_name

MAX_CHARS = 512  # a CuTe layout's text
MAX_NESTING = 4  # tuples within tuples
MAX_MODES = 32  # integers in a shape
MAX_EXTENT = 1 << 16  # each extent
MAX_STRIDE = 1 << 32  # each stride's magnitude
MAX_SIZE = 1 << 32  # a layout's domain: the product of its extents
MAX_SWIZZLE_BITS = 48  # B + M + |S|: the swizzle stays within int64
MAX_DIMS = 8  # a linear layout's input dims, and its outputs
MAX_BITS = 32  # basis vectors of a linear layout, over all its dims
MAX_BASIS = 1 << 32  # each basis vector's entries: 0 <= v < MAX_BASIS
MAX_TABLE_BYTES = 1 << 20
MAX_TABLE_ROWS = 1 << 16
MAX_COLUMNS = 16
MAX_LAYOUTS = 16  # per hypothesis file
_DIGITS = 12  # an integer of more digits is past every bound: refused before int() reads it
_KEYS = {"cute", "linear", "table", "sha256", "of", "out"}

Shape = int | tuple["Shape", ...]


@dataclass(frozen=True)
class Cute:
    """SHAPE:STRIDE, maybe swizzled: one input per top-level mode, one output (the index)."""

    shape: Shape
    stride: Shape
    swizzle: tuple[int, int, int] | None = None  # (B, M, S)
    offset: int = 0  # added to the index before the swizzle (CuTe's ComposedLayout's O)

    @property
    def inputs(self) -> int:
        return len(self.shape) if isinstance(self.shape, tuple) else 1

    @property
    def outputs(self) -> int:
        return 1

    @property
    def sub_modes(self) -> int:
        """How many leaves its shape has: ((4,2,4),16) has 4, (32,16) has 2."""
        return len(_leaves(self.shape))

    def text(self) -> str:
        layout = f"{_render(self.shape)}:{_render(self.stride)}"
        if self.offset:
            layout = f"{self.offset} o {layout}"
        return layout if self.swizzle is None else \
            "Swizzle<{},{},{}> o {}".format(*self.swizzle, layout)

    def sources(self, of: Sequence[str]) -> list[str]:
        modes = [(self.shape, self.stride)] if isinstance(self.shape, int) else \
            list(zip(self.shape, self.stride, strict=True))
        terms = [t for (shape, stride), x in zip(modes, of, strict=True)
                 for t in _terms(x, shape, stride)]
        index = " + ".join(([str(self.offset)] if self.offset else []) + terms)
        if self.swizzle is None or self.swizzle[0] == 0:
            return [index]
        bits, base, shift = self.swizzle
        yyy = ((1 << bits) - 1) << (base + max(0, shift))
        moved = f">> {shift}" if shift >= 0 else f"<< {-shift}"
        return [f"({index}) ^ ((({index}) & {yyy}) {moved})"]


@dataclass(frozen=True)
class Linear:
    """Triton's linear layout: one input per named dim, `outputs` outputs."""

    bases: tuple[tuple[str, tuple[tuple[int, ...], ...]], ...]  # (dim, vectors), in order
    outputs: int

    @property
    def inputs(self) -> int:
        return len(self.bases)

    @property
    def dims(self) -> tuple[str, ...]:
        return tuple(dim for dim, _ in self.bases)

    def text(self) -> str:
        dims = (f"{dim} = [{', '.join(str(list(v)) for v in vectors)}]"
                for dim, vectors in self.bases)
        return "{ " + ", ".join(dims) + " }"

    def sources(self, of: Sequence[str]) -> list[str]:
        out = []
        for j in range(self.outputs):
            terms = [_bit(x, bit, v[j]) for x, (_, vectors) in zip(of, self.bases, strict=True)
                     for bit, v in enumerate(vectors) if v[j]]
            out.append(" ^ ".join(terms) or "0")
        # an input no output reads is still named once: its expression is checked (names,
        # faults) as every other expression of the file is
        for x, (_, vectors) in zip(of, self.bases, strict=True):
            if not any(any(v) for v in vectors):
                out[0] += f" ^ {x} * 0"
        return out


@dataclass(frozen=True)
class Table:
    """An explicit table: one input per axis of `values`, one output per entry of its last."""

    path: str  # as the hypothesis file gives it
    sha256: str
    header: tuple[str, ...]
    values: np.ndarray = field(compare=False)  # inputs' extents + (outputs,): read-only

    @property
    def inputs(self) -> int:
        return self.values.ndim - 1

    @property
    def outputs(self) -> int:
        return self.values.shape[-1]

    def text(self) -> str:
        """The table as canonical CSV: the header, then the rows, first input fastest."""
        rows = [",".join(self.header)]
        extents = self.values.shape[:-1]
        for flat in range(int(np.prod(extents))):
            at = np.unravel_index(flat, extents, order="F")
            rows.append(",".join(map(str, [*map(int, at), *self.values[at].tolist()])))
        return "\n".join(rows) + "\n"

    def sources(self, of: Sequence[str], name: str) -> list[str]:
        """Lookups of the constant table `name` (this table's values)."""
        return [f"{name}[{', '.join([*of, str(j)])}]" for j in range(self.outputs)]


Layout = Cute | Linear | Table


def evaluate(layout: Layout, *inputs: np.ndarray | int) -> list[np.ndarray]:
    """The layout's outputs over int64 arrays (or ints) of its inputs, broadcast together:
    its expression sources, evaluated by the expression language."""
    names = [f"x{i}" for i in range(len(inputs))]
    if len(inputs) != layout.inputs:
        raise UsageError(f"the layout takes {layout.inputs} inputs, not {len(inputs)}")
    outs = [f"y{j}" for j in range(layout.outputs)]
    tables = {"t": layout.values} if isinstance(layout, Table) else {}
    sources = _sources(layout, names, "t")
    try:
        program = compile_program(list(zip(outs, sources, strict=True)), names, tables)
        values = program.evaluate(dict(zip(names, map(np.asarray, inputs), strict=True)))
    except ExprError as exc:
        raise UsageError(str(exc)) from None
    return [values[o] for o in outs]


def _sources(layout: Layout, of: Sequence[str], table: str) -> list[str]:
    """The layout's outputs as expressions of `of`; a Table's read the constant `table`."""
    return layout.sources(of, table) if isinstance(layout, Table) else layout.sources(of)


# -- CuTe ------------------------------------------------------------------------------------

def parse_cute(text: str) -> Cute:
    """A CuTe layout, optionally swizzled and offset; UsageError naming the character
    (1-based)."""
    if not isinstance(text, str):
        raise UsageError("a CuTe layout is a string")
    if len(text) > MAX_CHARS:
        raise UsageError(f"a CuTe layout has at most {MAX_CHARS} characters, not {len(text)}")
    reader = _Reader(text)
    swizzle = None
    if reader.take_word():  # Swizzle<B,M,S> o
        if reader.word not in ("Swizzle", "Sw", "S"):
            reader.fail(f"expected Swizzle<B,M,S>, not {reader.word!r}")
        reader.expect("<")
        bits = reader.integer(signed=False)
        reader.expect(",")
        base = reader.integer(signed=False)
        reader.expect(",")
        swizzle = bits, base, reader.integer()
        reader.expect(">")
        if not reader.take_word() or reader.word != "o":
            reader.fail("expected 'o' (composition) after the swizzle")
    offset = _offset(reader)
    start = reader.at
    shape = reader.tuple(signed=False)
    reader.expect(":")
    stride_at = reader.at
    stride = reader.tuple(signed=True)
    reader.end()
    if not _congruent(shape, stride):
        reader.fail(f"the stride is not congruent with the shape {_render(shape)}", stride_at)
    leaves = _leaves(shape)
    if len(leaves) > MAX_MODES:
        reader.fail(f"more than {MAX_MODES} modes", start)
    if 0 in leaves:
        reader.fail("an extent is 0", start)
    if int(np.prod(leaves, dtype=object)) > MAX_SIZE:
        reader.fail(f"the domain holds more than {MAX_SIZE} coordinates", start)
    if swizzle is not None:
        bits, base, shift = swizzle
        if abs(shift) < bits or bits + base + abs(shift) > MAX_SWIZZLE_BITS:
            reader.fail(f"Swizzle<{bits},{base},{shift}> needs |S| >= B and B + M + |S| <= "
                        f"{MAX_SWIZZLE_BITS}", 0)
    return Cute(shape, stride, swizzle, offset)


def _offset(reader: "_Reader") -> int:
    """`OFFSET o` where one comes next (else 0, the reader where it was): a layout may
    start with a digit too (`32:1`), so the integer counts only when `o` follows it."""
    at = reader.at
    if not re.compile(r" *_?-?[0-9]").match(reader.text, reader.at):
        return 0
    value = reader.integer()
    if reader.take_word() and reader.word == "o":
        return value
    reader.at = at
    return 0


class _Reader:
    """A cursor over a CuTe layout's text: each read skips spaces and says where it failed."""

    def __init__(self, text: str) -> None:
        self.text, self.at, self.word = text, 0, ""

    def fail(self, why: str, at: int | None = None) -> NoReturn:
        where = self.at if at is None else at
        raise UsageError(f"character {where + 1} of {self.text!r}: {why}")

    def skip(self) -> None:
        while self.at < len(self.text) and self.text[self.at] == " ":
            self.at += 1

    def peek(self) -> str:
        self.skip()
        return self.text[self.at : self.at + 1]

    def expect(self, char: str) -> None:
        if self.peek() != char:
            self.fail(f"expected {char!r}, found {self.peek() or 'the end'!r}")
        self.at += 1

    def end(self) -> None:
        if self.peek():
            self.fail(f"unexpected {self.peek()!r} after the layout")

    def take_word(self) -> bool:
        self.skip()
        found = re.compile(r"[A-Za-z]+").match(self.text, self.at)
        if found is None:
            return False
        self.word, self.at = found.group(), found.end()
        return True

    def integer(self, signed: bool = True) -> int:
        self.skip()
        found = re.compile(r"_?(-?)([0-9]+)").match(self.text, self.at)
        if found is None or (found.group(1) and not signed):
            self.fail("expected a non-negative integer" if not signed else "expected an integer")
        if len(found.group(2)) > _DIGITS:
            self.fail(f"an integer of more than {_DIGITS} digits")
        value = int(found.group(1) + found.group(2))
        bound = MAX_STRIDE if signed else MAX_EXTENT
        if abs(value) > bound:
            self.fail(f"{value} is past {bound}")
        self.at = found.end()
        return value

    def tuple(self, signed: bool, depth: int = 0) -> Shape:
        if self.peek() != "(":
            return self.integer(signed)
        if depth >= MAX_NESTING:
            self.fail(f"tuples nest deeper than {MAX_NESTING}")
        self.at += 1
        items = [self.tuple(signed, depth + 1)]
        while self.peek() == ",":
            self.at += 1
            if len(items) >= MAX_MODES:
                self.fail(f"more than {MAX_MODES} modes")
            items.append(self.tuple(signed, depth + 1))
        self.expect(")")
        return tuple(items)


def _congruent(a: Shape, b: Shape) -> bool:
    if isinstance(a, int) or isinstance(b, int):
        return isinstance(a, int) and isinstance(b, int)
    return len(a) == len(b) and all(_congruent(x, y) for x, y in zip(a, b, strict=True))


def _leaves(shape: Shape) -> list[int]:
    return [shape] if isinstance(shape, int) else [n for s in shape for n in _leaves(s)]


def _render(shape: Shape) -> str:
    return str(shape) if isinstance(shape, int) else "(" + ",".join(map(_render, shape)) + ")"


def _terms(x: str, shape: Shape, stride: Shape) -> list[str]:
    """crd2idx of the integer coordinate `x` (an expression) in one mode: split over the
    sub-modes, first fastest, the last one unreduced."""
    if isinstance(shape, int):
        assert isinstance(stride, int)
        return [x if stride == 1 else f"{x} * {stride}"]
    terms, below = [], 1
    for i, (sub, step) in enumerate(zip(shape, stride, strict=True)):
        part = x if below == 1 else f"{x} // {below}"
        size = int(np.prod(_leaves(sub)))
        if i < len(shape) - 1:
            part = f"{part} % {size}"
        terms += _terms(part, sub, step)  # % // * chain left to right: no parentheses
        below *= size
    return terms


# -- linear ----------------------------------------------------------------------------------

def parse_linear(spec: object) -> Linear:
    """A linear layout from its TOML table {dim: [[v_out0, v_out1, ...], ...]}."""
    if not isinstance(spec, dict) or not spec:
        raise UsageError("linear: a table of input dims, each a list of basis vectors")
    if len(spec) > MAX_DIMS:
        raise UsageError(f"linear: at most {MAX_DIMS} input dims")
    bases, width, count = [], None, 0
    for dim, vectors in spec.items():
        if not _plain(dim):
            raise UsageError(f"linear.{dim}: a dim's name is letters, digits and '_'")
        if not isinstance(vectors, list) or not vectors:
            raise UsageError(f"linear.{dim}: a non-empty list of basis vectors")
        count += len(vectors)
        if count > MAX_BITS:
            raise UsageError(f"linear.{dim}: more than {MAX_BITS} basis vectors in all")
        for i, v in enumerate(vectors):
            at = f"linear.{dim}[{i}]"
            if not isinstance(v, list) or not 1 <= len(v) <= MAX_DIMS:
                raise UsageError(f"{at}: a list of 1 to {MAX_DIMS} integers, one per output")
            if width is not None and len(v) != width:
                raise UsageError(f"{at}: {len(v)} outputs, where the first vector has {width}")
            width = len(v)
            for j, value in enumerate(v):
                if type(value) is not int or not 0 <= value < MAX_BASIS:
                    raise UsageError(f"{at}[{j}]: an integer in [0, {MAX_BASIS})")
        bases.append((dim, tuple(tuple(v) for v in vectors)))
    assert width is not None
    return Linear(tuple(bases), width)


def _bit(x: str, bit: int, value: int) -> str:
    """Input bit `bit` of `x` times `value` (>> binds before &, both before ^)."""
    term = f"({x} & 1)" if bit == 0 else f"({x} >> {bit} & 1)"
    return term if value == 1 else f"{term} * {value}"


# -- table -----------------------------------------------------------------------------------

def read_table(folder: Path, path: object, sha256: object, inputs: int) -> Table:
    """The CSV table at `path` (relative, within `folder`) of `inputs` input columns, refused
    unless its bytes hash to `sha256`."""
    if not isinstance(path, str) or not path or PurePosixPath(path).is_absolute() or \
            ".." in PurePosixPath(path).parts or "\\" in path:
        raise UsageError("table: a relative path within the hypothesis file's folder")
    if not isinstance(sha256, str) or re.fullmatch(r"[0-9a-f]{64}", sha256) is None:
        raise UsageError("table: sha256 must be 64 lowercase hex digits")
    try:
        raw = bounded.read_regular(folder / path, MAX_TABLE_BYTES)
    except bounded.Unreadable as exc:
        raise UsageError(f"table {path}: {exc}") from None
    if (found := hashlib.sha256(raw).hexdigest()) != sha256:
        raise UsageError(f"table {path}: its sha256 is {found}, not the {sha256} pinned")
    return parse_table(raw, inputs, path, sha256)


def parse_table(raw: bytes, inputs: int, path: str = "<table>", sha256: str = "") -> Table:
    """A CSV table's bytes, its first `inputs` columns the inputs: refused where a tuple of
    them is outside 0..n-1, repeats or is missing."""
    try:
        lines = raw.decode("ascii").splitlines()
    except UnicodeDecodeError as exc:
        raise UsageError(f"table {path}: not ASCII (byte {exc.start})") from None
    if not 2 <= len(lines) <= MAX_TABLE_ROWS + 1:
        raise UsageError(f"table {path}: a header and 1 to {MAX_TABLE_ROWS} rows")
    header = tuple(lines[0].split(","))
    if not 2 <= len(header) <= MAX_COLUMNS or not all(_plain(h) for h in header):
        raise UsageError(f"table {path}: line 1: a header of 2 to {MAX_COLUMNS} names "
                         "(letters, digits, '_'), comma-separated")
    rows = np.empty((len(lines) - 1, len(header)), np.int64)
    number = re.compile(r"-?[0-9]{1,18}")  # within int64
    for n, line in enumerate(lines[1:]):
        cells = line.split(",")
        if len(cells) != len(header) or not all(number.fullmatch(c) for c in cells):
            raise UsageError(f"table {path}: line {n + 2}: {len(header)} integers of at most "
                             "18 digits, comma-separated")
        rows[n] = [int(c) for c in cells]
    if not 1 <= inputs < rows.shape[1]:
        raise UsageError(f"table {path}: {rows.shape[1]} columns, so 1 to {rows.shape[1] - 1} "
                         f"inputs, not {inputs}")
    keys = rows[:, :inputs]
    if (bad := np.flatnonzero((keys < 0).any(1))).size:
        raise UsageError(f"table {path}: line {bad[0] + 2}: a negative input")
    extents = tuple(int(n) + 1 for n in keys.max(0))
    if (total := int(np.prod(extents, dtype=object))) > len(rows):
        raise UsageError(f"table {path}: its inputs span {'x'.join(map(str, extents))} = "
                         f"{total} tuples, but it has {len(rows)} rows: some are missing")
    flat = np.ravel_multi_index(keys.T, extents, order="F")  # fewer than rows: bounded
    order = np.argsort(flat, kind="stable")
    if (again := order[1:][flat[order][1:] == flat[order][:-1]]).size:
        raise UsageError(f"table {path}: line {again.min() + 2}: an input tuple repeats")
    values = np.empty((len(rows), rows.shape[1] - inputs), np.int64)
    values[flat] = rows[:, inputs:]
    shaped = values.reshape((*extents, values.shape[1]), order="F")
    shaped.flags.writeable = False
    return Table(path, sha256, header, shaped)


# -- a hypothesis file's [layout] ------------------------------------------------------------

def expand(spec: object, folder: Path, taken: set[str]
           ) -> tuple[list[tuple[str, str]], dict[str, np.ndarray]]:
    """A [layout] table as (let helpers, constant tables): each layout's outputs as lets of
    the names its `out` gives (default: the layout's own), in the file's order. `taken`:
    names defined elsewhere (the file's [let]). UsageError naming the layout and key."""
    if not isinstance(spec, dict) or len(spec) > MAX_LAYOUTS:
        raise UsageError(f"[layout] must be a table of at most {MAX_LAYOUTS} layouts")
    lets: list[tuple[str, str]] = []
    tables: dict[str, np.ndarray] = {}
    for name, entry in spec.items():
        try:
            made = _binding(name, entry, folder, tables)
        except UsageError as exc:
            raise UsageError(f"[layout.{name}] {exc}") from None
        if clash := sorted({n for n, _ in made} & taken):
            raise UsageError(f"[layout.{name}] out: {clash} also defined in [let]")
        if again := sorted({n for n, _ in made} & {n for n, _ in lets}):
            raise UsageError(f"[layout.{name}] out: {again} also defined by an earlier layout")
        if len({n for n, _ in made}) != len(made):
            raise UsageError(f"[layout.{name}] out: a name given twice")
        lets += made
    return lets, tables


def _binding(name: str, entry: object, folder: Path, tables: dict[str, np.ndarray]
             ) -> list[tuple[str, str]]:
    if not _plain(name):
        raise UsageError("a layout's name is letters, digits and '_' (not first)")
    if not isinstance(entry, dict):
        raise UsageError("must be a table")
    if unknown := sorted(set(entry) - _KEYS):
        raise UsageError(f"unknown keys {unknown} (known: {sorted(_KEYS)})")
    forms = [k for k in ("cute", "linear", "table") if k in entry]
    if len(forms) != 1:
        raise UsageError("needs exactly one of cute, linear, table")
    if ("sha256" in entry) != (forms == ["table"]):
        raise UsageError("sha256 goes with table, and only there")
    out = entry.get("out", [name])
    if not isinstance(out, list) or not out or not all(_plain(o) for o in out):
        raise UsageError("out: a non-empty list of let names (letters, digits, '_')")
    of = entry.get("of")
    layout: Layout
    if forms == ["cute"]:
        try:
            layout = parse_cute(entry["cute"])
        except UsageError as exc:
            raise UsageError(f"cute: {exc}") from None
        inputs = _positional(of, layout.inputs, "top-level modes")
    elif forms == ["linear"]:
        layout = parse_linear(entry["linear"])
        if not isinstance(of, dict) or set(of) != set(layout.dims):
            raise UsageError(f"of: a table giving each input dim {list(layout.dims)} an "
                             "expression")
        inputs = [_operand(of[dim], f"of.{dim}") for dim in layout.dims]
    else:
        if not isinstance(of, list):
            raise UsageError("of: a list of expressions, one per input column")
        layout = read_table(folder, entry["table"], entry["sha256"], len(of))
        inputs = _positional(of, layout.inputs, "input columns")
        tables[name] = layout.values
    if len(out) != layout.outputs:
        raise UsageError(f"out: {len(out)} names for {layout.outputs} outputs")
    return list(zip(out, _sources(layout, inputs, name), strict=True))


def _positional(of: object, arity: int, what: str) -> list[str]:
    if not isinstance(of, list) or len(of) != arity:
        raise UsageError(f"of: a list of {arity} expressions, one per {what[:-1]} ({arity} "
                         f"{what})")
    return [_operand(x, f"of[{i}]") for i, x in enumerate(of)]


def _operand(source: object, at: str) -> str:
    """An input expression as an operand of the layout's own: bare where it is a name, else
    in parentheses, which its own brackets must not close (it stays one operand; the
    expression language then checks it as any other)."""
    if not isinstance(source, str) or not source.strip() or len(source) > MAX_SOURCE_CHARS:
        raise UsageError(f"{at}: an expression of 1 to {MAX_SOURCE_CHARS} characters")
    source = source.strip()
    if _plain(source):
        return source
    depth = 0
    for i, char in enumerate(source):
        depth += (char in "([{") - (char in ")]}")
        if depth < 0:
            raise UsageError(f"{at}: character {i + 1} closes a bracket it did not open")
    if depth:
        raise UsageError(f"{at}: a bracket is left open")
    return f"({source})"


def _plain(name: object) -> bool:
    return is_ascii_name(name) and not name.startswith("_") and not keyword.iskeyword(name)
