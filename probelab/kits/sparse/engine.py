"""Lane-qualified metadata sweeps for structured-sparse matrix instructions, D = A'·B + C.

A' is A decompressed by metadata: each compressed A element lands at a dense k that some
2-bit field of some lane's metadata word selects. Which lane, which field and which k is
the question, and nothing about it is assumed. Everything is in raw per-lane terms: A
element (value) `a_value` of lane `a_lane` is bits [w·n, w·(n+1)) of that lane's A
registers read as one little-endian bit string (w = element width), B elements alike, field
f is bits 2f..2f+1 of a lane's metadata word, D is every lane's accumulator registers. The
grid's dims are the fragment vocabulary's (probelab.kits.fragment); the archive's grids say
`a_elem`, `b_elem`, read through the recorded translation (probelab.vocabulary). The
decoded variables keep their names (`met_elem`: the element of B's fragment met, `row_reg`:
a D register), as the sealed files predict them.

Every wave drives exactly one A element (value 1) and names every B element: B slot s
(lane · b_elems + elem: this kit's own slot order, thread-major, in which its stimulus is
drawn; probelab.kits.fragment) carries digits of a permuted id, one digit per wave, as exact
nonzero values of the element type. The one product an A element forms fills one row of D
with the B elements of the row of B it met, so each D value names a B slot, and the
smallest slot named (`met_lane`, `met_elem`) names that row of B without a layout.

Which row of D an element's products fill does not depend on the metadata: it is the row
of A the element sits in, named (`row_lane`, `row_reg`) by the smallest D register reached,
the same set of registers under every word.

Metadata configurations, each a full set of waves (one per A slot):
- word: uniform valid words (every group of fields holds the same valid value), all
  digits. The pairing under each word: which B row each A element meets (`met_*`).
- lbit: lane-coded words: lane m holds the contrast word X if bit b of m is set, else Y
  (X and Y differ in every field). Whose metadata governs an A element shows as bit b.
- gbit: group-coded words: field group j holds X's value if bit b of j is set, else Y's.
  With the word sweep (which field of a group the pairing follows), `gov_lane` and
  `gov_field` name the lane and field that govern each A element.
- trial: random valid words, a different one in every lane: the governing field's value
  must predict the pairing (`random_ok`), whatever the other lanes hold.
- bad: uniform words the vendor calls invalid or undefined, or (gfx12) that put a group's
  two elements on one position. Recorded (`bad_lane`, `bad_elem`) and never an observable:
  no hypothesis can claim them.
- outside (where the vendor's metadata has such words): uniform words outside its
  documented contract that still keep a group's two elements apart (gfx12's descending
  pairs, Idx0 > Idx1). An observable of their own (`out_lane`, `out_elem`, dim `oword`,
  attrs `outside_contract`), reported apart from the contract words'.
Digit-0 waves are read by matching each D against the rows the word sweep measured; a
coded or random wave that matches none is a decode problem (recorded in the dataset as
`decode_problems`, and its cells carry AMBIGUOUS or random_ok 0), a bad wave that matches
none is an observation (UNMATCHED).
`superposed` checks, per valid configuration, that a dense random A gives exactly the sum
of its one-element products (signed values, every lane and register). Every configuration
above keeps the two fields of a group apart (contract words do), so no two kept elements
of one lane's group land on one position and no observable so far depends on what the
unit does when they do.

Collisions are measured apart (where the metadata declares `clash` words, group values
whose two fields are equal): dense random A, every element nonzero, under each uniform
clash word (`cword`, `trial`). The decode predicts D from the one-hot products under every
rule a unit could follow when both elements of a group (same governing lane, the group's two
fields) select one position, and `clash` says which one D equals: both products add, the
element of the group's second field wins (`last`), or its first field's (`first`). Those
designs are then named `superposed_apart` instead of `superposed`: the sums leave
collisions out.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING

import numpy as np

from probelab import vocabulary
from probelab.kits.elements import Codec
from probelab.kits.fragment import THREAD_MAJOR, Fragment
from probelab.kits.tiles import Tile

if TYPE_CHECKING:  # xarray is imported where a dataset is built: discovery needs none
    import xarray as xr

LANES, FIELD_BITS = 32, 2
NONE, AMBIGUOUS, UNMATCHED = 0xFFFFFFFE, 0xFFFFFFFD, 0xFFFFFFFC  # codes in decoded outputs
CODES = UNMATCHED  # decoded values at or above this are codes, below it B slots
FLAGS = {"flag_values": np.array([UNMATCHED, AMBIGUOUS, NONE], np.uint32),
         "flag_meanings": "unmatched ambiguous none"}  # the codes, as CF declares them
CODED = ("row_lane", "row_reg", "met_lane", "met_elem", "gov_lane", "gov_field", "bad_lane",
         "bad_elem", "out_lane", "out_elem")  # decoded variables whose values may be codes
EMPTY, UNREAD = -1, -2  # per D register while decoding: nothing arrived / no single id
OBSERVABLES = MappingProxyType({
    "row_lane": ("kernel", "a_lane", "a_value"),
    "row_reg": ("kernel", "a_lane", "a_value"),
    "met_lane": ("kernel", "word", "a_lane", "a_value"),
    "met_elem": ("kernel", "word", "a_lane", "a_value"),
    "met_count": ("kernel", "word", "a_lane", "a_value"),
    "gov_lane": ("kernel", "a_lane", "a_value"),
    "gov_field": ("kernel", "a_lane", "a_value"),
    "random_ok": ("kernel", "trial", "a_lane", "a_value"),
    "superposed": ("kernel", "dense"),
})
APART = MappingProxyType({  # a design with clash words: collisions measured on their own
    **{k: v for k, v in OBSERVABLES.items() if k != "superposed"},
    "superposed_apart": ("kernel", "dense"),
    "out_lane": ("kernel", "oword", "a_lane", "a_value"),
    "out_elem": ("kernel", "oword", "a_lane", "a_value"),
    "clash": ("kernel", "cword", "trial"),
})
# what `clash` holds per dense clash wave: which rule's prediction D equals
CLASH_RULES = ("neither", "adds", "last", "first", "undecided")
CLASH_FLAGS = {"flag_values": np.arange(len(CLASH_RULES), dtype=np.uint32),
               "flag_meanings": " ".join(CLASH_RULES)}
BLOCKS = ("word", "lbit", "gbit", "trial", "bad", "outside")  # one-hot, launch order
OUTSIDE = ("outside the vendor's contract (the instruction defines them, the documentation "
           "does not promise them): reported apart from the contract words")


def observables(design: Design) -> Mapping[str, tuple[str, ...]]:
    """The observables a design's sweep has, and their dims."""
    return APART if design.meta.clash else OBSERVABLES


@dataclass(frozen=True)
class Unit:
    """One kernel: a sparse instruction at one shape, selector and metadata form."""

    name: str
    K: int
    bits: int  # element width: 4, 8 or 16
    regs: int  # A registers per lane the instruction reads
    sel: int = 0
    ordered: bool = False
    pairwise: bool = False  # each index names a pair of elements (NVIDIA s4: 4:8)
    b_regs: int | None = None  # B registers it reads, when not `regs`
    # shared-memory tiles an operand is read from (wgmma: A in SS form, B always); the kernel
    # stores value v of lane l at element v * lanes + l of a tile
    smem: tuple[Tile, ...] = ()
    facts: tuple[tuple[str, int], ...] = ()  # per-kernel grid coordinates (tiles.grid_facts)

    @property
    def elems(self) -> int:
        return self.regs * 32 // self.bits

    @property
    def b_elems(self) -> int:
        return (self.b_regs or self.regs) * 32 // self.bits


@dataclass(frozen=True)
class Metadata:
    """How a vendor's metadata word is read: 2-bit fields in groups of `group_bits`."""

    group_bits: int  # 4: a nibble of two fields (NVIDIA 2:4); 2: every field alone
    valid: tuple[int, ...]  # group values the contract allows
    invalid: tuple[int, ...]  # group values it calls invalid or undefined (recorded only)
    contrast: tuple[int, int]  # two valid values that differ in every field
    # group values outside the contract that the instruction still defines, fields apart
    outside: tuple[int, ...] = ()
    # group values whose two fields are equal, for the collision waves (group_bits 4 only)
    clash: tuple[int, ...] = ()
    # 1:2 sparsity (NVIDIA tf32): each kept element is the one of a 2-wide chunk, placed by
    # its whole group (0x4 or 0xE: the element's two 16-bit halves); gov_field names the
    # group's first field
    whole_group: bool = False

    def __post_init__(self) -> None:
        apart = self.valid + self.outside
        if self.group_bits == 4 and (equal := [hex(v) for v in apart if v >> 2 == v & 3]):
            raise ValueError(f"metadata: {equal} put both fields of a group on one position: "
                             "a collision, so `clash`, never `valid` or `outside`")
        if wrong := [hex(v) for v in self.clash if self.group_bits != 4 or v >> 2 != v & 3]:
            raise ValueError(f"metadata: clash values {wrong} are not two equal fields")

    @property
    def groups(self) -> int:
        return 32 // self.group_bits

    @property
    def fields_per_group(self) -> int:
        return self.group_bits // FIELD_BITS

    def uniform(self, value: int) -> int:
        return sum(value << (self.group_bits * j) for j in range(self.groups))

    def field_value(self, value: int, phi: int) -> int:
        """The value of field phi (within a group) in a group holding `value`."""
        return (value >> (FIELD_BITS * phi)) & 3


@dataclass(frozen=True)
class Design:
    """A probe's sparse sweep: its kernels, its vendor's metadata and the element codec,
    the per-lane buffer strides (the widest kernel's registers) and the matrix shape."""

    units: tuple[Unit, ...]
    meta: Metadata
    codec: Codec
    trials: int
    seed: int
    a_regs: int = 4
    b_regs: int = 4
    d_regs: int = 4
    M: int = 16
    N: int = 8
    lanes: int = LANES  # threads one instruction spans: a warp, or a warpgroup (wgmma: 128)

    @property
    def a_elems(self) -> int:
        return self.a_regs * 32 // self.codec.bits

    @property
    def b_elems(self) -> int:
        return self.b_regs * 32 // self.codec.bits

    def fragment(self, operand: str) -> Fragment:
        """A's or B's (lane, value) fragment, numbered in this kit's own order (thread-major:
        its stimulus is drawn in it; probelab.kits.fragment)."""
        return Fragment(operand, self.lanes, self.a_elems if operand == "a" else self.b_elems,
                        THREAD_MAJOR)

    @property
    def slots(self) -> int:
        return self.fragment("a").slots

    @property
    def b_slots(self) -> int:
        return self.fragment("b").slots

    @property
    def lane_code_bits(self) -> int:  # lane-coded waves: one per bit of a lane number
        return (self.lanes - 1).bit_length()

    @property
    def group_code_bits(self) -> int:  # group-coded waves: one per bit of a group number
        return (self.meta.groups - 1).bit_length()

    def __post_init__(self) -> None:
        problems = [f"{u.name}: {u.bits}-bit elements, the codec's are {self.codec.bits}-bit"
                    for u in self.units if u.bits != self.codec.bits]
        problems += [f"{u.name}: reads {u.regs} A / {u.b_regs or u.regs} B registers, the "
                     f"buffers hold {self.a_regs} / {self.b_regs}" for u in self.units
                     if u.regs > self.a_regs or (u.b_regs or u.regs) > self.b_regs]
        if self.codec.b is not None:  # one element type for A and B in this kit's waves
            problems.append(f"the codec names B's own type ({self.codec.name}): the sparse "
                            "kit packs A and B in one type")
        if len({tuple(name for name, _ in u.facts) for u in self.units}) > 1:
            problems.append("every kernel declares the same facts (per-kernel coordinates)")
        if not set(self.meta.contrast) <= set(self.meta.valid):
            problems.append(f"contrast {self.meta.contrast} must be valid group values")
        x, y = self.meta.contrast
        if any(self.meta.field_value(x, f) == self.meta.field_value(y, f)
               for f in range(self.meta.fields_per_group)):
            problems.append(f"contrast {self.meta.contrast} must differ in every field")
        if problems:
            raise ValueError("sparse design: " + "; ".join(problems))


def stimulus(design: Design) -> xr.Dataset:
    """The grid: A slots, metadata configurations, B ids, random words and dense values."""
    import xarray as xr

    meta, rng = design.meta, np.random.default_rng(design.seed)
    u32 = lambda n: np.arange(n, dtype=np.uint32)  # noqa: E731
    units = design.units
    per_kernel = {"K": [u.K for u in units], "sel": [u.sel for u in units],
                  "ordered": [int(u.ordered) for u in units], "regs": [u.regs for u in units],
                  "bits": [u.bits for u in units], "elems": [u.elems for u in units]}
    per_kernel |= {name: [dict(u.facts)[name] for u in units] for name, _ in units[0].facts}
    x, y = (meta.uniform(v) for v in meta.contrast)
    lanes = np.arange(design.lanes)
    lword = np.array([np.where((lanes >> b) & 1, x, y) for b in range(design.lane_code_bits)])
    gword = np.array([sum((meta.contrast[0] if (j >> b) & 1 else meta.contrast[1])
                          << (meta.group_bits * j) for j in range(meta.groups))
                      for b in range(design.group_code_bits)])
    valid = np.array(meta.valid, np.uint64)
    groups = rng.integers(0, len(valid), (design.trials, design.lanes, meta.groups))
    rmeta = (valid[groups] << (np.arange(meta.groups, dtype=np.uint64) * meta.group_bits)
             ).sum(-1)
    words = [meta.uniform(v) for v in meta.valid]
    dense = len(words) + design.trials
    top = 3 if design.codec.floating else 2 ** (design.codec.bits - 1)
    low = max(-top, design.codec.operand.lowest)  # unsigned types: no negative values
    coords = {
        "kernel": ("kernel", np.array([u.name for u in units])),
        **{k: ("kernel", np.array(v, np.uint32)) for k, v in per_kernel.items()},
        "a_lane": ("a_lane", u32(design.lanes)), "a_elem": ("a_elem", u32(design.a_elems)),
        "word": ("word", np.array(words, np.uint32)),
        "digit": ("digit", u32(design.codec.digits(design.b_slots))),
        "lbit": ("lbit", u32(design.lane_code_bits)),
        "gbit": ("gbit", u32(design.group_code_bits)),
        "trial": ("trial", u32(design.trials)),
        "bad": ("bad", np.array([meta.uniform(v) for v in meta.invalid], np.uint32)),
        "m_lane": ("m_lane", u32(design.lanes)),
        "lword": (("lbit", "m_lane"), lword.astype(np.uint32)),
        "gword": ("gbit", gword.astype(np.uint32)),
        "rmeta": (("trial", "m_lane"), rmeta.astype(np.uint32)),
        "b_lane": ("b_lane", u32(design.lanes)), "b_elem": ("b_elem", u32(design.b_elems)),
        "b_id": (("b_lane", "b_elem"),
                 design.fragment("b").per_thread(rng.permutation(design.b_slots)[None])[0]
                 .astype(np.uint32)),
        "dense": ("dense", u32(dense)),
        "dense_a": (("dense", "a_lane", "a_elem"),
                    rng.integers(low, top, (dense, design.lanes, design.a_elems)).astype(np.int32)),
    }
    if meta.outside:
        coords["oword"] = ("oword", np.array([meta.uniform(v) for v in meta.outside],
                                             np.uint32))
    if meta.clash:  # every element nonzero, so each rule predicts its own D
        nonzero = np.array([v for v in range(low, top) if v != 0])
        coords["cword"] = ("cword", np.array([meta.uniform(v) for v in meta.clash], np.uint32))
        coords["clash_a"] = (("cword", "trial", "a_lane", "a_elem"), nonzero[rng.integers(
            0, len(nonzero), (len(meta.clash), design.trials, design.lanes, design.a_elems))
            ].astype(np.int32))
    grid = xr.Dataset(coords=coords)
    grid["word"].attrs["contract"] = "inside: group values the vendor's contract allows"
    if meta.outside:
        grid["oword"].attrs["contract"] = OUTSIDE
    for n in "ab":  # the slot order the stimulus was drawn in, in words (not hashed)
        grid[f"{n}_elem"].attrs["slot"] = design.fragment(n).describe()
    # made under the archive's names (the grid its seals were evaluated on, value for
    # value), then named in the fragment vocabulary: `a_value`, `b_value`, the old names kept
    # as alias coordinates and the translation recorded (probelab.vocabulary)
    return vocabulary.renamed(grid)




def _b_planes(grid: xr.Dataset, codec: Codec) -> np.ndarray:
    """(digit, lanes, b_elems) B element values: digit i of each slot's id, as a level."""
    levels, ids = codec.levels, grid["b_id"].values.astype(np.int64)
    base = len(levels)
    return np.stack([levels[(ids // base**i) % base] for i in range(grid.sizes["digit"])])


def _metadata(grid: xr.Dataset) -> dict[str, np.ndarray]:
    """Per one-hot block, the metadata of each configuration in every lane: (configs, 32)."""
    lanes = grid.sizes["m_lane"]
    spread = lambda w: np.repeat(w.astype(np.uint32)[:, None], lanes, 1)  # noqa: E731
    none = np.zeros((0, lanes), np.uint32)
    return {"word": spread(grid["word"].values), "lbit": grid["lword"].values,
            "gbit": spread(grid["gword"].values), "trial": grid["rmeta"].values,
            "bad": spread(grid["bad"].values),
            "outside": spread(grid["oword"].values) if "oword" in grid else none,
            "clash": spread(grid["cword"].values) if "cword" in grid else none}


def waves(grid: xr.Dataset, codec: Codec) -> dict[str, np.ndarray]:
    """Every wave's inputs: a and b (W, 32, 4) registers, e (W, 32) metadata, in launch
    order: the one-hot blocks (configuration, [digit,] A slot), then the dense waves; from
    the grid and the element codec alone (a dataset's recorded one: kits.sparse.recipe)."""
    a_elems = grid.sizes["a_value"]
    lanes = grid.sizes["a_lane"]
    fragment = Fragment("a", lanes, a_elems, THREAD_MAJOR)  # the design's (Design.fragment)
    slots = fragment.slots
    planes = codec.pack(_b_planes(grid, codec))  # (digit, 32, 4)
    onehot = codec.pack(fragment.per_thread(np.eye(slots)))  # (slots, 32, 4)
    meta = _metadata(grid)
    a, b, e = [], [], []
    for block in BLOCKS:
        configs = meta[block]
        digits = grid.sizes["digit"] if block == "word" else 1
        n = len(configs) * digits
        a.append(np.tile(onehot, (n, 1, 1)))
        b.append(np.repeat(np.tile(planes[:digits], (len(configs), 1, 1)), slots, 0))
        e.append(np.repeat(configs, digits * slots, 0))
    dense_meta = np.concatenate([meta["word"], meta["trial"]])
    a.append(codec.pack(grid["dense_a"].values))
    b.append(np.repeat(planes[:1], len(dense_meta), 0))
    e.append(dense_meta)
    if "cword" in grid:  # the collision waves, last: (cword, trial)
        a.append(codec.pack(grid["clash_a"].values.reshape(-1, lanes, a_elems)))
        b.append(np.repeat(planes[:1], grid["clash_a"].shape[0] * grid.sizes["trial"], 0))
        e.append(np.repeat(meta["clash"], grid.sizes["trial"], 0))
    return {"a": np.concatenate(a), "b": np.concatenate(b), "e": np.concatenate(e)}


def block_dims(grid: xr.Dataset) -> dict[str, tuple[str, ...]]:
    """Each block's dims, in launch order; the outside and clash blocks where the grid's
    metadata has such words."""
    a = ("a_lane", "a_value")  # one wave per A slot (lane, value)
    dims = {"word": ("word", "digit", *a), "lbit": ("lbit", *a), "gbit": ("gbit", *a),
            "trial": ("trial", *a), "bad": ("bad", *a), "outside": ("oword", *a),
            "dense": ("dense",), "clash": ("cword", "trial")}
    return {k: v for k, v in dims.items() if v[0] in grid.sizes}


def split(grid: xr.Dataset, d: np.ndarray) -> dict[str, np.ndarray]:
    """One kernel's D (W, 32, 4) in launch order -> per block, (*block dims, 32, 4)."""
    out, start = {}, 0
    for block, dims in block_dims(grid).items():
        shape = tuple(grid.sizes[x] for x in dims)
        stop = start + int(np.prod(shape))
        out[block] = d[start:stop].reshape(*shape, *d.shape[1:])
        start = stop
    if start != d.shape[0]:
        raise ValueError(f"{d.shape[0]} waves of output, the grid has {start}")
    return out


# ---- decode ----

@dataclass
class Decoded:
    """One kernel's decoded observables (and the outside-contract record)."""

    values: dict[str, np.ndarray] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)


def _named(d: np.ndarray, grid: xr.Dataset, codec: Codec) -> np.ndarray:
    """Word block D (word, digit, a_lane, a_value, 32, 4) -> the B slot each D register
    names, (word, a_lane, a_value, 32, 4): EMPTY where nothing arrived, UNREAD where the
    digits do not spell one id of the grid (a sum, a scaled value, a register that is
    empty in some digits only)."""
    levels = codec.levels
    order = np.argsort(levels)
    v = codec.read(d)
    pos = np.clip(np.searchsorted(levels[order], v), 0, len(levels) - 1)
    index = np.where(levels[order][pos] == v, order[pos], -1)  # which level, per digit
    base, digits = len(levels), index.shape[1]
    ids = (index * base ** np.arange(digits)[:, None, None, None, None]).sum(1)
    slot_of = np.full(max(base**digits, grid["b_id"].size), UNREAD, np.int64)
    slot_of[grid["b_id"].values.reshape(-1).astype(np.int64)] = np.arange(grid["b_id"].size)
    named = np.where((index >= 0).all(1), slot_of[np.where((index >= 0).all(1), ids, 0)],
                     UNREAD)
    zero = v == 0
    return np.where(zero.all(1), EMPTY, np.where(zero.any(1), UNREAD, named))


def _met(named: np.ndarray, b: Fragment) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per configuration and A slot: the smallest B slot named (as lane, elem) and how many
    registers were reached; NONE where nothing was, AMBIGUOUS where any is unreadable."""
    flat = named.reshape(*named.shape[:-2], -1)
    count = (flat != EMPTY).sum(-1)
    least = np.where(flat >= 0, flat, np.iinfo(np.int64).max).min(-1)
    code = np.where(count == 0, NONE, AMBIGUOUS)
    fine = (count > 0) & ~(flat == UNREAD).any(-1)
    lane, elem = b.thread_value(least)
    lane, elem = np.where(fine, lane, code), np.where(fine, elem, code)
    return lane.astype(np.uint32), elem.astype(np.uint32), count.astype(np.uint32)


def _expected_digit0(named: np.ndarray, planes0: np.ndarray) -> np.ndarray:
    """What a digit-0 wave holds in each D register if its A element meets the named row."""
    flat = planes0.reshape(-1)
    return np.where(named >= 0, flat[np.clip(named, 0, None)], 0)


def _row_names(lane: np.ndarray, elem: np.ndarray, b: Fragment) -> np.ndarray:
    """A row of B is named by its smallest B slot, from `_met`'s lane and elem (or a code)."""
    lane, elem = lane.astype(np.int64), elem.astype(np.int64)
    slot = b.slot(lane, elem)
    return np.where(lane >= CODES, lane, slot)


def _match(d0: np.ndarray, table: dict[bytes, int]) -> np.ndarray:
    """Digit-0 waves (..., 32, 4) -> the row name whose expected D they equal exactly;
    NONE where nothing arrived, UNMATCHED where no measured row fits."""
    flat = d0.reshape(-1, d0.shape[-2] * d0.shape[-1])
    out = np.empty(flat.shape[0], np.int64)
    for i, row in enumerate(flat):
        out[i] = NONE if not row.any() else table.get(row.tobytes(), UNMATCHED)
    return out.reshape(d0.shape[:-2])


def _rows(named: np.ndarray, d_regs: int) -> tuple[np.ndarray, np.ndarray]:
    """Per A slot, the row of D its products fill, named by its smallest register (lane,
    reg): the same registers under every word, else AMBIGUOUS; NONE where none."""
    reached = (named != EMPTY).reshape(*named.shape[:-2], -1)  # (word, a_lane, a_value, D)
    same = (reached == reached[:1]).all((0, -1))
    first = reached[0]
    least = np.where(first.any(-1), first.argmax(-1), -1)
    code = np.where(least < 0, NONE, AMBIGUOUS)
    fine = same & (least >= 0)
    return (np.where(fine, least // d_regs, code).astype(np.uint32),
            np.where(fine, least % d_regs, code).astype(np.uint32))


def _partition_problems(named: np.ndarray) -> int:
    """Rows of B are disjoint sets of B slots: every D row an element fills must name one
    of them, whole. Count the (word, A slot) waves whose named slots overlap another wave's
    set without being equal (a sum of two products that happens to spell ids, say)."""
    seen: dict[int, frozenset[int]] = {}
    bad = 0
    for regs in named.reshape(-1, named.shape[-2] * named.shape[-1]):
        slots = frozenset(int(x) for x in regs if x >= 0)
        if not slots:
            continue
        known = {seen.get(x, slots) for x in slots}
        if known != {slots}:
            bad += 1
        for x in slots:
            seen.setdefault(x, slots)
    return bad


def _check_grid(grid: xr.Dataset, design: Design) -> None:
    """The grid must be this design's: the coded waves decode bits of these widths."""
    want = {"lbit": design.lane_code_bits, "gbit": design.group_code_bits,
            "word": len(design.meta.valid), "a_value": design.a_elems,
            "b_value": design.b_elems}
    if wrong := {d: (grid.sizes.get(d), n) for d, n in want.items() if grid.sizes.get(d) != n}:
        raise ValueError("the grid is not this sparse design's (dim: grid, design): "
                         + ", ".join(f"{d}: {g}, {n}" for d, (g, n) in wrong.items()))


def decode(grid: xr.Dataset, design: Design, unit: Unit, blocks: Mapping[str, np.ndarray]
           ) -> Decoded:
    """One kernel's raw D, split into its blocks (`split`) -> its observables, by the rules
    in the module doc; every wave the decode cannot read is named in `problems`."""
    codec = design.codec
    out = Decoded()
    named = _named(blocks["word"], grid, codec)  # (word, a_lane, a_value, 32, d_regs)
    lane, elem, count = _met(named, design.fragment("b"))
    out.values |= {"met_lane": lane, "met_elem": elem, "met_count": count}
    out.values["row_lane"], out.values["row_reg"] = _rows(named, design.d_regs)
    if unread := int((named == UNREAD).any((-2, -1)).sum()):
        out.problems.append(f"{unit.name}: {unread} word waves hold D registers that spell "
                            "no single B id (sums, scaled values, or empty in some digits)")
    if split_rows := _partition_problems(named):
        out.problems.append(f"{unit.name}: {split_rows} word waves name B slots that do not "
                            "form one row of B with the other waves (overlapping sets)")
    names = _row_names(lane, elem, design.fragment("b"))  # (word, a_lane, a_value)
    v = codec.read(blocks["word"][:, 0])  # digit-0 waves, as numbers
    expected = _expected_digit0(named, _b_planes(grid, codec)[0])
    table: dict[bytes, int] = {}
    for key, name in zip(expected.reshape(-1, v[0, 0, 0].size), names.reshape(-1),
                         strict=True):
        if name < CODES:  # the same digit-0 D for two rows would make it unreadable
            key = key.astype(np.float64).tobytes()
            table[key] = name if table.get(key, name) == name else AMBIGUOUS
    if mismatched := int((v != expected).any((-2, -1)).sum()):
        out.problems.append(f"{unit.name}: {mismatched} digit-0 word waves differ from the "
                            "rows their own digits name")
    reads = {b: _match(codec.read(blocks[b]).astype(np.float64), table)
             for b in ("lbit", "gbit", "trial", "bad", "outside") if b in blocks}
    for block in ("lbit", "gbit", "trial"):  # valid metadata: every wave must be a known row
        if unknown := int(np.isin(reads[block], (UNMATCHED, AMBIGUOUS)).sum()):
            out.problems.append(f"{unit.name}: {unknown} {block} waves match no row (or "
                                "several) that the word waves measured")
    gov_lane, gov_field, predict = _governors(grid, design, names, reads)
    out.values |= {"gov_lane": gov_lane, "gov_field": gov_field}
    observed = reads["trial"]
    out.values["random_ok"] = ((observed == predict) & (predict != UNMATCHED)
                               ).astype(np.uint32)
    for block, prefix in (("bad", "bad"), ("outside", "out")):
        if block in reads:
            got = reads[block]
            lane, elem = design.fragment("b").thread_value(got)
            out.values[f"{prefix}_lane"] = np.where(got >= CODES, got, lane).astype(np.uint32)
            out.values[f"{prefix}_elem"] = np.where(got >= CODES, got, elem).astype(np.uint32)
    sums = _superposed(blocks, grid, codec)
    if "clash" in blocks:
        out.values["superposed_apart"] = sums
        out.values["clash"] = _clash(blocks, grid, design, gov_lane.reshape(-1),
                                     gov_field.reshape(-1))
    else:
        out.values["superposed"] = sums
    return out


def _bits(reads: np.ndarray, one: np.ndarray, zero: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Coded waves (bit, slot) against the X row (bit set) and Y row -> bits, decided."""
    bit = reads == one[None]
    decided = (bit | (reads == zero[None])) & (one != zero)[None]
    return (bit.astype(np.int64) << np.arange(reads.shape[0])[:, None]).sum(0), \
        decided.all(0)


def _governors(grid: xr.Dataset, design: Design, names: np.ndarray,
               reads: Mapping[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """gov_lane and gov_field per A slot, and the row each random trial should then meet."""
    meta = design.meta
    words = list(meta.valid)
    shape = names.shape[1:]
    p = names.reshape(len(words), -1)  # (word, slot) row names
    x, y = (words.index(c) for c in meta.contrast)
    lane_bits, lane_ok = _bits(reads["lbit"].reshape(len(grid["lbit"]), -1), p[x], p[y])
    group_bits, group_ok = _bits(reads["gbit"].reshape(len(grid["gbit"]), -1), p[x], p[y])
    phis = []  # per slot: the fields within a group that the pairing is a function of
    for phi in range(meta.fields_per_group):
        values = np.array([meta.field_value(w, phi) for w in words])
        same = values[:, None] == values[None, :]
        agree = p[:, None, :] == p[None, :, :]
        phis.append((~same[..., None] | agree).all((0, 1)))
    phis = np.array(phis)  # (phi, slot)
    one_phi = phis[0] if meta.whole_group else phis.sum(0) == 1
    phi = np.zeros_like(one_phi, np.int64) if meta.whole_group else phis.argmax(0)
    governed = (p != p[:1]).any(0)  # does the metadata move this element at all?
    ok = governed & lane_ok & group_ok & one_phi
    gov_lane = np.where(ok, lane_bits, np.where(governed, AMBIGUOUS, NONE))
    gov_field = np.where(ok, group_bits * meta.fields_per_group + phi,
                         np.where(governed, AMBIGUOUS, NONE))
    # the row each random trial predicts: the word whose field phi holds the same value
    rmeta = grid["rmeta"].values.astype(np.int64)  # (trial, m_lane)
    lanes_of = np.where(ok, lane_bits, 0)
    fields_of = np.where(ok, gov_field, 0)
    value = (rmeta[:, lanes_of] >> (FIELD_BITS * fields_of)[None]) & 3  # (trial, slot)
    predict = np.full(value.shape, UNMATCHED, np.int64)
    for w, word in enumerate(words):
        hit = value == np.array([meta.field_value(word, int(f)) for f in phi])[None]
        predict = np.where(hit & ok[None], p[w][None], predict)
    predict = np.where(governed[None], predict, p[0][None])  # ungoverned: always the same
    return (gov_lane.reshape(shape).astype(np.uint32),
            gov_field.reshape(shape).astype(np.uint32),
            predict.reshape(-1, *shape))


def _superposed(blocks: Mapping[str, np.ndarray], grid: xr.Dataset, codec: Codec
                ) -> np.ndarray:
    """Per dense wave: is D exactly the sum of its one-element products (same metadata,
    digit-0 B), in every lane and register?"""
    a = grid["dense_a"].values.astype(np.float64)  # (dense, a_lane, a_value)
    parts = np.concatenate([codec.read(blocks["word"][:, 0]),
                            codec.read(blocks["trial"])])  # (dense, a_lane, a_value, 32, 4)
    total = np.einsum("dle,dlexy->dxy", a, parts.astype(np.float64))
    dense = codec.read(blocks["dense"]).astype(np.float64)
    if not codec.floating:  # s32 arithmetic wraps
        total = (total.astype(np.int64) + 2**31) % 2**32 - 2**31
    return (dense == total).all((-2, -1)).astype(np.uint32)


def _clash(blocks: Mapping[str, np.ndarray], grid: xr.Dataset, design: Design,
           gov_lane: np.ndarray, gov_field: np.ndarray) -> np.ndarray:
    """Per collision wave (cword, trial): the rule whose predicted D it equals, as an index
    into CLASH_RULES. The one-hot products come from the collision-free uniform words
    (contract and outside) whose governing field holds the clash value; two elements collide
    where the group's two fields govern them and their products are one and the same."""
    meta, codec = design.meta, design.codec
    free = [*grid["word"].values, *(grid["oword"].values if "oword" in grid else ())]
    parts = np.concatenate([codec.read(blocks["word"][:, 0]), *(
        [codec.read(blocks["outside"])] if "outside" in blocks else [])]).astype(np.float64)
    parts = parts.reshape(len(free), -1, *parts.shape[-2:])  # (config, slot, 32, d)
    governed = gov_lane < CODES
    fields = np.where(governed, gov_field, 0).astype(np.int64)
    undecided = len(CLASH_RULES) - 1
    out = np.full((grid.sizes["cword"], grid.sizes["trial"]), undecided, np.uint32)
    if (gov_lane == AMBIGUOUS).any():  # an element whose governor is unknown: no prediction
        return out
    for c, word in enumerate(grid["cword"].values):
        value = (int(word) >> (FIELD_BITS * fields)) & 3  # the clash value, per slot
        part = np.where(governed[:, None, None], 0, parts[0])  # ungoverned: fixed products
        known = np.ones(len(part), bool)
        for s in np.nonzero(governed)[0]:
            got = [i for i, w in enumerate(free) if (int(w) >> (FIELD_BITS * fields[s])) & 3
                   == value[s]]
            known[s] = bool(got)
            part[s] = parts[got[0], s] if got else 0
        group = np.where(governed, gov_lane.astype(np.int64) * meta.groups
                         + fields // meta.fields_per_group, -1)
        first, second = np.zeros(len(part), bool), np.zeros(len(part), bool)
        for s in np.nonzero(governed & (fields % 2 == 0))[0]:
            mates = np.nonzero((group == group[s]) & (fields == fields[s] + 1))[0]
            if len(mates) == 1 and part[s].any() and np.array_equal(part[s], part[mates[0]]):
                first[s], second[mates[0]] = True, True
        a = grid["clash_a"].values[c].reshape(grid.sizes["trial"], -1).astype(np.float64)
        rules = [np.einsum("ts,sxy->txy", a * keep, part)
                 for keep in (np.ones(len(part)), ~first, ~second)]  # adds, last, first
        if not codec.floating:  # s32 arithmetic wraps
            rules = [(r.astype(np.int64) + 2**31) % 2**32 - 2**31 for r in rules]
        seen = codec.read(blocks["clash"][c]).astype(np.float64)
        hits = np.array([(seen == r).all((-2, -1)) for r in rules])  # (rule, trial)
        code = np.where(hits.sum(0) == 1, hits.argmax(0) + 1, np.where(hits.any(0), undecided, 0))
        out[c] = code if known.all() else undecided
    return out


def assemble(grid: xr.Dataset, design: Design, raw: Mapping[str, np.ndarray]
             ) -> tuple[xr.Dataset, list[str]]:
    """Raw D per kernel (W, 32, d_regs) uint32 -> the dataset: raw blocks `d_<block>`
    (kernel, *block dims, lane, reg), the decoded variables and `decode_problems` (every
    wave the decode could not read, in words; empty when it read them all); plus that list.
    Problems never drop data: the raw blocks are all kept, and the cells concerned carry
    codes, so verdicts see them."""
    ds = grid.copy()
    names = [str(k) for k in grid["kernel"].values]
    _check_grid(grid, design)
    split_raw = {k: split(grid, np.asarray(raw[k], np.uint32)) for k in names}
    for block, dims in block_dims(grid).items():
        ds[f"d_{block}"] = (("kernel", *dims, "lane", "reg"),
                            np.stack([split_raw[k][block] for k in names]))
    decoded = [decode(grid, design, unit, split_raw[unit.name]) for unit in design.units]
    problems = [p for dec in decoded for p in dec.problems]
    recorded = {"bad_lane": ("kernel", "bad", "a_lane", "a_value"),
                "bad_elem": ("kernel", "bad", "a_lane", "a_value")}
    for name, dims in {**observables(design), **recorded}.items():
        ds[name] = (dims, np.stack([dec.values[name] for dec in decoded]))
    for name in recorded:
        ds[name].attrs["outside_contract"] = (
            "metadata outside the vendor's contract that no observable claims (invalid, "
            "undefined, or a collision): an observation, never evidence")
    for name in ("out_lane", "out_elem"):
        if name in ds:
            ds[name].attrs["outside_contract"] = OUTSIDE
    if "clash" in ds:
        ds["clash"].attrs |= CLASH_FLAGS
    for name in CODED:
        if name in ds:
            ds[name].attrs |= FLAGS
    ds["decode_problems"] = ("problem", np.array(problems, dtype=str))
    return ds, problems


# ---- the simulated unit (tests and the sim backend only; never evidence) ----

@dataclass(frozen=True)
class Law:
    """A hidden sparse unit for one kernel: per A slot (lane, elem) its row, governing
    (lane, field) and dense k = base + stride * field value (-1 row: no element); B slots
    -> (k, n); D registers -> (m, n) (which also give M and N)."""

    a_row: np.ndarray  # (32, a_elems)
    gov_lane: np.ndarray
    gov_field: np.ndarray
    base: np.ndarray
    stride: np.ndarray
    b_kn: np.ndarray  # (32, b_elems, 2), -1 where the slot holds nothing
    d_mn: np.ndarray  # (32, d_regs, 2)
    # two elements on one position: "adds", or the one of the later ("last") or earlier
    # ("first") governing field is all the position holds
    clash: str = "adds"
    shift: int = 0  # the field value's bits dropped before it names a position (1:2: one)


def random_law(unit: Unit, design: Design, rng: np.random.Generator) -> Law:
    """A 2:4-style unit nobody documented: rows, chunks, governing lanes and fields, and
    the B and D layouts all shuffled. The two kept elements of a chunk read the two 2-bit
    fields of one nibble of one lane (as on NVIDIA; on gfx12 each lane reads its own); a
    1:2 unit's one kept element reads the whole nibble (`Metadata.whole_group`)."""
    M, N, per = design.M, design.N, unit.elems  # A elements per lane this kernel has
    whole = design.meta.whole_group
    kept = 1 if whole else 2  # indices per chunk
    kc = unit.K // 2  # compressed columns
    chunks = unit.K // 8 if unit.pairwise else unit.K // (2 * kept)
    cells = rng.permutation(M * kc)  # compressed (row, ck) per existing slot
    row, ck = cells // kc, cells % kc
    index = ck // 2 if unit.pairwise else ck  # what one 2-bit index selects
    chunk = index // kept
    a_row = np.full((design.lanes, design.a_elems), -1)
    base, stride = np.zeros_like(a_row), np.ones_like(a_row)
    gov_lane, gov_field = np.zeros_like(a_row), np.zeros_like(a_row)
    a_row[:, :per] = row.reshape(design.lanes, per)
    base[:, :per] = (8 * chunk + ck % 2 if unit.pairwise else 2 * kept * chunk
                     ).reshape(design.lanes, per)
    stride[:, :per] = 2 if unit.pairwise else 1
    owner = rng.permutation(design.lanes * 8)[row * chunks + chunk]  # (lane, nibble) per chunk
    gov_lane[:, :per] = (owner // 8).reshape(design.lanes, per)
    gov_field[:, :per] = (2 * (owner % 8) + index % kept).reshape(design.lanes, per)
    b_kn = np.full((design.lanes, design.b_elems, 2), -1)
    kn = np.stack(np.meshgrid(np.arange(unit.K), np.arange(N), indexing="ij"), -1)
    b_kn[:, :unit.b_elems] = rng.permutation(kn.reshape(-1, 2)).reshape(design.lanes, -1, 2)
    mn = np.stack(np.meshgrid(np.arange(M), np.arange(N), indexing="ij"), -1)
    d_mn = rng.permutation(mn.reshape(-1, 2)).reshape(design.lanes, design.d_regs, 2)
    return Law(a_row, gov_lane, gov_field, base, stride, b_kn, d_mn, shift=int(whole))


WAVE_CHUNK = 128  # waves multiplied at once: their dense operands a few MB, in the caches


def multiply(law: Law, unit: Unit, codec: Codec, a: np.ndarray, b: np.ndarray,
             c: np.ndarray, e: np.ndarray) -> np.ndarray:
    """D registers (W, 32, d_regs) uint32 from registers a, b, c and metadata e (W, 32).
    Waves are independent: they are multiplied a chunk at a time (whole, the dense operands
    of 40,000 waves are gigabytes, each written and read once)."""
    writes = _Writes.of(law)
    return np.concatenate([_multiply(law, unit, codec, writes, a[lo:lo + WAVE_CHUNK],
                                     b[lo:lo + WAVE_CHUNK], c[lo:lo + WAVE_CHUNK],
                                     e[lo:lo + WAVE_CHUNK])
                           for lo in range(0, max(a.shape[0], 1), WAVE_CHUNK)])


@dataclass(frozen=True)
class _Writes:
    """The A elements in the order the unit writes them into dense A (a later one over, or
    onto, an earlier one on the same position), with what places each, and that order cut
    into layers (`_layers`) whose elements can be written at once."""

    lanes: np.ndarray
    elems: np.ndarray
    gov_lane: np.ndarray
    shift: np.ndarray  # of the governing field in its lane's metadata word
    row: np.ndarray
    base: np.ndarray
    stride: np.ndarray
    layers: list[np.ndarray]

    @classmethod
    def of(cls, law: Law) -> _Writes:
        lanes, elems = np.nonzero(law.a_row >= 0)
        order = np.lexsort((law.gov_field[lanes, elems], law.gov_lane[lanes, elems]))
        if law.clash == "first":  # the earlier field's element is written last, so it stays
            order = order[::-1]
        lanes, elems = lanes[order], elems[order]
        row, base, stride = (law.a_row[lanes, elems], law.base[lanes, elems],
                             law.stride[lanes, elems])
        return cls(lanes, elems, law.gov_lane[lanes, elems],
                   FIELD_BITS * law.gov_field[lanes, elems], row, base, stride,
                   _layers(row, base, stride))


def _multiply(law: Law, unit: Unit, codec: Codec, writes: _Writes, a: np.ndarray,
              b: np.ndarray, c: np.ndarray, e: np.ndarray) -> np.ndarray:
    w = a.shape[0]
    M, N = law.d_mn[..., 0].max() + 1, law.d_mn[..., 1].max() + 1
    av = codec.unpack(a, a.shape[-1] * 32 // codec.bits)
    bv = codec.unpack(b, b.shape[-1] * 32 // codec.bits)
    dense_a = np.zeros((w, M, unit.K))
    flat = dense_a.reshape(-1)
    waves = np.arange(w)[:, None]
    for layer in writes.layers:  # no two of a layer's elements can share a position
        value = ((e[waves, writes.gov_lane[layer]].astype(np.int64) >> writes.shift[layer])
                 & 3) >> law.shift
        at = waves * (M * unit.K) + (writes.row * unit.K + writes.base)[layer] + \
            writes.stride[layer] * value
        flat[at] = av[waves, writes.lanes[layer], writes.elems[layer]] + \
            (flat[at] if law.clash == "adds" else 0)
    dense_b = np.zeros((w, unit.K, N))
    used = law.b_kn[..., 0] >= 0
    dense_b[:, law.b_kn[used][:, 0], law.b_kn[used][:, 1]] = bv[:, used]
    acc = codec.read(c)
    dense_c = np.zeros((w, M, N))
    dense_c[:, law.d_mn[..., 0].reshape(-1), law.d_mn[..., 1].reshape(-1)] = \
        acc.reshape(w, -1)
    full = dense_a @ dense_b + dense_c
    d = full[:, law.d_mn[..., 0], law.d_mn[..., 1]]
    if codec.floating:  # rounded as the accumulator would, where numpy has its format
        return codec.write(codec.accumulator.nearest(d))
    wrapped = (np.rint(d).astype(np.int64) + 2**31) % 2**32 - 2**31  # s32 arithmetic wraps
    return codec.write(wrapped)


def _layers(row: np.ndarray, base: np.ndarray, stride: np.ndarray) -> list[np.ndarray]:
    """The elements (in write order) split into layers: an element's layer is one past the
    latest of the earlier elements that can land on a position it can (same row, and one
    of the dense k = base + stride * value, value 0..3, in common), so no two in a layer
    ever share a position and every such pair keeps its order across layers."""
    ks = base[:, None] + stride[:, None] * np.arange(4)
    meet = (row[:, None] == row[None, :]) & \
        (ks[:, None, :, None] == ks[None, :, None, :]).any(axis=(2, 3))
    layer = np.zeros(len(row), np.int64)
    for j in range(1, len(row)):
        earlier = layer[:j][meet[j, :j]]
        layer[j] = earlier.max() + 1 if earlier.size else 0
    return [np.flatnonzero(layer == n) for n in range(layer.max() + 1 if len(row) else 0)]
