"""Lane-id layout recovery for dense matrix multiply-accumulate instructions, D = A·B + C.

Nothing about the layout is assumed. A *slot* is one (lane, value) of an operand's
fragment (a value is one element, CuTe's value: an f64 spans two registers, an f16 half of
one), numbered `slot = value * lanes + lane` (probelab.kits.fragment, the kits' one order);
every value the waves carry is an integer the
operand's element type holds exactly (probelab.kits.elements), so each output names its
sources:

- "a named" waves, one per B slot (and per digit, below): every A slot holds its id
  (slot + 1), B is 1 in that one slot and 0 elsewhere, every C slot holds scale * (its id
  + 1). Each D slot then reads scale * (c + 1) + (a + 1): the C slot that landed there and
  the A slot the hot B slot paired with (a + 1 = 0: none).
- "b named" waves, one per A slot: the same with A and B swapped.
- "gemm" waves: random small integers in every slot, an independent check.

That design (`BOTH`) names every slot twice. Wide shapes (wgmma's N = 256: 16384 D slots)
use `APART` instead: "c named" waves carry C's ids alone (A = B = 0, so D = C), and only the
b-named waves follow, with C = 0, so a D slot reads the B slot's digit + 1 or 0: the raw
waves are mostly zeros, spelled cell for cell by the ids they decode to, and one wave per A
slot names all three relations (no `_b` twins; the GEMM waves are the cross-check: a layout
they contradict is not recovered). Its observable is
`b_src` itself, which B slot the hot A slot met in each D slot: the three relations are its
projections, and it is 4 to 8 times smaller than `same_col` alone.

How a dataset stores it. By default (`assemble(..., compact=False)`, every probe's version
that predates the compact form) the raw waves are kept as the kit read them (float64; int64
for an integer accumulator) and the 0/1 tables as uint32. The compact form (a probe's
`compact=True`; `probelab.kits.lane_id.storage`) keeps the same numbers in a fraction of the
bytes: raw waves as integers in the narrowest dtype the plan needs where every value is one
(float64 as read otherwise; attrs `stored_as`, `read_as`), 0/1 tables and flags as uint8,
and under APART no `d_bnamed` at all: `b_src` spells every cell (digit p = digit p of the
id + 1, 0 for NONE) and `d_bnamed_odd` keeps the raw digits of each cell it does not (every
INVALID one), by kernel and flat cell index (`d_bnamed_odd_kernel`, `d_bnamed_odd_cell`;
dim `odd`, no coordinate: the grid hash covers coordinates). `raw_named` reads a raw wave
from either form, bit for bit. `stored` says from the grid alone which variables, dims,
shapes and dtypes `assemble` writes (assemble checks that it did), so what a probe's
datasets declare is known before any unit runs (`declared_bytes`; the sweep refuses one a
new dataset may not be, probelab.dataset.MAX_NEW_DATASET_BYTES).

Where a type cannot hold a slot id whole (fp8, s4, ...) or the accumulator cannot hold C's
beside it (f16), ids travel as digits, one wave per digit (`Plan`); the scale is CSCALE for
wide accumulators (f64, f32, s32), so the f64 grids are the archive's.

The computation alone fixes a layout only up to renumbering rows, columns and k (any
consistent renumbering multiplies the same), so what is measured, and what hypotheses
predict, are label-free relations: A slot and D slot share a row (`same_row`), A slot and B
slot share a k (`same_k`), B slot and D slot share a column (`same_col`), once from each
named experiment (suffix `_b`: from the "b named" waves), and which C slot lands in each D
slot (`c_src`). The lane map drawn from them uses canonical labels: rows and k numbered in
order of first appearance over A's slots, columns over B's (slot order). `gemm_exact` reads
a random GEMM through that recovered map and compares it with numpy bit for bit.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

import numpy as np

from probelab import vocabulary
from probelab.formats import F64, Element
from probelab.kits.elements import Codec, digits, pack, unpack, words
from probelab.kits.fragment import Fragment
from probelab.kits.lane_id import storage
from probelab.kits.sentinels import FLAGS, INVALID, NONE
from probelab.kits.tiles import Tile

if TYPE_CHECKING:  # xarray is imported where a dataset is built: discovery needs none
    import xarray as xr

CSCALE = 1024  # C's digit scale where the accumulator is wide: > every operand digit
BOTH, APART = "both named", "b named, C apart"  # the wave designs (module docstring)
DESIGNS = (BOTH, APART)
OPERANDS = ("a", "b", "c", "d")
F64_CODEC = Codec(F64, F64)


@dataclass(frozen=True)
class Shape:
    """One instruction's fragment shape: the matrices, the lanes, and per lane the values
    (elements, CuTe's values) of A, B and C/D; `codec` says what an element is, and so how
    many 32-bit registers those values fill (`registers`)."""

    name: str  # the kernel's name
    M: int
    N: int
    K: int
    lanes: int
    a_values: int
    b_values: int
    d_values: int  # C has D's shape
    codec: Codec = F64_CODEC
    # operands read from a memory tile ("a", "b"): their slots are the tile's elements (value
    # v of lane l at element v * lanes + l), more than the matrix has where the instruction
    # reads only those its addressing picks (wgmma's shared-memory descriptors); given by
    # `smem` where the tiles are declared
    tiles: tuple[str, ...] = ()
    # per-kernel integer coordinates the grid carries beside M, N, K (e.g. a shared-memory
    # descriptor's fields, {"swizzle": 128}), so a hypothesis can say what depends on them
    facts: tuple[tuple[str, int], ...] = ()
    # each tile and its descriptor (probelab.kits.tiles), recorded in every dataset
    smem: tuple[Tile, ...] = ()

    def __post_init__(self) -> None:
        if self.smem:
            tiled = tuple(t.operand for t in self.smem)
            if self.tiles and tuple(self.tiles) != tiled:
                raise ValueError(f"{self.name}: tiles {self.tiles}, smem declares {tiled}")
            object.__setattr__(self, "tiles", tiled)
        sizes = (("A", self.a_values, self.M * self.K), ("B", self.b_values, self.K * self.N),
                 ("D", self.d_values, self.M * self.N))
        for what, values, elements in sizes:
            tile = what.lower() in self.tiles
            if values * self.lanes < elements or (not tile and values * self.lanes != elements):
                raise ValueError(f"{self.name}: {what} has {elements} elements, not "
                                 f"{self.lanes} lanes x {values} values"
                                 + (" or fewer" if tile else ""))
        if set(self.tiles) - {"a", "b"}:
            raise ValueError(f"{self.name}: only A and B can be read from a tile")
        Plan.of(self.codec, Sizes(self.lanes, self.a_values, self.b_values, self.d_values),
                self.K, self.name)

    def registers(self, operand: str) -> int:
        """32-bit registers per lane that the operand's values fill."""
        values = {"a": self.a_values, "b": self.b_values}.get(operand, self.d_values)
        return words(self.codec.element(operand), values)


@dataclass(frozen=True)
class Layout:
    """(lane, value) -> (row, col) per operand, -1 where a slot holds nothing.

    a: (lanes, values, 2) as (m, k); b: (k, n); c and d: (m, n)."""

    a: np.ndarray
    b: np.ndarray
    c: np.ndarray
    d: np.ndarray


@dataclass(frozen=True)
class Sizes:
    """The widest shape's values per lane: every buffer is strided for it."""

    lanes: int
    a_values: int
    b_values: int
    d_values: int

    @classmethod
    def widest(cls, shapes: Sequence[Shape]) -> Sizes:
        lanes = {s.lanes for s in shapes}
        if len(lanes) != 1:
            raise ValueError(f"one probe, one wave width: got {sorted(lanes)}")
        return cls(lanes.pop(), max(s.a_values for s in shapes),
                   max(s.b_values for s in shapes), max(s.d_values for s in shapes))

    def fragment(self, operand: str) -> Fragment:
        """The operand's (lane, value) fragment (C lives on D's slots)."""
        values = {"a": self.a_values, "b": self.b_values}.get(operand, self.d_values)
        return Fragment(SLOT_DIMS.get(operand, operand), self.lanes, values)

    def slots(self, operand: str) -> int:
        return self.fragment(operand).slots


def codec_of(shapes: Sequence[Shape]) -> Codec:
    """The one codec every kernel of a launch shares (they read the same buffers)."""
    codecs = {s.codec for s in shapes}
    if len(codecs) != 1:
        raise ValueError("one probe, one element codec (kernels share their input buffers): "
                         f"got {sorted(c.name for c in codecs)}")
    return codecs.pop()


@dataclass(frozen=True)
class Plan:
    """How slot ids travel. Operand slot s carries digit p of s as the value digit+1 (0:
    no slot), base `base`; C slot c carries (digit p of c, +1) * `scale`, base `c_base`, so
    D = C + (the one A or B value it met) names both. `digits` waves per hot slot carry
    every digit; one (the f64 case) keeps the grid free of a `digit` dim.

    A type whose one nonzero value is 1 (b1) cannot say "no slot" beside a digit: it
    carries bits as they are (base 2), after a presence wave (round 0: every operand slot
    1, C its digit 0) that says which D slots the hot slot reaches at all."""

    base: int
    scale: int
    c_base: int
    digits: int
    presence: bool = False
    c_digits: int = 0  # APART: C's own waves (its digits); 0: C rides in every wave

    @property
    def rounds(self) -> int:
        """Waves per hot slot: the digits, and the presence wave where there is one."""
        return self.digits + self.presence

    @property
    def offset(self) -> int:
        """What an operand value adds to its digit: 1 (0 is "no slot"), 0 with presence."""
        return 0 if self.presence else 1

    @property
    def apart(self) -> bool:
        return self.c_digits > 0

    def record(self) -> dict[str, int | bool]:
        """The plan as a dataset records it (`Plan(**record)` reads it back)."""
        return asdict(self)

    @classmethod
    def of(cls, codec: Codec, size: Sizes, k: int = 1, name: str = "probe",
           design: str = "") -> Plan:
        exact = codec.exact  # of A and B, the narrower
        held = codec.sum_exact  # what D keeps exact: the format's, or the unit's narrower sums
        design = design or BOTH
        if design not in DESIGNS:
            raise ValueError(f"{name}: no lane-id design {design!r} (known: {DESIGNS})")
        if design == APART:  # one product or C alone per D slot: digit + 1 up to what D holds
            base, c_base = min(exact, held), held
            if exact < 2 or c_base < 2:
                raise ValueError(f"{name}: {codec.name} cannot carry lane ids apart from C "
                                 "(its one nonzero value cannot also say 'no slot')")
            cls._gemm_fits(codec, k, name)
            return cls(base, 1, c_base, digits(size.slots("b"), base),
                       c_digits=digits(size.slots("d"), c_base))
        largest = min(exact, max(size.slots("a"), size.slots("b")))  # operand value
        if held // CSCALE - 1 >= 2:  # a wide accumulator: C's digit at CSCALE
            scale = CSCALE
        else:  # a narrow one: just above the largest operand value, leaving C two levels
            room = 1 << (((held + 1) // 3).bit_length() - 1)  # 3 * scale - 1 <= exact
            scale = min(1 << largest.bit_length(), room)
        presence = exact < 2  # its only nonzero value cannot also say "no slot"
        base = 2 if presence else min(exact, scale - 1)
        c_base = (held - (scale - 1)) // scale
        if base < 2 or c_base < (2 if size.slots("d") > 1 else 1):
            raise ValueError(f"{name}: {codec.name} cannot carry lane ids: operand "
                             f"digits of base {base}, C "
                             f"digits of base {c_base} (the encoding needs 2 or more)")
        n = max(digits(size.slots("a"), base), digits(size.slots("b"), base),
                digits(size.slots("d"), c_base))
        cls._gemm_fits(codec, k, name)
        return cls(base, scale, c_base, n, presence)

    @staticmethod
    def _gemm_fits(codec: Codec, k: int, name: str) -> None:
        gemm = k * 16 + 64  # the largest |A·B + C| of the random GEMM waves
        if gemm > codec.sum_exact:
            raise ValueError(f"{name}: the random GEMM waves reach {gemm}, beyond what a "
                             f"{codec.name} accumulator holds exactly ({codec.sum_exact})")


def _digit(ids: np.ndarray, p: int, base: int) -> np.ndarray:
    """Digit p of each id (0 beyond the largest id's digits: no overflow for wide bases)."""
    if base**p > int(ids.max(initial=0)):
        return np.zeros_like(ids)
    return (ids // base**p) % base


def plan_of(grid: xr.Dataset, codec: Codec) -> Plan:
    """The plan a grid was made with, refusing a codec it was not made for."""
    named = tuple(str(grid[c].values) if c in grid.coords else F64.name
                  for c in ("operand_type", "accumulator_type"))
    b = str(grid["b_operand_type"].values) if "b_operand_type" in grid.coords else None
    narrow = int(grid["sums_exact"].values) if "sums_exact" in grid.coords else None
    if named != (codec.operand.name, codec.accumulator.name) or \
            b != (codec.b.name if codec.b else None) or narrow != codec.sums_exact:
        raise ValueError(f"the grid's codec is not {codec.name}")
    plan = Plan.of(codec, _sizes(grid), design=design_of(grid))
    if grid.sizes.get("digit", 1) != plan.rounds or \
            grid.sizes.get("c_digit", 1) != max(plan.c_digits, 1):
        raise ValueError(f"the grid has {grid.sizes.get('digit', 1)} digit waves and "
                         f"{grid.sizes.get('c_digit', 1)} C waves, the {codec.name} plan "
                         f"{plan.rounds} and {max(plan.c_digits, 1)}")
    return plan


def design_of(grid: xr.Dataset) -> str:
    """The wave design a grid was made for (grids before APART name none: BOTH)."""
    return str(grid["design"].values) if "design" in grid.coords else BOTH


def stimulus(shapes: Sequence[Shape], trials: int, seed: int, design: str = BOTH
             ) -> xr.Dataset:
    """The grid: slot dims per operand, per-kernel shape coordinates, GEMM trial values."""
    import xarray as xr

    size, codec = Sizes.widest(shapes), codec_of(shapes)
    plan = Plan.of(codec, size, max(s.K for s in shapes), design=design)
    rng = np.random.default_rng(seed)
    per_kernel = {k: ("kernel", np.array([getattr(s, v) for s in shapes], np.uint32))
                  for k, v in (("M", "M"), ("N", "N"), ("K", "K"), ("a_regs", "a_values"),
                               ("b_regs", "b_values"), ("d_regs", "d_values"))}
    facts = [dict(s.facts) for s in shapes]
    if any(f.keys() != facts[0].keys() for f in facts) or set(facts[0]) & set(per_kernel):
        raise ValueError("every kernel declares the same facts, none named like a shape "
                         f"coordinate: got {[sorted(f) for f in facts]}")
    per_kernel |= {k: ("kernel", np.array([f[k] for f in facts], np.uint32)) for k in facts[0]}
    u32 = lambda n: np.arange(n, dtype=np.uint32)  # noqa: E731
    high = min(5, codec.exact + 1)  # b1: 0 and 1

    def small(operand: str, *shape: int) -> np.ndarray:
        """Random values in [-4, 4] that the operand's own type holds (mixed signedness:
        the signed operand's negative values too; unsigned types: none)."""
        low = max(-4, codec.element(operand).lowest)
        return rng.integers(low, high, shape).astype(np.int32)
    c_low = max(-4, codec.accumulator.lowest)
    coords = {
        "kernel": ("kernel", np.array([s.name for s in shapes])), **per_kernel,
        "lanes": ((), np.uint32(size.lanes)),
        "a_lane": ("a_lane", u32(size.lanes)), "a_reg": ("a_reg", u32(size.a_values)),
        "b_lane": ("b_lane", u32(size.lanes)), "b_reg": ("b_reg", u32(size.b_values)),
        "d_lane": ("d_lane", u32(size.lanes)), "d_reg": ("d_reg", u32(size.d_values)),
        "trial": ("trial", u32(trials)),
        "gemm_a": (("trial", "a_reg", "a_lane"), small("a", trials, size.a_values, size.lanes)),
        "gemm_b": (("trial", "b_reg", "b_lane"), small("b", trials, size.b_values, size.lanes)),
        "gemm_c": (("trial", "d_reg", "d_lane"), 16 * rng.integers(
            c_low, 5, (trials, size.d_values, size.lanes)).astype(np.int32)),
    }
    if codec != F64_CODEC:  # the grid names its codec (f64's stay the archive's grids)
        coords |= {"operand_type": ((), codec.operand.name),
                   "accumulator_type": ((), codec.accumulator.name)}
        if codec.b:  # mixed signedness: B's own type
            coords["b_operand_type"] = ((), codec.b.name)
        if codec.sums_exact:  # the unit sums more narrowly than its format: planned within
            coords["sums_exact"] = ((), np.uint64(codec.sums_exact), {"long_name": (
                "the largest n every integer 0..n of which the unit's sums keep exact; ids "
                "and C digits are planned within it")})
    if plan.rounds > 1:  # several waves per hot slot, one per digit of the ids
        coords["digit"] = ("digit", u32(plan.rounds), {"long_name": (
            "round 0: presence (every operand slot 1); round r: digit r - 1" if plan.presence
            else "digit of the slot ids the wave carries")})
    if plan.apart:  # the grid says its design (BOTH grids stay as they were)
        coords["design"] = ((), design, {"long_name": (
            "lane-id waves: C's ids in waves of their own (A = B = 0), then one b-named wave "
            "per A slot and digit with C = 0")})
        if plan.c_digits > 1:
            coords["c_digit"] = ("c_digit", u32(plan.c_digits), {"long_name": (
                "digit of the C slot ids a c-named wave carries")})
    ds = xr.Dataset(coords=coords)
    for n in "abd":
        ds[f"{n}_reg"].attrs["long_name"] = (f"value (element) of a lane's {n.upper()} "
                                             "fragment, in the order its registers hold them")
        ds[f"{n}_reg"].attrs["slot"] = size.fragment(n).describe()  # not hashed: words
    # made under the archive's names (the grid its seals were evaluated on, value for
    # value), then named in the fragment vocabulary: `<op>_value`, `<op>_values`, the old
    # names kept as alias coordinates and the translation recorded (probelab.vocabulary)
    return vocabulary.renamed(ds)


def _ids(slots: int) -> np.ndarray:
    return np.arange(slots, dtype=np.int64)


def waves(grid: xr.Dataset, codec: Codec = F64_CODEC, plan: Plan | None = None
          ) -> dict[str, np.ndarray]:
    """Inputs of every wave as numbers, in order a-named (digit, hot B slot), b-named
    (digit, hot A slot), gemm (APART: c-named (C digit), b-named, gemm): a (W, A slots), b,
    c; by `plan` (a dataset's recorded one), else the plan the grid was made with."""
    size, plan = _sizes(grid), plan or plan_of(grid, codec)
    na, nb, nd = size.slots("a"), size.slots("b"), size.slots("d")
    trials = grid.sizes["trial"]
    gemm = [grid[f"gemm_{n}"].values.reshape(trials, -1) for n in "abc"]
    if plan.apart:
        c_named = [_digit(_ids(nd), p, plan.c_base) + 1 for p in range(plan.c_digits)]
        b_named = [_digit(_ids(nb), p, plan.base) + 1 for p in range(plan.digits)]
        pc, pb = plan.c_digits, plan.digits * na
        a = _rows([np.zeros((pc, na)), *(na for _ in b_named), gemm[0]], na)
        b = _rows([np.zeros((pc, nb)), *(np.broadcast_to(v, (na, nb)) for v in b_named),
                   gemm[1]], nb)
        c = _rows([np.stack(c_named), np.zeros((pb, nd)), gemm[2]], nd)
        return {"a": a, "b": b, "c": c}
    presence = [0] if plan.presence else []  # round 0 repeats C's digit 0
    rounds = range(plan.rounds)
    named = {n: [np.ones(s)] * plan.presence +
             [_digit(_ids(s), p, plan.base) + plan.offset for p in range(plan.digits)]
             for n, s in (("a", na), ("b", nb))}
    c_ids = [plan.scale * (_digit(_ids(nd), p, plan.c_base) + 1)
             for p in [*presence, *range(plan.digits)]]
    a = _rows([*(np.broadcast_to(v, (nb, na)) for v in named["a"]), *(na for _ in rounds),
               gemm[0]], na)
    b = _rows([*(nb for _ in rounds), *(np.broadcast_to(v, (na, nb)) for v in named["b"]),
               gemm[1]], nb)
    c = _rows([*(np.broadcast_to(v, (nb, nd)) for v in c_ids),
               *(np.broadcast_to(v, (na, nd)) for v in c_ids), gemm[2]], nd)
    return {"a": a, "b": b, "c": c}


def _rows(parts: list[np.ndarray | int], width: int) -> np.ndarray:
    """The parts one under another (np.concatenate), as float64, an int n among them
    standing for np.eye(n): written straight into the result, never made on its own (a
    round's identity is 100s of MB where an operand has thousands of slots)."""
    heights = [part if isinstance(part, int) else part.shape[0] for part in parts]
    out = np.empty((sum(heights), width))
    at = 0
    for part, height in zip(parts, heights, strict=True):
        block = out[at:at + height]
        if isinstance(part, int):
            if part != width:
                raise ValueError(f"an identity of {part} rows among {width} columns")
            block.fill(0.0)
            np.fill_diagonal(block, 1.0)
        elif part.shape[1:] != (width,):
            raise ValueError(f"rows of {part.shape[1:]} among {width} columns")
        else:
            block[...] = part
        at += height
    return out


def to_lane_major(values: np.ndarray, lanes: int) -> np.ndarray:
    """(W, slots) in slot order -> (W, lanes, values): the order a kernel reads its fragment."""
    return Fragment("", lanes, values.shape[1] // lanes).per_thread(values)


def from_lane_major(values: np.ndarray) -> np.ndarray:
    """(W, lanes, values) -> (W, slots) in slot order."""
    return Fragment("", values.shape[1], values.shape[2]).flat(values)


def registers(codec: Codec, operand: str, values: np.ndarray, lanes: int) -> np.ndarray:
    """(W, slots) numbers -> (W, lanes, registers) uint32, as a kernel's fragment holds them
    (A and B in the operand type, C and D in the accumulator's)."""
    return pack(codec.element(operand), to_lane_major(values, lanes))


def numbers(codec: Codec, operand: str, regs: np.ndarray, values: int) -> np.ndarray:
    """(W, lanes, registers) uint32 -> (W, slots) numbers: `registers` undone."""
    element = codec.element(operand)
    return from_lane_major(element.decode(unpack(element, regs, values)))


def _sizes(grid: xr.Dataset) -> Sizes:
    return Sizes(grid.sizes["a_lane"], grid.sizes["a_value"], grid.sizes["b_value"],
                 grid.sizes["d_value"])


# ---- the simulated unit (tests and the sim backend only; never evidence) ----

def multiply(layout: Layout, a: np.ndarray, b: np.ndarray, c: np.ndarray, shape: Shape
             ) -> np.ndarray:
    """D slots (W, lanes * d_values) of D = A·B + C for slot values laid out by `layout`;
    inputs are (W, slots) over the widest sizes, slots the shape has no element for are
    ignored, D slots it does not write stay 0."""
    mats = {}
    for name, values, rows, cols in (("a", a, shape.M, shape.K), ("b", b, shape.K, shape.N),
                                     ("c", c, shape.M, shape.N)):
        where = _slot_order(getattr(layout, name))
        used = where[:, 0] >= 0
        mat = np.zeros((values.shape[0], rows, cols))
        mat[:, where[used, 0], where[used, 1]] = values[:, : where.shape[0]][:, used]
        mats[name] = mat
    full = mats["a"] @ mats["b"] + mats["c"]
    where = _slot_order(layout.d)
    out = np.zeros((a.shape[0], c.shape[1]))
    used = np.flatnonzero(where[:, 0] >= 0)
    out[:, used] = full[:, where[used, 0], where[used, 1]]
    return out


def _slot_order(lane_map: np.ndarray) -> np.ndarray:
    """(lanes, values, 2) -> (slots, 2) in slot order (value-major)."""
    return Fragment("", lane_map.shape[0], lane_map.shape[1]).flat(lane_map[None])[0]


def random_layout(shape: Shape, rng: np.random.Generator, size: Sizes | None = None
                  ) -> Layout:
    """A hidden layout nobody documented: every operand's elements shuffled over its slots
    (C lands where D is read, as in every real unit)."""
    size = size or Sizes(shape.lanes, shape.a_values, shape.b_values, shape.d_values)

    def shuffled(rows: int, cols: int, used: int, total: int) -> np.ndarray:
        out = np.full((shape.lanes, total, 2), -1)
        cells = np.stack(np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij"), -1)
        cells = rng.permutation(cells.reshape(-1, 2))
        if len(cells) < shape.lanes * used:  # a tile: the elements in some of its slots
            where = np.full((shape.lanes * used, 2), -1)
            where[rng.choice(len(where), len(cells), replace=False)] = cells
            cells = where
        out[:, :used] = cells.reshape(shape.lanes, used, 2)
        return out

    d = shuffled(shape.M, shape.N, shape.d_values, size.d_values)
    return Layout(shuffled(shape.M, shape.K, shape.a_values, size.a_values),
                  shuffled(shape.K, shape.N, shape.b_values, size.b_values), d, d)


# ---- decode ----

def _combine(parts: np.ndarray, base: int, slots: int) -> np.ndarray:
    """Per-digit names (P, ...) (-1: nothing) -> one slot id, NONE where nothing arrived in
    any digit, INVALID where some digits are missing, a digit beyond the id's is not 0, or
    the id is out of range."""
    used = digits(slots, base) if parts.shape[0] > 1 else 1
    none = (parts < 0).all(0)
    weights = np.array([base**p for p in range(used)], np.int64).reshape(-1, *[1] * parts[0].ndim)
    ids = (np.clip(parts[:used], 0, None) * weights).sum(0)
    ok = (parts >= 0).all(0) & (parts[used:] == 0).all(0) & (ids < slots)
    return np.where(none, NONE, np.where(ok, ids, INVALID)).astype(np.uint32)


def _names(values: np.ndarray, plan: Plan, slots: int, c_slots: int
           ) -> tuple[np.ndarray, np.ndarray]:
    """D values (P, hot slots, D slots) -> (C slot, operand slot), each NONE where nothing
    arrived and INVALID where a value is not scale * (c + 1) + (x + 1) with both digits in
    range, or the digits do not spell one id."""
    top = plan.scale * (min(plan.c_base, 2**20) + 1)
    finite = np.isfinite(values) & (values == np.floor(values)) & (values >= 0) & \
        (values < top)
    v = np.where(finite, values, 0).astype(np.int64)
    c, x = v // plan.scale - 1, v % plan.scale - plan.offset
    bad = (~finite | (x >= plan.base) | (c >= plan.c_base)).any(0)
    if plan.presence:  # round 0 says whether a slot arrived; absent, every digit reads 0
        here = x[0] == 1
        bad |= (c[0] != c[1]) | (~here & (x[1:] != 0).any(0))
        c, x = c[1:], np.where(here, x[1:], -1)
    c_id = _combine(np.where(bad, 0, c), plan.c_base, c_slots)
    x_id = _combine(np.where(bad, 0, x), plan.base, slots)
    # each value names both: one unreadable part, in any digit, spoils both
    both = bad | (c_id == INVALID) | (x_id == INVALID)
    return np.where(both, INVALID, c_id).astype(np.uint32), \
        np.where(both, INVALID, x_id).astype(np.uint32)


def _related(src: np.ndarray, slots: int) -> np.ndarray:
    """src (hot slots, D slots) of named slots -> (named slots, D slots) 0/1: the named slot
    reached that D slot for some hot slot."""
    out = np.zeros((slots, src.shape[1]), np.uint32)
    hot, d = np.nonzero(src < slots)
    out[src[hot, d], d] = 1
    return out


def _paired(src: np.ndarray, slots: int) -> np.ndarray:
    """src (hot slots, D slots) -> (named slots, hot slots) 0/1: paired in some D slot."""
    out = np.zeros((slots, src.shape[0]), np.uint32)
    hot, d = np.nonzero(src < slots)
    out[src[hot, d], hot] = 1
    return out


@dataclass(frozen=True)
class Relations:
    row_ad: np.ndarray  # (A slots, D slots)
    k_ab: np.ndarray  # (A slots, B slots)
    col_bd: np.ndarray  # (B slots, D slots)


def relations(a_src: np.ndarray, b_src: np.ndarray, size: Sizes) -> tuple[Relations, Relations]:
    """From the a-named waves (a_src: (B slots, D slots)) and the b-named ones (b_src:
    (A slots, D slots)), the same three relations twice, independently."""
    na = size.slots("a")
    by_a = Relations(_related(a_src, na), _paired(a_src, na),
                     (a_src < na).astype(np.uint32))
    return by_a, _relations_b(b_src, size.slots("b"))


def _relations_b(b_src: np.ndarray, nb: int) -> Relations:
    """The three relations from the b-named waves alone."""
    return Relations((b_src < nb).astype(np.uint32), _paired(b_src, nb).T,
                     _related(b_src, nb))


def _classes(vectors: np.ndarray) -> np.ndarray:
    """Rows with equal nonzero vectors share a class; classes numbered in order of first
    appearance; -1 for all-zero rows."""
    labels = np.full(vectors.shape[0], -1)
    seen: dict[bytes, int] = {}
    for i, v in enumerate(vectors):
        if v.any():
            labels[i] = seen.setdefault(v.tobytes(), len(seen))
    return labels


def _through(relation: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, bool]:
    """For each column of `relation` (rows labelled by `labels`), the one label its related
    rows carry; False when some column relates to rows of two labels."""
    out = np.full(relation.shape[1], -1)
    ok = True
    for j in range(relation.shape[1]):
        found = set(labels[np.flatnonzero(relation[:, j])].tolist()) - {-1}
        if len(found) > 1:
            ok = False
        if len(found) == 1:
            out[j] = found.pop()
    return out, ok


def recover(rel: Relations, c_src: np.ndarray, shape: Shape, size: Sizes
            ) -> tuple[Layout | None, str]:
    """The lane map the relations imply, in canonical labels, or None and why not."""
    a_row, a_k = _classes(rel.row_ad), _classes(rel.k_ab)
    b_col = _classes(rel.col_bd)
    b_k, ok_bk = _through(rel.k_ab, a_k)
    d_row, ok_dr = _through(rel.row_ad, a_row)
    d_col, ok_dc = _through(rel.col_bd, b_col)
    if not (ok_bk and ok_dr and ok_dc):
        return None, "a slot relates to two rows, columns or k"
    counts = {"rows": (a_row.max() + 1, shape.M), "k": (a_k.max() + 1, shape.K),
              "columns": (b_col.max() + 1, shape.N)}
    for what, (seen, want) in counts.items():
        if seen != want:
            return None, f"{seen} distinct {what}, the shape has {want}"
    mapped = {"A": np.stack([a_row, a_k], -1), "B": np.stack([b_k, b_col], -1),
              "D": np.stack([d_row, d_col], -1)}
    wanted = {"A": shape.M * shape.K, "B": shape.K * shape.N, "D": shape.M * shape.N}
    for what, cells in mapped.items():
        used = cells[(cells >= 0).all(-1)]
        if len(used) != wanted[what] or len(np.unique(used, axis=0)) != wanted[what]:
            return None, f"{what}: {len(used)} slots for {wanted[what]} elements, or repeats"
        if ((cells >= 0).any(-1) & ~(cells >= 0).all(-1)).any():
            return None, f"{what}: a slot with a row but no column"
    c = np.full_like(mapped["D"], -1)
    landed = np.flatnonzero(c_src < size.slots("d"))
    c[c_src[landed]] = mapped["D"][landed]
    if len(landed) != wanted["D"] or len(np.unique(c_src[landed])) != len(landed):
        return None, "C does not land one to one on D"
    lanes = size.lanes

    def lane_major(cells: np.ndarray) -> np.ndarray:
        return Fragment("", lanes, len(cells) // lanes).per_thread(cells[None])[0]

    return Layout(lane_major(mapped["A"]), lane_major(mapped["B"]), lane_major(c),
                  lane_major(mapped["D"])), "recovered"


def factorizes(layout: Layout, a_src: np.ndarray | None, b_src: np.ndarray) -> bool:
    """Every named output is exactly what the recovered layout predicts (the relations are
    projections; this checks the full three-way table behind them); a_src None: APART has
    no a-named waves."""
    a, b, d = (_slot_order(getattr(layout, n)) for n in "abd")

    def inverse(cells: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
        inv = np.full(shape, INVALID, np.uint32)
        used = np.flatnonzero(cells[:, 0] >= 0)
        inv[cells[used, 0], cells[used, 1]] = used
        return inv

    inv_a = inverse(a, (a[:, 0].max() + 1, a[:, 1].max() + 1))
    inv_b = inverse(b, (b[:, 0].max() + 1, b[:, 1].max() + 1))
    d_ok, (m_d, n_d) = d[:, 0] >= 0, d.T
    # b-named: hot A slot (m, k) meets D slot (m, n) -> the B slot holding (k, n)
    meet = (a[:, None, 0] == m_d[None]) & d_ok[None] & (a[:, None, 0] >= 0)
    want_b = np.where(meet, inv_b[a[:, None, 1], n_d[None]], NONE)
    if not np.array_equal(want_b, b_src):
        return False
    if a_src is None:
        return True
    # a-named: hot B slot (k, n) meets D slot (m, n) -> the A slot holding (m, k)
    meet = (b[:, None, 1] == n_d[None]) & d_ok[None] & (b[:, None, 0] >= 0)
    want_a = np.where(meet, inv_a[m_d[None], b[:, None, 0]], NONE)
    return bool(np.array_equal(want_a, a_src))


def gemm_exact(layout: Layout, grid: xr.Dataset, d_gemm: np.ndarray, shape: Shape
               ) -> np.ndarray:
    """(trial,) 1 where the device's D, read through the recovered layout, equals numpy's
    A·B + C bit for bit (the same value and sign; a NaN never equals), for A, B, C loaded
    through it (every partial sum exact: `Plan` refuses waves it could not hold)."""
    trials = grid.sizes["trial"]
    inputs = [grid[f"gemm_{n}"].values.reshape(trials, -1).astype(np.float64) for n in "abc"]
    want = multiply(layout, *inputs, shape)
    same = (want == d_gemm) & (np.signbit(want) == np.signbit(d_gemm))
    return np.all(same, axis=-1).astype(np.uint32)


SLOT_DIMS = {"a": "a", "b": "b", "c": "d", "d": "d"}  # C lives on D's slots
LANE_MAP_DIMS = {n: ("kernel", f"{SLOT_DIMS[n]}_lane", f"{SLOT_DIMS[n]}_value") for n in OPERANDS}
OBSERVABLES_APART = {  # one named experiment; b_src holds every relation (module docstring)
    "b_src": ("kernel", "a_lane", "a_value", "d_lane", "d_value"),
    "c_src": ("kernel", "d_lane", "d_value"),
    "recovered": ("kernel",),
    "gemm_exact": ("kernel", "trial"),
}
OBSERVABLES = {
    "same_row": ("kernel", "a_lane", "a_value", "d_lane", "d_value"),
    "same_k": ("kernel", "a_lane", "a_value", "b_lane", "b_value"),
    "same_col": ("kernel", "b_lane", "b_value", "d_lane", "d_value"),
    "same_row_b": ("kernel", "a_lane", "a_value", "d_lane", "d_value"),
    "same_k_b": ("kernel", "a_lane", "a_value", "b_lane", "b_value"),
    "same_col_b": ("kernel", "b_lane", "b_value", "d_lane", "d_value"),
    "c_src": ("kernel", "d_lane", "d_value"),
    "recovered": ("kernel",),
    "gemm_exact": ("kernel", "trial"),
}


def _lane_grid(table: np.ndarray, size: Sizes, rows: str, cols: str | None = None
               ) -> np.ndarray:
    """(slots of `rows`, slots of `cols`) -> (lanes, values, lanes, values), the grid's dim
    order (cols None: (n, slots of `rows`) -> (n, lanes, values)); leading digit axes kept.
    Slots in the one fragment order (`Fragment`: value-major), on both axes at once."""
    lead = table.shape[:-2] if cols is not None else table.shape[:-1]
    if cols is None:
        r = size.slots(rows) // size.lanes
        return table.reshape(*lead, r, size.lanes).swapaxes(-1, -2)
    r, c = size.slots(rows) // size.lanes, size.slots(cols) // size.lanes
    out = table.reshape(*lead, r, size.lanes, c, size.lanes)
    return np.moveaxis(out, (-4, -3, -2, -1), (-3, -4, -1, -2))


RAW_DIMS = {"d_anamed": ("kernel", "b_lane", "b_value", "d_lane", "d_value"),
            "d_bnamed": ("kernel", "a_lane", "a_value", "d_lane", "d_value"),
            "d_gemm": ("kernel", "trial", "d_lane", "d_value"),
            "a_src": ("kernel", "b_lane", "b_value", "d_lane", "d_value"),
            "b_src": ("kernel", "a_lane", "a_value", "d_lane", "d_value")}
RAW_DIMS_APART = {"d_cnamed": ("kernel", "d_lane", "d_value"),
                  **{k: RAW_DIMS[k] for k in ("d_bnamed", "d_gemm")}}
NAMED = ("d_anamed", "d_bnamed")  # raw D of the named waves: one per digit where several


def _read_digits(values: np.ndarray, base: int) -> tuple[np.ndarray, np.ndarray]:
    """APART: D values (P, ...) that are digit + 1 or 0 -> the digits (-1: 0, nothing came)
    and where some value is neither."""
    ok = np.isfinite(values) & (values == np.floor(values)) & (values >= 0) & \
        (values <= base)
    v = np.where(ok, values, 0).astype(np.int64) - 1
    return v, ~ok.all(0)


def _decode_apart(grid: xr.Dataset, plan: Plan, d: np.ndarray
                  ) -> tuple[dict[str, np.ndarray], Relations, np.ndarray, np.ndarray]:
    """APART: D slots (W, D slots) -> raw variables, the b-named relations, b_src, c_src."""
    size = _sizes(grid)
    na, nb, nd, pc, p = (size.slots("a"), size.slots("b"), size.slots("d"), plan.c_digits,
                         plan.rounds)
    d_c, d_b, d_g = d[:pc], d[pc:pc + p * na].reshape(p, na, nd), d[pc + p * na:]
    c, c_bad = _read_digits(d_c, plan.c_base)
    c_src = np.where(c_bad, INVALID, _combine(np.where(c_bad, 0, c), plan.c_base, nd))
    x, x_bad = _read_digits(d_b, plan.base)
    b_src = np.where(x_bad, INVALID, _combine(np.where(x_bad, 0, x), plan.base, nb))
    by_b = _relations_b(b_src.astype(np.uint32), nb)
    raw_c, raw_b = _lane_grid(d_c, size, "d"), _lane_grid(d_b, size, "a", "d")
    values = {"d_cnamed": raw_c if pc > 1 else raw_c[0], "d_bnamed": raw_b if p > 1 else raw_b[0],
              "d_gemm": _lane_grid(d_g, size, "d"), "b_src": _lane_grid(b_src, size, "a", "d")}
    return values, by_b, b_src.astype(np.uint32), c_src.astype(np.uint32)


def _decode(grid: xr.Dataset, shape: Shape, plan: Plan, d: np.ndarray
            ) -> tuple[dict[str, np.ndarray], str]:
    """One kernel's D slots (W, D slots) as numbers -> its variables, and how its lane map
    fared."""
    size = _sizes(grid)
    if plan.apart:
        values, by_b, b_src, c_src = _decode_apart(grid, plan, d)
        layout, why = recover(by_b, c_src, shape, size)
        if layout is not None and not factorizes(layout, None, b_src):
            layout, why = None, "the outputs are not those of any one layout"
        gemm = _gemm(layout, grid, d[-grid.sizes["trial"]:], shape)
        # nothing is named twice here, so only the GEMM waves tie the C waves and the
        # b-named waves to one unit: a layout they contradict is none
        if layout is not None and not gemm.all():
            layout, why = None, "the GEMM waves disagree with the named waves' layout"
            gemm = _gemm(None, grid, d, shape)
        return _with_map(values, layout, grid, gemm, c_src), why
    na, nb, p = size.slots("a"), size.slots("b"), plan.rounds
    d_a = d[:p * nb].reshape(p, nb, -1)
    d_b = d[p * nb:p * (nb + na)].reshape(p, na, -1)
    d_g = d[p * (nb + na):]
    c_a, a_src = _names(d_a, plan, na, size.slots("d"))
    c_b, b_src = _names(d_b, plan, nb, size.slots("d"))
    c_all = np.concatenate([c_a, c_b])
    c_src = np.where((c_all == c_all[0]).all(0), c_all[0], INVALID).astype(np.uint32)
    by_a, by_b = relations(a_src, b_src, size)
    layout, why = recover(by_a, c_src, shape, size)
    if layout is not None and not all(np.array_equal(getattr(by_a, f), getattr(by_b, f))
                                      for f in ("row_ad", "k_ab", "col_bd")):
        layout, why = None, "the a-named and b-named experiments disagree"
    if layout is not None and not factorizes(layout, a_src, b_src):
        layout, why = None, "the outputs are not those of any one layout"
    raw_a, raw_b = _lane_grid(d_a, size, "b", "d"), _lane_grid(d_b, size, "a", "d")
    values = {
        "d_anamed": raw_a if p > 1 else raw_a[0], "d_bnamed": raw_b if p > 1 else raw_b[0],
        "d_gemm": _lane_grid(d_g, size, "d"),
        "a_src": _lane_grid(a_src, size, "b", "d"), "b_src": _lane_grid(b_src, size, "a", "d"),
        "same_row": _lane_grid(by_a.row_ad, size, "a", "d"),
        "same_k": _lane_grid(by_a.k_ab, size, "a", "b"),
        "same_col": _lane_grid(by_a.col_bd, size, "b", "d"),
        "same_row_b": _lane_grid(by_b.row_ad, size, "a", "d"),
        "same_k_b": _lane_grid(by_b.k_ab, size, "a", "b"),
        "same_col_b": _lane_grid(by_b.col_bd, size, "b", "d"),
    }
    return _with_map(values, layout, grid, _gemm(layout, grid, d_g, shape), c_src), why


def _gemm(layout: Layout | None, grid: xr.Dataset, d_g: np.ndarray, shape: Shape
          ) -> np.ndarray:
    """The GEMM check read through the layout; 0 for every trial where there is none."""
    if layout is None:
        return np.zeros(grid.sizes["trial"], np.uint32)
    return gemm_exact(layout, grid, d_g, shape)


def _with_map(values: dict[str, np.ndarray], layout: Layout | None, grid: xr.Dataset,
              gemm: np.ndarray, c_src: np.ndarray) -> dict[str, np.ndarray]:
    """A kernel's variables completed: where C landed, the lane map (all -1 where none was
    recovered) and the GEMM check (`_gemm`'s)."""
    size = _sizes(grid)
    values |= {
        "c_src": _lane_grid(c_src[None], size, "d")[0],
        "recovered": np.uint32(layout is not None),
        "gemm_exact": gemm,
    }
    for n in OPERANDS:
        cells = getattr(layout, n) if layout is not None else np.full(
            (size.lanes, size.slots(n) // size.lanes, 2), -1)
        values[f"{n}_row"], values[f"{n}_col"] = cells[..., 0], cells[..., 1]
    return values


def assemble(grid: xr.Dataset, shapes: Sequence[Shape],
             registers: Mapping[str, np.ndarray], compact: bool = False) -> xr.Dataset:
    """Raw D registers of every kernel ({kernel: (W, lanes, D registers) uint32}) -> the
    dataset: raw values, decoded sources, relations, the recovered lane map and the GEMM
    check; `compact`: in the kit's compact storage form (probelab.kits.lane_id.storage).
    What is stored is what `stored` says it will be (checked here)."""
    ds = grid.copy()
    codec = codec_of(shapes)
    plan, size = plan_of(grid, codec), _sizes(grid)
    factored = compact and plan.apart  # d_bnamed: b_src and its exceptions (ODD)
    per: dict[str, list[np.ndarray]] = {}
    odd: list[tuple[str, np.ndarray, np.ndarray]] = []
    reasons = []
    for shape in shapes:
        d = numbers(codec, "d", np.asarray(registers[shape.name], np.uint32), size.d_values)
        values, why = _decode(grid, shape, plan, d)
        reasons.append(f"{shape.name}: {why}")
        if factored:  # each kernel's raw waves are read once, then only their exceptions kept
            raw = values.pop("d_bnamed")
            odd.append((shape.name, *storage.factor(raw if plan.rounds > 1 else raw[None],
                                                    values["b_src"], plan.base,
                                                    size.slots("b"))))
        for k, v in values.items():
            per.setdefault(k, []).append(v)
    layout, unplanned = stored(grid, compact), set()
    kinds = RAW_DIMS_APART | OBSERVABLES_APART if plan.apart else RAW_DIMS | OBSERVABLES
    for k in (k for k in kinds if k in layout):  # the order the variables always had
        values, attrs = np.stack(per[k]), {}
        if compact and k in RAW:
            values, attrs, planned = storage.as_stored(
                values, _planned(k, grid, plan, codec), read_dtype(codec))
            if not planned:
                unplanned.add(k)
        elif compact and k in ZERO_ONE:
            values = storage.flags(values)
        ds[k] = (layout[k].dims, values, attrs)
    for k in ("a_src", "b_src", "c_src"):
        if k in ds:
            ds[k].attrs |= FLAGS
    if plan.apart:
        ds["d_cnamed"].attrs |= {"encoding": f"{codec.name}; A = B = 0, C = D = C digit + 1, "
                                 f"base {plan.c_base}"}
        bnamed = {"encoding": f"{codec.name}; C = 0, one A slot 1: D = operand digit + 1 or "
                  f"0 (nothing), base {plan.base}"}
        if factored:
            _store_odd(ds, odd, plan, size, read_dtype(codec), bnamed["encoding"])
        else:
            ds["d_bnamed"].attrs |= bnamed
    else:
        ds["d_anamed"].attrs |= {"encoding": f"{codec.name}; D = {plan.scale} * (C "
                                 f"digit + 1) + (operand digit + 1); operand digits base "
                                 f"{plan.base}, C digits base {plan.c_base}"}
    for n in OPERANDS:
        for x in ("row", "col"):
            ds[f"{n}_{x}"] = (LANE_MAP_DIMS[n], np.stack(per[f"{n}_{x}"]).astype(np.int32), {
                "description": f"recovered lane map of {n.upper()}: (lane, value) -> {x} in "
                "canonical labels (numbered by first appearance in slot order); -1: the slot "
                "holds nothing"})
    ds["recovered"].attrs["why"] = "; ".join(reasons)
    _agrees(ds, layout, unplanned)
    return ds


# ---- what is stored: the layout `assemble` writes, known from the grid alone ----

RAW = (*NAMED, "d_cnamed", "d_gemm")  # the D values themselves, read as numbers
ZERO_ONE = ("same_row", "same_k", "same_col", "same_row_b", "same_k_b", "same_col_b",
            "recovered", "gemm_exact")  # 0/1 tables: uint8 in the compact form
ODD = ("d_bnamed_odd", "d_bnamed_odd_kernel", "d_bnamed_odd_cell")  # factored d_bnamed


@dataclass(frozen=True)
class Stored:
    """One variable `assemble` adds to the grid: its dims, shape and dtype (a raw wave's
    dtype where every value lies in the plan: it is wider where one does not, float64
    where one is no integer; the exceptions' length 0, a unit that read cleanly)."""

    dims: tuple[str, ...]
    shape: tuple[int, ...]
    dtype: np.dtype

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize


def grid_codec(grid: xr.Dataset) -> Codec:
    """The codec a grid (or a dataset) names: f64 where it names none (the archive's)."""
    from probelab.formats import ELEMENTS

    def named(coord: str) -> Element:
        return ELEMENTS[str(grid[coord].values)] if coord in grid.coords else F64

    b = named("b_operand_type") if "b_operand_type" in grid.coords else None
    sums = int(grid["sums_exact"].values) if "sums_exact" in grid.coords else None
    return Codec(named("operand_type"), named("accumulator_type"), b, sums)


def read_dtype(codec: Codec) -> np.dtype:
    """What the kit reads D values as (Element.decode): float64, or int64 for integers."""
    return np.dtype(np.float64 if codec.accumulator.floating else np.int64)


def _planned(name: str, grid: xr.Dataset, plan: Plan, codec: Codec) -> tuple[int, int]:
    """The range of raw values a unit that follows the plan produces: C's digit + 1 (times
    the scale) plus one operand digit + 1 or none (a digit of ids 0..n - 1 of base b is at
    most min(b, n) - 1), or the random GEMM's |A·B + C| (Plan._gemm_fits)."""
    size = _sizes(grid)
    if name == "d_gemm":
        g = int(grid["K"].values.max()) * 16 + 64
        return -g, g
    c_top = min(plan.c_base, size.slots("d"))  # C's largest digit + 1
    if plan.apart:
        return 0, c_top if name == "d_cnamed" else min(plan.base, size.slots("b"))
    operand = min(plan.base, max(size.slots("a"), size.slots("b"))) - 1 + plan.offset
    return 0, plan.scale * c_top + operand


def stored(grid: xr.Dataset, compact: bool = False) -> dict[str, Stored]:
    """Every variable `assemble` adds to `grid`, in the form asked for, from the grid
    alone (no unit is run: what a dataset will declare is known before it is measured)."""
    codec = grid_codec(grid)
    plan = plan_of(grid, codec)
    lead = {k: ("digit",) for k in NAMED if plan.rounds > 1} | \
        ({"d_cnamed": ("c_digit",)} if plan.c_digits > 1 else {})
    kinds = RAW_DIMS_APART | OBSERVABLES_APART if plan.apart else RAW_DIMS | OBSERVABLES
    dims = {k: (d[0], *lead.get(k, ()), *d[1:]) for k, d in kinds.items()}
    dims |= {f"{n}_{x}": LANE_MAP_DIMS[n] for n in OPERANDS for x in ("row", "col")}
    if compact and plan.apart:
        del dims["d_bnamed"]
        dims |= {ODD[0]: ("odd", *lead.get("d_bnamed", ())), ODD[1]: ("odd",),
                 ODD[2]: ("odd",)}
    sizes = dict(grid.sizes) | {"odd": 0}

    def dtype(k: str) -> np.dtype:
        if k in RAW:
            return storage.integer_dtype(*_planned(k, grid, plan, codec)) if compact \
                else read_dtype(codec)
        if k in ZERO_ONE:
            return np.dtype(np.uint8 if compact else np.uint32)
        special = {ODD[0]: storage.integer_dtype(0, 0), ODD[1]: grid["kernel"].dtype,
                   ODD[2]: np.dtype(np.int64)}
        return np.dtype(special.get(k, np.int32 if k[2:] in ("row", "col") else np.uint32))

    return {k: Stored(d, tuple(sizes[x] for x in d), dtype(k)) for k, d in dims.items()}


def declared_bytes(grid: xr.Dataset, compact: bool = False) -> int:
    """The bytes a dataset of this grid declares decoded: the grid's and `stored`'s."""
    return sum(int(v.nbytes) for v in grid.variables.values()) + \
        sum(s.nbytes for s in stored(grid, compact).values())


def _agrees(ds: xr.Dataset, layout: dict[str, Stored], unplanned: set[str]) -> None:
    """`stored` said what assemble writes: the same variables, dims, shapes and dtypes; only
    the exceptions' length and dtype depend on the data, and the dtype of a raw wave whose
    values left the plan (`unplanned`)."""
    added = {str(k) for k in ds.data_vars}
    for k in sorted(added | layout.keys()):
        var, want = ds.variables.get(k), layout.get(k)
        free = k in ODD  # the exceptions: as many as the unit made, in their values' dtype
        if var is None or want is None or var.dims != want.dims or (
                var.shape != want.shape and not free) or (
                var.dtype != want.dtype and not free and k not in unplanned):
            found = None if var is None else (var.dims, var.shape, var.dtype)
            raise RuntimeError(f"lane-id assemble wrote {k} as {found}, its layout says "
                               f"{want}: engine.stored and assemble disagree")


def _store_odd(ds: xr.Dataset, odd: list[tuple[str, np.ndarray, np.ndarray]], plan: Plan,
               size: Sizes, read: np.dtype, encoding: str) -> None:
    """APART's b-named waves in the compact form: b_src (stored anyway) plus the raw
    values of every digit at each cell b_src does not spell (storage.factor)."""
    kernel = np.concatenate([np.full(len(c), name, ds["kernel"].dtype) for name, c, _ in odd])
    cells = np.concatenate([c for _, c, _ in odd]).astype(np.int64)
    values = np.concatenate([v for _, _, v in odd]).reshape(len(cells), plan.rounds)
    values, attrs, _ = storage.as_stored(values if plan.rounds > 1 else values[:, 0],
                                         storage.UNPLANNED, read)
    digit = ("digit",) if plan.rounds > 1 else ()
    rule = (f"the raw b-named waves d_bnamed (kernel, {'digit, ' if digit else ''}a_lane, "
            "a_value, d_lane, d_value) are not stored: digit p of a cell is floor(b_src / "
            f"{plan.base}**p) % {plan.base} + 1 where b_src is a B slot id (< "
            f"{size.slots('b')}), 0 where it is NONE; at each cell listed here (its kernel "
            "d_bnamed_odd_kernel, its flat index d_bnamed_odd_cell over (a_lane, a_value, "
            "d_lane, d_value) in C order), every INVALID one and any other the rule does not "
            "give bit for bit, these are its raw values, every digit. "
            "probelab.kits.lane_id.engine.raw_named(ds, 'd_bnamed') rebuilds it")
    ds[ODD[0]] = (("odd", *digit), values, attrs | {"encoding": encoding,
                                                     "reconstruction": rule})
    ds[ODD[1]] = (("odd",), kernel, {"description": "the kernel of each d_bnamed_odd cell"})
    ds[ODD[2]] = (("odd",), cells, {"description": "the flat index of each d_bnamed_odd "
                                    "cell over (a_lane, a_value, d_lane, d_value), C order"})


def raw_named(ds: xr.Dataset, name: str) -> xr.DataArray:
    """A raw wave variable (d_anamed, d_bnamed, d_cnamed, d_gemm) as the kit read the D
    values (float64, int64 for an integer accumulator), from a dataset of either form: as
    stored, or d_bnamed rebuilt from b_src and its exceptions (storage.unfactor) where the
    compact form factored it. Kernels are matched by name, so a selection of them works."""
    read = read_dtype(grid_codec(ds))
    if name in ds:
        return ds[name] if ds[name].dtype == read else ds[name].astype(read)
    if name != "d_bnamed" or ODD[0] not in ds:
        raise KeyError(f"the dataset holds no {name}, stored or factored")
    plan, size = plan_of(ds, grid_codec(ds)), _sizes(ds)
    cell_dims = RAW_DIMS["b_src"][1:]
    names, cells = ds[ODD[1]].values, ds[ODD[2]].values
    parts = []
    for kernel in ds["kernel"].values:
        src = ds["b_src"].sel(kernel=kernel).transpose(*cell_dims).values
        mine = names == kernel
        raw = storage.unfactor(src, plan.base, size.slots("b"), plan.rounds, cells[mine],
                               ds[ODD[0]].values[mine], read)
        parts.append(raw if plan.rounds > 1 else raw[0])
    dims = ("kernel", *(("digit",) if plan.rounds > 1 else ()), *cell_dims)
    return _on_dims(np.stack(parts), dims, ds)


def _on_dims(values: np.ndarray, dims: tuple[str, ...], ds: xr.Dataset) -> xr.DataArray:
    """values on `dims`, with the dataset's coordinates that live on them."""
    import xarray as xr

    coords = {c: ds.coords[c] for c in ds.coords if set(ds.coords[c].dims) <= set(dims)}
    return xr.DataArray(values, dims=dims, coords=coords)


def lane_map(ds: xr.Dataset, kernel: str, operand: str) -> xr.Dataset | None:
    """One operand's recovered map as (lane, value) -> (row, col), or None if not recovered."""
    import xarray as xr

    if int(ds["recovered"].sel(kernel=kernel)) != 1:
        return None
    rows = ds[f"{operand}_row"].sel(kernel=kernel)
    cols = ds[f"{operand}_col"].sel(kernel=kernel)
    return xr.Dataset({"row": rows, "col": cols})
